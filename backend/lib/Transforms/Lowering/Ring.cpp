//===- Lowering/Ring.cpp - the operand ring ---------------------------------===//
//
// Part of tessel-lower-to-nvvm: the instructions of the plan's operand ring
// (`hopper.ring`, its two `hopper.async_load`s, the `hopper.produce` step):
// the full / empty mbarriers' addresses, one stage's fill (arrive_expect_tx
// of the stage's bytes, then the TMA boxes of A and B, multicast in a
// cluster; a dual GEMM's two B tiles side by side), and a consumer's release
// of a stage (on every CTA of the cluster).
//
//   hopper.ring "ab" stages 4 copy "tma" stage_bytes 32768
//   %a = hopper.async_load %A[%m, %k] into "ab"[0] {box = array<i64: 64, 128>, ...}
//     ==> per k-step j into stage s:
//   hopper.mbarrier.arrive_expect_tx %full_s, %c32768_i32 {ring = "full"}
//   hopper.tma.load %descA[%k, %m] -> %smemA_s, %full_s bytes 16384 : !llvm.ptr
//   hopper.tma.load %descB[%k, %n] -> %smemB_s, %full_s bytes 16384 : !llvm.ptr
//
// The barrier initialisation and the ring's ordering rules (1-3, W1, C1-C4)
// are in LowerToNVVM.cpp (setupGemm) and Roles.cpp, where the steps are
// placed.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

#include "KernelBuilder.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

// Clipped boxes. A K-major operand tile of BM rows whose tensor has fewer
// (M < BM: a decode GEMM's 16 rows of A under a 64-row tile) is loaded as a
// box of r = min(BM, roundup(M, 8)) rows, not BM: TMA's zero fill of rows past
// the tensor costs about what loading them would (M = 16 ran 16-29% slower
// than M = 64 with the same kernel and the same B, docs/small-m.md). The
// runtime encodes the descriptor's box with the same r (":r" in
// tessel.params, Validate.cpp), and the stage expects the bytes it delivers:
//
//   %r = trunc min(BM, (sizes[A][0] + 7) & ~7)     (i64, then i32)
//   hopper.mbarrier.arrive_expect_tx %full, (aBytes - BM * 128 + %r * 128) + bBytes
//       {max_bytes = aBytes + bBytes}
//   hopper.tma.load %descA[%k, %m] -> %smemA_s, %full bytes <BM * 128, the box at most>
//
// Rows r..BM-1 of the stage keep what an earlier stage left there; they reach
// only accumulator rows >= M, which no store writes and every reduction
// leaves out (Epilogue.cpp). Nothing changes when the tensor has >= BM rows.
Value KernelBuilder::clippedRows(const TmaParam &t) {
  Value rows = refs[t.arg].sizes[t.clipDim]; // i64: no wrap for any size
  Value up = b.create<arith::AndIOp>(loc, b.create<arith::AddIOp>(loc, rows, i64(7)), i64(~int64_t(7)));
  return b.create<arith::TruncIOp>(loc, b.getI32Type(), b.create<arith::MinSIOp>(loc, up, i64(t.box[1])));
}

Value KernelBuilder::stageTxBytes() {
  int64_t fixed = aBytes + bBytes;
  Value clipped;
  for (size_t i = 0; i < 1 + bLoads.size(); ++i) {
    const TmaParam &t = tma[i];
    if (t.clipDim < 0)
      continue;
    fixed -= t.box[1] * t.clipRowBytes;
    Value bytes = b.create<arith::MulIOp>(loc, clippedRows(t), i32(t.clipRowBytes));
    clipped = clipped ? b.create<arith::AddIOp>(loc, clipped, bytes) : bytes;
  }
  if (!clipped)
    return i32(fixed);
  return fixed ? b.create<arith::AddIOp>(loc, clipped, i32(fixed)).getResult() : clipped;
}

LogicalResult KernelBuilder::issueStage(Value j, Value s) {
  // k offset of tile j: lb + j * step, substituted for the induction variable
  // in the offsets of both loads.
  Value kv = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, j, step));
  Value full = smemAddr(b.create<arith::AddIOp>(loc, i32(fullBarOff),
                                                b.create<arith::MulIOp>(loc, s, i32(8))));
  auto expect = b.create<hopper::MBarrierArriveExpectTxOp>(loc, full, stageTxBytes(), b.getStringAttr("full"),
                                                          IntegerAttr());
  if (!matchPattern(expect.getBytes(), m_Constant()))
    expect.setMaxBytesAttr(b.getI64IntegerAttr(aBytes + bBytes));
  Value aDst = smemAddr(b.create<arith::MulIOp>(loc, s, i32(aBytes)));
  Value bDst = smemAddr(b.create<arith::AddIOp>(
      loc, i32(bOff), b.create<arith::MulIOp>(loc, s, i32(bBytes))));
  if (failed(issueOperand(aLayout, gemm->a, tma[0], kv, aDst, full, clusterY)))
    return failure();
  // A dual GEMM: B of dot j into its place among the B tiles side by side
  // (OperandLayout::sideBySide); one B: at bDst, boxes as its layout has them.
  for (auto [j, l] : llvm::enumerate(bLoads)) {
    Value dst = j ? b.create<arith::AddIOp>(loc, bDst, i32(l.sideBySideOffset(j))) : bDst;
    if (failed(issueOperand(l, gemm->bs[j], tma[1 + j], kv, dst, full, clusterX,
                            bLayout.boxBytes())))
      return failure();
  }
  return success();
}

// A grouped GEMM's B offset reads the tile's group from a table
// (tessel.load_element, defined before the mainloop). The scalar cache would
// emit that load where the offsets are first needed, inside the producer's
// k-loop, and an ld.global with side effects is not hoisted by LLVM: one load
// per k-step. Reading it once per tile, before the k-loop:
//
//   scf.for %tile ... {                         scf.for %tile ... {
//     scf.for %j ... {                            %g = ld.global [table + tile]
//       %g = ld.global [table + tile]    ==>      scf.for %j ... {
//       hopper.tma.load %W[%k, %n, %g]              hopper.tma.load %W[%k, %n, %g]
//
// Only element reads whose offsets do not depend on the k-loop's index;
// kernels without them are unchanged.
LogicalResult KernelBuilder::readTileTables() {
  Value iv = gemm->loop.getInductionVar();
  auto outsideLoop = [&](Value v) {
    return !gemm->loop->isAncestor(v.getParentBlock()->getParentOp());
  };
  for (hopper::AsyncLoadOp load : asyncLoads)
    for (Value off : load.getOffsets()) {
      SmallVector<Value> work{off};
      llvm::DenseSet<Value> seen;
      while (!work.empty()) {
        Value x = work.pop_back_val();
        if (!seen.insert(x).second)
          continue;
        Operation *op = x.getDefiningOp();
        if (!op)
          continue;
        if (auto le = dyn_cast<LoadElementOp>(op)) {
          bool perK = llvm::any_of(le.getOffsets(), [&](Value o) {
            return o == iv || !outsideLoop(o);
          });
          if (outsideLoop(x) && !perK && failed(scalar(x)))
            return failure();
          continue;
        }
        llvm::append_range(work, op->getOperands());
      }
    }
  return success();
}

// One operand tile of `inner` x `outer` elements (OperandLayout.h), e.g. an
// MN-major A tile, BM = 128, BK = 64, 64B swizzle (32 elements per row):
//
//   tensor (unit stride along m)         shared memory, 4 boxes of 64 x 64 B
//        m 0..31 32..63 64..95 96..127     box 0 | box 1 | box 2 | box 3
//   k 0  [ b0  |  b1  |  b2  |  b3  ]      each: 64 rows (k) of 32 m, 4 KiB,
//   ..   [     |      |      |      ]      swizzled by TMA in 512 B patterns
//   k 63 [     |      |      |      ]
//
// Box i is TMA box {rowBytes / eltBytes, outer} at tensor coordinates
// (inner offset + i * boxInner, outer offset), innermost first, into
// dst + i * boxBytes. In a cluster of cs CTAs (rule C2), rank r loads outer
// rows [r * outer / cs, (r + 1) * outer / cs) of every box into the same
// offset of every CTA; each CTA's full barrier expects the whole stage.
LogicalResult KernelBuilder::issueOperand(const OperandLayout &l, GemmOperand op, TmaParam &t,
                                          Value kv, Value dst, Value full, int64_t cs,
                                          int64_t boxStride) {
  auto offOrFail = offsetScalars(op.offsets(), kv);
  if (failed(offOrFail))
    return failure();
  SmallVector<Value> off = std::move(*offOrFail);
  // Tile dimension d is tensor dimension lead + d; a leading (batch) offset
  // is the tensor map's outermost coordinate (tmaDimOrder in Validate.cpp).
  Value innerOff = off[l.contiguousDim];
  Value outerOff = off[l.lead + 1 - l.tileContiguousDim()];
  Value batchOff = l.lead ? off[0] : Value();
  int64_t part = t.box[1];
  Value mask;
  if (cs > 1) {
    outerOff = b.create<arith::AddIOp>(loc, outerOff,
                                       b.create<arith::MulIOp>(loc, clusterRank, i32(part)));
    dst = b.create<arith::AddIOp>(
        loc, dst, b.create<arith::MulIOp>(loc, clusterRank, i32(part * l.rowBytes())));
    mask = b.create<arith::ConstantIntOp>(loc, b.getI16Type(), (1 << clusterSize) - 1);
  }
  auto copyBox = [&](Value i) {
    Value x = b.create<arith::AddIOp>(loc, innerOff, b.create<arith::MulIOp>(loc, i, i32(l.boxInner())));
    Value d = b.create<arith::AddIOp>(
        loc, dst, b.create<arith::MulIOp>(loc, i, i32(boxStride ? boxStride : l.boxBytes())));
    SmallVector<Value, 3> coords = {x, outerOff};
    if (batchOff)
      coords.push_back(batchOff);
    b.create<hopper::TmaLoadOp>(loc, t.desc, coords, d, full, mask, t.box[0] * t.box[1] * l.eltBytes);
  };
  // Up to 4 boxes unrolled; more (narrow swizzles) in a loop, which keeps the
  // producer's code and registers small (unrolled, 32 unswizzled boxes spill
  // in the clustered schedules).
  if (l.numBoxes() <= 4) {
    for (int64_t i = 0; i < l.numBoxes(); ++i)
      copyBox(i32(i));
    return success();
  }
  auto loop = b.create<scf::ForOp>(loc, i32(0), i32(l.numBoxes()), i32(1));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  copyBox(loop.getInductionVar());
  return success();
}

Value KernelBuilder::fullBar(Value s) {
  return smemAddr(b.create<arith::AddIOp>(loc, i32(fullBarOff), b.create<arith::MulIOp>(loc, s, i32(8))));
}

Value KernelBuilder::emptyBar(Value s) {
  return smemAddr(b.create<arith::AddIOp>(loc, i32(emptyBarOff), b.create<arith::MulIOp>(loc, s, i32(8))));
}

void KernelBuilder::releaseStage(Value s) {
  Value bar = emptyBar(s);
  if (clusterSize == 1) {
    b.create<hopper::MBarrierArriveOp>(loc, bar, b.getStringAttr("empty"));
    return;
  }
  // Rule C3: the stage is free once the consumers of every CTA it was
  // multicast into released it; arrive on each CTA's barrier.
  //
  // The arrive keeps its default semantics (.release.cta): what it publishes
  // is that this CTA's wgmma reads of the stage retired (wgmma.wait_group
  // before it), and the peer's producer only answers with a TMA write. An
  // explicit `.release.cluster` is not needed for that and is expensive:
  // ptxas emits MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before every arrive,
  // which stalls the consumer warpgroup once per stage and per peer (cluster
  // 2x1 ran at 0.58x cuBLAS with it, 1.02x without: docs/benchmarks.md).
  for (int64_t peer = 0; peer < clusterSize; ++peer)
    b.create<hopper::MBarrierArriveClusterOp>(loc, bar, i32(peer), b.getStringAttr("empty"));
}

void KernelBuilder::clusterSync() {
  if (clusterSize == 1)
    return barSync();
  // Not `.aligned`: warps arrive here diverged (thread 0 of the producer
  // warp is still issuing loads when its 31 siblings reach the final sync).
  b.create<hopper::ClusterSyncOp>(loc);
}
} // namespace mlir::tessel::lowering
