//===- InsertAsyncCopies.cpp - the operand ring and its async loads -------===//
//
// tessel-insert-async-copies: the mainloop's two operand loads go through a
// shared-memory ring, filled ahead of the k-step that reads it.
//
//   Before (03-materialize-tile-scheduler.mlir):
//     scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) {
//       %a = tessel.load %A[%m, %k] : !tessel.ref<2 x bf16> -> tensor<128x64xbf16>
//       %b = tessel.load %B[%n, %k] : !tessel.ref<2 x bf16> -> tensor<256x64xbf16>
//       ...
//
//   After (04-insert-async-copies.mlir):
//     hopper.ring "ab" stages 4 copy "tma" stage_bytes 49152
//     scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) {
//       %a = hopper.async_load %A[%m, %k] into "ab"[0] {box = array<i64: 64, 128>,
//              boxes = 1 : i64, copy = "tma", multicast = 1 : i64, swizzle = 128 : i64} ...
//       %b = hopper.async_load %B[%n, %k] into "ab"[1] {box = array<i64: 64, 256>, ...} ...
//
// The decisions:
//   1. Depth: the schedule's stages (tessel-select-schedule checked them
//      against the shared-memory budget, SharedMemory.h).
//   2. TMA-fed schedules: each tile is `boxes` TMA boxes of one swizzle row
//      along its contiguous dimension (OperandLayout.h: K- or MN-major, the
//      schedule's swizzle); the box is {row elements, outer / multicast}.
//   3. In a 2x1 cluster the two CTAs along program_id 0 share B: each loads
//      half of B's box rows and multicasts them (multicast 2 on B); 1x2
//      shares A likewise.
//   4. multistage: every thread copies 16-byte chunks with cp.async into
//      rows of BK (K-major) or of the tile's MN extent (MN-major), swizzled
//      by multistage's XOR pattern (Lowering/Multistage.h); box is the
//      tile's shape, swizzle the K-major row width in bytes.
//   5. A dual GEMM (two dots sharing A) loads its second B into slot 2: a
//      stage holds A, B and B of dot 2 (stage_bytes counts all three), and
//      the two B tiles sit side by side (OperandLayout::sideBySide) for the
//      one wgmma that reads both.
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELINSERTASYNCCOPIES
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The ring every GEMM kernel has: one stage holds an A and a B tile.
constexpr StringLiteral kRing = "ab";

LogicalResult insertCopies(plan::ScheduledGemm &g) {
  if (plan::find<hopper::RingOp>(g.fn))
    return success();
  if (failed(plan::require<hopper::TileSchedulerOp>(g.fn, "tessel-materialize-tile-scheduler")))
    return failure();
  ScheduleAttr s = g.sched;
  auto tile = s.getTile();
  bool tma = g.kind() != ScheduleKind::multistage;
  OpBuilder b = plan::atPlanEnd(g.fn);
  // Rule 1.
  b.create<hopper::RingOp>(g.fn.getLoc(), kRing, s.getStages(), tma ? "tma" : "cp.async",
                           (tile[0] + g.match.accumulatorN()) * tile[2] * g.eltBytes());
  auto [cx, cy] = s.getClusterShape();
  // Rule 5: slot 0 is A, slot 1 + j the B of dot j.
  // (Every plan is made before a load is replaced: the layouts read them.)
  SmallVector<GemmOperand> operands = {g.match.a};
  llvm::append_range(operands, g.match.bs);
  SmallVector<NamedAttrList> plans;
  for (auto [slot, op] : llvm::enumerate(operands)) {
    bool isB = slot >= 1;
    NamedAttrList attrs;
    attrs.set("into", b.getStringAttr(kRing));
    attrs.set("slot", b.getI64IntegerAttr(slot));
    attrs.set("copy", b.getStringAttr(tma ? "tma" : "cp.async"));
    if (tma) {
      // Rules 2 and 3.
      auto l = getOperandLayout(g.fn, g.match, isB, s.getSwizzle(), isB ? slot - 1 : 0);
      if (failed(l))
        return failure();
      int64_t share = isB ? cx : cy;
      attrs.set("box", b.getDenseI64ArrayAttr({l->boxInner(), l->outer / share}));
      attrs.set("boxes", b.getI64IntegerAttr(l->numBoxes()));
      attrs.set("swizzle", b.getI64IntegerAttr(l->swizzle));
      if (l->mnMajor)
        attrs.set("mn_major", b.getUnitAttr());
      attrs.set("multicast", b.getI64IntegerAttr(share));
    } else {
      // Rule 4.
      auto c = getContiguousDim(g.fn, op.argIndex);
      if (failed(c))
        return failure();
      int64_t lead = op.refType().getRank() - 2;
      int64_t kDim = (isB ? op.transposed : !op.transposed) ? 1 : 0;
      attrs.set("box", b.getDenseI64ArrayAttr(op.tileType().getShape()));
      attrs.set("boxes", b.getI64IntegerAttr(1));
      attrs.set("swizzle", b.getI64IntegerAttr(s.getSwizzle()));
      if (*c - lead != kDim)
        attrs.set("mn_major", b.getUnitAttr());
      attrs.set("multicast", b.getI64IntegerAttr(1));
    }
    plans.push_back(attrs);
  }
  for (auto [op, attrs] : llvm::zip(operands, plans)) {
    Operation *load = op.load;
    OpBuilder lb(load);
    auto async = lb.create<hopper::AsyncLoadOp>(load->getLoc(), TypeRange{op.tileType()},
                                                load->getOperands(), attrs.getAttrs());
    load->getResult(0).replaceAllUsesWith(async.getResult());
    load->erase();
  }
  return success();
}

struct InsertAsyncCopies : mlir::tessel::impl::TesselInsertAsyncCopiesBase<InsertAsyncCopies> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), insertCopies)))
      signalPassFailure();
  }
};

} // namespace
