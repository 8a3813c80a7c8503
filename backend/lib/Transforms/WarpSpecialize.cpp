//===- WarpSpecialize.cpp - the CTA's producer and consumer roles ---------===//
//
// tessel-warp-specialize: who fills the ring and who computes on it.
//
//   After (05-warp-specialize.mlir, schedule pingpong):
//     hopper.warp_specialize producer "warpgroup" regs 40 {
//       hopper.produce "ab"
//     } consumers 2 regs 232 order "pingpong" {
//       hopper.consume "ab"
//     }
//
// The decisions (CUTLASS's KernelTmaWarpSpecialized* split):
//   1. warp_specialized, cooperative, pingpong: warpgroup 0 produces; one
//      elected thread of it issues every copy. It needs few registers:
//      `setmaxnreg.dec` to 40.
//   2. The consumers: one warpgroup per 64 rows of the tile (cooperative,
//      warp_specialized: every consumer takes every tile), or two that take
//      alternate tiles whole (pingpong: their mainloops run in turns, one's
//      epilogue overlapping the other's mainloop). They share the rest of
//      the 64K-register file: (512 - 40) / consumers per thread, rounded
//      down to a multiple of 8, at most 232.
//   3. tma: no producer warpgroup; thread 0 of the consumers refills each
//      stage between its wgmmas ("inline", no register budgets).
//   4. multistage: no roles, every warp copies and computes: the IR is left
//      as it is.
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

#include "mlir/IR/Verifier.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELWARPSPECIALIZE
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int64_t kProducerRegs = 40;
constexpr int64_t kMaxConsumerRegs = 232;
constexpr int64_t kRegistersPerThread = 65536 / 128; // per thread of one warpgroup

LogicalResult specialize(plan::ScheduledGemm &g) {
  if (plan::find<hopper::WarpSpecializeOp>(g.fn))
    return success();
  auto ring = plan::require<hopper::RingOp>(g.fn, "tessel-insert-async-copies");
  if (failed(ring))
    return failure();
  if (g.kind() == ScheduleKind::multistage)
    return success(); // Rule 4.
  OpBuilder b = plan::atPlanEnd(g.fn);
  hopper::WarpSpecializeOp ws;
  if (g.warpSpecialized()) {
    // Rules 1 and 2.
    int64_t consumers = consumerWarpgroups(g.kind(), g.sched.getTile()[0]);
    int64_t regs =
        std::min<int64_t>(kMaxConsumerRegs, ((kRegistersPerThread - kProducerRegs) / consumers) / 8 * 8);
    ws = b.create<hopper::WarpSpecializeOp>(
        g.fn.getLoc(), "warpgroup", kProducerRegs, consumers, regs,
        g.kind() == ScheduleKind::pingpong ? "pingpong" : "cooperative");
  } else {
    // Rule 3: one warpgroup per 64 rows.
    ws = b.create<hopper::WarpSpecializeOp>(g.fn.getLoc(), "inline", 0,
                                            g.sched.getWarpgroups(), 0, "cooperative");
  }
  StringRef name = ring->getRing();
  b.setInsertionPointToStart(&ws.getProducerRegion().emplaceBlock());
  b.create<hopper::ProduceOp>(g.fn.getLoc(), name);
  b.setInsertionPointToStart(&ws.getConsumerRegion().emplaceBlock());
  b.create<hopper::ConsumeOp>(g.fn.getLoc(), name);
  return mlir::verify(ws);
}

struct WarpSpecialize : mlir::tessel::impl::TesselWarpSpecializeBase<WarpSpecialize> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), specialize)))
      signalPassFailure();
  }
};

} // namespace
