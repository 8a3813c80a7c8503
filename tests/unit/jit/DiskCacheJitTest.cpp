//===- DiskCacheJitTest.cpp - the on-disk cache across processes -----------===//
//
// Each test gives tessel_disk_cache_helper (a program that ts::jits through
// libtessel) a fresh TESSEL_CACHE_DIR and TESSEL_VERBOSE=1, and reads what it
// did from its output: "tessel: running .../ptxas" and "tessel: compiled
// '<kernel>'" on a compile, "tessel: '<kernel>' from the disk cache (...)" on
// a hit. Entries are checked with the runtime's decoder. No GPU is needed.
//
// The times the helper prints ("helper: jit <kernel> <ms> ms", the whole
// ts::jit call) are echoed into the test log as "measured: ..." lines.
//
//===----------------------------------------------------------------------===//

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessel/Runtime/DiskCache.h"
#include "text_count.hpp"

namespace fs = std::filesystem;
namespace rt = tessel::runtime;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using tessel_test::count_of;

/// A child process started with popen (stdout and stderr together).
struct Child {
  FILE* pipe = nullptr;
  std::string output;
  int status = -1;
  void finish() {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
      output.append(buf, n);
    status = pclose(pipe);
  }
};

class DiskCacheJit : public ::testing::Test {
public:
  fs::path dir;

  void SetUp() override {
    dir = fs::temp_directory_path() / ("tessel-disk-cache-jit-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string cacheDir() const { return (dir / "cache").string(); }

  /// Starts the helper with `args`; `env` is prepended ("VAR=value ...").
  Child start(const std::string& args, const std::string& env = "") const {
    std::string cmd = "env -u TESSEL_DISABLE_CACHE -u TESSEL_DUMP_DIR -u TESSEL_CACHE_MAX_BYTES TESSEL_VERBOSE=1 "
                      "TESSEL_CACHE_DIR='" + cacheDir() + "' " + env + " '" TESSEL_DISK_CACHE_HELPER "' " + args +
                      " 2>&1";
    Child c;
    c.pipe = popen(cmd.c_str(), "r");
    EXPECT_NE(c.pipe, nullptr) << cmd;
    return c;
  }
  /// Runs the helper; the process must succeed. Returns its output.
  std::string run(const std::string& args, const std::string& env = "") const {
    Child c = start(args, env);
    c.finish();
    EXPECT_EQ(c.status, 0) << args << "\n" << c.output;
    return c.output;
  }
  /// Runs tessel-cache --dir <cache> `args`.
  std::string tool(const std::string& args) const {
    std::string cmd = "'" TESSEL_CACHE_TOOL "' --dir '" + cacheDir() + "' " + args + " 2>&1";
    Child c{popen(cmd.c_str(), "r")};
    c.finish();
    EXPECT_EQ(c.status, 0) << cmd << "\n" << c.output;
    return c.output;
  }

  std::vector<rt::CacheEntryFile> entries() const { return rt::listCacheEntries(cacheDir()); }
  /// Every entry decodes; returns how many there are.
  size_t validEntries() const {
    size_t n = 0;
    for (const rt::CacheEntryFile& e : entries()) {
      std::string why;
      EXPECT_TRUE(rt::decodeCacheEntry(readAll(e.path), "", &why)) << e.path << ": " << why;
      ++n;
    }
    return n;
  }
};

/// "helper: jit <kernel> <ms> ms" -> ms (the first such line), -1 when absent.
double jitMs(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("helper: jit \\S+ ([0-9.]+) ms")))
    return -1;
  return std::stod(m[1]);
}

/// "median M ms (min m ms) over N new processes" of the helper's first ts::jit with `args`.
std::string warmTimes(const DiskCacheJit& t, const std::string& args, int n = 5);

bool compiled(const std::string& out) { return out.find("tessel: compiled '") != std::string::npos; }
bool fromDisk(const std::string& out) { return out.find("' from the disk cache (") != std::string::npos; }

TEST_F(DiskCacheJit, HitInANewProcessDoesNotCompile) {
  std::string cold = run("add");
  EXPECT_TRUE(compiled(cold)) << cold;
  EXPECT_THAT(cold, HasSubstr("tessel: running "));  // ptxas
  ASSERT_EQ(validEntries(), 1u);
  std::string warm = run("add");
  EXPECT_TRUE(fromDisk(warm)) << warm;
  EXPECT_FALSE(compiled(warm)) << warm;
  EXPECT_THAT(warm, Not(HasSubstr("tessel: running ")));
  EXPECT_THAT(warm, Not(HasSubstr("warning")));
  std::printf("measured (this machine): ts::jit of an elementwise kernel: cold %.1f ms; disk-cache hit in a new "
              "process: %s\n",
              jitMs(cold), warmTimes(*this, "add").c_str());
}

// The same program jitted from two call sites (an example and tessel-bench, say) keeps an entry
// for each: before, each replaced the other's, and alternating processes always compiled cold.
TEST_F(DiskCacheJit, TwoCallSitesOfOneProgramBothHit) {
  EXPECT_TRUE(compiled(run("add")));
  EXPECT_TRUE(compiled(run("add-elsewhere")));
  EXPECT_EQ(validEntries(), 2u);
  for (const char* program : {"add", "add-elsewhere", "add"}) {
    const std::string warm = run(program);
    EXPECT_TRUE(fromDisk(warm)) << program << "\n" << warm;
    EXPECT_FALSE(compiled(warm)) << program << "\n" << warm;
  }
  EXPECT_EQ(validEntries(), 2u);
}

// Every dtype an argument can have is read back: the decoder once rejected the dtypes after
// `index` (f8e4m3, f8e5m2) as malformed, so every fp8 kernel was recompiled, with a warning, in
// every new process.
TEST_F(DiskCacheJit, Fp8GemmHitsInANewProcess) {
  std::string cold = run("fp8");
  EXPECT_THAT(cold, HasSubstr("tessel: compiled 'examples_fp8_gemm_"));
  ASSERT_EQ(validEntries(), 1u);
  std::string warm = run("fp8");
  EXPECT_TRUE(fromDisk(warm)) << warm;
  EXPECT_FALSE(compiled(warm)) << warm;
  EXPECT_THAT(warm, Not(HasSubstr("warning")));
}

TEST_F(DiskCacheJit, GemmAndItsLaunchTimeVariantHitInANewProcessAndStillDump) {
  // A misaligned A makes the launch compile the schedule multistage variant (a second entry).
  std::string cold = run("gemm --schedule tma --stages 3 --misaligned-launch");
  EXPECT_THAT(cold, HasSubstr("tessel: compiled 'examples_gemm_128_128_64'"));
  EXPECT_THAT(cold, HasSubstr("tessel: compiled variant 'multistage'"));
  EXPECT_EQ(validEntries(), 2u);
  const fs::path dump = dir / "dump";
  std::string warm = run("gemm --schedule tma --stages 3 --misaligned-launch --dump '" + dump.string() + "'");
  EXPECT_THAT(warm, HasSubstr("tessel: 'examples_gemm_128_128_64' from the disk cache ("));
  EXPECT_THAT(warm, HasSubstr("tessel: 'examples_gemm_128_128_64' variant 'multistage' from the disk cache ("));
  EXPECT_THAT(warm, Not(HasSubstr("tessel: compiled")));
  EXPECT_THAT(warm, Not(HasSubstr("tessel: running ")));
  // Dumps are written on a hit too, the variant's in its folder.
  for (const char* f : {"01-tessel.mlir", "02-select-schedule.mlir", "09-lower-to-nvvm.mlir", "14-kernel.ptx", "ptxas.log",
                        "examples_gemm_128_128_64.cubin", "variant-multistage/02-select-schedule.mlir"})
    EXPECT_TRUE(fs::exists(dump / f)) << f;
  EXPECT_THAT(readAll((dump / "variant-multistage" / "02-select-schedule.mlir").string()),
              HasSubstr("#tessel.schedule<kind = multistage"));
  EXPECT_EQ(validEntries(), 2u);
  std::printf("measured (this machine): ts::jit of the tma 128x128 bf16 GEMM: cold %.1f ms; disk-cache hit in a "
              "new process: %s\n",
              jitMs(cold), warmTimes(*this, "gemm --schedule tma --stages 3").c_str());
}

std::string warmTimes(const DiskCacheJit& t, const std::string& args, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    std::string out = t.run(args);
    EXPECT_TRUE(fromDisk(out)) << out;
    ms.push_back(jitMs(out));
  }
  std::sort(ms.begin(), ms.end());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "median %.1f ms (min %.1f ms) over %d new processes", ms[ms.size() / 2], ms[0], n);
  return buf;
}

/// Damages every entry, then a process that jits two kernels recompiles both, warns once (naming
/// the reason) and leaves valid entries that the next process hits.
class DiskCacheJitDamage : public DiskCacheJit {
public:
  void check(std::string (*damage)(std::string), const std::string& reason) {
    run("scale --kernels 2");
    ASSERT_EQ(validEntries(), 2u);
    for (const rt::CacheEntryFile& e : entries()) {
      std::string data = damage(readAll(e.path));
      std::ofstream out(e.path, std::ios::binary | std::ios::trunc);
      out << data;
    }
    std::string out = run("scale --kernels 2");
    EXPECT_EQ(count_of(out, "tessel: compiled '"), 2) << out;
    EXPECT_EQ(count_of(out, "tessel: warning:"), 1) << out;
    EXPECT_THAT(out, HasSubstr("tessel: warning: ignoring the kernel cache entry "));
    EXPECT_THAT(out, HasSubstr("(" + reason));
    EXPECT_EQ(validEntries(), 2u);
    std::string again = run("scale --kernels 2");
    EXPECT_EQ(count_of(again, "' from the disk cache ("), 2) << again;
    EXPECT_THAT(again, Not(HasSubstr("warning")));
  }
};

TEST_F(DiskCacheJitDamage, CorruptEntriesAreRecompiledAndReplacedWithOneWarning) {
  check([](std::string d) { d[d.size() - 10] ^= 0x55; return d; }, "checksum mismatch");
}

TEST_F(DiskCacheJitDamage, TruncatedEntriesAreRecompiledAndReplacedWithOneWarning) {
  check([](std::string d) { return d.substr(0, d.size() - 1); }, "truncated");
}

TEST_F(DiskCacheJitDamage, ForeignVersionEntriesAreRecompiledAndReplacedWithOneWarning) {
  check([](std::string d) { d[8] = 7; return d; }, "format version 7, expected 2");
}

TEST_F(DiskCacheJit, UnwritableDirectoryWarnsOnceAndCompiles) {
  std::ofstream(dir / "file") << "a file where the cache directory's parent should be";
  const std::string blocked = (dir / "file" / "cache").string();
  std::string out = run("scale --kernels 3", "TESSEL_CACHE_DIR='" + blocked + "'");
  EXPECT_EQ(count_of(out, "helper: jit "), 3) << out;
  EXPECT_EQ(count_of(out, "tessel: compiled '"), 3) << out;
  EXPECT_EQ(count_of(out, "tessel: warning:"), 1) << out;
  EXPECT_THAT(out, HasSubstr("tessel: warning: the kernel cache directory '" + blocked + "' is not writable"));
}

TEST_F(DiskCacheJit, ConcurrentWritersInSeveralProcesses) {
  // Six processes of three threads each jit the same kernel at once: every one succeeds, one
  // valid entry remains, no temporary file is left, and the next process hits.
  std::vector<Child> children;
  for (int i = 0; i < 6; ++i)
    children.push_back(start("add --threads 3"));
  for (Child& c : children) {
    c.finish();
    EXPECT_EQ(c.status, 0) << c.output;
    EXPECT_EQ(count_of(c.output, "helper: jit "), 3) << c.output;
    EXPECT_THAT(c.output, Not(HasSubstr("warning"))) << c.output;
  }
  EXPECT_EQ(validEntries(), 1u);
  for (const auto& f : fs::directory_iterator(cacheDir()))
    EXPECT_THAT(f.path().string(), Not(HasSubstr(".tmp."))) << "a temporary file was left behind";
  EXPECT_TRUE(fromDisk(run("add")));
}

TEST_F(DiskCacheJit, EveryOptionAndTheProgramMakeAnotherEntry) {
  // Elementwise kernels accept (and ignore) the GEMM options: cheap to compile, and the key must
  // still tell them apart (the same options on a GEMM change the code).
  const std::vector<std::string> runs = {
      "add", "add --debug", "add --stages 3", "add --swizzle 64", "add --raster 4", "add --cluster 2x1",
      "add --decomposition sk", "add --schedule multistage", "scale", "scale --kernels 2"};
  size_t expected = 0;
  for (const std::string& args : runs) {
    std::string out = run(args);
    EXPECT_TRUE(compiled(out)) << args << " hit another configuration's entry:\n" << out;
    ++expected;  // ("scale --kernels 2": its first kernel is the previous run's `scale`, its second is new)
    EXPECT_EQ(validEntries(), expected) << args;
  }
  // dump_dir and verbose do not change the code: hits, no new entry.
  std::string dumped = run("add --dump '" + (dir / "dump").string() + "'");
  EXPECT_TRUE(fromDisk(dumped)) << dumped;
  run("add", "TESSEL_VERBOSE=0");
  EXPECT_EQ(validEntries(), expected);
}

}  // namespace

TEST_F(DiskCacheJit, DisabledCacheWritesNothing) {
  std::string out = run("add", "TESSEL_DISABLE_CACHE=1");
  EXPECT_TRUE(compiled(out)) << out;
  EXPECT_FALSE(fs::exists(cacheDir()) && !entries().empty());
  run("add");
  EXPECT_TRUE(compiled(run("add", "TESSEL_DISABLE_CACHE=1")));  // not read either
}

TEST_F(DiskCacheJit, ToolListsStatsTrimsAndClears) {
  run("scale --kernels 2");
  std::string list = tool("list");
  EXPECT_EQ(count_of(list, "scale"), 2) << list;
  EXPECT_THAT(tool("stats"), HasSubstr("entries        2 (0 invalid"));
  std::ofstream(entries().front().path, std::ios::trunc) << "junk";
  EXPECT_THAT(tool("list"), HasSubstr("(invalid: truncated"));
  EXPECT_THAT(tool("trim 1"), HasSubstr("removed 2 entries"));
  run("add");
  EXPECT_THAT(tool("clear"), HasSubstr("removed 1 entries from " + cacheDir()));
  EXPECT_THAT(tool("stats"), HasSubstr("entries        0"));
  EXPECT_THAT(tool("path"), HasSubstr(cacheDir()));
}
