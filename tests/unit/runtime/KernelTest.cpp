//===- KernelTest.cpp - kernel_impl, stage_text, GPU availability ----------===//

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"

using namespace tessel;
using namespace tessel::testing;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

TEST(StageText, NamedStagesMapToCompiledKernelFields) {
  CompiledKernel ck = gemmKernel();
  ck.cubin = std::string("\x7f" "ELF\0\1", 6);
  auto k = runtime::makeKernel(ck);
  EXPECT_EQ(detail::stage_text(*k, "ptx"), ck.ptx);
  EXPECT_EQ(detail::stage_text(*k, "ptxas.log"), ck.ptxasLog);
  EXPECT_EQ(detail::stage_text(*k, "cubin"), ck.cubin);
  EXPECT_EQ(detail::stage_text(*k, "cubin").size(), 6u);  // binary, NUL included
}

TEST(StageText, ExactlyTheDocumentedNames) {
  auto k = runtime::makeKernel(gemmKernel());
  EXPECT_EQ(detail::stage_text(*k, "tessel"), "tessel ir");
  EXPECT_EQ(detail::stage_text(*k, "select-schedule"), "scheduled ir");
  EXPECT_EQ(detail::stage_text(*k, "materialize-tile-scheduler"), "tile scheduler");
  EXPECT_EQ(detail::stage_text(*k, "insert-async-copies"), "async copies");
  EXPECT_EQ(detail::stage_text(*k, "warp-specialize"), "roles");
  EXPECT_EQ(detail::stage_text(*k, "schedule-mma"), "mma schedule");
  EXPECT_EQ(detail::stage_text(*k, "lower-epilogue"), "epilogue");
  EXPECT_EQ(detail::stage_text(*k, "allocate-resources"), "resources");
  EXPECT_EQ(detail::stage_text(*k, "lower-to-nvvm"), "hopper ir");
  EXPECT_EQ(detail::stage_text(*k, "convert-hopper-to-nvvm"), "nvvm ir");
  EXPECT_EQ(detail::stage_text(*k, "convert-to-llvm"), "llvm dialect");
  EXPECT_EQ(detail::stage_text(*k, "ll"), "llvm ir");
  EXPECT_EQ(detail::stage_text(*k, "opt.ll"), "optimized llvm ir");
  EXPECT_EQ(detail::stage_text(*k, "12-kernel.ll"), "llvm ir");  // a dump file's name
  EXPECT_EQ(detail::stage_text(*k, "ptx"), detail::stage_text(*k, "gemm.ptx"));  // the dump's <name>.ptx too
}

TEST(StageText, UnknownStageListsTheDocumentedOnes) {
  auto k = runtime::makeKernel(gemmKernel());
  for (const char* bad : {"sched", "scheduled", "hopper", "nvvm", "llvm", "LLVM", "03-llvm.mlir"})
    EXPECT_THAT([&] { detail::stage_text(*k, bad); },
                ThrowsMessage<tessel::error>(::testing::StrEq(
                    std::string("tessel: kernel 'gemm' has no stage '") + bad +
                    "'; stages: tessel, select-schedule, materialize-tile-scheduler, insert-async-copies, "
                    "warp-specialize, schedule-mma, lower-epilogue, allocate-resources, lower-to-nvvm, "
                    "convert-hopper-to-nvvm, convert-to-llvm, ll, opt.ll, ptx, ptxas.log, cubin, sass (or a "
                    "dump file's name)")));
  // No cubin (ptxas was missing): neither cubin nor sass.
  EXPECT_THAT([&] { detail::stage_text(*k, "sass"); },
              ThrowsMessage<tessel::error>(HasSubstr("has no cubin (ptxas was not found when it was compiled)")));
}

TEST(GpuAvailable, GivesAReasonWhenFalse) {
  std::string why;
  bool available = detail::gpu_available(&why);
  if (available) {
    std::printf("GPU available (driver %d, %d device(s))\n", runtime::cudaDriver()->driverVersion,
                runtime::cudaDriver()->deviceCount);
    SUCCEED();
  } else {
    std::printf("no GPU: %s\n", why.c_str());
    EXPECT_FALSE(why.empty());
    // The reason is stable and also reachable without an out-parameter.
    EXPECT_FALSE(detail::gpu_available());
    std::string again;
    detail::gpu_available(&again);
    EXPECT_EQ(again, why);
  }
}

TEST(Launch, ValidatesBeforeTouchingTheGpu) {
  // The validation message comes first, GPU or not.
  auto k = runtime::makeKernel(gemmKernel());
  std::vector<tensor_arg> args = gemmArgs();
  args[0].rank = 1;
  EXPECT_THAT([&] { detail::launch(*k, nullptr, {2, 1, 1}, args); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm' argument 0: expected rank 2, got 1")));
}

TEST(Launch, SaysNoGpuWithoutOne) {
  std::string why;
  if (detail::gpu_available(&why))
    GTEST_SKIP() << "a GPU is available: this test is about machines without one";
  auto k = runtime::makeKernel(gemmKernel());
  std::vector<tensor_arg> args = gemmArgs();
  EXPECT_THAT([&] { detail::launch(*k, nullptr, {2, 1, 1}, args); },
              ThrowsMessage<tessel::error>(
                  AllOf(HasSubstr("tessel: cannot launch kernel 'gemm': no GPU: "), HasSubstr(why))));
}

TEST(CudaErrors, MessagesCarryOperationKernelAndStickiness) {
  EXPECT_THAT([] { runtime::checkCuda(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx", "gemm", "grid (1, 1, 1)"); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: kernel 'gemm': cuLaunchKernelEx failed: "),
                                                 HasSubstr("[grid (1, 1, 1)]"))));
  // A sticky error is recorded for the whole process (later launches fail fast), so this one is
  // raised in a forked child, where it cannot fail the GPU tests that run after it.
  EXPECT_EXIT(
      {
        try {
          runtime::checkCuda(CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamSynchronize", "gemm");
        } catch (const tessel::error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "the CUDA context is now unusable");
  EXPECT_NO_THROW(runtime::checkCuda(CUDA_SUCCESS, "nothing"));
  EXPECT_TRUE(runtime::isStickyCudaError(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_FALSE(runtime::isStickyCudaError(CUDA_ERROR_INVALID_VALUE));
  // With libcuda loaded the text is the driver's name for the error; without
  // it, the number.
  std::string text = runtime::cudaErrorText(CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(text == "CUDA_ERROR_INVALID_VALUE (invalid argument)" || text == "CUDA error 1") << text;
}

// Informational (asserts no time): the host-side work of a launch that takes the full path,
// without its driver calls (which need a GPU): select(), validateArgs, nothingToDo and planParams
// for the GEMM-shaped kernel. A repeated launch with the same arguments skips all of it, and the
// pointer queries and TMA encodes, and compares its arguments instead (Kernel.cpp launchCached).
TEST(Launch, HostSideCostOfTheFullPath) {
  auto kernel = runtime::makeKernel(gemmKernel(), [](const detail::VariantRequest&) -> CompiledKernel {
    throw tessel::error("no variants here");
  });
  std::vector<tensor_arg> args = gemmArgs();
  const grid g{2, 1, 1};
  auto once = [&] {
    detail::LoadedKernel& v = kernel->select(args, g);
    runtime::validateArgs(v.compiled(), args, g);
    if (runtime::nothingToDo(v.compiled(), args, g))
      std::abort();
    return runtime::planParams(v.compiled(), args, g).size();
  };
  std::size_t sink = 0;
  for (int i = 0; i < 1000; ++i)
    sink += once();
  constexpr int n = 20000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    sink += once();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("full launch path, host side without driver calls: %.3f us per launch (%zu)\n", us, sink);
  EXPECT_GT(sink, 0u);
}

}  // namespace
