//===- LaunchErrorMessagesTest.cpp - launch-time argument errors, verbatim -===//
//
// The argument errors of runtime/Validate.cpp that no other test asserted
// (or asserted only in part), each triggered through the public path the DSL
// takes (runtime::makeKernel, then detail::prepare: launch's select and
// validateArgs, without a GPU) and compared with the whole message. The two
// messages no launch can reach are asserted where they are built (see their
// comments). Hand-made kernels (TestSupport.h): no MLIR, no GPU. On a thread
// with a current CUDA context, prepare also loads the kernel's module, which
// these kernels do not have: the fixture's driver reports no current context
// (on a GPU machine an earlier test may have made one current; prepare then
// failed on the hand-made PTX).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"

using namespace tessel;
using namespace tessel::testing;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

namespace {

constexpr grid kGrid{2, 1, 1};

/// A driver on which no CUDA context is current: prepare checks, and loads nothing.
class LaunchErrorMessages : public ::testing::Test {
protected:
  void SetUp() override {
    driver.driverVersion = 13000;
    driver.deviceCount = 1;
    driver.cuCtxGetCurrent = [](CUcontext* c) -> CUresult {
      *c = nullptr;
      return CUDA_SUCCESS;
    };
    runtime::setCudaDriverForTesting(&driver);
  }
  void TearDown() override { runtime::setCudaDriverForTesting(nullptr); }
  runtime::CudaDriver driver;
};

/// detail::prepare on `k` (checked by makeKernel first) with gemmArgs() after `edit`.
template <typename Edit>
void prepareEdited(Edit edit, grid g = kGrid, CompiledKernel k = gemmKernel()) {
  std::vector<tensor_arg> args = gemmArgs();
  edit(args);
  auto kernel = runtime::makeKernel(std::move(k));
  detail::prepare(*kernel, g, args);
}

tensor_arg scalarF(double v) {
  tensor_arg a;
  a.kind = arg_kind::floating;
  a.floating = v;
  return a;
}

/// kernel 'scale'(X: f32 vector, alpha: ts::scalar<f32>, n: ts::scalar<i32>).
CompiledKernel scaleKernel() {
  CompiledKernel k;
  k.name = "scale";
  k.args = {{dtype::f32, 1, false}, {dtype::f32, 0, false}, {dtype::i32, 0, false}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0},
              {ParamSpec::Kind::Size, 0, 0},
              {ParamSpec::Kind::Scalar, 1, 0},
              {ParamSpec::Kind::Scalar, 2, 0}};
  k.ptx = "// not assembled in these tests\n";
  return k;
}

TEST_F(LaunchErrorMessages, AcceptsTheBaseArguments) {
  EXPECT_NO_THROW(prepareEdited([](auto&) {}));
}

TEST_F(LaunchErrorMessages, ArgumentCountOfAOneArgumentKernel) {
  // "argument", not "arguments", for a kernel of one.
  CompiledKernel k;
  k.name = "fill";
  k.args = {{dtype::f32, 1, false}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}, {ParamSpec::Kind::Size, 0, 0}};
  k.ptx = "// not assembled in these tests\n";
  auto kernel = runtime::makeKernel(k);
  const tensor_arg x = tensor1d(dtype::f32, fakeAddress(0x7f0000100000), 64);
  std::vector<tensor_arg> two = {x, x};
  EXPECT_THAT([&] { detail::prepare(*kernel, kGrid, two); },
              ThrowsMessage<tessel::error>(StrEq("tessel: kernel 'fill': expected 1 argument, got 2")));
  std::vector<tensor_arg> one = {x};
  EXPECT_NO_THROW(detail::prepare(*kernel, kGrid, one));
}

TEST_F(LaunchErrorMessages, TensorForAnI32Scalar) {
  auto kernel = runtime::makeKernel(scaleKernel());
  const tensor_arg x = tensor1d(dtype::f32, fakeAddress(0x7f0000100000), 64);
  std::vector<tensor_arg> args = {x, scalarF(1.5), x};
  EXPECT_THAT([&] { detail::prepare(*kernel, kGrid, args); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'scale' argument 2: expected a scalar value for ts::scalar<ts::i32>, got a tensor; "
                  "pass an integer (3) or ts::value(n)")));
}

TEST_F(LaunchErrorMessages, StrideBelowOne) {
  EXPECT_THAT([] { prepareEdited([](auto& a) { a[2].strides[0] = 0; }); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 2: stride of dimension 0 is 0; strides must be >= 1 (only "
                  "dimensions of size 1 may have any stride)")));
}

TEST_F(LaunchErrorMessages, PointerNotAlignedToItsElement) {
  EXPECT_THAT([] { prepareEdited([](auto& a) { a[2].data = fakeAddress(0x7f0000300002); }); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 2: data address 0x7f0000300002 is not aligned to its element "
                  "size (4 bytes)")));
}

TEST_F(LaunchErrorMessages, ExtentOverflow) {
  EXPECT_THAT([] {
    prepareEdited([](auto& a) {
      a[2].sizes = {std::int64_t(1) << 30, 128, 0};
      a[2].strides = {std::int64_t(1) << 40, 1, 0};
    });
  },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 2: the tensor spans more than 2^63 bytes (sizes x strides "
                  "overflow)")));
}

TEST_F(LaunchErrorMessages, GridNotAMultipleOfTheCluster) {
  CompiledKernel k = gemmKernel();
  k.cluster = {1, 2, 1};
  EXPECT_THAT([&] { prepareEdited([](auto&) {}, {2, 3, 1}, k); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm': grid (2, 3, 1): grid.y = 3 is not a multiple of the cluster extent 2 "
                  "(the kernel was compiled for cluster (1, 2, 1))")));
}

TEST_F(LaunchErrorMessages, SizeContractWithoutSourcePositions) {
  CompiledKernel k = gemmKernel();
  k.sizeContracts = {{0, 1, 1, 0, "", ""}};  // A's K and B's K; no source positions
  EXPECT_THAT([&] { prepareEdited([](auto& a) { a[1].sizes[0] = 384; }, kGrid, k); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm': argument 1 dimension 0 has size 384 but argument 0 dimension 1 has size "
                  "512; they must be equal: the program reads or writes both at the same offsets with the same "
                  "tile extent")));
}

TEST_F(LaunchErrorMessages, TmaStrideBelow2To40) {
  EXPECT_THAT([] {
    prepareEdited([](auto& a) {
      a[0].sizes = {2, 512, 0};
      a[0].strides = {std::int64_t(1) << 39, 1, 0};  // 2^40 bytes of bf16
    });
  },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 0: stride of dimension 0 is 1099511627776 bytes; TMA requires "
                  "strides below 2^40 bytes")));
}

TEST_F(LaunchErrorMessages, TmaOperandWithoutAUnitStrideDimension) {
  // Every other element of A: no fallback without a variant compiler, so validateArgs decides.
  EXPECT_THAT([] { prepareEdited([](auto& a) { a[0].strides = {2 * 512, 2, 0}; }); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 0: innermost stride (dimension 1) must be 1, got 2: the innermost "
                  "dimension must be contiguous for TMA (no dimension of size > 1 has stride 1: only pointer loads "
                  "with the real strides, as in schedule multistage, can read this tensor)")));
}

TEST_F(LaunchErrorMessages, TmaContiguousDimensionOfAnMNMajorKernel) {
  // A kernel compiled for a column-major A (its TMA descriptor takes dimension 0 as the
  // contiguous one) given a row-major A.
  CompiledKernel k = gemmKernel();
  k.params[0].contiguousDim = 0;
  EXPECT_THAT([&] { prepareEdited([](auto&) {}, kGrid, k); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 0: stride of dimension 0 must be 1, got 512: the kernel's TMA "
                  "loads take dimension 0 as the contiguous one")));
  // The column-major A it was compiled for passes.
  EXPECT_NO_THROW(prepareEdited(
      [](auto& a) { a[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256); }, kGrid, k));
}

TEST_F(LaunchErrorMessages, TmaLoadedArgumentOfADtypeTmaCannotAddress) {
  // makeKernel checks dtypes only for TMA descriptor parameters: an argument marked loadedByTma
  // without one (malformed compiler output) reaches the launch-time rule.
  CompiledKernel k;
  k.name = "mask";
  k.args = {{dtype::i1, 1, true}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}, {ParamSpec::Kind::Size, 0, 0}};
  k.ptx = "// not assembled in these tests\n";
  auto kernel = runtime::makeKernel(k);
  std::vector<tensor_arg> args = {tensor1d(dtype::i1, fakeAddress(0x7f0000100000), 64)};
  EXPECT_THAT([&] { detail::prepare(*kernel, kGrid, args); },
              ThrowsMessage<tessel::error>(StrEq("tessel: kernel 'mask' argument 0: TMA cannot address i1 tensors")));
}

// ---- Messages no launch reaches: asserted where they are built -------------

TEST_F(LaunchErrorMessages, RankOutsideOneToThreeNeedsAnUncheckedKernel) {
  // makeKernel rejects a rank-4 argument ("tensors have rank 1..3"), so only validateArgs on an
  // unchecked CompiledKernel gets here; the rank is rejected before any size is read.
  CompiledKernel k = gemmKernel();
  k.args[2].rank = 4;
  std::vector<tensor_arg> args = gemmArgs();
  args[2].rank = 4;
  EXPECT_THAT([&] { runtime::validateArgs(k, args, kGrid); },
              ThrowsMessage<tessel::error>(StrEq("tessel: kernel 'gemm' argument 2: rank 4 is outside 1..3")));
}

TEST_F(LaunchErrorMessages, TmaSizeLimitIsBehindTheCommonSizeLimit) {
  // validateCommonArgs rejects a dimension of 2^31 elements first (ValidateTest
  // DimensionsAtMost2To31Minus1), so findTmaViolation's own message shows only to its callers.
  std::vector<tensor_arg> args = gemmArgs();
  args[1].sizes = {1, std::int64_t(1) << 31, 0};
  args[1].strides = {std::int64_t(1) << 31, 1, 0};
  std::optional<runtime::TmaViolation> v = runtime::findTmaViolation(gemmKernel(), args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->arg, 1);
  EXPECT_EQ(v->rule, "size-limit");
  EXPECT_EQ(v->message, "size of dimension 1 is 2147483648; TMA allows at most 2^31 - 1 elements per dimension");
  auto kernel = runtime::makeKernel(gemmKernel());
  EXPECT_THAT([&] { detail::prepare(*kernel, kGrid, args); },
              ThrowsMessage<tessel::error>(StrEq(
                  "tessel: kernel 'gemm' argument 1: size of dimension 1 is 2147483648; tessel kernels index each "
                  "dimension with 32-bit integers: at most 2^31 - 1 = 2147483647 elements per dimension (the "
                  "whole tensor may be larger)")));
}

}  // namespace
