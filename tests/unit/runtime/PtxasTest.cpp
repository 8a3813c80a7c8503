//===- PtxasTest.cpp - running ptxas and reading its log -------------------===//
//
// The compile tests run the real ptxas on hand-written sm_90a PTX and skip,
// with the reason, where there is none. The parser is also checked on logs
// with the shapes ptxas prints for several functions, spills and the C75xx
// performance warnings.
//
//===----------------------------------------------------------------------===//

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/Ptxas.h"

using namespace tessel;
using namespace tessel::testing;
using runtime::compilePtxToCubin;
using runtime::parsePtxasLog;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

#define REQUIRE_PTXAS()                                                      \
  do {                                                                       \
    std::string where;                                                       \
    if (!runtime::ptxasAvailable(&where))                                    \
      GTEST_SKIP() << "ptxas not found (" << where << ")";                   \
  } while (0)

TEST(Ptxas, CompilesAKernelAndReportsRegisters) {
  REQUIRE_PTXAS();
  std::string log;
  std::string cubin = compilePtxToCubin(kAddOnePtx, "sm_90a", &log);
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_THAT(log, HasSubstr("Compiling entry function 'add_one' for 'sm_90a'"));

  runtime::PtxasReport r = parsePtxasLog(log, "add_one");
  EXPECT_GT(r.registers, 0);
  EXPECT_THAT(log, HasSubstr("Used " + std::to_string(r.registers) + " registers"));
  EXPECT_EQ(r.spillStores, 0);
  EXPECT_EQ(r.spillLoads, 0);
  EXPECT_FALSE(r.setmaxnregIgnored);
  EXPECT_FALSE(r.wgmmaSerialized);
  // Without a kernel name the figures are aggregated; one function here.
  EXPECT_EQ(parsePtxasLog(log).registers, r.registers);
}

TEST(Ptxas, ReportsIgnoredSetmaxnreg) {
  REQUIRE_PTXAS();
  std::string log;
  compilePtxToCubin(kSetmaxnregPtx, "sm_90a", &log);
  runtime::PtxasReport r = parsePtxasLog(log, "ws");
  EXPECT_TRUE(r.setmaxnregIgnored) << log;
  EXPECT_THAT(r.codes, Contains("C7508"));
  EXPECT_FALSE(r.wgmmaSerialized);
}

TEST(Ptxas, FailureCarriesTheLogAndKernelName) {
  REQUIRE_PTXAS();
  std::string bad = kAddOnePtx;
  bad.replace(bad.find("add.f32"), 7, "add.q32");
  std::string log;
  EXPECT_THAT([&] { compilePtxToCubin(bad, "sm_90a", &log); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: ptxas failed with exit code"),
                                                 HasSubstr("for kernel 'add_one'"), HasSubstr("'.q32'"))));
  EXPECT_THAT(log, HasSubstr("error"));
}

TEST(Ptxas, ExplicitPathIsHonouredAndNotSilentlySkipped) {
  std::string real;
  bool have = runtime::ptxasAvailable(&real);
  {
    ScopedEnv env("TESSEL_PTXAS", "/nonexistent/ptxas");
    std::string where;
    EXPECT_FALSE(runtime::ptxasAvailable(&where));
    EXPECT_THAT(where, HasSubstr("$TESSEL_PTXAS=/nonexistent/ptxas is not an executable file"));
    EXPECT_THAT([] { compilePtxToCubin(kAddOnePtx, "sm_90a", nullptr); },
                ThrowsMessage<tessel::error>(HasSubstr("tessel: ptxas not found ($TESSEL_PTXAS=/nonexistent/ptxas")));
  }
  if (!have)
    GTEST_SKIP() << "ptxas not found (" << real << ")";
  ScopedEnv env("TESSEL_PTXAS", real);
  std::string where;
  EXPECT_TRUE(runtime::ptxasAvailable(&where));
  EXPECT_EQ(where, real);
  EXPECT_FALSE(compilePtxToCubin(kAddOnePtx, "sm_90a", nullptr).empty());
}

/// A directory holding a symlink "ptxas" to the real one, removed afterwards.
struct FakeToolkit {
  std::string root;
  explicit FakeToolkit(const std::string& real) {
    char tmpl[] = "/tmp/tessel-ptxas-XXXXXX";
    root = mkdtemp(tmpl);
    mkdir((root + "/bin").c_str(), 0755);
    EXPECT_EQ(symlink(real.c_str(), (root + "/bin/ptxas").c_str()), 0);
  }
  ~FakeToolkit() {
    unlink((root + "/bin/ptxas").c_str());
    rmdir((root + "/bin").c_str());
    rmdir(root.c_str());
  }
};

TEST(Ptxas, LookupOrder) {
  std::string real;
  if (!runtime::ptxasAvailable(&real))
    GTEST_SKIP() << "ptxas not found (" << real << ")";
  FakeToolkit fake(real);
  ScopedEnv noExplicit("TESSEL_PTXAS", std::nullopt);
  std::string where;
  {
    // $CUDA_HOME comes before $CUDA_PATH and /usr/local/cuda.
    ScopedEnv home("CUDA_HOME", fake.root);
    ScopedEnv path("CUDA_PATH", "/nonexistent-cuda");
    ASSERT_TRUE(runtime::ptxasAvailable(&where));
    EXPECT_EQ(where, fake.root + "/bin/ptxas");
  }
  {
    ScopedEnv home("CUDA_HOME", "/nonexistent-cuda");
    ScopedEnv path("CUDA_PATH", fake.root);
    ASSERT_TRUE(runtime::ptxasAvailable(&where));
    EXPECT_EQ(where, fake.root + "/bin/ptxas");
  }
  {
    // Then /usr/local/cuda, then PATH.
    ScopedEnv home("CUDA_HOME", std::nullopt);
    ScopedEnv path("CUDA_PATH", std::nullopt);
    ScopedEnv pathVar("PATH", "/nonexistent-bin:" + fake.root + "/bin");
    ASSERT_TRUE(runtime::ptxasAvailable(&where));
    bool haveDefault = access("/usr/local/cuda/bin/ptxas", X_OK) == 0;
    EXPECT_EQ(where, haveDefault ? std::string("/usr/local/cuda/bin/ptxas") : fake.root + "/bin/ptxas");
  }
}

TEST(Ptxas, Version) {
  REQUIRE_PTXAS();
  EXPECT_THAT(runtime::ptxasVersion(), AllOf(HasSubstr("release"), HasSubstr("Build")));
}

TEST(PtxasLog, PerFunctionFiguresAndAggregates) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
      "ptxas info    : Function properties for gemm\n"
      "    8 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
      "ptxas warning : Registers are spilled to local memory in function 'gemm', 24 bytes spill stores, "
      "16 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 16 bytes smem\n"
      "ptxas info    : Compiling entry function 'small' for 'sm_90a'\n"
      "ptxas info    : Function properties for small\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers, 368 bytes cmem[0]\n";
  runtime::PtxasReport g = parsePtxasLog(log, "gemm");
  EXPECT_EQ(g.registers, 168);
  EXPECT_EQ(g.spillStores, 24);  // not doubled by the --warn-on-spills line
  EXPECT_EQ(g.spillLoads, 16);
  EXPECT_EQ(g.stackFrame, 8);
  runtime::PtxasReport s = parsePtxasLog(log, "small");
  EXPECT_EQ(s.registers, 32);
  EXPECT_EQ(s.spillStores, 0);
  runtime::PtxasReport all = parsePtxasLog(log);
  EXPECT_EQ(all.registers, 168);
  EXPECT_EQ(all.spillStores, 24);
  // An unknown kernel name falls back to the aggregate.
  EXPECT_EQ(parsePtxasLog(log, "other").registers, 168);
  EXPECT_EQ(parsePtxasLog("").registers, -1);
}

TEST(PtxasLog, PerformanceWarnings) {
  runtime::PtxasReport r = parsePtxasLog(
      "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register "
      "count at entry.\n"
      "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
      "the presence of Extern calls in the function 'k'.\n");
  EXPECT_TRUE(r.setmaxnregIgnored);
  EXPECT_TRUE(r.wgmmaSerialized);
  EXPECT_THAT(r.codes, ::testing::ElementsAre("C7508", "C7515"));

  runtime::PtxasReport r14 = parsePtxasLog(
      "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
      "non wgmma instructions defining accumulator registers of a wgmma between start and end of the "
      "pipeline stage in the function 'k'\n");
  EXPECT_TRUE(r14.wgmmaSerialized);
  EXPECT_FALSE(r14.setmaxnregIgnored);

  runtime::PtxasReport other = parsePtxasLog("ptxas info    : (C7517) wait injected\n");
  EXPECT_FALSE(other.wgmmaSerialized);
  EXPECT_THAT(other.codes, ::testing::ElementsAre("C7517"));
}

}  // namespace
