//===- SwapOperands.cpp - tessel-swap-operands ----------------------------===//
//
// Swap-AB: a tile of fewer than 64 rows computed as its transpose.
//
// wgmma multiplies 64 rows of A at a time. A decode-shaped GEMM has a few rows
// of A (M = 1..32) against a weight matrix B streamed once; a 64-row tile
// would compute (and stage) rows that do not exist. C^T = B A^T turns the few
// rows into wgmma's N (8..56) and gives the 64 rows to B. This pass rewrites
// the kernel's mainloop so that the dot computes the BN x BM transpose of the
// user's BM x BN tile, and hands the epilogue `acc'.T()`; the user's program,
// its loads, offsets, grid and stores are unchanged, and so is every kernel
// whose tile has 64 rows or more.
//
// Before (the user's 16 x 64 tile):
//   %acc = scf.for ... iter_args(%c = %zero) -> (tensor<16x64xf32>) {
//     %a  = tessel.load %A[%m, %k] : ... -> tensor<16x64xbf16>
//     %b  = tessel.load %B[%n, %k] : ... -> tensor<64x64xbf16>
//     %bt = tessel.trans %b : tensor<64x64xbf16> -> tensor<64x64xbf16>
//     %d  = tessel.dot %a, %bt, %c : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>
//     scf.yield %d
//   }
//   ... epilogue on %acc ...
// After:
//   %acc' = scf.for ... iter_args(%c = %zero') -> (tensor<64x16xf32>) {
//     %a  = tessel.load %A[%m, %k] ...
//     %b  = tessel.load %B[%n, %k] ...
//     %at = tessel.trans %a : tensor<16x64xbf16> -> tensor<64x16xbf16>
//     %d  = tessel.dot %b, %at, %c : tensor<64x64xbf16>, tensor<64x16xbf16> -> tensor<64x16xf32>
//     scf.yield %d
//   }
//   %acc = tessel.trans %acc' : tensor<64x16xf32> -> tensor<16x64xf32>
//   ... epilogue on %acc, unchanged ...
//
// The schedule then sees a 64 x 16 tile: wgmma m64n16k16 with both operands
// K-major, B's 64 rows as wgmma's A. The epilogue reads the accumulator
// transposed (AccumulatorView, GemmMatch.h): each thread writes its fragment
// element (r, c) at (c, r) of the user's tile, with bounds-checked stores
// from registers (tessel-lower-epilogue). Operand boxes are clipped to the
// tensor's rows as before (A's 16 rows are the tile's N side now).
//
// The rule (swapsTile, GemmMatch.h, and the conditions below; anything else is
// left to tessel-select-schedule, whose error for BM < 64 names them):
//   S1. 8 <= BM < 64, BM a multiple of 8 (wgmma N), BN a multiple of 64 up to
//       256 (wgmma's 64-row blocks).
//   S2. One dot, accumulated into a loop-carried splat (ts::zeros): not a dual
//       GEMM, not a scaled accumulation.
//   S3. No reduction in the kernel (a reduction of the transposed accumulator
//       is not built).
//   S4. Not schedule multistage (mma.sync takes 32-row tiles as they are) and
//       no CTA cluster (multicast follows program_id axes measured for the
//       unswapped tile).
//   S5. Both operands K-major, loaded as A.load({m, k}) and B.load({n, k}).T()
//       (the transposed tile's wgmma operands are then K-major too; an
//       MN-major operand of 8-56 contiguous elements is a layout never
//       built), and the accumulator used by the dot alone.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSWAPOPERANDS
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

RankedTensorType transposedType(Type t) {
  auto ty = cast<RankedTensorType>(t);
  return RankedTensorType::get({ty.getDimSize(1), ty.getDimSize(0)}, ty.getElementType());
}

/// Whether operand `o` is loaded K-major: its tile's last dimension is the
/// tensor's unit-stride one (no tessel.contiguous_dim, or the last).
bool kMajor(func::FuncOp fn, const GemmOperand &o) {
  FailureOr<int64_t> d = getContiguousDim(fn, o.argIndex);
  return succeeded(d) && *d == o.refType().getRank() - 1;
}

} // namespace

bool mlir::tessel::swapsOperands(func::FuncOp fn, GemmMatch &m, StringRef schedule,
                                 StringRef cluster) {
  // S1.
  if (!swapsTile(m.tileM, m.tileN))
    return false;
  // S2, S4.
  if (m.numDots() != 1 || m.scaled() || schedule == "multistage" || cluster != "1x1")
    return false;
  DenseElementsAttr init;
  if (!matchPattern(m.loop.getInitArgs()[m.accIndex], m_Constant(&init)) || !init.isSplat())
    return false;
  // S5.
  if (m.a.transposed || !m.b.transposed || !kMajor(fn, m.a) || !kMajor(fn, m.b) ||
      !m.loop.getRegionIterArg(m.accIndex).hasOneUse() || !m.dot.getResult().hasOneUse())
    return false;
  // S3.
  bool reduces = false;
  fn.walk([&](ReduceOp) { reduces = true; });
  return !reduces;
}

namespace {

void swap(GemmMatch &m) {
  DotOp dot = m.dot;
  scf::ForOp loop = m.loop;
  auto accTy = cast<RankedTensorType>(dot.getType());
  RankedTensorType swappedTy = transposedType(accTy);

  // The dot: B^T's transpose (B as loaded) times A's transpose.
  OpBuilder b(dot);
  auto transposeOf = [&](Value v) -> Value {
    if (auto t = v.getDefiningOp<TransOp>())
      return t.getSrc();
    return b.create<TransOp>(v.getLoc(), transposedType(v.getType()), v);
  };
  Value lhs = transposeOf(dot.getB()), rhs = transposeOf(dot.getA());
  BlockArgument carried = loop.getRegionIterArg(m.accIndex);
  carried.setType(swappedTy);
  auto swapped = b.create<DotOp>(dot.getLoc(), swappedTy, lhs, rhs, carried);
  SmallVector<Operation *> operands = {dot.getA().getDefiningOp(), dot.getB().getDefiningOp()};
  dot.getResult().replaceAllUsesWith(swapped.getResult());
  dot.erase();
  for (Operation *op : operands)
    if (isa_and_nonnull<TransOp>(op) && op->use_empty())
      op->erase();

  // The initial accumulator: the same splat, transposed.
  OpOperand &initOperand = loop.getInitArgsMutable()[m.accIndex];
  DenseElementsAttr init;
  (void)matchPattern(initOperand.get(), m_Constant(&init));
  Operation *oldInit = initOperand.get().getDefiningOp();
  b.setInsertionPoint(loop);
  initOperand.set(b.create<arith::ConstantOp>(loop.getLoc(), init.reshape(swappedTy)));
  if (oldInit->use_empty())
    oldInit->erase();

  // The result: the epilogue reads it transposed back to the user's tile.
  Value result = loop.getResult(m.accIndex);
  result.setType(swappedTy);
  b.setInsertionPointAfter(loop);
  auto back = b.create<TransOp>(swapped.getLoc(), accTy, result);
  result.replaceAllUsesExcept(back.getResult(), back);
}

struct SwapOperands : mlir::tessel::impl::TesselSwapOperandsBase<SwapOperands> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (!fn->hasAttr(TesselDialect::getKernelAttrName()))
        continue;
      auto match = matchGemm(fn);
      if (failed(match))
        return signalPassFailure();
      if (!*match)
        continue;
      GemmMatch &m = **match;
      if (swapsOperands(fn, m, scheduleName, cluster))
        swap(m);
    }
  }
};

} // namespace
