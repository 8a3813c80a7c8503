//===- VariantTest.cpp - layout keys, variant selection, the TMA fallback --===//
//
// Everything here runs without a GPU and without MLIR: kernel_impl::select is
// given a fake VariantCompiler that records what it was asked for and returns
// hand-made CompiledKernels shaped like the real ones (a `tma` GEMM whose A and
// B are TMA-loaded, its `multistage` fallback that reads everything through
// pointers with the real strides).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "TestSupport.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"

using namespace tessel;
using namespace tessel::testing;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::ThrowsMessage;

namespace {

using runtime::contiguousDimOf;
using runtime::layoutKey;
using runtime::variantTag;

//===----------------------------------------------------------------------===//
// Layout keys
//===----------------------------------------------------------------------===//

TEST(LayoutKey, RowMajorIsTheDefault) {
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 256, 512, 512, 1)), 1);
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 256, 512, 520, 1)), 1);  // padded rows
  EXPECT_THAT(layoutKey(gemmArgs()), ElementsAre(-1, -1, -1));
  EXPECT_TRUE(runtime::isDefaultLayout(layoutKey(gemmArgs())));
}

TEST(LayoutKey, ColumnMajorIsDimensionZero) {
  tensor_arg a = tensor2d(dtype::bf16, nullptr, 256, 512, 1, 256);
  EXPECT_EQ(contiguousDimOf(a), 0);
  std::vector<tensor_arg> args = gemmArgs();
  args[2] = tensor2d(dtype::f32, nullptr, 256, 128, 1, 300);  // column-major C, padded
  EXPECT_THAT(layoutKey(args), ElementsAre(-1, -1, 0));
  EXPECT_FALSE(runtime::isDefaultLayout(layoutKey(args)));
}

TEST(LayoutKey, SizeOneDimensionsDoNotCount) {
  // A single column whose rows are adjacent (column-major M x 1) is contiguous along its rows:
  // the default layout would see a row stride of 2 bytes and fall back to multistage (issue 11).
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 256, 1, 1, 77)), 0);
  // A single column of a row-major matrix (rows 8 apart): the last dimension's stride is free.
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 256, 1, 8, 1)), 1);
  // A single row with a contiguous last dimension; the outer stride is free.
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 1, 512, 0, 1)), 1);
  // A single row read with a stride: no unit-stride dimension of size > 1.
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 1, 512, 1, 3)), -1);
  // One element: anything goes, default.
  EXPECT_EQ(contiguousDimOf(tensor2d(dtype::bf16, nullptr, 1, 1, 5, 9)), 1);
  // Rank 3, dimension 1 contiguous, the batch of size 1 with a stride of 1 that does not count.
  tensor_arg b;
  b.type = dtype::bf16;
  b.rank = 3;
  b.sizes = {1, 64, 32};
  b.strides = {1, 1, 64};
  EXPECT_EQ(contiguousDimOf(b), 1);
  b.sizes = {4, 64, 32};
  b.strides = {64 * 32, 1, 64};
  EXPECT_EQ(contiguousDimOf(b), 1);
  EXPECT_THAT(layoutKey(std::vector<tensor_arg>{b}), ElementsAre(1));
}

TEST(LayoutKey, NoUnitStrideDimension) {
  // Every other element of a row-major matrix: no dimension has stride 1.
  tensor_arg a = tensor2d(dtype::bf16, nullptr, 256, 512, 2 * 512, 2);
  EXPECT_EQ(contiguousDimOf(a), -1);
  // The key keeps the default: only pointer paths can read it, whatever the attribute says.
  EXPECT_THAT(layoutKey(std::vector<tensor_arg>{a}), ElementsAre(-1));
}

TEST(LayoutKey, OneDimensionalTensorsNeverNeedAVariant) {
  EXPECT_EQ(contiguousDimOf(tensor1d(dtype::bf16, nullptr, 128, 1)), 0);
  EXPECT_EQ(contiguousDimOf(tensor1d(dtype::bf16, nullptr, 128, 4)), -1);
  EXPECT_THAT(layoutKey(std::vector<tensor_arg>{tensor1d(dtype::bf16, nullptr, 128, 4)}), ElementsAre(-1));
}

TEST(LayoutKey, VariantTags) {
  EXPECT_EQ(variantTag("tma", {-1, -1, -1}), "tma");
  EXPECT_EQ(variantTag("multistage", {-1, -1, -1}), "multistage");
  EXPECT_EQ(variantTag("tma", {0, -1, -1}), "tma-L0__");
  EXPECT_EQ(variantTag("multistage", {-1, 0, 1}), "multistage-L_01");
  EXPECT_EQ(variantTag("", {0}), "kernel-L0");
}

//===----------------------------------------------------------------------===//
// TMA rules along the contiguous dimension, and the encoding
//===----------------------------------------------------------------------===//

TEST(TmaViolation, NoneForValidArguments) {
  EXPECT_EQ(runtime::findTmaViolation(gemmKernel(), gemmArgs()), std::nullopt);
}

TEST(TmaViolation, NamesTheArgumentAndTheRule) {
  std::vector<tensor_arg> args = gemmArgs();
  args[1].data = fakeAddress(0x7f0000200002);  // element-aligned, not 16-byte aligned
  auto v = runtime::findTmaViolation(gemmKernel(), args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->arg, 1);
  EXPECT_EQ(v->rule, "base-alignment");
  EXPECT_THAT(v->message, HasSubstr("data address 0x7f0000200002 is not 16-byte aligned"));

  args = gemmArgs();
  args[0].strides[0] = 511;  // K odd: rows are not 16-byte multiples
  v = runtime::findTmaViolation(gemmKernel(), args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->arg, 0);
  EXPECT_EQ(v->rule, "stride-multiple");
  EXPECT_THAT(v->message, HasSubstr("stride of dimension 0 is 511 elements = 1022 bytes, not a multiple of 16"));

  args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256);  // column-major
  v = runtime::findTmaViolation(gemmKernel(), args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "unit-stride");
  EXPECT_THAT(v->message, HasSubstr("innermost stride (dimension 1) must be 1, got 256"));

  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 2048, 2);  // no unit stride
  v = runtime::findTmaViolation(gemmKernel(), args);
  ASSERT_TRUE(v);
  EXPECT_THAT(v->message, HasSubstr("no dimension of size > 1 has stride 1"));
}

TEST(TmaViolation, EmptyArgumentsAndPointerArgumentsAreNotChecked) {
  std::vector<tensor_arg> args = gemmArgs();
  args[2].data = fakeAddress(0x7f0000300004);  // C is not TMA-loaded
  EXPECT_EQ(runtime::findTmaViolation(gemmKernel(), args), std::nullopt);
  args = gemmArgs();
  args[0].sizes[0] = 0;
  args[0].data = fakeAddress(0x7f0000100002);
  EXPECT_EQ(runtime::findTmaViolation(gemmKernel(), args), std::nullopt);
}

TEST(TmaViolation, FollowsTheContiguousDimensionTheKernelWasBuiltFor) {
  CompiledKernel k = gemmKernel();
  k.params[0].contiguousDim = 0;
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256);  // M x K, M contiguous
  EXPECT_EQ(runtime::findTmaViolation(k, args), std::nullopt);
  EXPECT_NO_THROW(runtime::validateArgs(k, args, {2, 1, 1}));
  args[0].strides[1] = 260;  // 520 bytes: not a multiple of 16
  auto v = runtime::findTmaViolation(k, args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "stride-multiple");
  EXPECT_THAT(v->message, HasSubstr("stride of dimension 1 is 260 elements"));
  args = gemmArgs();  // row-major A for a kernel built for column-major A
  v = runtime::findTmaViolation(k, args);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "unit-stride");
  EXPECT_THAT(v->message, HasSubstr("stride of dimension 0 must be 1, got 512: the kernel's TMA loads take "
                                    "dimension 0 as the contiguous one"));
}

TEST(TmaEncoding, ContiguousDimensionIsInnermost) {
  CompiledKernel k = gemmKernel();
  k.params[0].contiguousDim = 0;
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 264);
  std::vector<runtime::ParamValue> plan = runtime::planParams(k, args);
  const runtime::TmaEncoding& e = plan[0].tma;
  EXPECT_EQ(e.globalDim[0], 256u);  // M, the contiguous dimension, first
  EXPECT_EQ(e.globalDim[1], 512u);
  EXPECT_EQ(e.globalStrides[0], 264u * 2);
  EXPECT_EQ(e.boxDim[0], 64u);  // box[0] runs along M now
}

//===----------------------------------------------------------------------===//
// kernel_impl::select
//===----------------------------------------------------------------------===//

/// gemm(A, B, C) like gemmKernel(), but C gets both strides (as the lowering gives them) and the
/// schedule is recorded.
CompiledKernel tmaGemm() {
  CompiledKernel k = gemmKernel();
  k.schedule = "tma";
  k.params.push_back({ParamSpec::Kind::Stride, 2, 1});
  return k;
}

/// The multistage build of the same kernel (TestSupport.h).
CompiledKernel multistageGemm() { return multistageGemmKernel(); }

/// A VariantCompiler that records its requests. `honourLayouts`: a layout variant's TMA
/// descriptors take the requested dimension as innermost (as the lowering will once it reads
/// tessel.contiguous_dim); otherwise the attribute is ignored, as today.
struct FakeCompiler {
  bool honourLayouts = false;
  std::string failMultistage;  ///< non-empty: compiling multistage throws this
  std::string failLayout;      ///< non-empty: compiling a layout variant of the kernel's schedule throws this
  std::mutex mutex;
  std::vector<detail::VariantRequest> requests;
  std::atomic<int> compiles{0};

  detail::VariantCompiler get() {
    return [this](const detail::VariantRequest& r) {
      ++compiles;
      {
        std::lock_guard<std::mutex> lock(mutex);
        requests.push_back(r);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let concurrent launches pile up
      if (r.multistage && !failMultistage.empty())
        throw tessel::error(failMultistage);
      if (!r.multistage && !failLayout.empty())
        throw tessel::error(failLayout);
      CompiledKernel k = r.multistage ? multistageGemm() : tmaGemm();
      k.variant = r.tag;
      if (!r.multistage && honourLayouts)
        for (ParamSpec& p : k.params)
          if (p.kind == ParamSpec::Kind::TmaDescriptor && r.contiguousDims[p.arg] >= 0)
            p.contiguousDim = r.contiguousDims[p.arg];
      return k;
    };
  }
  std::vector<std::string> tags() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> t;
    for (const auto& r : requests)
      t.push_back(r.tag);
    return t;
  }
};

constexpr grid kGrid{2, 1, 1};

class Select : public ::testing::Test {
protected:
  ScopedEnv fallback{"TESSEL_FALLBACK", std::nullopt};
  ScopedEnv verbose{"TESSEL_VERBOSE", std::nullopt};
  FakeCompiler compiler;
  std::shared_ptr<detail::kernel_impl> kernel = runtime::makeKernel(tmaGemm(), compiler.get());

  /// select() with stderr captured into `err`.
  detail::LoadedKernel& select(const std::vector<tensor_arg>& args, std::string& err) {
    ::testing::internal::CaptureStderr();
    try {
      detail::LoadedKernel& v = kernel->select(args, kGrid);
      err = ::testing::internal::GetCapturedStderr();
      return v;
    } catch (...) {
      err = ::testing::internal::GetCapturedStderr();
      throw;
    }
  }
};

TEST_F(Select, DefaultLayoutAndTmaRulesMetLaunchesThePrimary) {
  std::string err;
  detail::LoadedKernel& v = select(gemmArgs(), err);
  EXPECT_EQ(&v.compiled(), &kernel->compiled());
  EXPECT_EQ(compiler.compiles, 0);
  EXPECT_EQ(err, "");
}

TEST_F(Select, MisalignedBaseFallsBackToMultistageWithOneNote) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);  // A one bf16 element past a 16-byte boundary
  std::string err;
  detail::LoadedKernel& v = select(args, err);
  EXPECT_EQ(v.compiled().schedule, "multistage");
  EXPECT_EQ(v.compiled().variant, "multistage");
  EXPECT_THAT(compiler.tags(), ElementsAre("multistage"));
  EXPECT_TRUE(compiler.requests[0].multistage);
  EXPECT_EQ(err,
            "tessel: note: kernel 'gemm' (schedule tma) argument 0: data address 0x7f0000100002 is not 16-byte "
            "aligned (TMA requires a 16-byte aligned base address); launching the schedule multistage variant "
            "instead (TESSEL_FALLBACK=quiet silences this note, TESSEL_FALLBACK=error makes it an error)\n");
  // The chosen variant passes the full validation.
  EXPECT_NO_THROW(runtime::validateArgs(v.compiled(), args, kGrid));

  // Again (another misaligned address, same rule): same variant, no compile, no note.
  args[0].data = fakeAddress(0x7f0000100006);
  detail::LoadedKernel& again = select(args, err);
  EXPECT_EQ(&again, &v);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(err, "");

  // Another reason (B's rows not 16-byte multiples: K odd): a new note, the same variant.
  args = gemmArgs();
  args[1].strides[0] = 127;
  args[1].sizes[1] = 127;
  detail::LoadedKernel& third = select(args, err);
  EXPECT_EQ(&third, &v);
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_THAT(err, AllOf(HasSubstr("tessel: note: kernel 'gemm' (schedule tma) argument 1: stride of "
                                   "dimension 0 is 127 elements = 254 bytes, not a multiple of 16 bytes"),
                         HasSubstr("launching the schedule multistage variant instead")));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);  // one line

  // Aligned arguments still get the TMA kernel.
  EXPECT_EQ(&select(gemmArgs(), err).compiled(), &kernel->compiled());
  EXPECT_THAT(kernel->variantTags(), ElementsAre("multistage"));
}

TEST_F(Select, QuietFallsBackSilently) {
  ScopedEnv quiet{"TESSEL_FALLBACK", "quiet"};
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);
  std::string err;
  EXPECT_EQ(select(args, err).compiled().schedule, "multistage");
  EXPECT_EQ(err, "");
}

TEST_F(Select, ErrorPolicyThrowsNamingTheArgumentAndTheRule) {
  ScopedEnv error{"TESSEL_FALLBACK", "error"};
  std::vector<tensor_arg> args = gemmArgs();
  args[1].data = fakeAddress(0x7f0000200008);
  EXPECT_THAT([&] { kernel->select(args, kGrid); },
              ThrowsMessage<tessel::error>(
                  AllOf(HasSubstr("tessel: kernel 'gemm' (schedule tma) argument 1: data address 0x7f0000200008 "
                                  "is not 16-byte aligned (TMA requires a 16-byte aligned base address)"),
                        HasSubstr("TESSEL_FALLBACK=error forbids falling back to schedule multistage"))));
  EXPECT_EQ(compiler.compiles, 0);
}

TEST_F(Select, FailedFallbackIsAClearError) {
  compiler.failMultistage = "tessel: scheduling failed (kernel 'gemm'):\nloc: error: schedule 'multistage' "
                            "needs bf16 or f16 operands";
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);
  auto expected = ThrowsMessage<tessel::error>(
      AllOf(HasSubstr("tessel: kernel 'gemm' (schedule tma) argument 0: data address 0x7f0000100002 is not "
                      "16-byte aligned"),
            HasSubstr("the fallback to schedule multistage failed: tessel: scheduling failed"),
            HasSubstr("needs bf16 or f16 operands")));
  EXPECT_THAT([&] { kernel->select(args, kGrid); }, expected);
  // The failure is remembered: no second compile.
  EXPECT_THAT([&] { kernel->select(args, kGrid); }, expected);
  EXPECT_EQ(compiler.compiles, 1);
}

TEST_F(Select, ColumnMajorOperandCompilesALayoutVariant) {
  compiler.honourLayouts = true;
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256);
  std::string err;
  detail::LoadedKernel& v = select(args, err);
  EXPECT_EQ(v.compiled().variant, "tma-L0__");
  ASSERT_EQ(compiler.requests.size(), 1u);
  EXPECT_THAT(compiler.requests[0].contiguousDims, ElementsAre(0, -1, -1));
  EXPECT_FALSE(compiler.requests[0].multistage);
  EXPECT_EQ(err, "");
  EXPECT_NO_THROW(runtime::validateArgs(v.compiled(), args, kGrid));
  // Cached per key.
  EXPECT_EQ(&select(args, err), &v);
  EXPECT_EQ(compiler.compiles, 1);
}

TEST_F(Select, LayoutTheLoweringCannotLoadWithTmaFallsBack) {
  // Today's lowering ignores tessel.contiguous_dim: the layout variant still wants
  // K-contiguous A, so TMA's unit-stride rule fails and multistage (same layout key) runs it.
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256);
  std::string err;
  detail::LoadedKernel& v = select(args, err);
  EXPECT_EQ(v.compiled().variant, "multistage-L0__");
  EXPECT_THAT(compiler.tags(), ElementsAre("tma-L0__", "multistage-L0__"));
  EXPECT_THAT(compiler.requests[1].contiguousDims, ElementsAre(0, -1, -1));
  EXPECT_THAT(err, HasSubstr("tessel: note: kernel 'gemm' (schedule tma) argument 0: innermost stride "
                             "(dimension 1) must be 1, got 256: the innermost dimension must be contiguous for "
                             "TMA; launching the schedule multistage variant instead"));
  EXPECT_NO_THROW(runtime::validateArgs(v.compiled(), args, kGrid));
}

TEST_F(Select, NoUnitStrideOperandFallsBackOrIsAnError) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 2048, 2);  // every other element
  std::string err;
  EXPECT_EQ(select(args, err).compiled().variant, "multistage");
  EXPECT_THAT(err, HasSubstr("argument 0: innermost stride (dimension 1) must be 1, got 2"));
  EXPECT_THAT(err, HasSubstr("no dimension of size > 1 has stride 1"));

  ScopedEnv error{"TESSEL_FALLBACK", "error"};
  auto strict = runtime::makeKernel(tmaGemm(), compiler.get());
  EXPECT_THAT([&] { strict->select(args, kGrid); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: kernel 'gemm' (schedule tma) argument 0: "
                                                           "innermost stride (dimension 1) must be 1, got 2"),
                                                 HasSubstr("no dimension of size > 1 has stride 1"))));
}

TEST_F(Select, ColumnMajorOutputNeedsNoFallback) {
  std::vector<tensor_arg> args = gemmArgs();
  args[2] = tensor2d(dtype::f32, fakeAddress(0x7f0000300000), 256, 128, 1, 256);
  std::string err;
  detail::LoadedKernel& v = select(args, err);
  EXPECT_EQ(v.compiled().variant, "tma-L__0");
  EXPECT_EQ(v.compiled().schedule, "tma");
  EXPECT_EQ(err, "");
  EXPECT_NO_THROW(runtime::validateArgs(v.compiled(), args, kGrid));
  // A misaligned, strided C is fine too: it is stored through pointers (or a zeroed store descriptor).
  args[2] = tensor2d(dtype::f32, fakeAddress(0x7f0000300004), 256, 128, 1, 257);
  EXPECT_EQ(select(args, err).compiled().schedule, "tma");
  EXPECT_EQ(err, "");
}

TEST_F(Select, FailedLayoutVariantOfAPointerKernelUsesThePrimary) {
  compiler.failLayout = "tessel: building the kernel failed (kernel 'gemm'):\nboom";
  auto k = runtime::makeKernel(multistageGemm(), compiler.get());
  std::vector<tensor_arg> args = gemmArgs();
  args[0] = tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 1, 256);
  ::testing::internal::CaptureStderr();
  detail::LoadedKernel& v = k->select(args, kGrid);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(&v.compiled(), &k->compiled());
  EXPECT_THAT(err, HasSubstr("tessel: note: kernel 'gemm' (schedule multistage): schedule multistage could not be "
                             "compiled for the layout of the arguments (multistage-L0__): tessel: building the "
                             "kernel failed (kernel 'gemm'); launching the default-layout kernel instead"));
}

TEST_F(Select, FailedLayoutVariantOfATmaKernelFallsBack) {
  compiler.failLayout = "tessel: building the kernel failed (kernel 'gemm'):\nno MN-major TMA loads";
  std::vector<tensor_arg> args = gemmArgs();
  args[1] = tensor2d(dtype::bf16, fakeAddress(0x7f0000200000), 512, 128, 1, 512);  // B column-major
  std::string err;
  detail::LoadedKernel& v = select(args, err);
  EXPECT_EQ(v.compiled().variant, "multistage-L_0_");
  EXPECT_THAT(compiler.tags(), ElementsAre("tma-L_0_", "multistage-L_0_"));
  EXPECT_THAT(err, HasSubstr("tessel: note: kernel 'gemm' (schedule tma) argument 1: innermost stride (dimension "
                             "1) must be 1, got 512"));
}

TEST_F(Select, CommonRulesComeFirst) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);
  args[2].data = nullptr;
  EXPECT_THAT([&] { kernel->select(args, kGrid); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm' argument 2: data pointer is null")));
  EXPECT_EQ(compiler.compiles, 0);
}

TEST_F(Select, WithoutACompilerThePrimaryDecides) {
  auto k = runtime::makeKernel(tmaGemm());
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);
  detail::LoadedKernel& v = k->select(args, kGrid);
  EXPECT_EQ(&v.compiled(), &k->compiled());
  EXPECT_THAT([&] { runtime::validateArgs(v.compiled(), args, kGrid); },
              ThrowsMessage<tessel::error>(HasSubstr("argument 0: data address 0x7f0000100002 is not 16-byte aligned")));
}

TEST_F(Select, ConcurrentLaunchesCompileOnce) {
  ScopedEnv quiet{"TESSEL_FALLBACK", "quiet"};
  std::vector<tensor_arg> misaligned = gemmArgs();
  misaligned[0].data = fakeAddress(0x7f0000100002);
  std::vector<tensor_arg> colMajorC = gemmArgs();
  colMajorC[2] = tensor2d(dtype::f32, fakeAddress(0x7f0000300000), 256, 128, 1, 256);
  std::vector<const detail::LoadedKernel*> seen(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] { seen[t] = &kernel->select(t % 2 ? misaligned : colMajorC, kGrid); });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(compiler.compiles, 2);
  for (int t = 2; t < 16; ++t)
    EXPECT_EQ(seen[t], seen[t % 2]);
  EXPECT_NE(seen[0], seen[1]);
  EXPECT_EQ(seen[1]->compiled().variant, "multistage");
  EXPECT_EQ(seen[0]->compiled().variant, "tma-L__0");
}

TEST_F(Select, VerboseSaysWhichVariantLaunches) {
  ScopedEnv v{"TESSEL_VERBOSE", "1"};
  std::vector<tensor_arg> args = gemmArgs();
  args[0].data = fakeAddress(0x7f0000100002);
  std::string err;
  select(args, err);
  EXPECT_THAT(err, HasSubstr("tessel: kernel 'gemm' (schedule tma): argument 0: data address 0x7f0000100002 is "
                             "not 16-byte aligned (TMA requires a 16-byte aligned base address): launching "
                             "variant 'multistage'"));
}

//===----------------------------------------------------------------------===//
// TESSEL_FALLBACK
//===----------------------------------------------------------------------===//

TEST(FallbackKnob, Parsing) {
  using runtime::FallbackPolicy;
  using runtime::parseFallbackPolicy;
  EXPECT_EQ(parseFallbackPolicy(""), FallbackPolicy::warn);
  EXPECT_EQ(parseFallbackPolicy("warn"), FallbackPolicy::warn);
  EXPECT_EQ(parseFallbackPolicy(" WARN "), FallbackPolicy::warn);
  EXPECT_EQ(parseFallbackPolicy("quiet"), FallbackPolicy::quiet);
  EXPECT_EQ(parseFallbackPolicy("Quiet"), FallbackPolicy::quiet);
  EXPECT_EQ(parseFallbackPolicy("error"), FallbackPolicy::error);
  EXPECT_EQ(parseFallbackPolicy("ERROR\n"), FallbackPolicy::error);
  EXPECT_EQ(parseFallbackPolicy("1"), std::nullopt);
  EXPECT_EQ(parseFallbackPolicy("errors"), std::nullopt);
  EXPECT_STREQ(runtime::fallbackPolicyName(FallbackPolicy::quiet), "quiet");
}

TEST(FallbackKnob, ReadFromTheEnvironment) {
  using runtime::FallbackPolicy;
  {
    ScopedEnv e{"TESSEL_FALLBACK", std::nullopt};
    EXPECT_EQ(runtime::knobs().fallback, FallbackPolicy::warn);
  }
  {
    ScopedEnv e{"TESSEL_FALLBACK", "error"};
    EXPECT_EQ(runtime::knobs().fallback, FallbackPolicy::error);
    EXPECT_EQ(runtime::fallbackPolicy(), FallbackPolicy::error);
  }
  {
    ScopedEnv e{"TESSEL_FALLBACK", "quiet"};
    EXPECT_EQ(runtime::knobs().fallback, FallbackPolicy::quiet);
    // A known knob: not reported as a misspelling.
    EXPECT_THAT(runtime::unknownKnobs(), Not(::testing::Contains(std::string("TESSEL_FALLBACK"))));
  }
  {
    ScopedEnv e{"TESSEL_FALLBACK", "loud"};
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(runtime::fallbackPolicy(), FallbackPolicy::warn);
    EXPECT_EQ(runtime::fallbackPolicy(), FallbackPolicy::warn);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "tessel: warning: TESSEL_FALLBACK='loud' is not one of warn, quiet, error; using warn\n");
  }
}

}  // namespace
