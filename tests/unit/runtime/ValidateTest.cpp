//===- ValidateTest.cpp - argument validation and parameter planning -------===//
//
// Every rule of runtime::validateArgs fires with a message naming the kernel,
// the argument index and the rule; validateCompiledKernel rejects malformed
// compiler output; planParams lays parameters out as cuTensorMapEncodeTiled
// and the PTX expect. None of this needs a GPU.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/kernel/jit.hpp"

using namespace tessel;
using namespace tessel::testing;
using runtime::validateArgs;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// Runs validateArgs on gemmKernel() after `edit` changes the valid args.
template <typename Edit>
void validateEdited(Edit edit, grid g = {2, 1, 1}, CompiledKernel k = gemmKernel()) {
  std::vector<tensor_arg> args = gemmArgs();
  edit(args);
  validateArgs(k, args, g);
}

TEST(ValidateArgs, AcceptsValidArguments) {
  EXPECT_NO_THROW(validateEdited([](auto&) {}));
}

TEST(ValidateArgs, ArgumentCount) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a.pop_back(); }); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm': expected 3 arguments, got 2")));
}

TEST(ValidateArgs, Rank) {
  EXPECT_THAT([] {
    validateEdited([](auto& a) {
      a[1].rank = 3;
      a[1].sizes[2] = 1;
      a[1].strides = {128 * 512, 128, 1};
    });
  },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm' argument 1: expected rank 2, got 3")));
}

TEST(ValidateArgs, Dtype) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[1].type = dtype::f16; }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("tessel: kernel 'gemm' argument 1: expected dtype bf16, got f16")));
}

TEST(ValidateArgs, NegativeSize) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[2].sizes[0] = -1; }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("argument 2: size of dimension 0 is -1; sizes must be >= 0")));
}

TEST(ValidateArgs, StrideBelowOne) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[2].strides[0] = 0; }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("argument 2: stride of dimension 0 is 0; strides must be >= 1")));
  EXPECT_THAT([] { validateEdited([](auto& a) { a[2].strides[0] = -128; }); },
              ThrowsMessage<tessel::error>(HasSubstr("argument 2: stride of dimension 0 is -128")));
}

TEST(ValidateArgs, SizeOneDimensionMayHaveAnyStride) {
  // PyTorch gives size-1 dimensions arbitrary strides (0 after expand, or a
  // value that is not a multiple of 16 bytes): they are never stepped along.
  EXPECT_NO_THROW(validateEdited([](auto& a) {
    a[2].sizes[0] = 1;
    a[2].strides[0] = 0;
    a[0].sizes[0] = 1;
    a[0].strides[0] = 7;
  }));
}

TEST(ValidateArgs, TmaInnermostStride) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[0].strides = {1024, 2, 0}; }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("argument 0: innermost stride (dimension 1) must be 1, got 2: the innermost "
                            "dimension must be contiguous for TMA")));
}

TEST(ValidateArgs, InnermostStrideInferredFromParams) {
  // gemmKernel() passes no stride of C's innermost dimension: C must be
  // contiguous there.
  EXPECT_THAT([] { validateEdited([](auto& a) { a[2].strides = {256, 2, 0}; }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("argument 2: innermost stride (dimension 1) must be 1, got 2: the kernel "
                            "assumes a contiguous innermost dimension")));
  // With that stride among the parameters, any stride >= 1 is fine.
  CompiledKernel k = gemmKernel();
  k.params.push_back({ParamSpec::Kind::Stride, 2, 1});
  EXPECT_NO_THROW(validateEdited([](auto& a) { a[2].strides = {256, 2, 0}; }, {2, 1, 1}, k));
}

TEST(ValidateArgs, NullPointer) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[2].data = nullptr; }); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm' argument 2: data pointer is null")));
}

TEST(ValidateArgs, PointerNotAlignedToItsElement) {
  // C (f32) is stored element by element (no TMA): a misaligned address would fault on the GPU.
  EXPECT_THAT([] {
    validateEdited([](auto& a) { a[2].data = static_cast<const char*>(a[2].data) + 1; });
  },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "argument 2: data address 0x")));
  EXPECT_THAT([] {
    validateEdited([](auto& a) { a[2].data = static_cast<const char*>(a[2].data) + 1; });
  },
              ThrowsMessage<tessel::error>(HasSubstr("is not aligned to its element size (4 bytes)")));
  EXPECT_NO_THROW(validateEdited([](auto& a) { a[2].data = static_cast<const char*>(a[2].data) + 4; }));
}

TEST(ValidateArgs, EmptyTensorMayBeNull) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].sizes[1] = 0;  // K == 0
  args[0].data = nullptr;
  EXPECT_NO_THROW(validateArgs(gemmKernel(), args, {2, 1, 1}));
  EXPECT_TRUE(runtime::hasEmptyArg(args));
  EXPECT_FALSE(runtime::hasEmptyArg(gemmArgs()));
}

TEST(ValidateArgs, TmaBaseAlignment) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[1].data = fakeAddress(0x7f0000200008); }); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("argument 1: data address 0x7f0000200008 is not 16-byte aligned (TMA requires")));
  // Pointer arguments have no such rule.
  EXPECT_NO_THROW(validateEdited([](auto& a) { a[2].data = fakeAddress(0x7f0000300004); }));
}

TEST(ValidateArgs, TmaStrideMultipleOf16Bytes) {
  EXPECT_THAT([] { validateEdited([](auto& a) { a[0].strides[0] = 516; }); },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "argument 0: stride of dimension 0 is 516 elements = 1032 bytes, not a multiple of 16 bytes "
                  "(TMA requirement: pad it to a multiple of 8 elements)")));
  // An f32 pointer argument need not be padded.
  EXPECT_NO_THROW(validateEdited([](auto& a) { a[2].strides[0] = 129; }));
}

TEST(ValidateArgs, TmaStrideBelow2To40) {
  EXPECT_THAT([] {
    validateEdited([](auto& a) {
      a[0].sizes = {2, 512, 0};
      a[0].strides = {std::int64_t(1) << 39, 1, 0};  // 2^40 bytes of bf16
    });
  },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "argument 0: stride of dimension 0 is 1099511627776 bytes; TMA requires strides below 2^40")));
}

TEST(ValidateArgs, DimensionsAtMost2To31Minus1) {
  // The kernels index each dimension in 32 bits (TMA coordinates are .s32): 2^31 is one too many.
  EXPECT_THAT([] {
    validateEdited([](auto& a) {
      a[1].sizes = {1, std::int64_t(1) << 31, 0};
      a[1].strides = {std::int64_t(1) << 31, 1, 0};
    });
  },
              ThrowsMessage<tessel::error>(::testing::StrEq(
                  "tessel: kernel 'gemm' argument 1: size of dimension 1 is 2147483648; tessel kernels index each "
                  "dimension with 32-bit integers: at most 2^31 - 1 = 2147483647 elements per dimension (the "
                  "whole tensor may be larger)")));
  // More than 2^31 elements in all is fine: byte offsets are 64-bit.
  EXPECT_NO_THROW(validateEdited([](auto& a) {
    a[0].sizes = {65536, 65536, 0};
    a[0].strides = {65536, 1, 0};
  }));
}

TEST(ValidateArgs, ExtentOverflow) {
  EXPECT_THAT([] {
    validateEdited([](auto& a) {
      a[2].sizes = {std::int64_t(1) << 30, 128, 0};
      a[2].strides = {std::int64_t(1) << 40, 1, 0};
    });
  },
              ThrowsMessage<tessel::error>(HasSubstr("argument 2: the tensor spans more than 2^63 bytes")));
}

TEST(ValidateArgs, GridExtents) {
  auto withGrid = [](grid g) { return [g] { validateEdited([](auto&) {}, g); }; };
  EXPECT_THAT(withGrid({1, 65536, 1}),
              ThrowsMessage<tessel::error>(HasSubstr("grid.y is 65536; CUDA allows at most 65535")));
  EXPECT_THAT(withGrid({1, 1, 70000}),
              ThrowsMessage<tessel::error>(HasSubstr("grid.z is 70000; CUDA allows at most 65535")));
  EXPECT_THAT(withGrid({2147483648u, 1, 1}),
              ThrowsMessage<tessel::error>(HasSubstr("grid.x is 2147483648; CUDA allows at most 2147483647")));
  EXPECT_NO_THROW(withGrid({2147483647u, 65535, 65535})());
}

TEST(ValidateArgs, ZeroGridExtentIsAcceptedAndNothingToDo) {
  // A grid built from an empty size (cdiv(0, 128) == 0): accepted, nothing is launched.
  for (grid g : {grid{0, 1, 1}, grid{1, 0, 1}, grid{1, 1, 0}}) {
    EXPECT_NO_THROW(validateEdited([](auto&) {}, g));
    EXPECT_TRUE(runtime::nothingToDo(gemmKernel(), gemmArgs(), g));
  }
  EXPECT_FALSE(runtime::nothingToDo(gemmKernel(), gemmArgs(), {2, 1, 1}));
}

TEST(ValidateArgs, PersistentKernelsWalkAtMost2To31Minus1Tiles) {
  CompiledKernel k = gemmKernel();
  k.persistent = true;
  k.schedule = "cooperative";
  EXPECT_THAT([&] { validateEdited([](auto&) {}, {65536, 65535, 1}, k); },
              ThrowsMessage<tessel::error>(::testing::StrEq(
                  "tessel: kernel 'gemm': grid (65536, 65535, 1): 4294901760 programs; a persistent kernel "
                  "(schedule cooperative) walks at most 2^31 - 1 tiles")));
  EXPECT_NO_THROW(validateEdited([](auto&) {}, {32768, 65535, 1}, k));
}

/// gemmKernel() with the contracts the compiler derives for C = A @ B (A: M x K, B: K x N here).
CompiledKernel gemmKernelWithContracts() {
  CompiledKernel k = gemmKernel();
  k.args[2].stored = true;
  k.sizeContracts = {{0, 1, 1, 0, "gemm.hpp:21:29", "gemm.hpp:21:51"},  // K
                     {0, 0, 2, 0, "gemm.hpp:21:29", "gemm.hpp:22:7"},   // M
                     {1, 1, 2, 1, "gemm.hpp:21:51", "gemm.hpp:22:7"}};  // N
  return k;
}

TEST(ValidateArgs, SizeContractsNameBothArgumentsAndDimensions) {
  CompiledKernel k = gemmKernelWithContracts();
  EXPECT_NO_THROW(validateEdited([](auto&) {}, {2, 1, 1}, k));
  // A is 256 x 512 but B is 384 x 128: K differs.
  EXPECT_THAT([&] { validateEdited([](auto& a) { a[1].sizes[0] = 384; }, {2, 1, 1}, k); },
              ThrowsMessage<tessel::error>(::testing::StrEq(
                  "tessel: kernel 'gemm': argument 1 dimension 0 has size 384 but argument 0 dimension 1 has size "
                  "512; they must be equal: the program reads or writes both at the same offsets with the same "
                  "tile extent (gemm.hpp:21:29 and gemm.hpp:21:51)")));
  EXPECT_THAT([&] { validateEdited([](auto& a) { a[2].sizes[0] = 255; }, {2, 1, 1}, k); },
              ThrowsMessage<tessel::error>(HasSubstr("argument 2 dimension 0 has size 255 but argument 0 "
                                                     "dimension 0 has size 256")));
}

TEST(ValidateArgs, EmptyProblems) {
  CompiledKernel k = gemmKernelWithContracts();
  // K == 0 with the strides ts::view gives (>= 1) or any others: accepted, and not nothing to do
  // (C gets the epilogue of a zero accumulator); the kernel loads A and B with TMA, so select()
  // takes the multistage variant.
  std::vector<tensor_arg> args = gemmArgs();
  args[0].sizes[1] = 0;
  args[0].strides = {0, 1, 0};
  args[1].sizes[0] = 0;
  args[1].data = nullptr;
  EXPECT_NO_THROW(validateArgs(k, args, {2, 1, 1}));
  EXPECT_FALSE(runtime::nothingToDo(k, args, {2, 1, 1}));
  EXPECT_TRUE(runtime::tmaLoadsAnEmptyArg(k, args));
  EXPECT_FALSE(runtime::tmaLoadsAnEmptyArg(k, gemmArgs()));
  // M == 0: C is empty, nothing to do.
  args = gemmArgs();
  args[0].sizes[0] = 0;
  args[2].sizes[0] = 0;
  EXPECT_NO_THROW(validateArgs(k, args, {0, 1, 1}));
  EXPECT_TRUE(runtime::nothingToDo(k, args, {0, 1, 1}));
  EXPECT_TRUE(runtime::nothingToDo(k, args, {2, 1, 1}));
}

TEST(ValidateArgs, ViewOfAnEmptyTensorHasValidStrides) {
  tensor_arg a = view<bf16>(fakeAddress(0x7f0000100000), {0, 64});
  EXPECT_EQ(a.strides[0], 64);
  EXPECT_EQ(a.strides[1], 1);
  tensor_arg b = view<bf16>(nullptr, {128, 0});
  EXPECT_EQ(b.strides[0], 1);
  EXPECT_EQ(b.strides[1], 1);
  tensor_arg c = view<f32>(nullptr, {3, 0, 5});
  EXPECT_EQ(c.strides[0], 5);
  EXPECT_EQ(c.strides[1], 5);
  EXPECT_EQ(c.strides[2], 1);
}

TEST(PlanParams, TmaStoresOnlyWhereRowsEndOn16Bytes) {
  // A TMA store writes whole 16-byte pieces of a row (issue 11: a 1 x 17 bf16 C in rows of 24 got
  // 24 elements written), so C is stored through pointers unless its rows end on 16 bytes.
  CompiledKernel k = gemmKernel();
  ParamSpec store{ParamSpec::Kind::TmaDescriptor, 2, 0, {32, 64, 1}, 128};
  store.store = true;
  k.params.push_back(store);
  k.params.push_back({ParamSpec::Kind::TmaUsable, 2, 0});
  auto usable = [&](std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    std::vector<tensor_arg> args = gemmArgs();
    args[2] = tensor2d(dtype::f32, fakeAddress(0x7f0000300000), rows, cols, ld);
    auto plan = runtime::planParams(k, args);
    EXPECT_EQ(plan.back().scalar == 1, !plan[plan.size() - 2].tma.zeroed);
    return plan.back().scalar == 1;
  };
  EXPECT_TRUE(usable(256, 128, 128));
  EXPECT_TRUE(usable(1, 4, 4));     // 16 bytes
  EXPECT_FALSE(usable(1, 17, 24));  // 68 bytes: the row's last piece would spill into the padding
  EXPECT_FALSE(usable(7, 9, 12));
  EXPECT_FALSE(usable(1, 1, 1));
  EXPECT_TRUE(usable(3, 20, 24));   // 80 bytes
}

TEST(ValidateArgs, GridMultipleOfCluster) {
  CompiledKernel k = gemmKernel();
  k.cluster = {2, 1, 1};
  EXPECT_THAT([&] { validateEdited([](auto&) {}, {3, 1, 1}, k); },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "grid.x = 3 is not a multiple of the cluster extent 2 (the kernel was compiled for cluster "
                  "(2, 1, 1))")));
  EXPECT_NO_THROW(validateEdited([](auto&) {}, {4, 1, 1}, k));
}

// ---- validateCompiledKernel (through makeKernel) ---------------------------

template <typename Edit>
void makeEdited(Edit edit) {
  CompiledKernel k = gemmKernel();
  edit(k);
  runtime::makeKernel(std::move(k));
}

TEST(ValidateCompiledKernel, AcceptsTheGemmKernel) {
  EXPECT_NO_THROW(runtime::makeKernel(gemmKernel()));
}

TEST(ValidateCompiledKernel, RejectsMalformedKernels) {
  auto rejects = [](auto edit, const char* text) {
    EXPECT_THAT([&] { makeEdited(edit); },
                ThrowsMessage<tessel::error>(
                    ::testing::AllOf(HasSubstr("tessel: internal error: kernel 'gemm' "), HasSubstr(text))))
        << text;
  };
  rejects([](CompiledKernel& k) { k.params[2].arg = 7; },
          "parameter 2 (pointer of argument 7) refers to a missing argument");
  rejects([](CompiledKernel& k) { k.params[3].dim = 2; },
          "parameter 3 (size of argument 2) refers to dimension 2 of a rank-2 tensor");
  rejects([](CompiledKernel& k) { k.args[0].loadedByTma = false; },
          "parameter 0 (TMA descriptor of argument 0): the argument is not marked loadedByTma");
  rejects([](CompiledKernel& k) { k.args[0].type = dtype::i1; }, "TMA cannot load i1 tensors");
  rejects([](CompiledKernel& k) { k.params[1].box = {64, 300, 1}; },
          "box extent 300 along dimension 1 (innermost first) is outside 1..256");
  rejects([](CompiledKernel& k) { k.params[1].box = {4, 64, 1}; },
          "inner box extent 4 x 2 bytes is not a multiple of 16 bytes");
  rejects([](CompiledKernel& k) { k.params[1].box = {128, 64, 1}; },
          "inner box extent of 256 bytes exceeds the 128-byte swizzle span");
  rejects([](CompiledKernel& k) { k.params[1].swizzleBytes = 48; }, "swizzle of 48 bytes");
  rejects([](CompiledKernel& k) { k.args[2].rank = 4; }, "argument 2 has rank 4; tensors have rank 1..3");
  rejects([](CompiledKernel& k) { k.blockThreads = 2048; }, "has 2048 threads per block");
  rejects([](CompiledKernel& k) { k.cluster = {0, 1, 1}; }, "has cluster extent 0 along axis 0");
  // A stream-K workspace needs a persistent kernel without clusters and a slot size.
  rejects([](CompiledKernel& k) { k.params.push_back({ParamSpec::Kind::Workspace, 0, 0}); },
          "(stream-K workspace of argument 0): a stream-K workspace is for persistent kernels without "
          "clusters");
  rejects(
      [](CompiledKernel& k) {
        k.persistent = true;
        k.workspaceSlotBytes = 128 * 256 * 4;
        k.cluster = {2, 1, 1};
        k.params.push_back({ParamSpec::Kind::Workspace, 0, 0});
      },
      "a stream-K workspace is for persistent kernels without clusters");
  rejects(
      [](CompiledKernel& k) {
        k.ptx.clear();
        k.cubin.clear();
      },
      "has neither PTX nor a cubin");
}

TEST(ValidateCompiledKernel, AcceptsAStreamKWorkspace) {
  CompiledKernel k = gemmKernel();
  k.persistent = true;
  k.workspaceSlotBytes = 128 * 256 * 4;
  k.params.push_back({ParamSpec::Kind::Workspace, 0, 0});
  EXPECT_NO_THROW(runtime::makeKernel(k));
  // The workspace is filled in at launch (one per stream); the plan leaves it 0.
  std::vector<tensor_arg> args = gemmArgs();
  auto plan = runtime::planParams(k, args);
  ASSERT_EQ(plan.size(), 7u);
  EXPECT_EQ(plan[6].kind, ParamSpec::Kind::Workspace);
  EXPECT_EQ(plan[6].scalar, 0u);
}

// ---- planParams ------------------------------------------------------------

TEST(PlanParams, ScalarsInParamOrder) {
  std::vector<tensor_arg> args = gemmArgs();
  auto plan = runtime::planParams(gemmKernel(), args);
  ASSERT_EQ(plan.size(), 6u);
  EXPECT_EQ(plan[0].kind, ParamSpec::Kind::TmaDescriptor);
  EXPECT_EQ(plan[1].kind, ParamSpec::Kind::TmaDescriptor);
  EXPECT_EQ(plan[2].kind, ParamSpec::Kind::Pointer);
  EXPECT_EQ(plan[2].scalar, 0x7f0000300000u);
  EXPECT_EQ(plan[3].scalar, 256u);  // C.sizes[0]
  EXPECT_EQ(plan[4].scalar, 128u);  // C.sizes[1]
  EXPECT_EQ(plan[5].scalar, 128u);  // C.strides[0]
}

TEST(PlanParams, TmaEncodingIsInnermostFirstWithByteStrides) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].strides[0] = 520;  // padded leading dimension (1040 bytes)
  auto plan = runtime::planParams(gemmKernel(), args);
  const runtime::TmaEncoding& a = plan[0].tma;
  EXPECT_EQ(a.type, dtype::bf16);
  EXPECT_EQ(a.rank, 2u);
  EXPECT_EQ(a.globalAddress, args[0].data);
  EXPECT_EQ(a.globalDim[0], 512u);  // K, innermost
  EXPECT_EQ(a.globalDim[1], 256u);  // M
  EXPECT_EQ(a.globalStrides[0], 1040u);
  EXPECT_EQ(a.boxDim[0], 64u);
  EXPECT_EQ(a.boxDim[1], 128u);
  EXPECT_EQ(a.elementStrides[0], 1u);
  EXPECT_EQ(a.elementStrides[1], 1u);
  EXPECT_EQ(a.swizzleBytes, 128);
  EXPECT_THAT(runtime::describeTma(a),
              HasSubstr("bf16, rank 2, address 0x7f0000100000, globalDim [512, 256] (innermost first), "
                        "globalStrides [1040] bytes, box [64, 128], swizzle 128B"));
}

/// A kernel of one rank-3 TMA-loaded argument (box `box`, 128B swizzle) and that argument.
std::pair<CompiledKernel, tensor_arg> batched(dtype type, std::array<std::uint32_t, 3> box,
                                              std::array<std::int64_t, 3> sizes, std::array<std::int64_t, 3> strides) {
  CompiledKernel k;
  k.name = "batched";
  k.ptx = "x";
  k.args = {{type, 3, true}};
  k.params = {{ParamSpec::Kind::TmaDescriptor, 0, 0, box, 128}};
  tensor_arg t;
  t.data = fakeAddress(0x10000);
  t.type = type;
  t.rank = 3;
  for (int d = 0; d < 3; ++d) t.sizes[d] = sizes[d], t.strides[d] = strides[d];
  return {k, t};
}

// ":r" descriptors (ParamSpec::clipRows): the box's rows are min(box rows, the tensor's rows
// rounded up to 8), as the kernel's expected bytes are (Ring.cpp); other descriptors keep their
// box; a batched (rank-3) tensor clips its rows, not its batch.
TEST(PlanParams, ClippedBoxesFollowTheTensorsRows) {
  for (auto [rows, want] : {std::pair{256, 128}, {128, 128}, {100, 104}, {13, 16}, {8, 8}, {1, 8}}) {
    std::vector<tensor_arg> args = gemmArgs();
    args[0].sizes[0] = rows;  // A: rows x 512
    CompiledKernel k = gemmKernel();
    k.params[0].clipRows = true;
    auto plan = runtime::planParams(k, args);
    EXPECT_EQ(plan[0].tma.boxDim[1], std::uint32_t(want)) << rows << " rows";
    EXPECT_EQ(plan[0].tma.boxDim[0], 64u);
    EXPECT_EQ(plan[0].tma.globalDim[1], std::uint64_t(rows));
    k.params[0].clipRows = false;
    EXPECT_EQ(runtime::planParams(k, args)[0].tma.boxDim[1], 128u) << rows << " rows, not clipped";
  }
  auto [k, t] = batched(dtype::bf16, {64, 64, 1}, {3, 20, 64}, {20 * 64, 64, 1});
  k.params[0].clipRows = true;
  const auto plan = runtime::planParams(k, std::span(&t, 1));
  const runtime::TmaEncoding& e = plan[0].tma;
  EXPECT_EQ(e.boxDim[0], 64u);
  EXPECT_EQ(e.boxDim[1], 24u);
  EXPECT_EQ(e.boxDim[2], 1u);
}

TEST(PlanParams, Rank3Tma) {
  auto [k, t] = batched(dtype::f32, {32, 16, 1}, {3, 10, 40}, {10 * 44, 44, 1});
  ASSERT_NO_THROW(validateArgs(k, std::span(&t, 1), {1, 1, 1}));
  auto plan = runtime::planParams(k, std::span(&t, 1));
  const runtime::TmaEncoding& e = plan[0].tma;
  EXPECT_EQ(e.rank, 3u);
  EXPECT_EQ(e.globalDim[0], 40u);
  EXPECT_EQ(e.globalDim[1], 10u);
  EXPECT_EQ(e.globalDim[2], 3u);
  EXPECT_EQ(e.globalStrides[0], 44u * 4);
  EXPECT_EQ(e.globalStrides[1], 440u * 4);
  EXPECT_EQ(e.boxDim[2], 1u);
}

TEST(PlanParams, SizeOneDimensionGetsALegalTmaStride) {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].sizes = {1, 24, 0};
  args[0].strides = {7, 1, 0};  // 14 bytes: illegal for TMA, but never used
  ASSERT_NO_THROW(validateArgs(gemmKernel(), args, {2, 1, 1}));
  auto plan = runtime::planParams(gemmKernel(), args);
  EXPECT_EQ(plan[0].tma.globalStrides[0], 48u);  // 24 bf16, rounded up to 16 bytes
}

/// gemmKernel() with A compiled MN-major: its unit-stride dimension is 0 (a
/// column-major M x K A), 64B swizzle, box {32 along M, 64 along K}.
CompiledKernel mnMajorKernel() {
  CompiledKernel k = gemmKernel();
  k.params[0].box = {32, 64, 1};
  k.params[0].swizzleBytes = 64;
  k.params[0].contiguousDim = 0;
  return k;
}

/// gemmArgs() with A column-major: M = 256 (padded to 264), K = 512.
std::vector<tensor_arg> mnMajorArgs() {
  std::vector<tensor_arg> args = gemmArgs();
  args[0].strides = {1, 264, 0};
  return args;
}

TEST(PlanParams, MnMajorOperandPutsTheUnitStrideDimensionFirst) {
  std::vector<tensor_arg> args = mnMajorArgs();
  ASSERT_NO_THROW(validateArgs(mnMajorKernel(), args, {2, 1, 1}));
  auto plan = runtime::planParams(mnMajorKernel(), args);
  const runtime::TmaEncoding& a = plan[0].tma;
  EXPECT_EQ(a.globalDim[0], 256u);  // M, the unit-stride dimension
  EXPECT_EQ(a.globalDim[1], 512u);  // K
  EXPECT_EQ(a.globalStrides[0], 264u * 2);
  EXPECT_EQ(a.boxDim[0], 32u);
  EXPECT_EQ(a.boxDim[1], 64u);
  EXPECT_EQ(a.swizzleBytes, 64);
  // B is untouched: row-major, K innermost.
  EXPECT_EQ(plan[1].tma.globalDim[0], 128u);
  EXPECT_EQ(plan[1].tma.globalDim[1], 512u);
}

TEST(ValidateArgs, MnMajorOperandNeedsUnitStrideAlongItsContiguousDimension) {
  // The row-major A the kernel was not compiled for.
  EXPECT_THAT([] { validateArgs(mnMajorKernel(), gemmArgs(), {2, 1, 1}); },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "argument 0: stride of dimension 0 must be 1, got 512: the kernel's TMA loads take "
                  "dimension 0 as the contiguous one")));
  // The leading dimension (now dimension 1) must be a multiple of 16 bytes.
  EXPECT_THAT([] {
    std::vector<tensor_arg> args = mnMajorArgs();
    args[0].strides[1] = 257;
    validateArgs(mnMajorKernel(), args, {2, 1, 1});
  },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "argument 0: stride of dimension 1 is 257 elements = 514 bytes, not a multiple of 16 bytes")));
}

TEST(ValidateCompiledKernel, ContiguousDimensionMustExist) {
  CompiledKernel k = mnMajorKernel();
  k.params[0].contiguousDim = 2;
  EXPECT_THAT([&] { runtime::validateCompiledKernel(k); },
              ThrowsMessage<tessel::error>(
                  HasSubstr("contiguous dimension 2 of a rank-2 tensor")));
}

TEST(PlanParams, Rank3TmaWithMiddleDimensionContiguous) {
  CompiledKernel k;
  k.name = "batched";
  k.ptx = "x";
  k.args = {{dtype::bf16, 3, true}};
  k.params = {{ParamSpec::Kind::TmaDescriptor, 0, 0, {64, 32, 1}, 128}};
  k.params[0].contiguousDim = 1;
  tensor_arg t;
  t.data = fakeAddress(0x10000);
  t.type = dtype::bf16;
  t.rank = 3;
  t.sizes = {3, 100, 40};        // batch, rows, cols; the rows have unit stride
  t.strides = {40 * 104, 1, 104};
  ASSERT_NO_THROW(validateArgs(k, std::span(&t, 1), {1, 1, 1}));
  auto plan = runtime::planParams(k, std::span(&t, 1));
  const runtime::TmaEncoding& e = plan[0].tma;
  EXPECT_EQ(e.globalDim[0], 100u);  // dimension 1
  EXPECT_EQ(e.globalDim[1], 40u);   // dimension 2
  EXPECT_EQ(e.globalDim[2], 3u);    // dimension 0
  EXPECT_EQ(e.globalStrides[0], 104u * 2);
  EXPECT_EQ(e.globalStrides[1], 40u * 104 * 2);
}

}  // namespace
