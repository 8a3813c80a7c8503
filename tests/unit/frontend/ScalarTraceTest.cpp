//===- ScalarTraceTest.cpp - ts::scalar parameters traced into tessel IR --===//
//
// Runtime scalar parameters (docs/scalars.md) are plain f32 / i32 arguments
// of the kernel function; in tile expressions they are splat (tessel.splat of
// the argument), scalar arithmetic is traced once as scalar arith ops, and an
// i32 scalar used as an offset is an arith.index_cast.
//
//===----------------------------------------------------------------------===//

#include <tessel/tessel.hpp>

#include "scalar_kernels.hpp"
#include "tessel/Dialect/Tessel/Tessel.h"
#include "tessel/Frontend/Tracer.h"
#include "trace_support.hpp"

#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <vector>

namespace ts = tessel;
namespace tir = mlir::tessel;

namespace {

using tessel_test::collect;
using tessel_test::traceKernel;

TEST(ScalarTrace, AlphaBetaAreF32ArgumentsSplatInTheEpilogue) {
  auto traced = traceKernel(tessel_test::gemm_alpha_beta<128, 128>{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto fn = collect<mlir::func::FuncOp>(module).front();
  auto types = fn.getArgumentTypes();
  ASSERT_EQ(types.size(), 6u);
  EXPECT_TRUE(mlir::isa<tir::RefType>(types[0]));
  EXPECT_TRUE(mlir::isa<tir::RefType>(types[1]));
  EXPECT_TRUE(types[2].isF32());
  EXPECT_TRUE(types[3].isF32());
  EXPECT_TRUE(mlir::isa<tir::RefType>(types[4]));
  // Each scalar is splat once, straight from its argument, and multiplies a 128x128 f32 tile.
  auto splats = collect<tir::SplatOp>(module);
  ASSERT_EQ(splats.size(), 2u);
  for (auto [splat, arg] : {std::pair{splats[0], 2u}, std::pair{splats[1], 3u}}) {
    EXPECT_EQ(splat.getValue(), fn.getArgument(arg));
    EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(splat.getType()).getShape(), llvm::ArrayRef<int64_t>({128, 128}));
    ASSERT_TRUE(splat->hasOneUse());
    EXPECT_TRUE(mlir::isa<mlir::arith::MulFOp>(*splat->getUsers().begin()));
  }
}

TEST(ScalarTrace, ScalarArithmeticIsScalarAndAnI32IsAnOffset) {
  auto traced = traceKernel(tessel_test::scale_shift{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto fn = collect<mlir::func::FuncOp>(module).front();
  ASSERT_EQ(fn.getNumArguments(), 4u);
  EXPECT_TRUE(fn.getArgumentTypes()[1].isF32());
  EXPECT_TRUE(fn.getArgumentTypes()[2].isInteger(32));
  // alpha + 1.0f: one scalar addf on the argument.
  auto adds = collect<mlir::arith::AddFOp>(module);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds.front().getLhs(), fn.getArgument(1));
  EXPECT_TRUE(adds.front().getType().isF32());
  // o + shift: the i32 argument cast to index and added to the offset the load uses.
  auto casts = collect<mlir::arith::IndexCastOp>(module);
  ASSERT_EQ(casts.size(), 1u);
  EXPECT_EQ(casts.front().getIn(), fn.getArgument(2));
  auto loads = collect<tir::LoadOp>(module);
  ASSERT_EQ(loads.size(), 1u);
  auto offset = loads.front().getOffsets()[0].getDefiningOp<mlir::arith::AddIOp>();
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset.getRhs(), casts.front().getResult());
  // ts::cast<ts::f32>(shift) is a scalar sitofp; ts::max(tile, scalar) a tile maximumf.
  auto sitofp = collect<mlir::arith::SIToFPOp>(module);
  ASSERT_EQ(sitofp.size(), 1u);
  EXPECT_EQ(sitofp.front().getIn(), fn.getArgument(2));
  EXPECT_EQ(collect<mlir::arith::MaximumFOp>(module).size(), 1u);
}

/// A scalar reassigned in a traced loop is loop-carried, like tiles and indices.
struct scalar_loop {
  void operator()(ts::tensor<ts::f32, 1> X, ts::scalar<ts::f32> s) const {
    auto t = s;
    for (auto i : ts::range(0, X.size(0), ts::c<64>)) {
      (void)i;
      t = t * 0.5f;
    }
    X.store({0}, X.load({0}, ts::c<64>) * t);
  }
};

TEST(ScalarTrace, ScalarVariableIsLoopCarried) {
  auto traced = traceKernel(scalar_loop{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto loops = collect<mlir::scf::ForOp>(module);
  ASSERT_EQ(loops.size(), 1u);
  ASSERT_EQ(loops.front().getNumRegionIterArgs(), 1u);
  EXPECT_TRUE(loops.front().getRegionIterArgs()[0].getType().isF32());
}

TEST(ScalarTrace, OnlyF32AndI32Scalars) {
  ts::trace::begin("bad_scalar");
  try {
    ts::trace::arg_scalar(ts::dtype::bf16, {"k.cpp", 3, 7});
    FAIL() << "a bf16 scalar was accepted";
  } catch (const ts::error &e) {
    EXPECT_STREQ(e.what(), "k.cpp:3:7: tessel: a kernel scalar is f32 or i32");
  }
  ts::trace::abandon();
}

} // namespace
