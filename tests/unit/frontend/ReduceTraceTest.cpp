//===- ReduceTraceTest.cpp - reductions traced into tessel IR -------------===//
//
// ts::sum / ts::max / ts::amax (t, ts::axis<A>) trace one tessel.reduce of
// the 2-d tile (kind, axis, an f32 vector of the kept dimension), and
// reduce_into stores it with tessel.store {combine} at the user's line
// (docs/reductions.md). Two stores of one epilogue are two tessel.store.
//
//===----------------------------------------------------------------------===//

#include <tessel/tessel.hpp>

#include "reduce_kernels.hpp"
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

TEST(ReduceTrace, RowAndColumnReductionsStoredWithCombine) {
  auto traced = traceKernel(tessel_test::gemm_bias_reduce<128, 64>{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto fn = collect<mlir::func::FuncOp>(module).front();
  auto reduces = collect<tir::ReduceOp>(module);
  ASSERT_EQ(reduces.size(), 3u);
  struct Expect {
    tir::ReduceKind kind;
    int32_t axis;
    int64_t length;
    unsigned arg;
  };
  const Expect expect[] = {{tir::ReduceKind::amax, 1, 128, 4},
                           {tir::ReduceKind::sum, 1, 128, 5},
                           {tir::ReduceKind::max, 0, 64, 6}};
  for (auto [r, e] : llvm::zip(reduces, expect)) {
    EXPECT_EQ(r.getKind(), e.kind);
    EXPECT_EQ(r.getAxis(), e.axis);
    auto ty = mlir::cast<mlir::RankedTensorType>(r.getType());
    EXPECT_EQ(ty.getShape(), llvm::ArrayRef<int64_t>({e.length}));
    EXPECT_TRUE(ty.getElementType().isF32());
    EXPECT_EQ(mlir::cast<mlir::RankedTensorType>(r.getSrc().getType()).getShape(),
              llvm::ArrayRef<int64_t>({128, 64}));
    // The reduced tile is the epilogue's y = acc + bias.row().
    EXPECT_TRUE(mlir::isa<mlir::arith::AddFOp>(r.getSrc().getDefiningOp()));
    ASSERT_TRUE(r->hasOneUse());
    auto store = mlir::dyn_cast<tir::StoreOp>(*r->getUsers().begin());
    ASSERT_TRUE(store);
    EXPECT_TRUE(store.getCombine());
    EXPECT_EQ(store.getRef(), fn.getArgument(e.arg));
    // At the user's line: the file of the kernel.
    auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(store.getLoc());
    ASSERT_TRUE(loc);
    EXPECT_NE(loc.getFilename().str().find("reduce_kernels.hpp"), std::string::npos);
  }
  // The plain store of C is not a combining one.
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 4u);
  EXPECT_FALSE(stores[0].getCombine());
}

TEST(ReduceTrace, TwoOutputsAreTwoStores) {
  auto traced = traceKernel(tessel_test::gemm_bias_gelu_two_outputs<128, 128>{});
  mlir::ModuleOp module = *traced->module;
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto fn = collect<mlir::func::FuncOp>(module).front();
  auto stores = collect<tir::StoreOp>(module);
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(stores[0].getRef(), fn.getArgument(3));
  EXPECT_EQ(stores[1].getRef(), fn.getArgument(4));
  EXPECT_TRUE(collect<tir::ReduceOp>(module).empty());
}

TEST(ReduceTrace, DslTypes) {
  using t = ts::tile<ts::bf16, 128, 64>;
  using rows = decltype(ts::amax(std::declval<t>(), ts::axis<1>));
  using cols = decltype(ts::sum(std::declval<t>() * 2.0f, ts::axis<0>));
  static_assert(rows::length == 128 && rows::axis == 1);
  static_assert(cols::length == 64 && cols::axis == 0);
  static_assert(std::is_same_v<rows::dtype_type, ts::f32>);
  // ts::max of a tile and a float is still the elementwise maximum.
  static_assert(std::is_same_v<ts::shape_of<decltype(ts::max(std::declval<t>(), 1.0f))>,
                               ts::shape<128, 64>>);
}

} // namespace
