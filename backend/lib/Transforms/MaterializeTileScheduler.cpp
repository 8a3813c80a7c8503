//===- MaterializeTileScheduler.cpp - which tile each CTA computes --------===//
//
// tessel-materialize-tile-scheduler: the first decision after the schedule.
// The traced program names its tile with `tessel.program_id`; here those ids
// become the results of one `hopper.tile_scheduler`, whose attributes say how
// CTAs map to tiles:
//
//   Before (02-select-schedule.mlir, schedule cooperative):
//     %0 = tessel.program_id 0 : index
//     %1 = tessel.program_id 1 : index
//     %m = arith.muli %0, %c128 : index
//
//   After (03-materialize-tile-scheduler.mlir):
//     %pid:3 = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 1] stream_k
//     %m = arith.muli %pid#0, %c128 : index
//
// The rules:
//   1. cooperative and pingpong are persistent: about one CTA (one cluster)
//      per SM walks the user's grid in grouped raster order, `raster_group`
//      rows of tiles at a time (#tessel.schedule's raster, default 8, 16
//      for tiles of at most 64 rows), its
//      `cluster` CTAs on neighbouring tiles; with `stream_k` the last wave's
//      k-iterations are split among all CTAs (StreamK.cpp).
//   2. multistage launches one CTA per tile and remaps the launch order into
//      the same raster groups (co-resident CTAs share operand tiles in L2).
//   3. tma and warp_specialized launch one CTA per tile in launch order
//      (raster_group 0: program ids are %ctaid).
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELMATERIALIZETILESCHEDULER
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

LogicalResult materialize(plan::ScheduledGemm &g) {
  if (plan::find<hopper::TileSchedulerOp>(g.fn))
    return success();
  ScheduleAttr s = g.sched;
  if (s.getStreamk() != 0 && s.getStreamk() != 1)
    return g.fn.emitError() << "stream_k must be 0 (whole tiles) or 1 (stream-K), got "
                            << s.getStreamk();
  bool persistent = g.kind() == ScheduleKind::cooperative || g.kind() == ScheduleKind::pingpong;
  auto [cx, cy] = s.getClusterShape();
  if (s.getStreamk() && (!persistent || cx * cy != 1))
    return g.fn.emitError("stream_k needs schedule 'cooperative' or 'pingpong' with a 1x1 cluster");
  // Rules 1-3.
  int64_t raster = persistent || g.kind() == ScheduleKind::multistage ? s.getRasterGroup() : 0;
  OpBuilder b = plan::atPlanEnd(g.fn);
  Type index = b.getIndexType();
  auto scheduler = b.create<hopper::TileSchedulerOp>(
      g.fn.getLoc(), index, index, index, b.getStringAttr(persistent ? "persistent" : "grid"),
      b.getI64IntegerAttr(raster), b.getDenseI64ArrayAttr({cx, cy}),
      s.getStreamk() ? b.getUnitAttr() : UnitAttr());
  if (failed(mlir::verify(scheduler)))
    return failure();
  SmallVector<ProgramIdOp> ids;
  g.fn.walk([&](ProgramIdOp op) { ids.push_back(op); });
  for (ProgramIdOp op : ids) {
    op.getResult().replaceAllUsesWith(scheduler.getResult(op.getAxis()));
    op.erase();
  }
  return success();
}

struct MaterializeTileScheduler
    : mlir::tessel::impl::TesselMaterializeTileSchedulerBase<MaterializeTileScheduler> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), materialize)))
      signalPassFailure();
  }
};

} // namespace
