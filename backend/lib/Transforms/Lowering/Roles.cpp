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

#include "KernelBuilder.h"

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

  // Mainloop.
  auto loop = b.create<scf::ForOp>(loc, i32(0), nk, i32(1), ValueRange{zeroAccumulator()});
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

/// Warp-specialized schedules (CUTLASS KernelTmaWarpSpecialized*):
///
///   warpgroup 0 (producer, setmaxnreg.dec 40), thread 0:
///     for each tile of this CTA, for j in [0, nk):   it = tileIter * nk + j
///       wait empty[it % stages] (from the second round on); expect_tx; TMA A, B
///   warpgroups 1.. (consumers, setmaxnreg.inc):
///     warp_specialized / cooperative: every consumer takes every tile, rows
///       [64 (wg-1), 64 wg) of it;
///     pingpong: consumer c takes the CTA's units (tiles, or stream-K parts
///       of tiles) c, c+2, ... whole (BM/64 row blocks each), mainloops in
///       turn:
///         c: bar.sync 3+c, 256; mainloop; bar.arrive 3+(1-c), 256
///       so one consumer's epilogue overlaps the other's mainloop.
///     then the TMA-store epilogue (stageChunk) from the accumulators.
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
      auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1));
      OpBuilder::InsertionGuard g2(b);
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
    Value firstRowBlock = pingpong ? i32(0) : consumer;
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
    LogicalResult r = forEachTile(pingpong ? consumer : i32(0), pingpong ? 2 : 1,
                                  [&](Value tileIter, WorkUnit u) -> LogicalResult {
      if (pingpong)
        turn(/*arrive=*/false, consumer);
      // Zeroed and pinned before the mainloop: LLVM must not sink the zeroing
      // between the first wgmmas (ptxas would then fence them, C7517/C7519).
      SmallVector<Value> zeros;
      for (int64_t i = 0; i < rowBlocksPerConsumer; ++i)
        zeros.push_back(fenceAccumulator(zeroAccumulator()));
      auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1), zeros);
      {
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
      // The tile's last stage is released once all its wgmma retired.
      Value any = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, u.kEnd, u.kBegin);
      auto lastIf = b.create<scf::IfOp>(loc, TypeRange{}, any, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(lastIf.thenBlock());
        release(ringPos(u, b.create<arith::SubIOp>(loc, u.kEnd, i32(1))));
      }
      SmallVector<Value> accs;
      for (Value acc : kLoop.getResults())
        accs.push_back(fenceAccumulator(acc));
      // This consumer's own tile count picks its staging buffers.
      Value local = pingpong ? b.create<arith::DivUIOp>(loc, tileIter, i32(2)).getResult() : tileIter;
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
      // A cluster partner's tile past the grid's edge: nothing to store.
      auto validIf = b.create<scf::IfOp>(loc, TypeRange{}, tileValid, false);
      OpBuilder::InsertionGuard g3(b);
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

} // namespace mlir::tessel::lowering
