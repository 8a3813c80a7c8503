//===- SelectSchedule.cpp - attach a #tessel.schedule to GEMM kernels -----===//
//
// Before:
//   func.func @gemm(%A: !tessel.ref<2 x bf16>, ...) attributes {tessel.kernel} {
//     ... scf.for ... tessel.dot %a, %bt, %acc : tensor<128x64xbf16>, tensor<64x256xbf16> ...
//   }
// After:
//   func.func @gemm(...) attributes {tessel.kernel, tessel.schedule =
//     #tessel.schedule<kind = tma, tile = [128, 256, 64], stages = 4, warpgroups = 2,
//                      swizzle = 128>}
//
// The rules checked here are those of the `tma` schedule's building blocks:
//   1. Each operand is loaded from a 2-d tensor, in either orientation
//      (A.load({m, k}, BM, BK) or A.load({k, m}, BK, BM).T(); B likewise),
//      and is K-major or MN-major depending on which dimension of the tensor
//      has unit stride (`tessel.contiguous_dim`, OperandLayout.h). MN-major
//      operands need f16/bf16 (rule L2 of OperandLayout.cpp).
//   2. BK * sizeof(T) == 128. The swizzle (option `swizzle`: 0 automatic,
//      128, 64, 32, -1 none) is one mode for both operands; automatic picks
//      the widest one dividing both tiles' contiguous extents, an explicit
//      one must divide them (rule L3); narrower ones load a tile as several
//      TMA boxes.
//   3. BM is a multiple of 64 (one m64 wgmma row block per warpgroup, at most
//      4 warpgroups); BN is a multiple of 8 and at most 256 (wgmma N).
//      Pingpong's consumers each hold a whole tile: (BM / 64) x BN / 2 f32
//      registers per thread, at most 192 (128 x 192, 192 x 128, 64 x 256).
//      Cooperative with BM = 256 has two consumers of 128 rows: BN at most
//      192 (256 x 192: 192 registers per thread), one dot.
//   4. The ring has 2 or more stages and fits in 227 KiB of shared memory
//      (beside the staging buffers of the TMA-store epilogue in the
//      warp-specialized schedules). One stage cannot work: a stage is released
//      one k-step late (once the next k-step's wgmma group is issued,
//      wait_group 1), so the load of k-step 1 would wait for its own reader.
//   5. Clusters 1x1, 2x1, 1x2, for the persistent schedules only; the
//      multicast operand's offsets must not depend on the program id the
//      pair differs in (B and program_id(0) for 2x1, A and 1 for 1x2).
//   6. Decomposition (option `decomposition`, options::decomposition):
//      `stream_k = 1` (stream-K for the last wave, or for every tile of a
//      small grid, where the kernel computes that it pays) for cooperative
//      and pingpong with a 1x1 cluster under `auto`, required by `stream-k`
//      (an error elsewhere); `data-parallel` and every other kernel: whole
//      tiles.
//   7. A dual GEMM (two dots sharing A, GemmMatch.h) runs both dots as one
//      wgmma of N = 2 x BN, so 2 x BN <= 256 and its accumulators take twice
//      a tile's registers (pingpong: BM x BN at most 64 x 128); a ring stage
//      holds A and both B tiles. Schedule multistage cannot hold it.
//   8. A scaled accumulation (acc += dot(a, b) * s, GemmMatch.h) keeps a
//      partial accumulator beside the tile's: the consumer warpgroups of
//      warp_specialized, cooperative and pingpong run it (Mma.cpp,
//      Lowering/Mma.cpp; `auto` picks cooperative, or pingpong for BM = 64), with
//      at most 128 f32 registers of both per thread (64 x 128 per consumer
//      row block). tma and multistage cannot: an error.
//   9. The mainloop's trip count may depend on the tile (a triangular GEMM's
//      `range(0, m + BM, BK)`, GemmMatch.h tripCountDependsOnTile). The
//      schedules of one tile per CTA compute it from the tile's program ids;
//      cooperative and pingpong carry each tile's ring position as a running
//      sum (TileScheduler.cpp, forEachUnitWithTrips), with whole tiles and a
//      1x1 cluster only: the stream-K split and a cluster's pair need one
//      trip count for every tile (decomposition auto takes whole tiles,
//      stream-k and clusters are errors). `auto` takes warp_specialized for
//      a scaled accumulation.
//
// Schedule `multistage` (cp.async + ldmatrix + mma.sync, Lowering/Multistage.h)
// has its own rules:
//   M1. 2-d operands, in either orientation: A loaded BM x BK (or BK x BM and
//       transposed), B BN x BK transposed (or BK x BN). Each may be K- or
//       MN-major in memory (argument attribute tessel.contiguous_dim); an
//       MN-major tile is stored as BK rows of its MN extent, which must be 32
//       or a multiple of 64 (ldmatrix.trans reads it).
//   M2. bf16 or f16 elements (mma.sync m16n8k16 with f32 accumulators).
//   M3. BK = 32 or 64: a tile row is 64 or 128 bytes, 4 or 8 16-byte chunks,
//       the widths the XOR swizzle for ldmatrix is built for.
//   M4. BM and BN are multiples of 32 (warp tiles are 32 or 64 wide,
//       multistageWarps()) and the CTA has at most 8 warps (the 64x64 warp
//       tile holds 128 f32 accumulators per thread: 8 warps use the whole
//       register file).
//   M5. 2 or more stages (one being computed while the next ones load), fitting
//       in 227 KiB; by default as many as fit, at most 4 (for CTAs of up to 4
//       warps: as many as let two CTAs share an SM, when that is 3 or more).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSELECTSCHEDULE
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int64_t kMaxStages = 4;

struct SelectSchedule : mlir::tessel::impl::TesselSelectScheduleBase<SelectSchedule> {
  using Base::Base;
  bool structureFailed = false;  ///< rule 0 failed (checkStructure)

  /// 0. What the kernel builder has no lowering for, reported here, at the
  ///    user's source line, as the user's error (no IR reproducer): a loop
  ///    other than a GEMM's mainloop, a reduction in a kernel without a dot,
  ///    and an epilogue that reads the accumulator both as is and transposed
  ///    or reduces it transposed (LowerToNVVM.cpp and LowerEpilogue.cpp would
  ///    reject them later, as tessel's failure).
  static LogicalResult checkStructure(func::FuncOp fn, const std::optional<GemmMatch> &m) {
    Operation *mainloop = m ? scf::ForOp(m->loop).getOperation() : nullptr;
    SmallVector<Value, 2> accs;  // the mainloop's accumulator results
    if (m)
      for (unsigned i : m->accIndices)
        accs.push_back(scf::ForOp(m->loop).getResult(i));
    for (Operation &op : fn.getBody().front()) {
      if (isa<scf::ForOp>(op) && &op != mainloop)
        return op.emitError() << "a ts::range loop is built only as a GEMM's mainloop (the loop "
                                 "around ts::dot)"
                              << (m ? "; this kernel has a second loop"
                                    : "; a kernel without a ts::dot (an elementwise kernel) has none");
      auto store = dyn_cast<StoreOp>(op);
      if (!store)
        continue;
      if (!m)
        continue;
      // The epilogue reads each thread's own fragment of the accumulator, as is or transposed
      // (tessel-lower-epilogue's paths), never both, and reduces it only as is.
      AccumulatorView view = accumulatorView(store.getValue(), accs);
      if (view == AccumulatorView::mixed)
        return store.emitError() << kMixedAccumulatorView;
      if (store.getCombine() && view == AccumulatorView::transposed)
        return store.emitError() << "a reduction of the transposed accumulator (acc.T()) is not supported: "
                                    "reduce acc along the other axis instead";
    }
    return success();
  }

  LogicalResult select(func::FuncOp fn) {
    auto match = matchGemm(fn);
    if (failed(match))
      return failure();
    if (failed(checkStructure(fn, *match))) {
      structureFailed = true;  // (about the program as written: no remark about a swapped tile)
      return failure();
    }
    if (!*match)
      return success(); // no dot: an elementwise kernel, no schedule needed
    GemmMatch &m = **match;

    ScheduleKind kind = ScheduleKind::tma;
    if (scheduleName != "auto") {
      auto k = symbolizeScheduleKind(scheduleName);
      if (!k)
        return fn.emitError() << "unknown schedule '" << scheduleName
                              << "' (expected tma, multistage, warp_specialized, "
                                 "cooperative, pingpong or auto)";
      kind = *k;
    }
    // 9. A trip count that differs between tiles (below).
    const bool tileTrips = tripCountDependsOnTile(m.loop);
    // 8. Scaled accumulations run in the consumer warpgroups.
    if (m.scaled()) {
      if (scheduleName == "auto")
        kind = tileTrips      ? ScheduleKind::warp_specialized
               : m.tileM == 64 ? ScheduleKind::pingpong
                               : ScheduleKind::cooperative;
      if (kind == ScheduleKind::tma || kind == ScheduleKind::multistage)
        return m.dot.emitError()
               << "schedule '" << stringifyScheduleKind(kind)
               << "' cannot scale each k-step's product (acc += dot(a, b) * s): use "
                  "'cooperative', 'pingpong' or 'warp_specialized'";
      int64_t rowBlocks = kind == ScheduleKind::pingpong ? m.tileM / 64
                          : kind == ScheduleKind::cooperative && m.tileM == 256 ? 2
                                                                                : 1;
      if (rowBlocks * m.tileN > 128)
        return m.dot.emitError()
               << "a scaled accumulation (acc += dot(a, b) * s) keeps a partial accumulator "
                  "beside the tile's, 2 x BN / 2 f32 registers per thread and 64-row block: "
                  "at most 128, i.e. 64 x 128 per consumer warpgroup; schedule '"
               << stringifyScheduleKind(kind) << "' with " << m.tileM << " x " << m.tileN
               << " gives each consumer " << rowBlocks * 64 << " x " << m.tileN
               << " (use BN <= 128, and BM = 64 for pingpong)";
    }
    if (tileTrips && (kind == ScheduleKind::cooperative || kind == ScheduleKind::pingpong)) {
      if (StringRef(cluster) != "1x1")
        return m.loop.emitError()
               << "the mainloop's bounds depend on the tile (they read a program_id): cluster "
               << cluster << " walks one k-range for the two tiles of a pair; use cluster 1x1";
      if (decomposition == "stream-k")
        return m.loop.emitError()
               << "the mainloop's bounds depend on the tile (they read a program_id): "
                  "decomposition stream-k splits the k-iterations of tiles that must all have "
                  "one trip count; use data-parallel";
    }
    if (kind == ScheduleKind::multistage && StringRef(cluster) != "1x1")
      return fn.emitError() << "cluster " << cluster << " needs a persistent schedule "
                               << "(cooperative or pingpong), got 'multistage'";
    // (At most 1024: the scheduler computes raster x grid-columns in i32.)
    if (rasterGroup < 0 || rasterGroup > 1024)
      return fn.emitError() << "option raster-group (options::raster_group) must be in [0, 1024] "
                               "(0: the default, 8, or 16 for tiles of at most 64 rows), got "
                            << static_cast<int64_t>(rasterGroup);
    if (decomposition != "auto" && decomposition != "data-parallel" && decomposition != "stream-k")
      return fn.emitError() << "unknown decomposition '" << decomposition
                            << "' (expected auto, data-parallel or stream-k)";
    // 7. A dual GEMM needs a TMA-fed schedule (both accumulators in one
    //    wgmma's fragment layout; mma.sync's warp tiles would split them).
    if (kind == ScheduleKind::multistage && m.numDots() > 1)
      return m.dots[1].emitError()
             << "schedule 'multistage' cannot hold the two accumulators of a dual GEMM: use "
                "'cooperative' or 'pingpong' (or 'tma', 'warp_specialized')";
    if (kind == ScheduleKind::multistage) {
      if (decomposition == "stream-k")
        return fn.emitError() << "decomposition stream-k needs schedule 'cooperative' or "
                                 "'pingpong' with a 1x1 cluster, got 'multistage'";
      return selectMultistage(fn, m);
    }

    Type elt = cast<RankedTensorType>(m.dot.getA().getType()).getElementType();
    int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
    // Operands come from 2-d tensors or are matrices of a batch (rank-3
    // tensors, a leading offset): OperandLayout handles both.
    if (m.tileK * eltBytes != 128)
      return m.dot.emitError() << "schedule '" << stringifyScheduleKind(kind)
                               << "' needs BK * sizeof(element) == 128 bytes "
                                  "(BK = "
                               << 128 / eltBytes << " for " << elt << "), got BK = " << m.tileK;
    // Rules 1 and 2 (operand layouts and the swizzle).
    auto swizzleBytes = selectSwizzle(fn, m, swizzle);
    if (failed(swizzleBytes))
      return failure();
    if (m.tileM % 64 != 0 || m.tileM > 256) {
      InFlightDiagnostic d = m.dot.emitError() << "BM must be 64, 128, 192 or 256, got " << m.tileM;
      if (m.tileM < 64)
        d << " (tessel-swap-operands computes a tile of 8-56 rows, a multiple of 8, as its "
             "transpose when BN is a multiple of 64 up to 256, with one dot, no reduction, no "
             "cluster and a schedule other than multistage: docs/small-m.md)";
      return d;
    }
    // 7. A dual GEMM's accumulators are one wgmma's: N = 2 x BN <= 256.
    int64_t accN = m.accumulatorN();
    if (m.numDots() > 1 && accN > 256)
      return m.dots[1].emitError()
             << "a dual GEMM computes both dots with one wgmma of N = 2 x BN <= 256 (its two "
                "accumulators side by side): BN must be at most 128, got "
             << m.tileN;
    // Pingpong: each of the two consumer warpgroups holds a whole tile's
    // accumulators, (BM / 64) x BN / 2 f32 registers per thread of the 232
    // that setmaxnreg gives a consumer: at most 192 (128 x 192, 192 x 128,
    // 64 x 256). With 192, ptxas spills a few bytes where the stream-K plan
    // stays live (128 x 192: 4 bytes plain, 8 with GELU; none with whole
    // tiles) and 160-176 bytes in epilogues that read a C0 tile, which then
    // run faster with 128 x 128 (docs/benchmarks.md runs 44-46),
    // and for a dual GEMM, whose epilogue keeps both accumulators and the
    // gate's activation live, at most 128 (64 x 128).
    if (kind == ScheduleKind::pingpong &&
        (m.tileM / 64) * accN / 2 > (m.numDots() > 1 ? 128 : 192)) {
      if (m.numDots() > 1)
        return m.dots[1].emitError()
               << "schedule 'pingpong' keeps both accumulators of a whole tile per consumer "
                  "warpgroup: BM x BN must be at most 64 x 128 for a dual GEMM, got "
               << m.tileM << " x " << m.tileN << " (use BM = 64, or schedule 'cooperative')";
      return m.dot.emitError()
             << "schedule 'pingpong' keeps a whole tile per consumer warpgroup, (BM / 64) x BN / 2 "
                "f32 registers per thread: at most 192 (128 x 192, 192 x 128, 64 x 256), got "
             << m.tileM << " x " << m.tileN;
    }
    // Warp-specialized: at most 3 consumer warpgroups besides the producer.
    if (kind == ScheduleKind::warp_specialized && m.tileM > 192)
      return m.dot.emitError() << "schedule 'warp_specialized' needs BM <= 192 (one consumer "
                                  "warpgroup per 64 rows), got "
                               << m.tileM;
    // Cooperative: one consumer per 64 rows up to BM = 192; BM = 256 takes two
    // consumers of 128 rows (CUTLASS's 256 x N split; four would leave ptxas
    // 96 registers per thread), 2 x BN / 2 f32 registers per thread of the
    // 232 that setmaxnreg gives them: at most 192 (256 x 192). Not for a dual
    // GEMM: its epilogue has not been built for two row blocks of two
    // accumulators per consumer (pingpong's dual tile is 64 x 128 too).
    if (kind == ScheduleKind::cooperative && m.tileM == 256 && m.numDots() > 1)
      return m.dots[1].emitError()
             << "schedule 'cooperative' with BM = 256 cannot hold a dual GEMM (two row blocks of "
                "two accumulators per consumer warpgroup): use BM <= 128, or BM <= 192 with BN <= 96 "
                "(rule 3b)";
    if (kind == ScheduleKind::cooperative && m.tileM == 256 && accN > 192)
      return m.dot.emitError()
             << "schedule 'cooperative' with BM = 256 keeps 128 rows per consumer warpgroup, BN "
                "f32 registers per thread: BN must be at most 192, got "
             << m.tileN;
    if (m.tileN % 8 != 0 || m.tileN > 256 || m.tileN < 8)
      return m.dot.emitError() << "BN must be a multiple of 8 in [8, 256], got " << m.tileN;
    // 3b. A CTA of 512 threads (tma with four consumer warpgroups, warp_specialized or
    //     cooperative with three and the producer) leaves ptxas 128 registers per thread: a
    //     consumer's accumulators must leave room for the rest, at most 96 per thread (BN <= 192,
    //     a dual GEMM's BN <= 96). Measured with ptxas 13.0: 128 accumulator registers there
    //     (192x256, 256x256, a dual 192x128) fail with C7602 "Insufficient registers"; 96 (192x192,
    //     256x192) compile without spills. Pingpong (384 threads) and 256-row cooperative (two
    //     consumers of 128 rows, 384 threads) have their own limits above and below.
    if (kind == ScheduleKind::tma || kind == ScheduleKind::warp_specialized ||
        (kind == ScheduleKind::cooperative && m.tileM < 256)) {
      const int64_t consumers = m.tileM / 64, threads = 128 * (consumers + (kind == ScheduleKind::tma ? 0 : 1));
      const int64_t accRegisters = m.accumulatorN() / 2;
      if (threads >= 512 && accRegisters > 96)
        return (m.numDots() > 1 ? m.dots[1] : m.dot).emitError()
               << "schedule '" << stringifyScheduleKind(kind) << "' with BM = " << m.tileM << " runs " << consumers
               << " consumer warpgroups" << (kind == ScheduleKind::tma ? "" : " and a producer")
               << ": 512 threads, which leave ptxas 128 registers per thread; "
               << (m.numDots() > 1 ? "the two accumulators of BN = " : "BN = ") << m.tileN
               << (m.numDots() > 1 ? " take " : " takes ") << accRegisters << " of them: at most 96 (BN <= " << (m.numDots() > 1 ? 96 : 192)
               << "), or BM <= " << (kind == ScheduleKind::tma ? 192 : 128);
    }

    // Rule 4, with the kernel's shared-memory map (SharedMemory.h; the
    // warp-specialized schedules keep two 8 KiB staging chunks per consumer
    // warpgroup for the TMA-store epilogue).
    // (A ring stage holds A and every dot's B: GemmMatch::ringTile.)
    SmallVector<int64_t> tile(m.ringTile());
    // By default as many stages as fit, at most kMaxStages; more when asked
    // for, up to what fits (the error below names that, not the default);
    // stages = -1 (ts::stages_max): as many as fit.
    int64_t fit = stagesThatFit(kind, tile, eltBytes);
    if (stages < -1)
      return fn.emitError() << "stages must be at least 2, 0 (tessel's choice) or -1 (as many as fit), got "
                            << static_cast<int64_t>(stages);
    int64_t s = stages == -1 ? fit : stages ? stages : std::min(kMaxStages, fit);
    if (s < 2)  // (an option error at the ts::jit call; a tile too large for two, at the dot)
      return (stages > 0 ? fn.emitError() : m.dot.emitError()) << "schedule '" << stringifyScheduleKind(kind)
                               << "' needs at least 2 stages (a stage is released one k-step late), got "
                               << s << (stages > 0 ? "" : " (the tile is too large for two stages)");
    SharedMemoryMap smem = planSharedMemory(kind, tile, eltBytes, s);
    if (!smem.fits())
      return m.dot.emitError() << s << " stages of " << smem.stageBytes
                               << " bytes do not fit in shared memory (at most " << fit
                               << (smem.stagingBytes ? " beside the epilogue's staging buffers" : "")
                               << ")";
    // 5. Clusters: 1x1, 2x1 (pairs along program_id 0 share B) or 1x2 (along
    //    program_id 1, share A), for the persistent schedules, whose tile
    //    scheduler keeps the CTAs of a cluster on neighbouring tiles.
    int64_t cx = 0, cy = 0;
    {
      StringRef text(cluster);
      auto [xs, ys] = text.split('x');
      if (xs.getAsInteger(10, cx) || ys.getAsInteger(10, cy))
        return fn.emitError() << "cluster '" << cluster << "' is not of the form MxN (e.g. 2x1)";
    }
    if (cx < 1 || cy < 1 || cx * cy > 2)
      return fn.emitError() << "option cluster = {" << cx << ", " << cy
                            << "} is not supported: use {1, 1}, {2, 1} or {1, 2}";
    if (cx * cy > 1 && kind != ScheduleKind::cooperative && kind != ScheduleKind::pingpong)
      return fn.emitError() << "cluster " << cx << "x" << cy << " needs a persistent schedule "
                            << "(cooperative or pingpong), got '" << stringifyScheduleKind(kind)
                            << "'";
    if ((cx == 2 && (m.tileN / 2) % 8 != 0) || (cy == 2 && (m.tileM / 2) % 8 != 0))
      return m.dot.emitError() << "cluster " << cx << "x" << cy
                               << " multicasts half of the shared tile per CTA: its rows ("
                               << (cx == 2 ? m.tileN : m.tileM) << ") must be a multiple of 16";
    //    The multicast tile must be the same for both CTAs of the pair: no
    //    offset of a B (2x1) or of A (1x2) may depend on the program id the
    //    pair differs in (a grouped GEMM's B, whose group is read per row of
    //    tiles, cannot be multicast along M).
    if (cx * cy > 1) {
      int64_t axis = cx == 2 ? 0 : 1;
      SmallVector<std::pair<const GemmOperand *, StringRef>> shared;
      if (cx == 2)
        for (const GemmOperand &b : m.bs)
          shared.push_back({&b, "B"});
      else
        shared.push_back({&m.a, "A"});
      for (auto [operand, name] : shared)
        for (Value off : operand->offsets())
          if (dependsOnProgramId(off, axis))
            return operand->load->emitError()
                   << "cluster " << cx << "x" << cy << " multicasts " << name
                   << "'s tile to the two CTAs of a pair along program_id(" << axis
                   << "), but its offsets depend on program_id(" << axis
                   << "): the two CTAs would need different tiles (use cluster "
                   << (cx == 2 ? "1x2" : "2x1") << " or 1x1)";
    }
    SmallVector<int64_t> clusterShape;
    if (cx * cy > 1)
      clusterShape = {cx, cy};
    // 6. Decomposition: stream-K needs a persistent schedule whose tiles
    //    are held by one fixed set of threads (cooperative: both consumers,
    //    pingpong: one consumer per tile), summed through the workspace, and
    //    CTAs that are not paired by a cluster (a cluster's CTAs walk their
    //    tiles in lockstep).
    //    `auto` takes stream-K wherever it can (the kernel still decides
    //    per launch whether it pays; docs/benchmarks.md runs 15, 18, 19).
    bool streamKable =
        (kind == ScheduleKind::cooperative || kind == ScheduleKind::pingpong) && cx * cy == 1 &&
        !tileTrips;
    int64_t streamK = 0;
    if (decomposition == "auto") {
      streamK = streamKable ? 1 : 0;
    } else if (decomposition == "stream-k") {
      if (!streamKable)
        return fn.emitError() << "decomposition stream-k needs schedule 'cooperative' or "
                                 "'pingpong' with a 1x1 cluster, got '"
                              << stringifyScheduleKind(kind) << "' with cluster " << cx << "x" << cy;
      streamK = 1;
    }
    // The consumer warpgroups (tma: one per m64 row block; SharedMemory.h).
    auto attr = ScheduleAttr::get(fn.getContext(), kind, {m.tileM, m.tileN, m.tileK}, s,
                                  consumerWarpgroups(kind, m.tileM), *swizzleBytes, clusterShape,
                                  rasterGroup, streamK);
    fn->setAttr(TesselDialect::getScheduleAttrName(), attr);
    return success();
  }

  LogicalResult selectMultistage(func::FuncOp fn, GemmMatch &m) {
    constexpr int64_t kMultistageSharedBytes = 227 * 1024; // no barriers
    auto err = [&]() { return m.dot.emitError() << "schedule 'multistage' "; };
    // (Errors about options alone point at the ts::jit call, docs/errors.md.)
    auto optionErr = [&]() { return fn.emitError() << "schedule 'multistage' "; };
    // M1.
    // (Operand orientation and MN-major operands: checked below with the tile
    // shape. The XOR swizzle is multistage's own.)
    if (swizzle != 0)
      return optionErr() << "has its own XOR swizzle for ldmatrix: option swizzle must be 0 "
                      "(automatic), got "
                   << static_cast<int64_t>(swizzle);
    // (Operands from 2-d tensors or matrices of rank-3 batches: both work.)
    // M2.
    Type elt = cast<RankedTensorType>(m.dot.getA().getType()).getElementType();
    if (!elt.isBF16() && !elt.isF16())
      return err() << "needs bf16 or f16 operands (mma.sync m16n8k16), got " << elt;
    // M3.
    if (m.tileK != 32 && m.tileK != 64)
      return err() << "needs BK = 32 or 64 (64- or 128-byte swizzled rows), got BK = " << m.tileK;
    // M4.
    if (m.tileM % 32 != 0 || m.tileN % 32 != 0)
      return err() << "needs BM and BN to be multiples of 32 (the warp tile), got " << m.tileM
                   << "x" << m.tileN;
    MultistageWarps w = multistageWarps(m.tileM, m.tileN);
    if (w.count() > 8)
      return err() << "needs at most 8 warps; tile " << m.tileM << "x" << m.tileN << " has "
                   << w.count() << " warps of " << w.wm << "x" << w.wn;
    // M1 (MN-major): a shared row holds the tile's MN extent; the swizzle
    // needs 32 or a multiple of 64 elements (4 or 8k 16-byte chunks).
    for (auto [op, isA] : {std::pair{&m.a, true}, std::pair{&m.b, false}}) {
      int64_t kDim = (isA ? !op->transposed : op->transposed) ? 1 : 0;
      int64_t extent = isA ? m.tileM : m.tileN;
      auto c = getContiguousDim(fn, op->argIndex);
      if (failed(c))
        return failure();
      int64_t lead = op->refType().getRank() - 2;
      if (*c - lead != kDim && extent != 32 && extent % 64 != 0)
        return err() << "loads an MN-major " << (isA ? "A" : "B") << " tile (" << kContiguousDimAttrName
                     << ") as rows of " << (isA ? "BM" : "BN")
                     << " elements: it must be 32 or a multiple of 64, got " << extent;
    }
    // M5. By default as many stages as fit, at most 4; for CTAs of up to 4
    // warps, as many as let two CTAs share an SM; -1: as many as fit.
    SmallVector<int64_t> tile = {m.tileM, m.tileN, m.tileK};
    int64_t stageBytes = planSharedMemory(ScheduleKind::multistage, tile, 2, 1).stageBytes;
    int64_t fit = stagesThatFit(ScheduleKind::multistage, tile, 2);
    // Two CTAs per SM: each within half of the SM's 228 KiB, less 1 KiB the
    // hardware reserves per CTA.
    int64_t fitTwo = (kMultistageSharedBytes / 2 - 1024) / stageBytes;
    if (stages < -1)
      return optionErr() << "needs stages of at least 2, 0 (tessel's choice) or -1 (as many as fit), got "
                   << static_cast<int64_t>(stages);
    int64_t s = stages == -1 ? fit
                : stages      ? stages
                              : std::min(kMaxStages, w.count() <= 4 && fitTwo >= 3 ? fitTwo : fit);
    if (s < 2)
      return (stages > 0 ? optionErr() : err()) << "needs at least 2 stages, got " << s
                   << (stages > 0 ? "" : " (the tile is too large for two stages)");
    if (!planSharedMemory(ScheduleKind::multistage, tile, 2, s).fits())
      return err() << "with " << s << " stages of " << stageBytes
                   << " bytes does not fit in 227 KiB of shared memory (at most " << fit
                   << " stages)";
    // `warpgroups`: the warps rounded up to warpgroups (the warp layout itself
    // is multistageWarps(BM, BN)); `swizzle`: the swizzled row width in bytes
    // of K-major tiles.
    auto attr = ScheduleAttr::get(fn.getContext(), ScheduleKind::multistage,
                                  {m.tileM, m.tileN, m.tileK}, s, (w.count() + 3) / 4,
                                  /*swizzle=*/m.tileK * 2, /*cluster=*/{}, rasterGroup,
                                  /*streamk=*/0);
    fn->setAttr(TesselDialect::getScheduleAttrName(), attr);
    return success();
  }

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr(TesselDialect::getKernelAttrName()) && failed(select(fn))) {
        if (!structureFailed)
          noteSwappedTile(fn);
        return signalPassFailure();
      }
  }

  /// After an error in a kernel whose tile tessel-swap-operands transposed,
  /// a remark: the rules spoke of the tile the kernel computes.
  static void noteSwappedTile(func::FuncOp fn) {
    std::optional<GemmMatch> m;
    {
      ScopedDiagnosticHandler quiet(fn.getContext(), [](Diagnostic &) { return success(); });
      auto match = matchGemm(fn);
      if (succeeded(match) && *match)
        m = **match;
    }
    if (!m)
      return;
    Value result = m->loop.getResult(m->accIndex);
    auto back = result.hasOneUse() ? dyn_cast<TransOp>(*result.getUsers().begin()) : TransOp();
    if (!back)
      return;
    auto tile = cast<RankedTensorType>(back.getType());
    m->dot.emitRemark() << "the kernel computes the " << m->tileM << "x" << m->tileN
                        << " transpose of the program's " << tile.getDimSize(0) << "x"
                        << tile.getDimSize(1)
                        << " tile (tessel-swap-operands, docs/small-m.md): the rule above is about "
                           "that tile";
  }
};

} // namespace
