//===- ScheduleMma.cpp - the tensor-core side of the mainloop -------------===//
//
// tessel-schedule-mma: which MMA instructions compute the dot, on how many
// row blocks per warpgroup, and how many wgmma groups stay in flight.
//
//   After (06-schedule-mma.mlir, schedule cooperative, tile 128x256x64):
//     hopper.warp_specialize producer "warpgroup" regs 40 {
//       hopper.produce "ab"
//     } consumers 2 regs 232 order "cooperative" {
//       hopper.consume "ab"
//       hopper.mma_schedule "wgmma" shape [64, 256, 16] k_steps 4 row_blocks 1 wait_depth 1
//     }
//
// The decisions:
//   1. wgmma m64nBNk16 (f32 accumulators; m64nBNk32 for fp8: 32 bytes of K
//      per instruction either way), BK / k of them per stage and row block,
//      one commit group per stage.
//   2. Row blocks: a warpgroup holds 64 rows of the tile (tma, cooperative,
//      warp_specialized), 128 (cooperative with BM = 256: two consumers of
//      two blocks), or the whole tile (pingpong: BM / 64 blocks);
//      consumerRowBlocks (SharedMemory.h) says which.
//   3. Wait depth 1: after issuing stage j's group, wait until at most one
//      group is pending, so stage j-1's wgmmas retired and its stage can be
//      released. The release is one k-step late, so the ring needs >= 2
//      stages (tessel-select-schedule, hopper.ring's verifier).
//   4. multistage: mma.sync m16n8k16 from ldmatrix fragments on warp tiles
//      of 32 or 64 (multistageWarps in GemmMatch.h); synchronous (wait
//      depth 0); row_blocks = 16-row blocks per warp tile.
//   5. A dual GEMM (two dots sharing A): one wgmma m64n(2 BN)k16 computes
//      both dots, B tiles side by side in the stage; `accumulators = 2`
//      says that columns [0, BN) are the first dot's accumulator and
//      [BN, 2 BN) the second's.
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

#include "mlir/IR/Verifier.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSCHEDULEMMA
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

LogicalResult scheduleMma(plan::ScheduledGemm &g) {
  if (plan::find<hopper::MmaScheduleOp>(g.fn))
    return success();
  if (failed(plan::require<hopper::RingOp>(g.fn, "tessel-insert-async-copies")))
    return failure();
  auto tile = g.sched.getTile();
  Location loc = g.match.dot.getLoc(); // the user's ts::dot line
  hopper::MmaScheduleOp mma;
  if (g.kind() == ScheduleKind::multistage) {
    // Rule 4.
    MultistageWarps w = multistageWarps(tile[0], tile[1]);
    OpBuilder b = plan::atPlanEnd(g.fn);
    mma = b.create<hopper::MmaScheduleOp>(
        loc, "mma.sync", b.getDenseI64ArrayAttr({16, 8, 16}), tile[2] / 16, w.wm / 16,
        /*wait_depth=*/0, b.getDenseI64ArrayAttr({w.warpsM, w.warpsN}),
        b.getDenseI64ArrayAttr({w.wm, w.wn}), IntegerAttr());
  } else {
    auto ws = plan::require<hopper::WarpSpecializeOp>(g.fn, "tessel-warp-specialize");
    if (failed(ws))
      return failure();
    OpBuilder b = OpBuilder::atBlockEnd(&ws->getConsumerRegion().front());
    // Rules 1-3.
    int64_t rowBlocks = consumerRowBlocks(g.kind(), tile[0]);
    // Rule 5.
    int64_t dots = g.match.numDots();
    // Rule 1: k = 32 bytes of operand elements.
    Type elt = cast<RankedTensorType>(g.match.dot.getA().getType()).getElementType();
    int64_t k = 32 / (elt.getIntOrFloatBitWidth() / 8);
    mma = b.create<hopper::MmaScheduleOp>(
        loc, "wgmma", b.getDenseI64ArrayAttr({64, dots * tile[1], k}), tile[2] / k, rowBlocks,
        /*wait_depth=*/1, DenseI64ArrayAttr(), DenseI64ArrayAttr(),
        dots > 1 ? b.getI64IntegerAttr(dots) : IntegerAttr());
  }
  return mlir::verify(mma);
}

struct ScheduleMma : mlir::tessel::impl::TesselScheduleMmaBase<ScheduleMma> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), scheduleMma)))
      signalPassFailure();
  }
};

} // namespace
