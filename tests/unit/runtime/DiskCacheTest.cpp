//===- DiskCacheTest.cpp - the on-disk kernel cache, without a compiler ---===//
//
// The entry format (every CompiledKernel field round-trips; truncated,
// corrupt, foreign and misplaced entries are rejected with a reason), the key
// (every option that changes the code changes it), and compileWithDiskCache
// with a counting stand-in for the compiler: hit, miss-and-replace with one
// warning, unwritable directory, eviction, threads. The same through ts::jit
// and in several processes: tests/unit/jit/DiskCacheJitTest.cpp.
//
//===----------------------------------------------------------------------===//

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/DiskCache.h"
#include "temp_dir.hpp"

using namespace tessel;
using namespace tessel::testing;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

namespace fs = std::filesystem;

namespace {

// A new field must be added to encodeCacheEntry / decodeCacheEntry (DiskCache.cpp, then bump
// kEntryFormatVersion) and to sameKernel() below; a new option to optionsKey and to
// OptionsKey.ChangesWithEveryOption (unless it does not change the code, like dump_dir).
// 18: CompiledKernel::timings is deliberately not stored (an entry read back has only its lookup
// time), nor CompiledKernel::restage (ts::jit installs it again on a hit).
static_assert(fieldCount<CompiledKernel>() == 18, "CompiledKernel changed: serialize the new field");
static_assert(fieldCount<ArgSpec>() == 4, "ArgSpec changed: serialize the new field");
static_assert(fieldCount<ParamSpec>() == 8, "ParamSpec changed: serialize the new field");
static_assert(fieldCount<SizeContract>() == 6, "SizeContract changed: serialize the new field");
static_assert(fieldCount<options>() == 10, "tessel::options changed: add the new option to optionsKey");

struct TempDir : tessel_test::temp_dir {
  TempDir() : temp_dir("tessel-disk-cache-test") {}
};

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void writeAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

/// Every field of CompiledKernel set to something other than its default.
CompiledKernel everyField() {
  CompiledKernel k = gemmKernel();
  k.args[2].stored = true;
  k.args[1].loadedByTma = true;
  k.params.push_back({ParamSpec::Kind::TmaDescriptor, 2, 0, {16, 32, 1}, 64, 1, /*store=*/true});
  k.params.push_back({ParamSpec::Kind::TmaDescriptor, 0, 0, {64, 64, 1}, 128, -1, /*store=*/false, /*clipRows=*/true});
  k.params.push_back({ParamSpec::Kind::TmaUsable, 2, 0});
  k.params.push_back({ParamSpec::Kind::GridDim, 0, 1});
  // (No Workspace parameter: validateCompiledKernel allows none with a cluster.)
  k.sizeContracts = {{0, 1, 1, 0, "gemm.hpp:12:3", "gemm.hpp:13:5"}, {0, 0, 2, 0, "", "gemm.hpp:15:7"}};
  k.blockThreads = 384;
  k.dynamicSmemBytes = 200 * 1024;
  k.cluster = {2, 1, 1};
  k.persistent = true;
  k.workspaceSlotBytes = 131072;
  k.arch = "sm_90a";
  k.schedule = "cooperative";
  k.variant = "cooperative-L0__";
  k.ptx = ".version 8.5\n// ptx\n";
  k.cubin = std::string("\x7f" "ELF\0\x01\xff", 7) + std::string(1000, '\0');
  k.ptxasLog = "ptxas info    : Used 168 registers\n";
  k.stages.emplace_back("stage/with-slash", std::string("binary\0text", 11));
  return k;
}

void expectSameKernel(const CompiledKernel& a, const CompiledKernel& b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.args.size(), b.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) {
    EXPECT_EQ(a.args[i].type, b.args[i].type) << i;
    EXPECT_EQ(a.args[i].rank, b.args[i].rank) << i;
    EXPECT_EQ(a.args[i].loadedByTma, b.args[i].loadedByTma) << i;
    EXPECT_EQ(a.args[i].stored, b.args[i].stored) << i;
  }
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].kind, b.params[i].kind) << i;
    EXPECT_EQ(a.params[i].arg, b.params[i].arg) << i;
    EXPECT_EQ(a.params[i].dim, b.params[i].dim) << i;
    EXPECT_EQ(a.params[i].box, b.params[i].box) << i;
    EXPECT_EQ(a.params[i].swizzleBytes, b.params[i].swizzleBytes) << i;
    EXPECT_EQ(a.params[i].contiguousDim, b.params[i].contiguousDim) << i;
    EXPECT_EQ(a.params[i].store, b.params[i].store) << i;
    EXPECT_EQ(a.params[i].clipRows, b.params[i].clipRows) << i;
  }
  ASSERT_EQ(a.sizeContracts.size(), b.sizeContracts.size());
  for (size_t i = 0; i < a.sizeContracts.size(); ++i) {
    EXPECT_EQ(a.sizeContracts[i].argA, b.sizeContracts[i].argA) << i;
    EXPECT_EQ(a.sizeContracts[i].dimA, b.sizeContracts[i].dimA) << i;
    EXPECT_EQ(a.sizeContracts[i].argB, b.sizeContracts[i].argB) << i;
    EXPECT_EQ(a.sizeContracts[i].dimB, b.sizeContracts[i].dimB) << i;
    EXPECT_EQ(a.sizeContracts[i].whereA, b.sizeContracts[i].whereA) << i;
    EXPECT_EQ(a.sizeContracts[i].whereB, b.sizeContracts[i].whereB) << i;
  }
  EXPECT_EQ(a.blockThreads, b.blockThreads);
  EXPECT_EQ(a.dynamicSmemBytes, b.dynamicSmemBytes);
  EXPECT_EQ(a.cluster, b.cluster);
  EXPECT_EQ(a.persistent, b.persistent);
  EXPECT_EQ(a.workspaceSlotBytes, b.workspaceSlotBytes);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.variant, b.variant);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptxasLog, b.ptxasLog);
  EXPECT_EQ(a.stages, b.stages);
}

TEST(DiskCacheFormat, Xxh64MatchesThePublishedValues) {
  EXPECT_EQ(runtime::xxh64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(runtime::xxh64("abc"), 0x44BC2CF5AD770999ULL);
  EXPECT_NE(runtime::xxh64("abc", 1), runtime::xxh64("abc", 0));
}

TEST(DiskCacheFormat, RoundTripKeepsEveryField) {
  const CompiledKernel k = everyField();
  std::string data = runtime::encodeCacheEntry("the key", 0x1234, k);
  EXPECT_THAT(data, StartsWith("TESSELKC"));
  std::string why;
  std::optional<runtime::DecodedEntry> e = runtime::decodeCacheEntry(data, "the key", &why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->key, "the key");
  EXPECT_EQ(e->sourceHash, 0x1234u);
  EXPECT_EQ(e->formatVersion, runtime::kEntryFormatVersion);
  expectSameKernel(e->kernel, k);
  // And a kernel of defaults (empty strings and lists; some PTX, which validation requires).
  CompiledKernel empty;
  empty.name = "k";
  empty.ptx = "//";
  e = runtime::decodeCacheEntry(runtime::encodeCacheEntry("", 0, empty), "", &why);
  ASSERT_TRUE(e) << why;
  expectSameKernel(e->kernel, empty);
}

TEST(DiskCacheFormat, EveryTruncationIsRejected) {
  std::string data = runtime::encodeCacheEntry("key", 1, everyField());
  for (size_t n = 0; n < data.size(); n += (n < 200 ? 1 : 97)) {
    std::string why;
    EXPECT_FALSE(runtime::decodeCacheEntry(std::string_view(data).substr(0, n), "key", &why)) << n;
    EXPECT_THAT(why, HasSubstr("truncated")) << n;
  }
}

TEST(DiskCacheFormat, CorruptForeignAndMisplacedEntriesAreRejectedWithAReason) {
  const std::string data = runtime::encodeCacheEntry("key", 1, everyField());
  auto reason = [](const std::string& d, std::string_view key = "key") {
    std::string why;
    EXPECT_FALSE(runtime::decodeCacheEntry(d, key, &why));
    return why;
  };
  // Any flipped byte of the key or the payload fails the checksum.
  for (size_t at : {size_t(40), size_t(41), size_t(60), data.size() / 2, data.size() - 1}) {
    std::string bad = data;
    bad[at] ^= 0x20;
    EXPECT_EQ(reason(bad), "checksum mismatch") << at;
  }
  std::string v1 = data;  // before ParamSpec::clipRows
  v1[8] = 1;
  EXPECT_EQ(reason(v1), "format version 1, expected 2");
  EXPECT_THAT(reason("#!/bin/sh\necho not a cache entry at all, but long enough\n"), HasSubstr("bad magic"));
  EXPECT_THAT(reason(data + "x"), HasSubstr("1 bytes after the payload"));
  EXPECT_THAT(reason(data, "another key"), HasSubstr("another key"));
  // Well-formed but inconsistent: validateCompiledKernel refuses it.
  CompiledKernel k = everyField();
  k.blockThreads = 0;
  EXPECT_THAT(reason(runtime::encodeCacheEntry("key", 1, k)), HasSubstr("inconsistent"));
}

TEST(DiskCacheFormat, ByteSizes) {
  EXPECT_EQ(runtime::parseByteSize("123"), 123u);
  EXPECT_EQ(runtime::parseByteSize(" 4k "), 4096u);
  EXPECT_EQ(runtime::parseByteSize("2MiB"), 2u << 20);
  EXPECT_EQ(runtime::parseByteSize("1G"), 1u << 30);
  EXPECT_EQ(runtime::parseByteSize("3 GB"), std::nullopt);
  EXPECT_EQ(runtime::parseByteSize("-1"), std::nullopt);
  EXPECT_EQ(runtime::parseByteSize("lots"), std::nullopt);
  EXPECT_EQ(runtime::parseByteSize("99999999999999999999"), std::nullopt);
}

TEST(OptionsKey, ChangesWithEveryOptionThatChangesTheCode) {
  ScopedEnv debugKnob("TESSEL_DEBUG", std::nullopt);
  const options base;
  const std::string key = runtime::optionsKey(base);
  std::vector<std::pair<const char*, options>> changed;
  auto with = [&](const char* what, auto set) {
    options o = base;
    set(o);
    changed.emplace_back(what, o);
  };
  with("schedule", [](options& o) { o.schedule = schedule::pingpong; });
  with("stages", [](options& o) { o.stages = 3; });
  with("cluster", [](options& o) { o.cluster = {2, 1}; });
  with("cluster y", [](options& o) { o.cluster = {1, 2}; });
  with("swizzle", [](options& o) { o.swizzle = 64; });
  with("swizzle none", [](options& o) { o.swizzle = swizzle_none; });
  with("raster_group", [](options& o) { o.raster_group = 4; });
  with("decomposition", [](options& o) { o.decomposition = decomposition::stream_k; });
  with("debug", [](options& o) { o.debug = true; });
  with("fp_contract", [](options& o) { o.fp_contract = false; });
  std::set<std::string> keys{key};
  for (const auto& [what, o] : changed)
    EXPECT_TRUE(keys.insert(runtime::optionsKey(o)).second) << what << " does not change the key";
  // Where and what is printed does not change the code.
  options printing = base;
  printing.dump_dir = "/tmp/x";
  printing.verbose = true;
  EXPECT_EQ(runtime::optionsKey(printing), key);
  // TESSEL_DEBUG is options::debug from the environment.
  ScopedEnv debugOn("TESSEL_DEBUG", "1");
  options debug = base;
  debug.debug = true;
  EXPECT_EQ(runtime::optionsKey(base), runtime::optionsKey(debug));
}

TEST(DiskCacheFormat, EntryPathsDependOnTheWholeKey) {
  EXPECT_NE(runtime::cacheEntryPath("/d", "a"), runtime::cacheEntryPath("/d", "b"));
  EXPECT_EQ(runtime::cacheEntryPath("/d", "a"), runtime::cacheEntryPath("/d", "a"));
  EXPECT_THAT(runtime::cacheEntryPath("/d", "a"), ::testing::MatchesRegex("/d/[0-9a-f]{32}\\.tkc"));
}

TEST(DiskCacheFormat, ToolchainIdentityNamesTesselPtxasAndTheArch) {
  TempDir dir;
  std::string id = runtime::cacheToolchainIdentity(dir.path);
  EXPECT_THAT(id, HasSubstr("tessel="));
  EXPECT_THAT(id, HasSubstr(" build="));
  EXPECT_THAT(id, HasSubstr("\nptxas="));
  EXPECT_THAT(id, HasSubstr("\narch=sm_90a\n"));
  EXPECT_EQ(runtime::cacheToolchainIdentity(dir.path), id);
}

/// compileWithDiskCache with a stand-in compiler that counts its calls.
class DiskCache : public ::testing::Test {
public:
  TempDir dir;
  ScopedEnv cacheDir{"TESSEL_CACHE_DIR", dir.path};
  ScopedEnv enabled{"TESSEL_DISABLE_CACHE", std::nullopt};
  ScopedEnv cap{"TESSEL_CACHE_MAX_BYTES", std::nullopt};
  std::atomic<int> compiles{0};

  void SetUp() override { runtime::resetDiskCacheWarningsForTesting(); }

  CompiledKernel kernelNamed(const std::string& name) {
    CompiledKernel k = everyField();
    k.name = name;
    return k;
  }
  /// Jits `name` with `key` through the cache; returns {kernel, hit, stderr}.
  std::tuple<CompiledKernel, bool, std::string> get(const std::string& key, const std::string& name,
                                                    const std::string& source = "traced text") {
    bool hit = false;
    ::testing::internal::CaptureStderr();
    CompiledKernel k = runtime::compileWithDiskCache(key, source, /*verbose=*/false, [&] {
      ++compiles;
      return kernelNamed(name);
    }, &hit);
    return {k, hit, ::testing::internal::GetCapturedStderr()};
  }
  std::vector<runtime::CacheEntryFile> entries() { return runtime::listCacheEntries(dir.path); }
};

TEST_F(DiskCache, SecondLookupIsAHitWithoutCompiling) {
  auto [first, hit1, err1] = get("key", "k");
  EXPECT_FALSE(hit1);
  EXPECT_EQ(err1, "");
  ASSERT_EQ(entries().size(), 1u);
  auto [second, hit2, err2] = get("key", "k");
  EXPECT_TRUE(hit2);
  EXPECT_EQ(err2, "");
  EXPECT_EQ(compiles, 1);
  expectSameKernel(second, first);
  // Another key is another entry.
  auto [other, hit3, err3] = get("other key", "k2");
  EXPECT_FALSE(hit3);
  EXPECT_EQ(entries().size(), 2u);
}

TEST_F(DiskCache, VerboseHitSaysWhereFrom) {
  get("key", "k");
  ::testing::internal::CaptureStderr();
  bool hit = false;
  runtime::compileWithDiskCache("key", "traced text", /*verbose=*/true, [] { return CompiledKernel{}; }, &hit);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(hit);
  EXPECT_THAT(err, HasSubstr("tessel: 'k' variant 'cooperative-L0__' from the disk cache (" + dir.path + "/"));
}

TEST_F(DiskCache, EachSourceOfAProgramHasItsOwnEntry) {
  // One program jitted from two call sites (other locations): each compiles once and then hits;
  // before, each replaced the other's entry, and alternating processes always compiled cold.
  get("key", "k", "at line 10");
  auto [k, hit, err] = get("key", "k", "at line 11");
  EXPECT_FALSE(hit);
  EXPECT_EQ(err, "");
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_TRUE(std::get<1>(get("key", "k", "at line 10")));
  EXPECT_TRUE(std::get<1>(get("key", "k", "at line 11")));
  EXPECT_EQ(compiles, 2);
}

/// A damaged entry: a miss, one warning naming it, then replaced by a valid one.
void expectDamageIsRepaired(DiskCache& t, const std::function<std::string(std::string)>& damage,
                            const std::string& reason) {
  t.get("key", "k");
  std::string path = t.entries().at(0).path;
  writeAll(path, damage(readAll(path)));
  auto [k, hit, err] = t.get("key", "k");
  EXPECT_FALSE(hit);
  EXPECT_EQ(t.compiles, 2);
  EXPECT_THAT(err, StartsWith("tessel: warning: ignoring the kernel cache entry " + path + " (" + reason));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  std::string why;
  EXPECT_TRUE(runtime::decodeCacheEntry(readAll(path), "", &why)) << "not replaced: " << why;
  EXPECT_TRUE(std::get<1>(t.get("key", "k")));
}

TEST_F(DiskCache, CorruptEntryIsAMissWarnedOnceAndReplaced) {
  expectDamageIsRepaired(*this, [](std::string d) { d[d.size() / 2] ^= 1; return d; }, "checksum mismatch");
}

TEST_F(DiskCache, TruncatedEntryIsAMissWarnedOnceAndReplaced) {
  expectDamageIsRepaired(*this, [](std::string d) { return d.substr(0, d.size() / 3); }, "truncated");
}

TEST_F(DiskCache, ForeignVersionEntryIsAMissWarnedOnceAndReplaced) {
  expectDamageIsRepaired(*this, [](std::string d) { d[8] = 99; return d; }, "format version 99");
}

TEST_F(DiskCache, EmptyEntryIsAMissWarnedOnceAndReplaced) {
  expectDamageIsRepaired(*this, [](std::string) { return std::string(); }, "truncated");
}

TEST_F(DiskCache, OneWarningPerProcessForDamagedEntries) {
  get("a", "a");
  get("b", "b");
  for (const auto& e : entries())
    writeAll(e.path, "garbage");
  std::string err = std::get<2>(get("a", "a")) + std::get<2>(get("b", "b"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(DiskCache, UnwritableDirectoryWarnsOnceAndCompiles) {
  // A path below a regular file can never be created (also not by root, who ignores modes).
  writeAll(dir.path + "/file", "");
  ScopedEnv blocked("TESSEL_CACHE_DIR", dir.path + "/file/cache");
  auto [k1, hit1, err1] = get("key", "k");
  auto [k2, hit2, err2] = get("key", "k");
  auto [k3, hit3, err3] = get("other", "k3");
  EXPECT_FALSE(hit1 || hit2 || hit3);
  EXPECT_EQ(compiles, 3);
  EXPECT_EQ(k3.name, "k3");
  EXPECT_THAT(err1, StartsWith("tessel: warning: the kernel cache directory '" + dir.path +
                               "/file/cache' is not writable ("));
  EXPECT_EQ(std::count(err1.begin(), err1.end(), '\n'), 1) << err1;
  EXPECT_EQ(err2 + err3, "");
}

TEST_F(DiskCache, DisabledCacheNeitherReadsNorWrites) {
  get("key", "k");
  ScopedEnv off("TESSEL_DISABLE_CACHE", "1");
  auto [k, hit, err] = get("key", "k");
  EXPECT_FALSE(hit);
  EXPECT_EQ(compiles, 2);
  get("other", "k");
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(DiskCache, LeastRecentlyUsedEntriesAreEvictedBeyondTheCap) {
  get("a", "a");
  const std::uint64_t entryBytes = entries().at(0).bytes;
  // Access times of a, b, c in that order, then a is used again: b is the least recent.
  get("b", "b");
  get("c", "c");
  auto setAccess = [&](const std::string& key, long seconds) {
    std::string path =
        runtime::cacheEntryPathFor(dir.path, runtime::cacheToolchainIdentity(dir.path) + key, "traced text");
    timespec times[2] = {{seconds, 0}, {0, UTIME_OMIT}};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
  };
  setAccess("a", 1000);
  setAccess("b", 2000);
  setAccess("c", 3000);
  EXPECT_TRUE(std::get<1>(get("a", "a")));  // a hit touches a: now the most recent
  // Room for three entries of this size: writing d evicts b only.
  ScopedEnv tiny("TESSEL_CACHE_MAX_BYTES", std::to_string(3 * entryBytes + entryBytes / 2));
  get("d", "d");
  EXPECT_EQ(entries().size(), 3u);
  EXPECT_TRUE(std::get<1>(get("a", "a")));
  EXPECT_TRUE(std::get<1>(get("c", "c")));
  EXPECT_TRUE(std::get<1>(get("d", "d")));
  EXPECT_FALSE(std::get<1>(get("b", "b")));  // evicted: compiled again (and evicts the oldest)
  EXPECT_EQ(entries().size(), 3u);
  // A cap below one entry keeps nothing, and jits still work; that is said once per process.
  ScopedEnv none("TESSEL_CACHE_MAX_BYTES", "1");
  auto [e, hitE, errE] = get("e", "e");
  EXPECT_EQ(e.name, "e");
  EXPECT_THAT(entries(), IsEmpty());
  EXPECT_EQ(errE, "tessel: warning: TESSEL_CACHE_MAX_BYTES (1 bytes) is smaller than the entry of kernel 'e'; the "
                  "on-disk cache keeps nothing (raise it, or set TESSEL_DISABLE_CACHE=1)\n");
  EXPECT_EQ(std::get<2>(get("f", "f")), "");
}

TEST_F(DiskCache, ThreadsShareTheCache) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::string key = "key " + std::to_string((t + i) % 3);
        bool hit = false;
        CompiledKernel k = runtime::compileWithDiskCache(key, "src", false, [&] {
          ++compiles;
          return kernelNamed(key);
        }, &hit);
        failures += k.name != key;
      }
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_LE(compiles, 8 * 3);  // at worst every thread compiles each key once before it lands
  EXPECT_EQ(entries().size(), 3u);
  for (const auto& e : entries()) {
    std::string why;
    EXPECT_TRUE(runtime::decodeCacheEntry(readAll(e.path), "", &why)) << why;
  }
  for (const auto& f : fs::directory_iterator(dir.path))
    EXPECT_THAT(f.path().string(), Not(HasSubstr(".tmp."))) << "a temporary file was left behind";
}

TEST_F(DiskCache, ClearRemovesEverything) {
  get("a", "a");
  get("b", "b");
  writeAll(dir.path + "/x.tkc.tmp.abcdef", "a dead writer's temporary file");
  EXPECT_EQ(runtime::clearCache(dir.path), 2u);
  EXPECT_THAT(entries(), IsEmpty());
  EXPECT_FALSE(fs::exists(dir.path + "/x.tkc.tmp.abcdef"));
}

}  // namespace
