//===- Lowering/Roles.cpp - the warp-specialized roles ------------------===//
//
// Part of tessel-lower-to-nvvm: `hopper.warp_specialize`, which places the
// other plan ops' steps: whose threads run the producer step
// (`hopper.produce`, Ring.cpp) and the consumer step (`hopper.consume` with
// `hopper.mma_schedule`, Mma.cpp), over which units (the tile scheduler,
// TileScheduler.cpp), and where the epilogue runs (`hopper.epilogue`,
// Epilogue.cpp).
//
//   hopper.warp_specialize producer "inline" regs 0 {...} consumers 2 ...
//     ==> lowerInlineProducer (below: schedule tma)
//   hopper.warp_specialize producer "warpgroup" regs 40 {
//     hopper.produce "ab"
//   } consumers 2 regs 232 order "pingpong" {
//     hopper.consume "ab"
//     hopper.mma_schedule ...
//     hopper.epilogue ...
//   }
//     ==> scf.if %warpgroup == 0 { setmaxnreg.dec 40; one thread: for each unit, for each
//         k-step: the produce step } else { setmaxnreg.inc 232; for each unit (pingpong: in
//         turns): for each k-step: the consume step, release one step late; the epilogue }
//
// Schedule `tma` (CUTLASS KernelTma), for W = BM/64 warpgroups:
//
//   smem:  A[stages][BM x BK] | B[stages][BN x BK] | full[stages] | empty[stages]
//          (one dynamic base, 1024-aligned: every tile is a multiple of 1 KiB so
//           each stays aligned for the 128B swizzle). Each tile is laid out by
//           OperandLayout.h: K-major or MN-major (wgmma imm-trans 1), cut into
//           TMA boxes one swizzle row (128/64/32 B, or 16 B unswizzled) wide.
//   thread 0:  init full[s] (count 1), empty[s] (count W); fence; bar.sync
//   thread 0:  fill stages 0..min(stages, nk)-1 (expect_tx + the TMA boxes of A, B)
//   loop j in [0, nk):                        s = j % stages, ph = (j / stages) & 1
//     all:      wait full[s] @ ph
//     all:      wgmma.fence; BK/16 x wgmma m64nBNk16 (warpgroup w: rows 64w..64w+63)
//               commit; wait_group 1          -> the group of tile j-1 is done
//     w-leader: arrive empty[(j-1) % stages]  (j > 0)
//     thread 0: if j-1+stages < nk: wait empty[(j-1) % stages], refill it with
//               tile j-1+stages
//   wait_group 0; epilogue on the accumulator fragments.
//
// Ordering rules of the asynchronous parts:
//   1. Barriers are initialised by one thread and fenced (fence.mbarrier_init)
//      before the CTA barrier; nobody touches them before that barrier.
//   2. A stage is refilled only after its empty barrier completed, i.e. after
//      every warpgroup's wgmma that read it retired (wait_group 1 of the next
//      tile); the TMA refill is issued after that wait by the same thread.
//   3. Consumers read a stage only after its full barrier flipped to the
//      parity of that fill, which the TMA transaction count completes.
//   4. Accumulators are read (epilogue) only after wait_group 0.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

#include "Multistage.h"

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

LogicalResult KernelBuilder::lowerWarpSpecialize() {
  // The regions must hold the steps this lowering places, in this order.
  auto expect = [&](Region &r, ArrayRef<StringRef> names, StringRef which) -> LogicalResult {
    SmallVector<StringRef> got;
    for (Operation &op : r.getOps())
      got.push_back(op.getName().getStringRef());
    if (got != SmallVector<StringRef>(names))
      return wsOp.emitError() << "the " << which << " region must hold "
                              << llvm::join(names, ", ") << ", in this order";
    return success();
  };
  if (failed(expect(wsOp.getProducerRegion(), {hopper::ProduceOp::getOperationName()}, "producer")) ||
      failed(expect(wsOp.getConsumerRegion(),
                    {hopper::ConsumeOp::getOperationName(), hopper::MmaScheduleOp::getOperationName(),
                     hopper::EpilogueOp::getOperationName()},
                    "consumer")))
    return failure();
  return inlineProducer ? lowerInlineProducer() : lowerProducerConsumers();
}

LogicalResult KernelBuilder::lowerInlineProducer() {
  if (gemm->scaled())
    return gemm->dot.emitError("schedule 'tma' cannot scale each k-step's product (run "
                               "tessel-select-schedule, which checks its rules)");
  Value isLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, i32(0));
  Value wg = b.create<arith::DivUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value inWg = b.create<arith::RemUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value isWgLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));

  // Prologue: thread 0 fills the first min(stages, nk) stages.
  {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isLeader, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value n = b.create<arith::MinSIOp>(loc, nk, i32(stages));
    auto pro = b.create<scf::ForOp>(loc, i32(0), n, i32(1));
    b.setInsertionPointToStart(pro.getBody());
    if (failed(issueStage(pro.getInductionVar(), pro.getInductionVar())))
      return failure();
  }

  // Mainloop. The zeroed accumulator is pinned before it (as the consumers'
  // in lowerProducerConsumers): where the trip count may be 0 (read per tile,
  // e.g. a masked grouped GEMM's dead tiles) LLVM peels the first k-step and
  // would otherwise sink the zeroing between its wgmmas (ptxas C7515).
  auto loop = b.create<scf::ForOp>(loc, i32(0), nk, i32(1), ValueRange{fenceAccumulator(zeroAccumulator())});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value acc = consumeStage(j, {loop.getRegionIterArgs()[0]}, wg)[0];

    // Rule 2: tile j-1's wgmma retired in this warpgroup: release its stage,
    // then thread 0 refills it once every warpgroup released it.
    Value hasPrev = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, j, i32(0));
    auto prevIf = b.create<scf::IfOp>(loc, TypeRange{}, hasPrev, false);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(prevIf.thenBlock());
      Value jp = b.create<arith::SubIOp>(loc, j, i32(1));
      Value sp = b.create<arith::RemUIOp>(loc, jp, i32(stages));
      auto relIf = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(relIf.thenBlock());
        b.create<hopper::MBarrierArriveOp>(loc, emptyBar(sp), b.getStringAttr("empty"));
      }
      Value jn = b.create<arith::AddIOp>(loc, jp, i32(stages));
      Value refill = b.create<arith::AndIOp>(
          loc, isLeader, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, jn, nk));
      auto fillIf = b.create<scf::IfOp>(loc, TypeRange{}, refill, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(fillIf.thenBlock());
      Value php = b.create<arith::AndIOp>(loc, b.create<arith::DivUIOp>(loc, jp, i32(stages)), i32(1));
      mbarrierWait(emptyBar(sp), php, "empty", sp);
      if (failed(issueStage(jn, sp)))
        return failure();
    }
    b.create<scf::YieldOp>(loc, acc);
  }
  b.create<hopper::WgmmaWaitOp>(loc, 0);
  return emitEpilogue(fenceAccumulator(loop.getResult(0)), wg, inWg);
}

/// The mainloop of a scaled accumulation (Mma.cpp, "Scaled accumulation"):
/// the unit's k-steps [kBegin, kEnd) in pairs, partial X then Y, each pair
/// issuing the next k-step's wgmmas before adding the previous one's:
///
///   n = kEnd - kBegin; nothing when n = 0, else:
///   X <- k-step kBegin; F <- its factors                 (issuePartial, loadFactors)
///   for t < (n - 1) / 2, j = kBegin + 2t:
///     Y <- j + 1;  F1 <- j + 1's factors;  wait 1, release j,     acc += f(X, F)   (promote)
///     X <- j + 2;  F <- j + 2's factors;   wait 1, release j + 1, acc += f(Y, F1)
///   then the rest, m = n - 2T k-steps (j = kBegin + 2T):
///     m = 2:  Y <- j + 1;  wait 1, release j, acc += f(X);  wait 0, release j + 1, acc += f(Y)
///     m = 1:  wait 0, release j, acc += f(X)
///
/// `init` holds zeroed accumulators, then X, then Y (R row blocks each);
/// returns the tile's accumulators.
FailureOr<SmallVector<Value>>
KernelBuilder::scaledMainloop(const WorkUnit &u, ArrayRef<Value> init, Value rowBlock, Value inWg,
                              function_ref<void(Value)> release) {
  const size_t R = init.size() / 3;
  auto slice = [&](ValueRange v, size_t i) { return SmallVector<Value>(v.begin() + i * R, v.begin() + (i + 1) * R); };
  // The factors after the three accumulator groups.
  auto factorsIn = [&](ValueRange v) { return SmallVector<Value>(v.begin() + 3 * R, v.end()); };
  auto types = [&](ArrayRef<Value> v) { return TypeRange(ValueRange(v)); };
  auto kOf = [&](Value j) { return b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, j, step)).getResult(); };
  // The factors of k-step j, loaded a k-step ahead of their use (rule P1).
  auto factorsOf = [&](Value j) { return loadFactors(kOf(j), R, rowBlock, inWg); };
  // acc += f(partial of k-step j) with its factors, waiting until `pending`
  // groups remain; returns the accumulators, then the pinned partials.
  auto promoteStep = [&](Value j, ArrayRef<Value> accs, ArrayRef<Value> part, ArrayRef<Value> factors,
                         int64_t pending) -> FailureOr<SmallVector<Value>> {
    Value it = ringPos(u, j);
    SmallVector<Value> out = promote(accs, part, factors, pending, rowBlock, inWg, [&] { release(it); });
    if (out.empty())
      return failure();
    return out;
  };
  SmallVector<Value> acc0 = slice(init, 0), x0 = slice(init, 1), y0 = slice(init, 2);
  Value n = b.create<arith::SubIOp>(loc, u.kEnd, u.kBegin);
  // One region for n >= 1: a partial in flight must not meet another value
  // at a merge point (the copies would read its registers before the wait:
  // ptxas serialises the wgmmas, C7514), so X flows straight from the
  // prologue into the loop and out of it into the rest.
  auto any = b.create<scf::IfOp>(loc, types(acc0),
                                 b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, n, i32(0)),
                                 /*withElse=*/true);
  OpBuilder::InsertionGuard g0(b);
  b.setInsertionPointToStart(any.elseBlock());
  b.create<scf::YieldOp>(loc, acc0);
  b.setInsertionPointToStart(any.thenBlock());
  SmallVector<Value> x1 = issuePartial(ringPos(u, u.kBegin), x0, rowBlock);
  auto f0 = factorsOf(u.kBegin);
  if (failed(f0))
    return failure();
  // Pairs. Carried: the accumulators, X (in flight), Y, k-step j's factors.
  Value pairs = b.create<arith::DivSIOp>(loc, b.create<arith::SubIOp>(loc, n, i32(1)), i32(2));
  SmallVector<Value> carried(acc0);
  llvm::append_range(carried, x1);
  llvm::append_range(carried, y0);
  llvm::append_range(carried, *f0);
  auto loop = b.create<scf::ForOp>(loc, i32(0), pairs, i32(1), carried);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange args = loop.getRegionIterArgs();
    Value j = b.create<arith::AddIOp>(loc, u.kBegin, b.create<arith::MulIOp>(loc, loop.getInductionVar(), i32(2)));
    Value j1 = b.create<arith::AddIOp>(loc, j, i32(1)), j2 = b.create<arith::AddIOp>(loc, j, i32(2));
    SmallVector<Value> y = issuePartial(ringPos(u, j1), slice(args, 2), rowBlock);
    auto f1 = factorsOf(j1);
    if (failed(f1))
      return failure();
    auto a1 = promoteStep(j, slice(args, 0), slice(args, 1), factorsIn(args), 1);
    if (failed(a1))
      return failure();
    SmallVector<Value> x = issuePartial(ringPos(u, j2), slice(*a1, 1), rowBlock);
    auto f2 = factorsOf(j2);
    if (failed(f2))
      return failure();
    auto a2 = promoteStep(j1, slice(*a1, 0), y, *f1, 1);
    if (failed(a2))
      return failure();
    SmallVector<Value> yields = slice(*a2, 0);
    llvm::append_range(yields, x);
    llvm::append_range(yields, slice(*a2, 1));
    llvm::append_range(yields, *f2);
    b.create<scf::YieldOp>(loc, yields);
  }
  // The rest: one or two k-steps.
  ValueRange res = loop.getResults();
  SmallVector<Value> accs = slice(res, 0), x = slice(res, 1), y = slice(res, 2), f = factorsIn(res);
  Value j = b.create<arith::AddIOp>(loc, u.kBegin, b.create<arith::MulIOp>(loc, pairs, i32(2)));
  Value m = b.create<arith::SubIOp>(loc, u.kEnd, j);
  auto two = b.create<scf::IfOp>(loc, types(accs), b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, m, i32(2)),
                                 /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(two.thenBlock());
    Value j1 = b.create<arith::AddIOp>(loc, j, i32(1));
    SmallVector<Value> y1 = issuePartial(ringPos(u, j1), y, rowBlock);
    auto f1 = factorsOf(j1);
    if (failed(f1))
      return failure();
    auto a1 = promoteStep(j, accs, x, f, 1);
    if (failed(a1))
      return failure();
    auto a2 = promoteStep(j1, slice(*a1, 0), y1, *f1, 0);
    if (failed(a2))
      return failure();
    b.create<scf::YieldOp>(loc, slice(*a2, 0));
    b.setInsertionPointToStart(two.elseBlock());
    auto a = promoteStep(j, accs, x, f, 0);
    if (failed(a))
      return failure();
    b.create<scf::YieldOp>(loc, slice(*a, 0));
  }
  b.create<scf::YieldOp>(loc, two.getResults());
  return SmallVector<Value>(any.getResults());
}

/// Warp-specialized schedules (CUTLASS KernelTmaWarpSpecialized*):
///
///   warpgroup 0 (producer, setmaxnreg.dec 40), thread 0:
///     for each tile of this CTA, for j in [0, nk):   it = tileIter * nk + j
///       wait empty[it % stages] (from the second round on); expect_tx; TMA A, B
///   warpgroups 1.. (consumers, setmaxnreg.inc):
///     warp_specialized / cooperative: every consumer takes every tile, rows
///       [64 R (wg-1), 64 R wg) of it (R = row blocks per consumer: 2 for
///       cooperative 256-row tiles, else 1);
///     pingpong: consumer c takes the CTA's units (tiles, or stream-K parts
///       of tiles) c, c+2, ... whole (BM/64 row blocks each), mainloops in
///       turn:
///         c: bar.sync 3+c, 256; mainloop; bar.arrive 3+(1-c), 256
///       so one consumer's epilogue overlaps the other's mainloop.
///     then the TMA-store epilogue (stageChunk) from the accumulators; the
///       tile's epilogue operands read through shared memory are loaded by
///       the consumer's thread 0 when it starts the tile (Epilogue.cpp).
///
/// Persistent schedules (cooperative, pingpong) launch about one CTA per SM
/// and walk the user's grid in grouped raster order (setProgramIds).
///
/// Ordering rules, in addition to those of the tma schedule:
///   W1. The producer's n-th refill of a stage (n >= 1) waits for the n-th
///       completion of its empty barrier (parity (n - 1) & 1); every consumer
///       that read the stage arrives once, after the wgmma group that read it
///       retired (wait_group 1 of the next position, or wait_group 0).
///   W2. pingpong: the turn barriers pair each bar.arrive with exactly one
///       bar.sync of the other consumer: consumer 1 gives the first turn
///       (if the CTA has a unit) and nobody gives a turn after the CTA's
///       last unit, so no barrier is left half-arrived at exit.
LogicalResult KernelBuilder::lowerProducerConsumers() {
  // Register budgets, roles, row blocks: the plan's (tessel-warp-specialize,
  // tessel-schedule-mma).
  int64_t rowBlocksPerConsumer = rowBlocks;
  int64_t consumerRegs = wsOp.getConsumerRegs();
  Value wg = b.create<arith::DivUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value inWg = b.create<arith::RemUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value isProducer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, wg, i32(0));

  // The tile scheduler's walk of this CTA's units (TileScheduler.cpp).
  TileWalk walk = walkTiles();
  bool streamK = walk.streamK;
  Value unitCount = walk.unitCount;
  auto forEachTile = [&](Value start, int64_t step,
                         function_ref<LogicalResult(Value tileIter, WorkUnit u)> body) {
    return forEachUnit(walk, start, step, body);
  };

  auto roleIf = b.create<scf::IfOp>(loc, TypeRange{}, isProducer, /*withElse=*/true);
  // ---- producer warpgroup: one thread issues every TMA load ----------------
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(roleIf.thenBlock());
    b.create<hopper::SetMaxNRegOp>(loc, /*increase=*/false, wsOp.getProducerRegs());
    Value elected = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, elected, false);
    b.setInsertionPointToStart(one.thenBlock());
    LogicalResult r = forEachTile(i32(0), 1, [&](Value, WorkUnit u) -> LogicalResult {
      if (failed(readTileTables()))
        return failure();
      auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1));
      OpBuilder::InsertionGuard g2(b);
      // The tile's epilogue operands into L2 once its loads are issued
      // (Epilogue.cpp: a few k-steps before its epilogue reads them).
      b.setInsertionPointAfter(kLoop);
      if (failed(prefetchEpilogueOperands()))
        return failure();
      b.setInsertionPointToStart(kLoop.getBody());
      Value j = kLoop.getInductionVar();
      Value it = ringPos(u, j);
      Value s = b.create<arith::RemUIOp>(loc, it, i32(stages));
      // Rule W1.
      Value round = b.create<arith::DivUIOp>(loc, it, i32(stages));
      Value reuse = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, it, i32(stages));
      auto waitIf = b.create<scf::IfOp>(loc, TypeRange{}, reuse, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(waitIf.thenBlock());
        Value ph = b.create<arith::AndIOp>(loc, b.create<arith::SubIOp>(loc, round, i32(1)), i32(1));
        mbarrierWait(emptyBar(s), ph, "empty", s);
      }
      return issueStage(j, s);
    });
    if (failed(r))
      return failure();
  }
  // ---- consumer warpgroups: wgmma on their row blocks, then the epilogue ---
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(roleIf.elseBlock());
    b.create<hopper::SetMaxNRegOp>(loc, /*increase=*/true, consumerRegs);
    Value consumer = b.create<arith::SubIOp>(loc, wg, i32(1));
    Value firstRowBlock =
        pingpong ? i32(0) : b.create<arith::MulIOp>(loc, consumer, i32(rowBlocksPerConsumer)).getResult();
    Value isWgLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
    auto release = [&](Value it) {
      auto relIf = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(relIf.thenBlock());
      releaseStage(b.create<arith::RemUIOp>(loc, it, i32(stages)));
    };
    // Rule W2: turn barriers 3 (consumer 0's) and 4 (consumer 1's).
    auto turn = [&](bool arrive, Value who) {
      b.create<hopper::NamedBarrierOp>(loc, arrive,
                                       b.create<arith::AddIOp>(loc, who, i32(turnBarrierBase)), 256);
    };
    Value other = b.create<arith::SubIOp>(loc, i32(1), consumer);
    if (pingpong) {
      Value first = b.create<arith::AndIOp>(
          loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, consumer, i32(1)),
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, unitCount, i32(0)));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, first, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      turn(/*arrive=*/true, i32(0));
    }
    const bool operands = !stagedOperandLoads().empty();
    LogicalResult r = forEachTile(pingpong ? consumer : i32(0), pingpong ? 2 : 1,
                                  [&](Value tileIter, WorkUnit u) -> LogicalResult {
      // The tile's epilogue operands into shared memory, a mainloop ahead
      // (Epilogue.cpp, rules O1-O3).
      if (operands && failed(issueOperandLoads(consumer, firstRowBlock, inWg)))
        return failure();
      if (pingpong)
        turn(/*arrive=*/false, consumer);
      // Zeroed and pinned before the mainloop: LLVM must not sink the zeroing
      // between the first wgmmas (ptxas would then fence them, C7517/C7519).
      const bool scaled = gemm->scaled();
      SmallVector<Value> zeros;
      for (int64_t i = 0; i < rowBlocksPerConsumer * (scaled ? 3 : 1); ++i)
        zeros.push_back(fenceAccumulator(zeroAccumulator()));
      SmallVector<Value> loopAccs;
      if (scaled) {
        FailureOr<SmallVector<Value>> r = scaledMainloop(u, zeros, firstRowBlock, inWg, release);
        if (failed(r))
          return failure();
        loopAccs = *r;
      } else {
        auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1), zeros);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(kLoop.getBody());
        Value j = kLoop.getInductionVar();
        Value it = ringPos(u, j);
        SmallVector<Value> accs = consumeStage(
            it, SmallVector<Value>(kLoop.getRegionIterArgs()), firstRowBlock);
        // Rule W1: the wgmma group of position it-1 retired: release its stage.
        Value hasPrev = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, j, u.kBegin);
        auto prevIf = b.create<scf::IfOp>(loc, TypeRange{}, hasPrev, false);
        {
          OpBuilder::InsertionGuard g3(b);
          b.setInsertionPointToStart(prevIf.thenBlock());
          release(b.create<arith::SubIOp>(loc, it, i32(1)));
        }
        b.create<scf::YieldOp>(loc, accs);
        loopAccs = SmallVector<Value>(kLoop.getResults());
      }
      if (pingpong) {
        // Rule W2: hand the mainloop to the other consumer if a unit follows.
        Value more = b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::ult, b.create<arith::AddIOp>(loc, tileIter, i32(1)), unitCount);
        auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, more, false);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        turn(/*arrive=*/true, other);
      }
      // Stream-K: the unit is recomputed from an opaque copy of its index
      // rather than kept live across the mainloop (register pressure,
      // StreamK.cpp).
      if (streamK)
        u = streamKUnit(ptx("mov.u32 $0, $1;", "=r,r", {tileIter}, b.getI32Type()));
      b.create<hopper::WgmmaWaitOp>(loc, 0);
      // The tile's last stage is released once all its wgmma retired (a
      // scaled accumulation released every stage in the loop).
      if (!scaled) {
        Value any = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, u.kEnd, u.kBegin);
        auto lastIf = b.create<scf::IfOp>(loc, TypeRange{}, any, false);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(lastIf.thenBlock());
        release(ringPos(u, b.create<arith::SubIOp>(loc, u.kEnd, i32(1))));
      }
      SmallVector<Value> accs;
      for (Value acc : loopAccs)
        accs.push_back(fenceAccumulator(acc));
      // This consumer's own tile count picks its staging buffers.
      Value local = pingpong ? b.create<arith::DivUIOp>(loc, tileIter, i32(2)).getResult() : tileIter;
      if (operands)
        waitOperandLoads(consumer, local);
      if (streamK) {
        // StreamK.cpp: a part that does not end the tile goes to the
        // workspace; the part that ends it adds the others, then stores.
        // Tile thread: of both consumers (cooperative), of this one (pingpong).
        Value uThread = pingpong ? inWg : b.create<arith::SubIOp>(loc, tid, i32(kThreadsPerWarpgroup));
        Value contributor = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, u.kEnd, nk);
        auto partIf = b.create<scf::IfOp>(loc, TypeRange{}, contributor, /*withElse=*/true);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(partIf.thenBlock());
        streamKStorePartial(accs, uThread, consumer);
        b.setInsertionPointToStart(partIf.elseBlock());
        Value finisher = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, u.kBegin, i32(0));
        auto sumIf = b.create<scf::IfOp>(loc, TypeRange(ValueRange(accs)), finisher, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard g4(b);
          b.setInsertionPointToStart(sumIf.thenBlock());
          b.create<scf::YieldOp>(loc, streamKAddPartials(accs, u.tile, uThread, consumer));
          b.setInsertionPointToStart(sumIf.elseBlock());
          b.create<scf::YieldOp>(loc, accs);
        }
        return emitConsumerEpilogue(SmallVector<Value>(sumIf.getResults()), firstRowBlock, inWg,
                                    consumer, local);
      }
      if (!tileValid)
        return emitConsumerEpilogue(accs, firstRowBlock, inWg, consumer, local);
      // A cluster partner's tile past the grid's edge: nothing to store. (With
      // operands, a barrier instead of the epilogue's: rule O2, no thread
      // issues the next tile's loads before every thread saw this phase.)
      auto validIf = b.create<scf::IfOp>(loc, TypeRange{}, tileValid, /*withElse=*/operands);
      OpBuilder::InsertionGuard g3(b);
      if (operands) {
        b.setInsertionPointToStart(validIf.elseBlock());
        consumerBarrier(consumer);
      }
      b.setInsertionPointToStart(validIf.thenBlock());
      return emitConsumerEpilogue(accs, firstRowBlock, inWg, consumer, local);
    });
    if (failed(r))
      return failure();
    // Rule E3: the staging buffers outlive the TMA stores that read them.
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
    OpBuilder::InsertionGuard g3(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<hopper::TmaStoreWaitOp>(loc, 0, /*read=*/false);
  }
  // Rule C4: no CTA leaves while a peer may still multicast into its shared
  // memory or arrive on its barriers.
  if (clusterSize > 1)
    clusterSync();
  return success();
}

/// No warp specialization (schedule multistage, a "cp.async" ring): every
/// warp copies its share of each stage (CpAsyncRing.cpp) and computes its warp
/// tile (MmaSync.cpp), then stores its fragments (Epilogue.cpp).
LogicalResult KernelBuilder::lowerAllWarps() {
  MultistagePlan p;
  // The warp grid and warp tile of the plan (tessel-schedule-mma).
  std::optional<ArrayRef<int64_t>> warps = mmaOp.getWarps();
  std::optional<ArrayRef<int64_t>> warpTile = mmaOp.getWarpTile();
  if (!warps || !warpTile || warps->size() != 2 || warpTile->size() != 2)
    return mmaOp.emitError("an mma.sync schedule needs its warps and warp_tile");
  p.warps = {(*warpTile)[0], (*warpTile)[1], (*warps)[0], (*warps)[1]};
  // An edited plan: the builder's warp tiles are 32 or 64 square-ish blocks of m16n8k16 tiles
  // that cover the CTA tile exactly (multistageWarps in GemmMatch.h).
  auto isWarpTileSide = [](int64_t v) { return v == 32 || v == 64; };
  if (!isWarpTileSide(p.warps.wm) || !isWarpTileSide(p.warps.wn) || p.warps.warpsM < 1 ||
      p.warps.warpsN < 1 || p.warps.warpsM * p.warps.wm != BM || p.warps.warpsN * p.warps.wn != BN)
    return mmaOp.emitError() << "an mma.sync schedule's warps must cover the " << BM << "x" << BN
                             << " tile with warp tiles of 32 or 64 rows and columns, got "
                             << p.warps.warpsM << "x" << p.warps.warpsN << " warps of "
                             << p.warps.wm << "x" << p.warps.wn;
  p.kSteps = BK / 16;
  if (gemm->scaled())
    return gemm->dot.emitError("schedule 'multistage' cannot scale each k-step's product (run "
                               "tessel-select-schedule, which checks its rules)");
  if (numAccs != 1)
    return mmaOp.emitError("an mma.sync schedule holds one accumulator; a dual GEMM needs wgmma "
                           "(run tessel-select-schedule, which checks its rules)");
  if ((BK != 32 && BK != 64) || eltBytes != 2 || BM % p.warps.wm || BN % p.warps.wn ||
      stages < 2 || p.warps.count() > 8)
    return fn.emitError() << "schedule 'multistage' cannot build tile " << BM << "x" << BN << "x"
                          << BK << " with " << stages
                          << " stages (run tessel-select-schedule, which checks its rules)";
  // The plan's threads: one per lane of the warp grid (no mbarriers here).
  if (threads != p.warps.count() * 32)
    return resourcesOp.emitError() << "threads " << threads << " do not match the warp grid ("
                                   << p.warps.count() << " warps)";
  kernel->setAttr("nvvm.reqntid", b.getDenseI32ArrayAttr({(int32_t)threads, 1, 1}));
  // Up to 4 warps: two CTAs per SM (their barriers and epilogues overlap
  // each other's mainloops); 8 warps: one, with the whole register file.
  kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(threads <= 128 ? 2 : 1));
  msRasterProgramIds();
  // A trip count that depends on the tile (a triangular GEMM's bounds): from
  // the rastered ids that the tile's loads use, not from %ctaid.
  if (tileTrips && failed(computeTripCount()))
    return failure();

  Value warp = b.create<arith::DivUIOp>(loc, tid, i32(32));
  p.lane = b.create<arith::RemUIOp>(loc, tid, i32(32));
  p.warpRow = b.create<arith::MulIOp>(
      loc, b.create<arith::RemUIOp>(loc, warp, i32(p.warps.warpsM)), i32(p.warps.wm));
  p.warpCol = b.create<arith::MulIOp>(
      loc, b.create<arith::DivUIOp>(loc, warp, i32(p.warps.warpsM)), i32(p.warps.wn));
  p.a.op = gemm->a;
  p.a.isA = true;
  p.b.op = gemm->b;
  p.b.isA = false;
  p.a.base = 0;
  p.b.base = bOff;
  if (failed(msPlanOperand(p, p.a)) || failed(msPlanOperand(p, p.b)))
    return failure();
  // Copies of one tile are spread over the first kSteps - 1 k16 steps.
  const int64_t groups = p.kSteps - 1;

  // Prologue (rule 1): tiles 0..S-2, one commit group each.
  {
    auto pro = b.create<scf::ForOp>(loc, i32(0), i32(stages - 1), i32(1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(pro.getBody());
    Value t = pro.getInductionVar();
    for (int64_t grp = 0; grp < groups; ++grp)
      if (failed(msIssueGroup(p, t, t, grp, groups)))
        return failure();
    b.create<hopper::CpAsyncCommitOp>(loc);
  }
  // Tile 0 landed (for every thread), then its first fragments.
  b.create<hopper::CpAsyncWaitOp>(loc, stages - 2);
  barSync();
  SmallVector<Value> frag0 = msLoadB(p, i32(0), 0);
  llvm::append_range(frag0, msLoadA(p, i32(0), 0, 0));

  auto accTy = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(p.numAcc(), b.getF32Type()));
  Value acc0 = b.create<LLVM::PoisonOp>(loc, accTy);
  Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
  for (int64_t r = 0; r < p.numAcc(); ++r)
    acc0 = b.create<LLVM::InsertValueOp>(loc, acc0, zero, r);

  // iter_args: accumulator, the B fragments and first A fragment of the
  // tile's first k16 step, the stage being read and the stage being written.
  SmallVector<Value> inits{acc0};
  llvm::append_range(inits, frag0);
  inits.push_back(i32(0));
  inits.push_back(i32(stages - 1));
  auto loop = b.create<scf::ForOp>(loc, i32(0), nk, i32(1), inits);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    auto args = loop.getRegionIterArgs();
    Value acc = args[0];
    const int64_t nB = p.nTiles() * 2;
    SmallVector<Value> curB(args.begin() + 1, args.begin() + 1 + nB);
    SmallVector<Value> curA(args.begin() + 1 + nB, args.begin() + 1 + nB + 4);
    Value readS = args[1 + p.numFrag()], writeS = args[2 + p.numFrag()];
    auto nextStage = [&](Value s) {
      Value n = b.create<arith::AddIOp>(loc, s, i32(1));
      return b
          .create<arith::SelectOp>(
              loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, n, i32(stages)), i32(0), n)
          .getResult();
    };
    Value readNext = nextStage(readS);
    Value tNew = b.create<arith::AddIOp>(loc, j, i32(stages - 1));
    // A fragments of the current step by 16-row block (empty: not loaded yet).
    SmallVector<SmallVector<Value>> aFr(p.mTiles());
    aFr[0] = curA;
    for (int64_t kk = 0; kk < p.kSteps; ++kk) {
      // Register double buffer: this step's copy group (before more
      // fragments are live), the B fragments of the next k16 step, then per
      // 16-row block the next block's A fragment and this block's row of mma.
      // Before the barrier (kk = kSteps - 2) every A fragment of the tile's
      // last step is loaded too: after the barrier, the last step reads only
      // the next tile's stage (its first B and A fragments), so the barrier
      // separates every read of this tile's stage from the copies that
      // overwrite it in iteration j + 1 (rule 3).
      bool last = kk + 1 == p.kSteps, preBarrier = kk + 2 == p.kSteps;
      Value nStage = last ? readNext : readS;
      int64_t nkk = last ? 0 : kk + 1;
      if (!last && failed(msIssueGroup(p, tNew, writeS, kk, groups)))
        return failure();
      SmallVector<Value> nextB = msLoadB(p, nStage, nkk);
      SmallVector<SmallVector<Value>> nextA(p.mTiles());
      if (preBarrier)
        for (int64_t mi = 0; mi < p.mTiles(); ++mi)
          nextA[mi] = msLoadA(p, readS, kk + 1, mi);
      for (int64_t mi = 0; mi < p.mTiles(); ++mi) {
        if (mi + 1 < p.mTiles() && aFr[mi + 1].empty())
          aFr[mi + 1] = msLoadA(p, readS, kk, mi + 1);
        else if (mi + 1 == p.mTiles() && nextA[0].empty())
          nextA[0] = msLoadA(p, nStage, nkk, 0);
        acc = msMmaRow(p, acc, mi, aFr[mi], curB);
      }
      aFr = std::move(nextA);
      curB = std::move(nextB);
      if (preBarrier) {
        // Rules 1-3: one group per iteration; tile j+1 complete for this
        // thread, then for every thread; every warp is done with tile j-1's
        // stage (written from the next iteration on).
        b.create<hopper::CpAsyncCommitOp>(loc);
        b.create<hopper::CpAsyncWaitOp>(loc, stages - 2);
        barSync();
      }
    }
    curA = aFr[0];
    SmallVector<Value> yields{acc};
    llvm::append_range(yields, curB);
    llvm::append_range(yields, curA);
    yields.push_back(readNext);
    yields.push_back(nextStage(writeS));
    b.create<scf::YieldOp>(loc, yields);
  }
  // Rule 5.
  b.create<hopper::CpAsyncWaitOp>(loc, 0);
  return msEpilogue(p, loop.getResult(0));
}

} // namespace mlir::tessel::lowering
