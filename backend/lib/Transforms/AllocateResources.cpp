//===- AllocateResources.cpp - shared memory, threads, barrier ids --------===//
//
// tessel-allocate-resources: the last decision before the kernel is written.
//
//   After (08-allocate-resources.mlir, schedule pingpong, 128x128x64, 4 stages):
//     hopper.resources threads 384 smem_bytes 164416 {arrivals = {empty = 1 : i64,
//       full = 1 : i64}, barriers = {consumer = array<i64: 1, 2>, turn = array<i64: 3, 4>},
//       offsets = {a = 0 : i64, b = 65536 : i64, empty = 164384 : i64, full = 164352 : i64,
//       staging = 131072 : i64}}
//
// The rules:
//   1. Shared memory is laid out by planSharedMemory (SharedMemory.h), the
//      function tessel-select-schedule checked the stages with: the ring's A
//      and B slots, the consumers' staging buffers, the epilogue operands
//      read through shared memory (`hopper.prefetch = "tma_smem"`,
//      tessel-lower-epilogue rule 6, in the loads' order), the full and
//      empty barrier arrays (8 bytes each, one per stage), and with operands
//      (or an operand loaded chunk by chunk into the staging buffers, rule 7)
//      one `operand_full` barrier per consumer. A dual GEMM's B slot holds
//      both B tiles (GemmMatch::ringTile).
//   2. Threads: 128 per warpgroup, the producer's included; multistage: 32
//      per warp of its warp grid.
//   3. Arrivals: a full barrier completes with the producer's one
//      arrive_expect_tx (and the bytes); an empty barrier with one arrival
//      per consumer warpgroup that read the stage (pingpong: the one whose
//      tile it was), from every CTA of the cluster (multicast fills every
//      CTA's stage).
//   4. Named barriers (0 is bar.sync 0 of the whole CTA): 1 + c for consumer
//      c's epilogue; pingpong's turn barriers 3 + c; cooperative stream-K's
//      barrier of all consumer threads 5 (pingpong's stream-K uses the
//      consumer's own). At most 16 exist.
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELALLOCATERESOURCES
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int64_t kThreadsPerWarpgroup = 128;

LogicalResult allocate(plan::ScheduledGemm &g) {
  if (plan::find<hopper::ResourcesOp>(g.fn))
    return success();
  auto ring = plan::require<hopper::RingOp>(g.fn, "tessel-insert-async-copies");
  auto mma = plan::require<hopper::MmaScheduleOp>(g.fn, "tessel-schedule-mma");
  auto scheduler = plan::require<hopper::TileSchedulerOp>(g.fn, "tessel-materialize-tile-scheduler");
  if (failed(ring) || failed(mma) || failed(scheduler) ||
      failed(plan::require<hopper::EpilogueOp>(g.fn, "tessel-lower-epilogue")))
    return failure();
  OpBuilder b = plan::atPlanEnd(g.fn);
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  // Rule 1.
  int64_t operandBytes = 0;
  bool chunkOperand = false;
  for (Operation &op : g.fn.getBody().front())
    if (auto load = dyn_cast<LoadOp>(op)) {
      auto path = load->getAttrOfType<StringAttr>("hopper.prefetch");
      if (path && path.getValue() == "tma_smem")
        operandBytes += epilogueOperandBytes(
            g.kind(), g.sched.getTile(), load.getRef().getType().getElementBytes());
      chunkOperand |= path && path.getValue() == "tma_chunk";
    }
  SharedMemoryMap smem = planSharedMemory(g.kind(), g.match.ringTile(), g.eltBytes(), ring->getStages(),
                                          operandBytes, chunkOperand);
  if (!smem.fits())
    return g.fn.emitError() << ring->getStages() << " stages of " << smem.stageBytes
                            << " bytes do not fit in shared memory";
  NamedAttrList offsets, barriers, arrivals;
  offsets.set("a", i64(smem.a));
  offsets.set("b", i64(smem.b));
  int64_t threads = 0;
  if (g.kind() == ScheduleKind::multistage) {
    // Rule 2.
    auto warps = mma->getWarps();
    threads = warps ? (*warps)[0] * (*warps)[1] * 32 : 0;
  } else {
    auto ws = plan::require<hopper::WarpSpecializeOp>(g.fn, "tessel-warp-specialize");
    if (failed(ws))
      return failure();
    bool producer = ws->getProducer() == "warpgroup";
    bool pingpong = ws->getOrder() == "pingpong";
    int64_t consumers = ws->getConsumers();
    threads = (consumers + (producer ? 1 : 0)) * kThreadsPerWarpgroup;
    offsets.set("staging", i64(smem.staging));
    if (operandBytes || chunkOperand) {
      offsets.set("operands", i64(smem.operands));
      offsets.set("operand_full", i64(smem.operandFull));
    }
    offsets.set("full", i64(smem.full));
    offsets.set("empty", i64(smem.empty));
    // Rule 3.
    ArrayRef<int64_t> cluster = scheduler->getCluster();
    arrivals.set("full", i64(1));
    arrivals.set("empty", i64((pingpong ? 1 : consumers) * cluster[0] * cluster[1]));
    // Rule 4.
    if (producer) {
      SmallVector<int64_t> ids;
      for (int64_t c = 0; c < consumers; ++c)
        ids.push_back(1 + c);
      barriers.set("consumer", b.getDenseI64ArrayAttr(ids));
      if (pingpong)
        barriers.set("turn", b.getDenseI64ArrayAttr({3, 4}));
      if (scheduler->getStreamK() && !pingpong)
        barriers.set("stream_k", b.getDenseI64ArrayAttr({5}));
    }
  }
  b.create<hopper::ResourcesOp>(g.fn.getLoc(), threads, smem.bytes,
                                offsets.getDictionary(b.getContext()),
                                barriers.getDictionary(b.getContext()),
                                arrivals.getDictionary(b.getContext()));
  return success();
}

struct AllocateResources : mlir::tessel::impl::TesselAllocateResourcesBase<AllocateResources> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), allocate)))
      signalPassFailure();
  }
};

} // namespace
