//===- LowerEpilogue.cpp - how the results leave the accumulators ---------===//
//
// tessel-lower-epilogue: the traced epilogue (elementwise ops on the
// accumulator, tessel.store) is evaluated on the accumulator fragments; this
// pass decides the path of each store and whether partial tiles are summed
// first.
//
//   After (07-lower-epilogue.mlir, schedule cooperative, stream-K):
//     hopper.warp_specialize ... consumers 2 regs 232 order "cooperative" {
//       hopper.consume "ab"
//       hopper.mma_schedule "wgmma" ...
//       hopper.epilogue staging_buffers 2 fixup "stream_k"
//     }
//     ...
//     tessel.store %8, %C[%m, %n] {hopper.store = "tma_store"} : ...
//
// The paths (`hopper.store` on each tessel.store after the mainloop):
//   1. "tma_store" (warp-specialized schedules): fragments -> stmatrix (16-bit)
//      or st.shared (f32, fp8 pairs) into one of the consumer's two 64 x
//      128-byte staging buffers, 128B-swizzled -> a TMA store, while the next
//      chunk is written into the other buffer. For a BM x BN tile of 8-, 16- or
//      32-bit floats,
//      stored as is into a 2-d tensor or one matrix of a batched (rank-3)
//      one (a 3-d box {128 bytes, 64 rows, 1}: rows past M are clipped at
//      the matrix's edge, not written into the next matrix), BN * bytes a
//      multiple of 128 (whole chunks). The kernel falls back to bounds-checked copies from the
//      staging buffer, at run time, when the output breaks TMA's rules
//      (a `tmaok` parameter).
//   2. "registers": bounds-checked stores straight from the fragments (other
//      stores of the warp-specialized schedules).
//   3. "register_pairs" (tma): two adjacent columns of a fragment per store.
//   4. "fragments" (multistage): from the mma.sync C fragments.
//   5. "reduce_atomic" (every schedule): a `tessel.store {combine}` of a
//      tessel.reduce of the accumulator tile. Each thread reduces its
//      fragment registers of a row (column), the lanes that share the row
//      (column) combine theirs with shuffles, and one lane per warp combines
//      the warp's partial into global memory with an atomic (red.add.f32;
//      max / amax as integer max / min on the f32 bits). Never staged.
// Epilogue operands (`hopper.prefetch` on a tessel.load after the mainloop),
// in the warp-specialized schedules: a BM x BN tile of 16- or 32-bit floats
// from a 2-d tensor or one matrix of a batched one (C0 of alpha * A B + beta
// * C0, a residual) takes one of:
//   6. "tma_smem" (16-bit floats, BN * 2 a multiple of 128 bytes, and the
//      tile fits in the shared memory the ring and staging buffers leave,
//      epilogueOperandBytes in SharedMemory.h; taken in the loads' order):
//      each consumer's thread 0 loads its rows of the tile into shared memory
//      with TMA (64-row x 128-byte boxes, 128B swizzle, the staging chunks'
//      layout) when it starts the tile, a whole mainloop before the epilogue,
//      which reads them with ldmatrix in the accumulator's fragment layout
//      (CUTLASS loads C through shared memory too). Reading C0 element by
//      element from L2 costs the consumers one L1 wavefront per row touched,
//      and the other consumer's wgmmas are reading shared memory at full
//      rate meanwhile (docs/benchmarks.md run 109). When the tensor breaks
//      TMA's rules (the `tmaok` parameter), the consumer's threads copy the
//      tile into the same buffer with bounds-checked loads instead.
//   7. "tma_chunk" (a 16-bit operand whose tiles do not fit, the first such
//      one in a kernel without rule 6's operands, whose per-tile phases it
//      would break; read only by stores of 16-bit elements through staging
//      buffers; its barrier fits beside the ring: 128x192 tiles' C0, and
//      cooperative 128x256 and 256x128's): chunk by chunk, through the store's own
//      staging buffer. Before it evaluates a chunk, the consumer's thread 0
//      loads the operand's 64 x 128-byte chunk into the staging buffer the
//      chunk is stored from, with TMA, and waits; the epilogue reads it with
//      ldmatrix and writes the result over it with stmatrix (each warp reads
//      and writes only its own 16 rows). The producer prefetches the tile's
//      chunks into L2 (as rule 8), so that the loads hit L2. The load's
//      latency is exposed in full for a tile's first chunk, in part for the
//      others (each chunk issues the next one's load before its math,
//      Epilogue.cpp rule O7): pingpong overlaps the epilogue
//      with the other consumer's mainloop; in cooperative and
//      warp_specialized, whose epilogues run alone, it costs much less than
//      rule 8's element loads (docs/benchmarks.md runs 114-115, H100: cooperative
//      128x256 alpha/beta at 4096x14336x4096 +2.4..4.8% over its plain GEMM,
//      from +11..12% through L2).
//   8. "tma_l2" (the others: 32-bit operands, and 16-bit ones rule 7 cannot
//      take: a second one beside rule 7's, one read by a store that is not
//      staged in 16 bits): the producer, whose warp
//      is idle once a tile's loads are issued, prefetches the tile into L2
//      with one TMA box (cp.async.bulk.prefetch.tensor) right after it issued
//      the tile's last k-stage, a few k-steps before the tile's epilogue,
//      which then reads it element by element in its own layout from L2.
//      When the tensor breaks TMA's rules, nothing is prefetched and the
//      epilogue reads it from memory.
// The accumulator transposed (`acc.T()` in the stored value, AccumulatorView
// in GemmMatch.h; every tile of a kernel whose operands tessel-swap-operands
// swapped): each thread writes its fragment element (r, c) at (c, r) of the
// stored tile, so the store takes path 2 ("registers"), or 4 in multistage,
// never a staging buffer laid out as the fragments are. A value that reads the
// accumulator both as is and transposed, and a reduction of the transposed
// accumulator, are errors.
// The fixup: with a stream-K tile scheduler, a tile whose k-range is split
// across CTAs is summed through the workspace before its epilogue runs
// (StreamK.cpp); "none" otherwise.
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOWEREPILOGUE
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr StringLiteral kStoreAttr = "hopper.store";
constexpr StringLiteral kPrefetchAttr = "hopper.prefetch";

/// Rules 6-8: a BM x BN tile of 16- or 32-bit floats loaded from a 2-d
/// tensor, or from one matrix of a batched (rank-3) one.
bool prefetchable(LoadOp load, ArrayRef<int64_t> tile) {
  auto ty = cast<RankedTensorType>(load.getResult().getType());
  RefType ref = load.getRef().getType();
  unsigned bits = ref.getElementType().getIntOrFloatBitWidth();
  return ty.getRank() == 2 && (ref.getRank() == 2 || ref.getRank() == 3) && ty.getDimSize(0) == tile[0] &&
         ty.getDimSize(1) == tile[1] && isa<FloatType>(ref.getElementType()) &&
         (bits == 16 || bits == 32);
}

/// Rule 7's condition on the stores: some store reads the operand, and every
/// one that does goes through a staging buffer of 16-bit elements (its chunks
/// are the operand's: 64 rows x 64 columns).
bool chunkable(LoadOp load, func::FuncOp fn) {
  bool any = false;
  for (Operation &op : fn.getBody().front()) {
    auto store = dyn_cast<StoreOp>(op);
    if (!store)
      continue;
    if (!readsResultOf(store.getValue(), load))
      continue;
    auto path = store->getAttrOfType<StringAttr>(kStoreAttr);
    if (!path || path.getValue() != "tma_store" ||
        store.getRef().getType().getElementType().getIntOrFloatBitWidth() != 16)
      return false;
    any = true;
  }
  return any;
}

/// Rule 1's shape and type conditions.
bool stageable(StoreOp store, ArrayRef<int64_t> tile) {
  auto ty = cast<RankedTensorType>(store.getValue().getType());
  Type refElt = store.getRef().getType().getElementType();
  unsigned bits = refElt.getIntOrFloatBitWidth();
  int64_t rank = store.getRef().getType().getRank();
  return ty.getRank() == 2 && (rank == 2 || rank == 3) &&
         ty.getDimSize(0) == tile[0] && ty.getDimSize(1) == tile[1] && isa<FloatType>(refElt) &&
         (bits == 8 || bits == 16 || bits == 32) && ty.getElementType() == refElt &&
         (tile[1] * bits / 8) % 128 == 0;
}

LogicalResult lowerEpilogue(plan::ScheduledGemm &g) {
  if (plan::find<hopper::EpilogueOp>(g.fn))
    return success();
  auto mma = plan::require<hopper::MmaScheduleOp>(g.fn, "tessel-schedule-mma");
  auto scheduler = plan::require<hopper::TileSchedulerOp>(g.fn, "tessel-materialize-tile-scheduler");
  auto ring = plan::require<hopper::RingOp>(g.fn, "tessel-insert-async-copies");
  if (failed(mma) || failed(scheduler) || failed(ring))
    return failure();
  auto tile = g.sched.getTile();
  bool multistage = g.kind() == ScheduleKind::multistage;
  SmallVector<Value, 2> accs;
  for (unsigned i : g.match.accIndices)
    accs.push_back(g.match.loop.getResult(i));
  // The stores' paths first: the operands' paths depend on them (rule 7).
  for (Operation &op : g.fn.getBody().front()) {
    auto store = dyn_cast<StoreOp>(op);
    if (!store)
      continue;
    AccumulatorView view = accumulatorView(store.getValue(), accs);
    if (view == AccumulatorView::mixed)
      return store.emitError() << kMixedAccumulatorView;
    if (store.getCombine()) {
      if (view == AccumulatorView::transposed)
        return store.emitError()
               << "a reduction of the transposed accumulator (acc.T()) is not supported: reduce "
                  "acc along the other axis instead";
      auto reduce = store.getValue().getDefiningOp<ReduceOp>();
      auto src = cast<RankedTensorType>(reduce.getSrc().getType());
      if (src.getDimSize(0) != tile[0] || src.getDimSize(1) != tile[1])
        return reduce.emitError() << "a reduction after the mainloop reduces a " << tile[0]
                                  << "x" << tile[1]
                                  << " tile (the accumulator's shape), got " << src.getDimSize(0)
                                  << "x" << src.getDimSize(1);
      store->setAttr(kStoreAttr, StringAttr::get(g.fn.getContext(), "reduce_atomic"));
      continue;
    }
    bool transposed = storesTransposedTile(store.getValue(), view, tile[0], tile[1]);
    StringRef path = multistage                                 ? "fragments"
                     : transposed                               ? "registers"
                     : g.kind() == ScheduleKind::tma            ? "register_pairs"
                     : stageable(store, tile)                   ? "tma_store"
                                                                : "registers";
    store->setAttr(kStoreAttr, StringAttr::get(g.fn.getContext(), path));
  }
  // Rule 6 first, in the loads' order; rule 7 only in a kernel without rule
  // 6's operands (both would complete phases of the consumer's one operand
  // barrier: rule 6 counts one per tile); rule 8 for the rest.
  SmallVector<LoadOp> operands;
  for (Operation &op : g.fn.getBody().front())
    if (auto load = dyn_cast<LoadOp>(op); load && g.warpSpecialized() && prefetchable(load, tile))
      operands.push_back(load);
  auto bitsOf = [](LoadOp load) { return load.getRef().getType().getElementType().getIntOrFloatBitWidth(); };
  int64_t operandBytes = 0;
  for (LoadOp load : operands) {
    int64_t bytes = epilogueOperandBytes(g.kind(), tile, bitsOf(load) / 8);
    bool smem = bitsOf(load) == 16 && (tile[1] * 2) % 128 == 0 &&
                planSharedMemory(g.kind(), g.match.ringTile(), g.eltBytes(), ring->getStages(), operandBytes + bytes)
                    .fits();
    if (smem) {
      operandBytes += bytes;
      load->setAttr(kPrefetchAttr, StringAttr::get(g.fn.getContext(), "tma_smem"));
    }
  }
  bool chunked = operandBytes > 0;
  for (LoadOp load : operands) {
    if (load->hasAttr(kPrefetchAttr))
      continue;
    bool chunk = !chunked && bitsOf(load) == 16 && chunkable(load, g.fn) &&
                 planSharedMemory(g.kind(), g.match.ringTile(), g.eltBytes(), ring->getStages(), 0,
                                  /*chunkOperand=*/true)
                     .fits();
    chunked |= chunk;
    load->setAttr(kPrefetchAttr, StringAttr::get(g.fn.getContext(), chunk ? "tma_chunk" : "tma_l2"));
  }
  // The epilogue runs where the mma does: in the consumers' region, or at the
  // top for multistage.
  OpBuilder b = multistage ? plan::atPlanEnd(g.fn) : OpBuilder(mma->getContext());
  if (!multistage)
    b.setInsertionPointAfter(*mma);
  b.create<hopper::EpilogueOp>(g.fn.getLoc(), g.warpSpecialized() ? 2 : 0,
                               scheduler->getStreamK() ? "stream_k" : "none");
  return success();
}

struct LowerEpilogue : mlir::tessel::impl::TesselLowerEpilogueBase<LowerEpilogue> {
  void runOnOperation() override {
    if (failed(plan::forEachScheduledGemm(getOperation(), lowerEpilogue)))
      signalPassFailure();
  }
};

} // namespace
