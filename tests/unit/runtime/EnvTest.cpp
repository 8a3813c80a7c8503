//===- EnvTest.cpp - knobs, atomic writes and stage dumps ------------------===//

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Env.h"
#include "temp_dir.hpp"

using namespace tessel;
using namespace tessel::testing;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::ThrowsMessage;
using ::testing::UnorderedElementsAre;

namespace {

struct TempDir : tessel_test::temp_dir {
  TempDir() : temp_dir("tessel-env-test") {}
};

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  return names;
}

TEST(Knobs, FlagSyntax) {
  for (const char* off : {"", "0", "false", "FALSE", "no", "Off"})
    EXPECT_FALSE(runtime::parseFlag(off)) << off;
  for (const char* on : {"1", "true", "yes", "on", "2", "anything"})
    EXPECT_TRUE(runtime::parseFlag(on)) << on;
}

TEST(Knobs, ReadFromTheEnvironmentAtEachCall) {
  ScopedEnv dump("TESSEL_DUMP_DIR", "/tmp/dumps");
  ScopedEnv cache("TESSEL_CACHE_DIR", "/tmp/cache");
  ScopedEnv disable("TESSEL_DISABLE_CACHE", "1");
  ScopedEnv debug("TESSEL_DEBUG", "0");
  ScopedEnv verbose("TESSEL_VERBOSE", "yes");
  ScopedEnv ptxas("TESSEL_PTXAS", "/opt/ptxas");
  runtime::Knobs k = runtime::knobs();
  EXPECT_EQ(k.dumpDir, "/tmp/dumps");
  EXPECT_EQ(k.cacheDir, "/tmp/cache");
  EXPECT_TRUE(k.disableCache);
  EXPECT_FALSE(k.debug);
  EXPECT_TRUE(k.verbose);
  EXPECT_EQ(k.ptxas, "/opt/ptxas");
  {
    ScopedEnv debugOn("TESSEL_DEBUG", "1");
    EXPECT_TRUE(runtime::knobs().debug);
  }
  EXPECT_FALSE(runtime::knobs().debug);
}

TEST(Knobs, CacheDirDefaults) {
  ScopedEnv cache("TESSEL_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(runtime::knobs().cacheDir, "/xdg/tessel");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(runtime::knobs().cacheDir, "/home/u/.cache/tessel");
}

TEST(Knobs, UnknownTesselVariablesAreReported) {
  ScopedEnv typo("TESSEL_DEBGU", "1");
  ScopedEnv known("TESSEL_DEBUG", "1");
  std::vector<std::string> unknown = runtime::unknownKnobs();
  EXPECT_THAT(unknown, Contains("TESSEL_DEBGU"));
  EXPECT_THAT(unknown, Not(Contains("TESSEL_DEBUG")));
}

TEST(WriteFileAtomic, WritesBinaryAndReplaces) {
  TempDir tmp;
  std::string path = tmp.path + "/f.bin";
  std::string data("a\0b\xff", 4);
  runtime::writeFileAtomic(path, data);
  EXPECT_EQ(readAll(path), data);
  runtime::writeFileAtomic(path, "second");
  EXPECT_EQ(readAll(path), "second");
  EXPECT_THAT(listDir(tmp.path), UnorderedElementsAre("f.bin"));  // no temporaries left
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(WriteFileAtomic, FailureNamesThePath) {
  EXPECT_THAT([] { runtime::writeFileAtomic("/nonexistent-dir/x/f.txt", "x"); },
              ThrowsMessage<tessel::error>(HasSubstr("'/nonexistent-dir/x/f.txt'")));
}

TEST(WriteStages, WritesEveryStagePtxCubinAndLog) {
  TempDir tmp;
  std::string dir = tmp.path + "/nested/dump";  // created recursively
  CompiledKernel k = gemmKernel();
  k.ptx = ".version 8.0\n// ptx";
  k.cubin = std::string("\x7f" "ELF\0\0\1binary", 13);
  k.stages.push_back({"sub/dir.txt", "slash"});
  runtime::writeStages(dir, k);

  EXPECT_THAT(listDir(dir),
              UnorderedElementsAre("01-tessel.mlir", "02-select-schedule.mlir",
                                   "03-materialize-tile-scheduler.mlir", "04-insert-async-copies.mlir",
                                   "05-warp-specialize.mlir", "06-schedule-mma.mlir", "07-lower-epilogue.mlir",
                                   "08-allocate-resources.mlir", "09-lower-to-nvvm.mlir", "10-convert-hopper-to-nvvm.mlir", "11-convert-to-llvm.mlir",
                                   "12-kernel.ll", "13-kernel.opt.ll", "sub_dir.txt", "gemm.ptx", "gemm.cubin", "ptxas.log"));
  EXPECT_EQ(readAll(dir + "/01-tessel.mlir"), "tessel ir");
  EXPECT_EQ(readAll(dir + "/12-kernel.ll"), "llvm ir");
  EXPECT_EQ(readAll(dir + "/sub_dir.txt"), "slash");
  EXPECT_EQ(readAll(dir + "/gemm.ptx"), k.ptx);
  EXPECT_EQ(readAll(dir + "/gemm.cubin"), k.cubin);
  EXPECT_EQ(readAll(dir + "/ptxas.log"), k.ptxasLog);

  // Again, into the existing directory: files are replaced.
  k.ptx = "changed";
  runtime::writeStages(dir, k);
  EXPECT_EQ(readAll(dir + "/gemm.ptx"), "changed");
}

TEST(WriteStages, NoCubinFileWithoutACubin) {
  TempDir tmp;
  CompiledKernel k = gemmKernel();
  k.cubin.clear();
  runtime::writeStages(tmp.path, k);
  EXPECT_FALSE(std::filesystem::exists(tmp.path + "/gemm.cubin"));
  EXPECT_TRUE(std::filesystem::exists(tmp.path + "/gemm.ptx"));
}

TEST(WriteStages, UnwritableDirectoryIsAnError) {
  TempDir tmp;
  std::string file = tmp.path + "/plain-file";
  runtime::writeFileAtomic(file, "x");
  EXPECT_THAT([&] { runtime::writeStages(file + "/dump", gemmKernel()); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: cannot create directory '" + file + "/dump'")));
}

}  // namespace

// After a sticky fault every launch fails fast with the first fault's message. The record is
// process-wide and permanent, so the check runs in a forked child (a death test).
TEST(StickyFault, LaterLaunchesFailFastWithTheFirstMessage) {
  EXPECT_EXIT(
      {
        tessel::runtime::recordStickyFault("tessel: kernel 'a': cuLaunchKernelEx failed: CUDA_ERROR_ILLEGAL_ADDRESS");
        tessel::runtime::recordStickyFault("tessel: kernel 'b': a later fault is not the reason");
        try {
          tessel::runtime::throwIfContextFaulted("c");
        } catch (const tessel::error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0),
      "tessel: kernel 'c' not launched: the CUDA context is unusable since an earlier fault \\(tessel: "
      "kernel 'a': cuLaunchKernelEx failed: CUDA_ERROR_ILLEGAL_ADDRESS\\)");
  EXPECT_NO_THROW(tessel::runtime::throwIfContextFaulted("d"));  // this process had none
}
