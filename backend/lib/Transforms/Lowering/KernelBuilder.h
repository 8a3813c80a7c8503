//===- KernelBuilder.h - writes one sm_90a kernel from its plan ------------===//
//
// Private to TesselTransforms: the state and helpers that tessel-lower-to-nvvm
// uses to write one `llvm.func` kernel from the plan the schedule passes left
// (HopperScheduleOps.td). LowerToNVVM.cpp holds the pass, the parameters,
// scalars and elements; each file of Lowering/ writes the instructions of one
// part of the plan:
//   TileScheduler.cpp  hopper.tile_scheduler (StreamK.cpp: its stream_k units)
//   Ring.cpp           hopper.ring, hopper.async_load, hopper.produce
//   Mma.cpp            hopper.consume with hopper.mma_schedule "wgmma"
//   Epilogue.cpp       hopper.epilogue, hopper.store (StreamK.cpp: the fixup)
//   Roles.cpp          hopper.warp_specialize: where the steps above run
//   CpAsyncRing.cpp    a "cp.async" ring (multistage)
//   MmaSync.cpp        hopper.mma_schedule "mma.sync" (multistage)
// (Multistage.h: the multistage kernel's ring, warp and fragment geometry.)
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_TRANSFORMS_KERNELBUILDER_H
#define TESSEL_LIB_TRANSFORMS_KERNELBUILDER_H

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tessel::lowering {

constexpr int64_t kThreadsPerWarpgroup = 128;
constexpr StringLiteral kSmemSymbol = "__tessel_smem";

/// Builds one kernel. All values it creates live in the new llvm.func.
class KernelBuilder {
public:
  KernelBuilder(func::FuncOp fn, std::optional<GemmMatch> gemm, ScheduleAttr sched,
                bool boundedWaits)
      : fn(fn), gemm(std::move(gemm)), sched(sched), b(fn.getContext()), ctx(fn.getContext()),
        boundedWaits(boundedWaits) {}

  LogicalResult build();

private:
  // ---- parameters -------------------------------------------------------
  struct RefParams {
    Value ptr;                      ///< !llvm.ptr<1>
    SmallVector<Value> sizes;       ///< i64
    SmallVector<Value> strides;     ///< i64
    Type elementType;               ///< in memory: i8 for fp8 (LLVM has no fp8 type)
  };
  struct TmaParam {
    unsigned arg;
    std::array<int64_t, 2> box;     ///< innermost first
    Value desc;                     ///< !llvm.ptr to the byval CUtensorMap
    StoreOp store = {};             ///< TMA-store descriptors: the store they serve
    LoadOp prefetch = {};           ///< L2-prefetch descriptors: the epilogue load they serve
    LoadOp operand = {};            ///< epilogue operands read through shared memory: the load
    bool perChunk = false;          ///< ... chunk by chunk through the staging buffers (rule 7)
    /// TMA-store, prefetch and operand descriptors (optional ones): i1, the
    /// argument meets TMA's rules (else the descriptor is zeroed and unused).
    Value usable = {};
    bool optional() const { return store || prefetch || operand; }
    int64_t swizzle = 128;          ///< bytes, 0 = none
    /// The argument's unit-stride dimension (the descriptor's innermost);
    /// -1: the last one.
    int64_t contiguousDim = -1;
    /// Operand tiles whose box rows are clipped to the tensor (":r", the
    /// clipped box below): the tensor dimension of the rows, and the bytes
    /// one row of the whole tile (all its boxes) delivers. -1: not clipped.
    int64_t clipDim = -1, clipRowBytes = 0;
  };

  // ---- helpers ----------------------------------------------------------
  Value i32(int64_t v) { return b.create<arith::ConstantIntOp>(loc, b.getI32Type(), v); }
  Value i64(int64_t v) { return b.create<arith::ConstantIntOp>(loc, b.getI64Type(), v); }
  /// Inline PTX with side effects; operands bind to $0.. in order.
  Value ptx(StringRef code, StringRef constraints, ValueRange operands, Type result = {});
  /// fp8 conversions (fp8 values are i8 bits; `fp8` names the format):
  /// the f32 value of `bits` (exact), and two f32 values as one fp8 pair,
  /// `first` in the low byte (cvt.rn.satfinite: rounds to nearest even,
  /// saturates to the largest finite value, NaN stays NaN).
  Value fp8ToF32(Type fp8, Value bits);
  Value f32ToFp8Pair(Type fp8, Value first, Value second);
  void barSync() { ptx("bar.sync 0;", "", {}); }
  Value smemAddr(int64_t offset) { return b.create<arith::AddIOp>(loc, smemBase32, i32(offset)); }
  Value smemAddr(Value offset) { return b.create<arith::AddIOp>(loc, smemBase32, offset); }
  /// Waits until mbarrier `bar` completes the phase of parity `parity`. With
  /// bounded waits (TESSEL_DEBUG), a wait longer than 4 s prints which
  /// barrier ring (`ring`), stage and parity timed out, then traps.
  void mbarrierWait(Value bar, Value parity, StringRef ring, Value stage);
  /// Spins until the PTX of probe(n) (asm operands numbered from $n; `decls`
  /// declares its registers) sets predicate p (`doneIfP`) or clears it. With
  /// bounded waits, gives up after 4 s, prints `what`, `id` and `parity`, and
  /// traps.
  void spinWait(StringRef decls, function_ref<std::string(int)> probe, bool doneIfP,
                StringRef constraints, ValueRange operands, StringRef what, Value id, Value parity);

  Type mapScalarType(Type t) { return t.isIndex() ? b.getI32Type() : t; }
  /// Whether `v` (of the kernel being built) dominates the insertion point.
  bool availableHere(Value v);
  /// The kernel-side value of a scalar (index or float) of the tessel func;
  /// `ivRepl` replaces the mainloop's induction variable.
  FailureOr<Value> scalar(Value v, Value ivRepl = {});
  /// `scalar` of each value (tile offsets).
  FailureOr<SmallVector<Value>> offsetScalars(ValueRange vs, Value ivRepl = {});
  /// Evaluates one element of tile `v` at `coords` (i32, one per dim).
  FailureOr<Value> element(Value v, ArrayRef<Value> coords);
  /// Whether `store` writes the accumulator tile transposed (acc.T(), or loaded
  /// values in a swapped kernel's user tile: fragment element (r, c) at
  /// (c, r); storesTransposedTile, GemmMatch.h). Errors for a store that reads
  /// both views, and for a transposed store not on the register path.
  FailureOr<bool> storesTransposed(StoreOp store);
  /// A stored tile after the mainloop is the accumulator's (BM x outBN) or,
  /// `transposed`, outBN x BM; else an error at the store.
  LogicalResult checkStoredTile(StoreOp store, bool transposed);
  FailureOr<Value> cloneElementwise(Operation *op, ArrayRef<Value> operands);
  /// Linear element offset (i64) and in-bounds predicate of ref[offsets + coords].
  std::pair<Value, Value> address(unsigned arg, ArrayRef<Value> offsets, ArrayRef<Value> coords);
  /// The element of a loaded tile at `coords`, 0 outside the tensor.
  FailureOr<Value> loadElement(LoadOp load, ArrayRef<Value> coords);
  /// ref[linear] of argument `arg` where `inBounds`, else 0.
  Value loadPredicated(unsigned arg, Value linear, Value inBounds);
  LogicalResult storeElement(StoreOp store, ArrayRef<Value> coords);
  /// Bounds-checked store of the evaluated element `v` at ref[offsets + coords].
  LogicalResult storeValue(StoreOp store, ArrayRef<Value> coords, Value v);
  /// Stores two evaluated elements at (row, col) and (row, col + 1) of a 2-d store.
  LogicalResult storePair(StoreOp store, Value row, Value col, Value v0, Value v1);

  /// Reads the plan that the schedule passes wrote into a GEMM kernel
  /// (HopperScheduleOps.td) into the members below; fails, naming the pass
  /// to run, when a part is missing.
  LogicalResult readPlan();
  /// The path tessel-lower-epilogue chose for a store (`hopper.store`).
  static StringRef storePath(StoreOp store);
  LogicalResult buildSignature();
  LogicalResult buildGemm();
  LogicalResult setupGemm();
  /// lb, step and nk (the mainloop's trip count) from the program ids set
  /// now: once in setupGemm, again where a tile's ids are set when the trip
  /// count depends on the tile (multistage's grouped raster).
  LogicalResult computeTripCount();
  /// hopper.warp_specialize (Roles.cpp): checks its regions' steps, then
  /// lowerInlineProducer (producer "inline": schedule tma) or
  /// lowerProducerConsumers (producer "warpgroup": warp_specialized,
  /// cooperative, pingpong).
  LogicalResult lowerWarpSpecialize();
  LogicalResult lowerInlineProducer();
  LogicalResult lowerProducerConsumers();
  /// No warp specialization (Roles.cpp; schedule multistage): a cp.async
  /// ring, ldmatrix, mma.sync m16n8k16, every warp copying and computing.
  LogicalResult lowerAllWarps();
  // ---- schedule `multistage` helpers (Multistage.h, CpAsyncRing.cpp, MmaSync.cpp, Epilogue.cpp)
  /// Tile, warp and shared-memory geometry of the multistage kernel, and of
  /// each operand (K- or MN-major in global and shared memory).
  struct MultistagePlan;
  struct MsOperand;
  /// The persistent walk of this CTA's units (TileScheduler.cpp): the tiles
  /// of the user's grid it takes, or its stream-K units.
  struct TileWalk {
    Value numTiles, firstTile, tileStride; ///< i32
    Value unitCount;                       ///< units of this CTA (i32)
    bool streamK = false;
  };
  struct WorkUnit;
  TileWalk walkTiles();
  /// An scf.for over units start, start + step, ... of `w`; sets the program
  /// ids of each unit's tile and calls body(unit index, unit). A
  /// non-persistent CTA's one unit is built in place, without a loop.
  LogicalResult forEachUnit(const TileWalk &w, Value start, int64_t step,
                            function_ref<LogicalResult(Value, WorkUnit)> body);
  /// forEachUnit for a trip count per tile (tileTrips, persistent): each
  /// unit's ring position is the running sum of the earlier units' counts.
  LogicalResult forEachUnitWithTrips(const TileWalk &w, Value start, int64_t step,
                                     function_ref<LogicalResult(Value, WorkUnit)> body);
  /// Tile r of a gx x gy grid -> (x, y) in grouped raster order.
  std::pair<Value, Value> groupedRaster(Value r, Value gx, Value gy);
  /// Grouped raster order: remaps %ctaid to the user's program ids so that
  /// CTAs running at the same time share A and B tiles in L2.
  void msRasterProgramIds();
  /// Per-thread invariants of operand `o` (copy chunk, ldmatrix lane offset).
  LogicalResult msPlanOperand(MultistagePlan &p, MsOperand &o);
  /// Copies chunks [iBegin, iEnd) of this thread's share of tile `t` (i32) of
  /// operand `o` into ring stage `stage` (i32): unpredicated cp.async when the
  /// tile lies inside the tensor, cp.async with a source size (zero-fill) at
  /// the edges, synchronous element copies when rows are not 16-byte aligned.
  LogicalResult msCopyChunks(const MultistagePlan &p, const MsOperand &o, Value t, Value stage,
                             int64_t iBegin, int64_t iEnd);
  /// Copy group `group` of `groups` of tile `t` into `stage` when t < nk.
  LogicalResult msIssueGroup(const MultistagePlan &p, Value t, Value stage, int64_t group,
                             int64_t groups);
  /// ldmatrix of the A fragment (4 registers) of 16-row block `mi`, or of
  /// every B fragment (wn/8 x 2 registers), of k16 step `kk` of `stage`.
  SmallVector<Value> msLoadA(const MultistagePlan &p, Value stage, int64_t kk, int64_t mi);
  SmallVector<Value> msLoadB(const MultistagePlan &p, Value stage, int64_t kk);
  /// The wn/8 mma.sync m16n8k16 of 16-row block `mi`.
  Value msMmaRow(const MultistagePlan &p, Value acc, int64_t mi, ArrayRef<Value> aFrag,
                 ArrayRef<Value> bFrag);
  /// The traced epilogue on the mma.sync C fragments of this thread.
  LogicalResult msEpilogue(const MultistagePlan &p, Value acc);
  // ---- end of schedule `multistage` helpers -------------------------------
  Value fullBar(Value s);
  Value emptyBar(Value s);
  Value zeroAccumulator();
  /// Pins the accumulator registers after a wgmma wait (warpgroup_fence_operand).
  Value fenceAccumulator(Value acc);
  /// wgmma.fence, BK/16 x wgmma m64nBNk16 on stage `s` for the 64-row block
  /// `rowBlock` of A, commit_group. Returns the new accumulator.
  /// With several accumulators, accs[i] is row block rowBlock + i (one
  /// commit group for all).
  /// `zeroFirst`: each row block's first wgmma ignores its accumulator
  /// (zero_acc), so the stage's product starts from zero (issuePartial).
  SmallVector<Value> wgmmaStage(ArrayRef<Value> accs, Value s, Value rowBlock,
                                bool zeroFirst = false);
  /// Waits for ring position `it`, runs wgmmaStage on it, waits until the
  /// previous position's wgmma retired.
  SmallVector<Value> consumeStage(Value it, ArrayRef<Value> accs, Value rowBlock);
  /// The mainloop of a scaled accumulation over unit `u` (Roles.cpp): `init`
  /// holds the zeroed accumulators and two partials per row block;
  /// `release(it)` frees ring position it.
  FailureOr<SmallVector<Value>> scaledMainloop(const WorkUnit &u, ArrayRef<Value> init,
                                               Value rowBlock, Value inWg,
                                               function_ref<void(Value)> release);
  /// A scaled accumulation (GemmMatch::promoted; Mma.cpp): waits for ring
  /// position `it` and issues its wgmmas into the partial accumulators
  /// `partials` from zero (one commit group); returns the new partials.
  SmallVector<Value> issuePartial(Value it, ArrayRef<Value> partials, Value rowBlock);
  /// Loads the promotion's factors at k offset `k` (i32) for the fragments
  /// of `rowBlocks` row blocks from `rowBlock` (thread `inWg`): each
  /// distinct element once; factorTable says which one each (factor,
  /// register) takes.
  FailureOr<SmallVector<Value>> loadFactors(Value k, int64_t rowBlocks, Value rowBlock, Value inWg);
  /// Waits until `pending` wgmma groups remain, calls `afterWait` (the
  /// stage's release), and returns accs + f(partial) per fragment register
  /// with the factors `factorValues` (loadFactors), then the pinned partials.
  SmallVector<Value> promote(ArrayRef<Value> accs, ArrayRef<Value> partials,
                             ArrayRef<Value> factorValues, int64_t pending, Value rowBlock,
                             Value inWg, function_ref<void()> afterWait);
  SmallVector<std::array<Value, 2>> fragmentCoords(int64_t rowBlocks, Value rowBlock, Value inWg);
  SmallVector<unsigned> factorTable;
  /// While promote runs: the factors' elements at (factor, row, column).
  DenseMap<std::tuple<Value, Value, Value>, Value> factorElements;
  // ---- values an epilogue computes once (emitEpilogue, emitConsumerEpilogue) --
  /// While an epilogue of the wgmma schedules is written (an EpilogueReuse is
  /// alive): fragment coordinates are interned by (base, offset), so that the
  /// registers of one column (row) share one coordinate value, and the element
  /// of a broadcast 1-d tile (bias[n] of `bias.load({n}, BN).row()`, a
  /// per-row scale) is computed once per coordinate and thread, not once per
  /// fragment register (a bounds-checked load each: 4x fewer with two row
  /// blocks). Every use is in the epilogue's one block, after the first.
  /// An element of a loaded tile (C0, a residual) is loaded once per
  /// coordinates, however often the expression uses it (gelu uses its operand
  /// three times). Elementwise kernels open one for each element they write.
  bool reuseEpilogueValues = false;
  DenseMap<std::pair<Value, int64_t>, Value> coordinates;
  DenseMap<std::pair<Operation *, Value>, Value> broadcastElements;
  DenseMap<Value, Value> fragmentColumns;
  DenseMap<std::tuple<Operation *, Value, Value>, Value> loadedElements; // (load, coords)
  struct EpilogueReuse {
    KernelBuilder &kb;
    explicit EpilogueReuse(KernelBuilder &k) : kb(k) { reset(true); }
    ~EpilogueReuse() { reset(false); }
    void reset(bool on) {
      kb.coordinates.clear();
      kb.broadcastElements.clear();
      kb.fragmentColumns.clear();
      kb.loadedElements.clear();
      kb.reuseEpilogueValues = on;
    }
  };
  /// base + offset (i32), interned while an EpilogueReuse is alive.
  Value coordinate(Value base, int64_t offset);
  /// The first column of thread `inWg`'s fragments: 2 (inWg % 4).
  Value fragmentColumn(Value inWg);
  /// The first row of thread `inWg`'s fragments in 64-row block `rowBlock`:
  /// 64 rowBlock + 16 (inWg / 32) + inWg % 32 / 4.
  Value fragmentRow(Value rowBlock, Value inWg);

  /// Stores the traced epilogue from the accumulator fragments of a warpgroup
  /// (thread `inWg` of it) that owns rows [64 rowBlock, 64 rowBlock + 64).
  LogicalResult emitEpilogue(Value accFinal, Value rowBlock, Value inWg);
  /// emitEpilogue for one store.
  LogicalResult emitRegisterStore(StoreOp store, Value accFinal, Value rowBlock, Value inWg);

  // ---- reductions in the epilogue (path "reduce_atomic") --------------------
  /// Register `reg` of accumulator `acc` (of the ones a thread holds) is the
  /// tile element at (rowBase + row, colBase + col), the bases being the
  /// thread's.
  struct FragmentElement {
    int64_t acc, reg, row, col;
  };
  /// The wgmma fragments of `rowBlocks` consecutive 64-row blocks, one
  /// accumulator each.
  SmallVector<FragmentElement> wgmmaFragments(int64_t rowBlocks) const;
  /// A `tessel.store {combine}` of a tessel.reduce of the accumulator tile,
  /// from the fragments `frags` of `accs` (every lane of the warp runs it):
  /// per thread, per row (axis 1) or column (axis 0) of its fragments; then
  /// shuffles among the lanes that share it (lane % 4 for a row, lane / 4
  /// for a column, the layout of both wgmma and mma.sync); then one atomic
  /// per row (column) and warp into the output vector.
  LogicalResult emitReduceStore(StoreOp store, ArrayRef<Value> accs,
                                ArrayRef<FragmentElement> frags, Value rowBase, Value colBase,
                                Value lane);
  /// Rows and columns (i32, from the tile's origin) of the accumulator tile
  /// inside the GEMM's M x N: what a reduction covers.
  FailureOr<std::pair<Value, Value>> gemmTileLimits();
  /// Combines the f32 partial `v` into element `at` of output vector `arg`
  /// stored at `offsets`, bounds-checked, with one atomic (sum: add; max /
  /// amax: integer max / min on the f32 bits, exact and order-independent).
  void combineIntoGlobal(ReduceKind kind, unsigned arg, ArrayRef<Value> offsets, Value at, Value v);
  /// A `tessel.store {combine}` of a tessel.reduce in a kernel without a dot
  /// (Epilogue.cpp): through a shared-memory vector of partials.
  LogicalResult emitElementwiseReduce(StoreOp store);
  /// i1: whether tile element `coords` of `v` lies inside every tensor the
  /// expression loads (what an elementwise reduction covers).
  FailureOr<Value> insideLoads(Value v, ArrayRef<Value> coords);

  // ---- TMA-store epilogue of the warp-specialized schedules ----------------
  /// Stores after the mainloop that go through shared memory and a TMA store:
  /// BM x BN tiles of a 2-d tensor of 16- or 32-bit elements, BN a multiple
  /// of one 128-byte chunk. Other stores use emitEpilogue's register path.
  SmallVector<StoreOp> stagedStores();
  /// Consumer warpgroup `consumer` (of `consumers`), thread `inWg` of it,
  /// owns the 64-row blocks firstRowBlock + i with accumulators accs[i].
  /// `tileIter` counts this warpgroup's tiles (it picks staging buffers).
  LogicalResult emitConsumerEpilogue(ArrayRef<Value> accs, Value firstRowBlock, Value inWg,
                                     Value consumer, Value tileIter);
  /// One 64-row x 128-byte chunk of a staged store: fragments -> swizzled
  /// staging buffer -> TMA store (or plain stores when the output breaks
  /// TMA's rules). `rowBlock` is the tile's 64-row block, `localRowBlock` its
  /// index among the consumer's own (which picks the operands' buffers).
  /// Rule 7's lookahead: `pending` holds, on entry, the state of this
  /// chunk's operand load when the previous chunk issued it (else null), and
  /// on exit the state of the load of `next` (64-row block, chunk) that this
  /// chunk issued into the other staging buffer (else null).
  LogicalResult stageChunk(TmaParam &t, Value acc, Value rowBlock, int64_t localRowBlock, int64_t chunk,
                           Value inWg, Value consumer, Value sequence, bool drainAll, Value &pending,
                           std::optional<std::pair<Value, int64_t>> next);
  /// Staging buffer of chunk `sequence` of consumer `consumer` (rule E1's
  /// alternation).
  Value stagingBuffer(Value consumer, Value sequence);
  /// The epilogue loads whose `hopper.prefetch` (tessel-lower-epilogue rules
  /// 6-8) is `path`, in the function's order.
  SmallVector<LoadOp> operandLoadsOn(StringRef path);
  /// Epilogue loads that the producer prefetches into L2 with TMA
  /// (`hopper.prefetch = "tma_l2"`, tessel-lower-epilogue rule 8).
  SmallVector<LoadOp> prefetchedLoads();
  /// The producer's L2 prefetch of the epilogue operands of the tile whose
  /// program ids are set (when each one's tensor meets TMA's rules).
  LogicalResult prefetchEpilogueOperands();
  // ---- epilogue operands read through shared memory (Epilogue.cpp) -------
  /// Epilogue loads that each consumer loads into shared memory with TMA
  /// when it starts a tile (`hopper.prefetch = "tma_smem"`,
  /// tessel-lower-epilogue rule 6), in the order of their regions.
  SmallVector<LoadOp> stagedOperandLoads();
  /// The epilogue load that goes chunk by chunk through the staging buffers
  /// (`hopper.prefetch = "tma_chunk"`, rule 7), or null.
  LoadOp chunkOperandLoad();
  /// Copies chunk `chunk` (64 rows x 128 bytes) of 64-row block `rowBlock`
  /// of `load`'s tile into the swizzled chunk at `buffer`, each of the
  /// warpgroup's threads some of its elements, bounds-checked (0 outside).
  LogicalResult copyChunkFromMemory(LoadOp load, Value buffer, Value rowBlock, int64_t chunk, Value inWg);
  /// Rule 7: the operand's chunk for stageChunk's staging buffer `buffer`
  /// (TMA by thread 0, which waits for it; or copyChunkFromMemory), then the
  /// consumer's barrier.
  LogicalResult loadOperandChunk(TmaParam &t, Value buffer, Value rowBlock, int64_t chunk, Value inWg,
                                 Value consumer, Value issued);
  /// Rule 7: thread 0 of the consumer, when the operand's tensor meets TMA's
  /// rules, arrives on the operand barrier expecting one chunk and issues its
  /// TMA load into `buffer`, after `cp.async.bulk.wait_group.read` of
  /// `waitRead` (-1: none). Returns the arrival's state (0 elsewhere).
  FailureOr<Value> issueOperandChunk(TmaParam &t, Value buffer, Value rowBlock, int64_t chunk, Value inWg,
                                     Value consumer, int64_t waitRead);
  /// Shared address of chunk `chunk` (64 rows x 128 bytes) of local row
  /// block `localRowBlock` of consumer `consumer`'s rows of operand `t`.
  Value operandChunk(const TmaParam &t, Value consumer, int64_t localRowBlock, int64_t chunk);
  /// The consumer's operand barrier (one per consumer warpgroup).
  Value operandBar(Value consumer);
  /// i1: some operand read through shared memory is loaded by TMA.
  Value anyOperandByTma();
  /// Thread 0 of the consumer: TMA loads of its rows of every such operand
  /// of the tile whose program ids are set, completing on operandBar.
  LogicalResult issueOperandLoads(Value consumer, Value firstRowBlock, Value inWg);
  /// Every consumer thread: waits for this tile's operand loads (phase
  /// `local` & 1, `local` counting the consumer's tiles).
  void waitOperandLoads(Value consumer, Value local);
  /// The consumer's threads copy the operands whose tensor breaks TMA's
  /// rules into the same buffers (bounds-checked loads), then a barrier.
  LogicalResult fillOperandsFromMemory(Value consumer, Value firstRowBlock, Value inWg);
  /// ldmatrix of the operands that `v` reads, for n8 blocks [firstBlock,
  /// firstBlock + blocks) of local row block `localRowBlock`, into
  /// operandElements at the fragment coordinates (row0, colLane) imply:
  /// the whole-tile operands from their buffers, or with `staged`, the
  /// chunk operand from that staging buffer (rule 7).
  void readOperandFragments(Value v, Value consumer, int64_t localRowBlock, int64_t firstBlock,
                            int64_t blocks, Value row0, Value colLane, Value inWg, Value staged = {});
  /// While a staged chunk is evaluated: the operands' elements that
  /// readOperandFragments read, by (load result, row, column).
  DenseMap<std::tuple<Value, Value, Value>, Value> operandElements;
  int64_t operandsOff = 0, operandFullOff = 0;
  /// Named barrier of consumer warpgroup `consumer` (ids 1..; 0 is bar.sync 0).
  void consumerBarrier(Value consumer);
  /// Cluster tile `tile` of the persistent walk -> the user's program ids
  /// (and `tileValid`: false for the cluster partner of a tile past the
  /// grid's edge, which runs the mainloop for its partner but stores nothing).
  void setProgramIds(Value tile);
  /// Arrives on the empty barrier of stage `s` in every CTA of the cluster.
  void releaseStage(Value s);
  /// All threads of all CTAs of the cluster (bar.sync 0 without a cluster).
  void clusterSync();
  // ---- stream-K (StreamK.cpp) ---------------------------------------------
  /// One piece of work of a persistent CTA: k-iterations [kBegin, kEnd) of
  /// tile `tile`, at ring positions base, base + 1, ... (all i32).
  struct WorkUnit {
    Value tile, kBegin, kEnd, base;
  };
  /// Ring position of k-iteration j of unit u.
  Value ringPos(const WorkUnit &u, Value j);
  /// Computes `sk` for a persistent walk over `numTiles` tiles (StreamK.cpp:
  /// the kernel decides S, the tiles of the stream-K phase).
  void planStreamK(Value numTiles);
  /// Unit `w` (i32, in [0, sk.count)) of this CTA: stream-K units first (the
  /// range's first tile last), then data-parallel tiles.
  WorkUnit streamKUnit(Value w);
  /// (first tile, number of units) of the stream-K range [begin, end).
  std::pair<Value, Value> streamKTiles(Value begin, Value end);
  /// First iteration (i32) of CTA `cta`'s stream-K range (`ctas` CTAs,
  /// `total` = S * I iterations, i64).
  Value streamKStart(Value cta, Value ctas, Value total);
  /// %ctaid.x, %nctaid.x (opaque reads) and S * I (i64), recomputed where used.
  Value streamKCta();
  Value streamKCtas();
  Value streamKTotal();
  /// Workspace addresses (i64): CTA `cta`'s flag; float4 number `q` of
  /// tile thread `u` in CTA `cta`'s slot.
  Value streamKFlag(Value cta);
  Value streamKSlot(Value cta, Value u, int64_t q);
  /// Threads that hold one tile's accumulators: every consumer thread
  /// (cooperative), or the 128 of one consumer warpgroup (pingpong).
  int64_t streamKTileThreads() const;
  /// bar.sync of the tile threads: named barrier 5 (cooperative), the
  /// consumer's own barrier 1 + consumer (pingpong).
  void streamKBarrier(Value consumer);
  /// A contributor's part: the accumulators (one per m64 row block the tile
  /// thread `u` holds) to this CTA's slot, then its flag.
  void streamKStorePartial(ArrayRef<Value> accs, Value u, Value consumer);
  /// Waits for CTA `cta`'s flag (one thread) and clears it.
  void streamKWaitFlag(Value cta);
  /// The finisher of `tile`: adds the parts of CTAs owner(first k) .. cta-1.
  SmallVector<Value> streamKAddPartials(ArrayRef<Value> accs, Value tile, Value u, Value consumer);

  LogicalResult buildElementwise();
  LogicalResult emitStores(function_ref<LogicalResult(StoreOp)> perStore);
  /// TMA loads of tile `j` into stage `s` (both i32), then expect_tx.
  LogicalResult issueStage(Value j, Value s);
  /// Reads, at the current insertion point, every tensor element an operand
  /// load's offsets read outside the mainloop (a grouped GEMM's group,
  /// `tile_group.at({program_id(0)})`), so that the producer's k-loop reuses
  /// them instead of loading them again at every k-step (Ring.cpp).
  LogicalResult readTileTables();
  /// Whether an operand tile at `rowOffset` of `rows` rows may load a box
  /// clipped to the tensor's rows (LowerToNVVM.cpp).
  bool clipsSafely(Value rowOffset, int64_t rows);
  /// The bytes one stage's TMA boxes deliver (arrive_expect_tx): the static
  /// aBytes + bBytes, less what the clipped boxes leave out (clippedRows).
  Value stageTxBytes();
  /// Rows a clipped box of `t` loads: min(box rows, rows of the tensor
  /// rounded up to 8), i32; the runtime encodes the descriptor's box alike.
  Value clippedRows(const TmaParam &t);
  /// The TMA boxes of one operand tile (layout `l`) at k offset `kv` into the
  /// shared tile at `dst`; `cs` > 1: this CTA's 1/cs of it, multicast.
  /// Box i goes to dst + i * boxStride (0: l.boxBytes(); a dual GEMM's B
  /// tiles interleave their boxes, OperandLayout::sideBySide).
  LogicalResult issueOperand(const OperandLayout &l, GemmOperand op, TmaParam &t, Value kv,
                             Value dst, Value full, int64_t cs, int64_t boxStride = 0);

  func::FuncOp fn;
  std::optional<GemmMatch> gemm;
  ScheduleAttr sched;

  // ---- the plan (GEMM kernels; readPlan) ----------------------------------
  hopper::TileSchedulerOp schedulerOp;
  hopper::RingOp ringOp;
  hopper::WarpSpecializeOp wsOp;      ///< null for multistage
  hopper::MmaScheduleOp mmaOp;
  hopper::EpilogueOp epilogueOp;
  hopper::ResourcesOp resourcesOp;
  /// A, then each dot's B (a dual GEMM has two).
  SmallVector<hopper::AsyncLoadOp, 3> asyncLoads;
  bool multistage = false;            ///< cp.async ring, mma.sync
  bool inlineProducer = false;        ///< tma: thread 0 of the consumers refills
  bool persistent = false;            ///< persistent tile scheduler
  bool pingpong = false;              ///< consumers take tiles in turns
  int64_t rowBlocks = 1;              ///< 64-row blocks per consumer warpgroup
  int64_t waitDepth = 1;              ///< wgmma groups left in flight per k-step
  int64_t emptyArrivals = 0;
  int64_t bOff = 0;                   ///< offset of the ring's B slots
  int64_t consumerBarrierBase = 1, turnBarrierBase = 3, streamKBarrierId = 5;
  OpBuilder b;
  MLIRContext *ctx;
  bool boundedWaits;
  Location loc = UnknownLoc::get(ctx);

  LLVM::LLVMFuncOp kernel;
  SmallVector<RefParams> refs;
  /// GEMM kernels: [0] = A, [1 + j] = the B of dot j, then staged stores.
  SmallVector<TmaParam> tma;
  DenseMap<Value, Value> scalars;
  Value smemBase32, tid;
  unsigned threads = kThreadsPerWarpgroup;
  int64_t smemBytes = 0;

  // GEMM state.
  /// The tessel loop results that hold the accumulators, one per dot (a
  /// dual GEMM has two), and while an element is evaluated, each one's f32
  /// register for it (selectAccRegisters).
  SmallVector<Value, 2> accLoopResults, accRegisters;
  /// Evaluating the element of fragment register `r` (a column < outBN) of
  /// `acc`: dot j's accumulator is register r + j * outBN / 2 (the wgmma
  /// fragment of column c + j * outBN, which the same thread holds).
  void selectAccRegisters(Value acc, int64_t r);
  Value lb, step, nk;
  /// The mainloop's trip count depends on the tile (tripCountDependsOnTile):
  /// recomputed wherever a tile's program ids are set, and a persistent walk
  /// carries each unit's ring position as a running sum (forEachUnit).
  bool tileTrips = false;
  /// While promote evaluates a scaled accumulation: the k offset (i32)
  /// that replaces the mainloop's induction variable, and that tiles loaded
  /// in the loop may be read element by element.
  Value mainloopK;
  bool promoting = false;
  /// BN: the accumulator's columns, as the tensor cores compute them
  /// (numAccs x the tile's N); outBN: the tile's N, which the epilogue stores.
  int64_t BM = 0, BN = 0, BK = 0, eltBytes = 2, outBN = 0, numAccs = 1;
  /// The dot's operand element types (equal but for an e4m3 x e5m2 dot).
  Type elt, eltB;
  int64_t aBytes = 0, bBytes = 0, stages = 0;
  /// Shared-memory layouts of the A and B tiles (TMA-fed schedules): bLayout
  /// is B as the wgmma reads it (a dual GEMM's two B tiles side by side,
  /// OperandLayout::sideBySide), bLoads[j] the tile dot j loads.
  OperandLayout aLayout, bLayout;
  SmallVector<OperandLayout, 2> bLoads;
  /// Persistent schedules: the user's grid (i32 x 3) and the program ids of
  /// the tile being computed (empty: program ids are %ctaid).
  SmallVector<Value, 3> gridParams;
  SmallVector<Value, 3> programIds;
  int64_t fullBarOff = 0, emptyBarOff = 0;
  /// Warp-specialized schedules: consumer warpgroups and their staging buffers
  /// (two 64 x 128-byte chunks each, 1024-aligned for the 128B swizzle).
  int64_t consumers = 0, stagingOff = 0;
  /// Cluster: CTAs along program_id 0 and 1 (launched as clusterSize x 1 x 1),
  /// this CTA's rank in it (i32), and whether its current tile is in the grid.
  int64_t clusterX = 1, clusterY = 1, clusterSize = 1;
  Value clusterRank, tileValid;
  static constexpr int64_t kChunkBytes = 64 * 128;
  /// Stream-K (#tessel.schedule stream_k != 0): the workspace parameter
  /// (!llvm.ptr<1>) and this CTA's plan (StreamK.cpp; i32 unless noted).
  Value workspace;
  struct {
    Value tiles;         ///< S: tiles of the stream-K phase
    Value count;         ///< this CTA's units: stream-K parts + data-parallel tiles
    Value begin, end;    ///< this CTA's stream-K iteration range
  } sk;
};

/// The user's grid in cluster tiles: ceil(grid / cluster) along axes 0, 1
/// (TileScheduler.cpp).
std::array<Value, 2> clusterGrid(OpBuilder &b, Location loc, ArrayRef<Value> grid, int64_t cx,
                                 int64_t cy);

} // namespace mlir::tessel::lowering

#endif // TESSEL_LIB_TRANSFORMS_KERNELBUILDER_H
