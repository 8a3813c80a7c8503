//===- Lowering/Epilogue.cpp - the epilogue ---------------------------------===//
//
// Part of tessel-lower-to-nvvm: `hopper.epilogue` and each store's
// `hopper.store` path. The traced epilogue (elementwise ops on the
// accumulator, loads of other tensors, casts) is evaluated element by
// element on the wgmma accumulator layout (m64nNk16, f32: register r of
// thread t holds row 16*warp + t%32/4 + 8*(r%4/2), column 8*(r/4) + 2*(t%4)
// + r%2), so any elementwise chain is fused. A dual GEMM's accumulators are
// one m64n(2 BN) fragment: the element at column c < BN reads register r of
// the first dot and r + BN/2 (column c + BN) of the second, both held by the
// same thread (selectAccRegisters):
//
//   tessel.store %v, %C[%m, %n] {hopper.store = "register_pairs"}
//     ==> per register pair: the element expression, then bounds-checked
//         st.global of two adjacent columns
//   tessel.store %v, %C[%m, %n] {hopper.store = "tma_store"}
//     ==> per 64 x 128-byte chunk: hopper.tma.store.wait 1 read,
//         hopper.stmatrix into the swizzled staging buffer, hopper.fence.proxy_async,
//         hopper.tma.store (rules E1-E3 below)
//   tessel.store %r, %V[%m] {combine, hopper.store = "reduce_atomic"}
//     ==> a tessel.reduce on the fragments: per thread, shuffles, one atomic
//         per row (column) and warp (emitReduceStore, "Reductions" below)
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

#include "Multistage.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

FailureOr<bool> KernelBuilder::storesTransposed(StoreOp store) {
  AccumulatorView view = accumulatorView(store.getValue(), accLoopResults);
  if (view == AccumulatorView::mixed)
    return store.emitError() << kMixedAccumulatorView, failure();
  if (!storesTransposedTile(store.getValue(), view, BM, outBN))
    return false;
  // The fragment layout is the tile's only on the register path (an edited
  // or hand-written plan may say otherwise: tessel-lower-epilogue does not).
  StringRef path = storePath(store);
  if (path != "registers" && path != "fragments")
    return store.emitError() << "a store of the transposed accumulator takes path 'registers' (or "
                                "'fragments' in multistage), got '"
                             << path << "'",
           failure();
  return true;
}

LogicalResult KernelBuilder::checkStoredTile(StoreOp store, bool transposed) {
  int64_t rows = transposed ? outBN : BM, cols = transposed ? BM : outBN;
  auto ty = cast<RankedTensorType>(store.getValue().getType());
  if (ty.getRank() != 2 || ty.getDimSize(0) != rows || ty.getDimSize(1) != cols)
    return store.emitError() << "after the mainloop, stores must be " << rows << "x" << cols
                             << " tiles (the accumulator's shape"
                             << (transposed ? ", transposed" : "") << ")";
  return success();
}

LogicalResult KernelBuilder::emitEpilogue(Value accFinal, Value rowBlock, Value inWg) {
  EpilogueReuse reuse(*this);
  return emitStores(
      [&](StoreOp store) { return emitRegisterStore(store, accFinal, rowBlock, inWg); });
}

LogicalResult KernelBuilder::emitRegisterStore(StoreOp store, Value accFinal, Value rowBlock,
                                               Value inWg) {
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  Value rowBase = fragmentRow(rowBlock, inWg);
  Value colBase = fragmentColumn(inWg);
  if (storePath(store) == "reduce_atomic")
    return emitReduceStore(store, {accFinal}, wgmmaFragments(1), rowBase, colBase, lane);
  {
    // The stored tile is the accumulator's, or its transpose (acc.T(): the
    // thread's fragment element (row, col) goes to (col, row); path
    // "registers", tessel-lower-epilogue).
    FailureOr<bool> transposed = storesTransposed(store);
    if (failed(transposed) || failed(checkStoredTile(store, *transposed)))
      return failure();
    // Registers r and r+1 (r even) hold adjacent columns of one row: paired
    // stores in the tma schedule. (In the warp-specialized ones the paired
    // epilogue's register pressure makes ptxas serialise wgmma, C7514.)
    if (storePath(store) != "register_pairs") {
      for (int64_t r = 0; r < outBN / 2; ++r) {
        selectAccRegisters(accFinal, r);
        Value row = coordinate(rowBase, 8 * ((r % 4) / 2));
        Value col = coordinate(colBase, 8 * (r / 4) + r % 2);
        if (failed(*transposed ? storeElement(store, {col, row}) : storeElement(store, {row, col})))
          return failure();
      }
      return success();
    }
    for (int64_t r = 0; r < outBN / 2; r += 2) {
      Value row = coordinate(rowBase, 8 * ((r % 4) / 2));
      Value col = coordinate(colBase, 8 * (r / 4));
      Value col1 = coordinate(colBase, 8 * (r / 4) + 1);
      selectAccRegisters(accFinal, r);
      auto v0 = element(store.getValue(), {row, col});
      selectAccRegisters(accFinal, r + 1);
      auto v1 = element(store.getValue(), {row, col1});
      if (failed(v0) || failed(v1) || failed(storePair(store, row, col, *v0, *v1)))
        return failure();
    }
    return success();
  }
}

//===----------------------------------------------------------------------===//
// TMA-store epilogue (warp-specialized schedules)
//===----------------------------------------------------------------------===//
//
// Each consumer warpgroup owns two staging chunks of 64 rows x 128 bytes
// (128 fp8, 64 bf16/f16 or 32 f32 columns), laid out as TMA's 128B swizzle expects:
// the 16-byte piece j of row r lives at r * 128 + ((j ^ (r % 8)) * 16), so
// the 8 rows a warp's fragments touch at once land in 8 different bank
// groups. Per chunk (sequence number q of the warpgroup, buffer q % 2):
//
//   thread 0 of wg:  cp.async.bulk.wait_group.read 1   (store q-2 read buffer)
//   wg:              bar.sync 1+consumer, 128
//   all:             traced epilogue on the fragments -> stmatrix (16-bit),
//                    st.shared.b16 of a pair (fp8) or st.shared.v2.f32 into
//                    the buffer
//   all:             fence.proxy.async.shared::cta
//   wg:              bar.sync 1+consumer, 128
//   thread 0 of wg:  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
//                    [C, {col, row}], [buffer]; cp.async.bulk.commit_group
//      (output breaks TMA's rules: all threads copy the chunk to global
//       memory with bounds-checked stores instead)
//
// Ordering rules:
//   E1. A buffer is rewritten only after the TMA store that read it finished
//       reading (wait_group.read 1 leaves only the other buffer's store in
//       flight), and every thread learns that through the first bar.sync.
//   E2. Generic-proxy writes to shared memory are made visible to the async
//       proxy (fence.proxy.async) by each writing thread before the barrier
//       after which the store is issued.
//   E3. Before the CTA exits, the issuing thread waits for all its bulk
//       groups (wait_group 0): shared memory must outlive the stores.
// TMA stores clip at the tensor's bounds, so edge tiles need no predicate.

SmallVector<StoreOp> KernelBuilder::stagedStores() {
  SmallVector<StoreOp> out;
  if (!gemm)
    return out;
  for (Operation &op : fn.getBody().front())
    if (auto store = dyn_cast<StoreOp>(op); store && storePath(store) == "tma_store")
      out.push_back(store);
  return out;
}

//===----------------------------------------------------------------------===//
// Epilogue operands prefetched into L2 (tessel-lower-epilogue rule 8)
//===----------------------------------------------------------------------===//
//
//   tessel.load %C0[%m, %n] {hopper.prefetch = "tma_l2"} : ... -> tensor<128x128xbf16>
//     ==> producer thread, per tile, after the tile's last k-stage is issued:
//   scf.if %c0_usable {
//     hopper.tma.prefetch %descC0[%n, %m] : !llvm.ptr      (one 128 x 128 box)
//   }
//     ==> consumers, in the epilogue: the predicated per-element loads of C0
//         (loadElement), unchanged, now served by L2.
// No ordering rule: a prefetch writes no memory the kernel reads and nobody
// waits for it; a tile whose prefetch has not arrived reads from memory.

SmallVector<LoadOp> KernelBuilder::operandLoadsOn(StringRef path) {
  SmallVector<LoadOp> out;
  if (!gemm)
    return out;
  for (Operation &op : fn.getBody().front())
    if (auto load = dyn_cast<LoadOp>(op)) {
      auto attr = load->getAttrOfType<StringAttr>("hopper.prefetch");
      if (attr && attr.getValue() == path)
        out.push_back(load);
    }
  return out;
}

SmallVector<LoadOp> KernelBuilder::prefetchedLoads() { return operandLoadsOn("tma_l2"); }

LogicalResult KernelBuilder::prefetchEpilogueOperands() {
  for (TmaParam &t : tma) {
    // Rule 8: the tile as one box. The operand of rule 7 too: its 64 x
    // 128-byte chunks, which the consumer then loads one by one into the
    // staging buffers (from L2).
    LoadOp load = t.operand && t.perChunk ? t.operand : t.prefetch;
    if (!load)
      continue;
    auto offsets = offsetScalars(load.getOffsets());
    if (failed(offsets))
      return failure();
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, t.usable, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // Innermost (column) first; a batched tensor's matrix last.
    const size_t rank = offsets->size();
    Value col = (*offsets)[rank - 1], row = (*offsets)[rank - 2], matrix = rank == 3 ? (*offsets)[0] : Value();
    if (load == t.prefetch) {
      b.create<hopper::TmaPrefetchOp>(loc, t.desc, col, row, matrix);
      continue;
    }
    for (int64_t i = 0; i < BM / 64; ++i)
      for (int64_t c = 0; c * 64 < outBN; ++c)
        b.create<hopper::TmaPrefetchOp>(loc, t.desc, b.create<arith::AddIOp>(loc, col, i32(64 * c)),
                                        b.create<arith::AddIOp>(loc, row, i32(64 * i)), matrix);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Epilogue operands read through shared memory (tessel-lower-epilogue rules 6, 7)
//===----------------------------------------------------------------------===//
//
//   tessel.load %C0[%m, %n] {hopper.prefetch = "tma_smem"} : ... -> tensor<128x128xbf16>
//     ==> consumer c, thread 0, when it starts a tile (before its mainloop):
//   scf.if %c0_usable {
//     hopper.mbarrier.arrive_expect_tx %opbar_c, 32768 {ring = "operand"}
//     hopper.tma.load %descC0[%n + 64 j, %m + 64 i] -> %chunk_c_i_j, %opbar_c bytes 8192
//       (per 64-row block i of the consumer and 128-byte column chunk j)
//   }
//     ==> every consumer thread, after its mainloop:
//   hopper.mbarrier.wait %opbar_c, (tile count of c) & 1 {ring = "operand"}
//     ==> per staged chunk of the store (stageChunk), before its elements:
//   hopper.ldmatrix %chunk_c_i_j + ... (x4: the fragments of two n8 blocks)
//       -> the element of (row, col) wherever the expression reads C0 there
//
// The buffers are laid out as the staging chunks are (64 rows x 128 bytes,
// 128B swizzle), so ldmatrix with stmatrix's lane addresses gives each
// thread the operand's elements at its accumulator registers' coordinates.
// Ordering rules:
//   O1. The consumer's thread 0 issues tile t's loads after the consumer's
//       last barrier of tile t - 1's epilogue (stageChunk's second bar.sync,
//       or the one below when nothing is staged): every thread's ldmatrix
//       of the buffers came before it (write after read).
//   O2. Each tile completes one phase of the consumer's operand barrier (one
//       arrive_expect_tx of the bytes its boxes deliver); every consumer
//       thread waits for phase (the consumer's tile count) & 1 before its
//       epilogue. Stream-K parts that only contribute, and a cluster's tiles
//       past the grid, load and wait too, so the phases stay in step, and a
//       bar.sync of the consumer follows every wait before thread 0 issues
//       the next tile's loads (the epilogue's, stream-K's, or one of its own
//       for a tile past the grid): no thread can find the barrier two phases
//       on. No operand of rule 7 shares the barrier (tessel-lower-epilogue).
//       (A contributor's or skipped tile's loads are wasted: the price of
//       phases that need no count of the tiles that store.)
//   O3. An operand whose tensor breaks TMA's rules is copied into the same
//       buffer by the consumer's threads (generic proxy, bounds-checked: 0
//       outside the tensor, as TMA fills), then bar.sync of the consumer
//       before any ldmatrix.
//
// An operand whose tiles do not fit (tessel-lower-epilogue rule 7,
// "tma_chunk", pingpong) goes through the staging buffer of each chunk of the
// store that reads it, per chunk (stageChunk):
//   wg:              (rule E1's wait and bar.sync: the buffer is free)
//   thread 0 of wg:  %st = hopper.mbarrier.arrive_expect_tx %opbar_c, 8192 -> i64
//                    hopper.tma.load %descC0[%n + 64 j, %m + 64 i] -> buffer, %opbar_c
//                      (only for a tile's first chunk: the others' loads were
//                       issued by the chunk before, O7)
//                    hopper.mbarrier.wait_state %opbar_c, %st
//   wg:              bar.sync 1+consumer, 128
//   thread 0 of wg:  hopper.tma.store.wait 0 read
//                    %st' = hopper.mbarrier.arrive_expect_tx %opbar_c, 8192 -> i64
//                    hopper.tma.load (the next chunk) -> the other buffer, %opbar_c
//   all:             ldmatrix of the operand, the epilogue, stmatrix of the
//                    result into the same buffer, fence.proxy.async, ... (E2)
//   O4. The load overwrites the buffer only after rule E1's barrier: the TMA
//       store that read it finished reading, and every thread is past it.
//   O5. One phase of the consumer's operand barrier per chunk; the issuing
//       thread waits on the state its own arrival returned, which names that
//       phase (the consumer's chunks per tile vary with the tiles it skips:
//       no phase count to keep), and alone waits.
//   O6. A bar.sync of the consumer after that wait (or after the threads'
//       bounds-checked copies, when the tensor breaks TMA's rules) orders the
//       load before every thread's ldmatrix. Each warp's stmatrix then
//       writes only the 16 rows its own ldmatrix read.
//   O7. Lookahead: after O6's barrier, thread 0 issues the load of the
//       store's next chunk of the same tile into the other staging buffer,
//       so that its latency overlaps this chunk's math and store (the
//       schedules whose epilogue runs alone expose it otherwise). That
//       buffer was last read by the TMA store of the chunk before, which
//       wait_group.read 0 retires first (it is the newest bulk group), and
//       by every thread's ldmatrix / stmatrix / fallback copy of the chunk
//       before, all before this chunk's first barrier. At most one chunk
//       load is in flight per consumer (this chunk's was waited for), so
//       O5's state-named phases still hold; the next chunk only waits.
//       A tile's first chunk is never issued early (its coordinates come
//       with the tile).

SmallVector<LoadOp> KernelBuilder::stagedOperandLoads() { return operandLoadsOn("tma_smem"); }

Value KernelBuilder::operandChunk(const TmaParam &t, Value consumer, int64_t localRowBlock, int64_t chunk) {
  // The operands' regions follow each other in the loads' order.
  int64_t base = operandsOff;
  auto bytesOf = [](LoadOp load) {
    return load.getRef().getType().getElementBytes();
  };
  for (const TmaParam &o : tma) {
    if (!o.operand || o.perChunk)
      continue;
    if (o.operand == t.operand)
      break;
    base += epilogueOperandBytes(sched.getKind(), sched.getTile(), bytesOf(o.operand));
  }
  const int64_t bytes = bytesOf(t.operand);
  const int64_t chunksPerRow = outBN * bytes / 128;
  Value index = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, consumer, i32(rowBlocks * chunksPerRow)),
      i32(localRowBlock * chunksPerRow + chunk));
  return smemAddr(b.create<arith::AddIOp>(loc, i32(base), b.create<arith::MulIOp>(loc, index, i32(kChunkBytes))));
}

Value KernelBuilder::operandBar(Value consumer) {
  return smemAddr(b.create<arith::AddIOp>(loc, i32(operandFullOff), b.create<arith::MulIOp>(loc, consumer, i32(8))));
}

Value KernelBuilder::anyOperandByTma() {
  Value any = b.create<arith::ConstantIntOp>(loc, b.getI1Type(), 0);
  for (TmaParam &t : tma)
    if (t.operand && !t.perChunk)
      any = b.create<arith::OrIOp>(loc, any, t.usable);
  return any;
}

LogicalResult KernelBuilder::issueOperandLoads(Value consumer, Value firstRowBlock, Value inWg) {
  Value isIssuer = b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0)), anyOperandByTma());
  auto ifIssuer = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifIssuer.thenBlock());
  // Rule O2: the bytes of the operands that TMA loads (all of them but for a
  // tensor that breaks TMA's rules).
  Value bar = operandBar(consumer);
  Value bytes = i32(0);
  int64_t maxBytes = 0;
  for (TmaParam &t : tma) {
    if (!t.operand || t.perChunk)
      continue;
    int64_t consumerBytes = rowBlocks * outBN * t.operand.getRef().getType().getElementBytes() * 64;
    maxBytes += consumerBytes;
    bytes = b.create<arith::AddIOp>(loc, bytes, b.create<arith::SelectOp>(loc, t.usable, i32(consumerBytes), i32(0)));
  }
  b.create<hopper::MBarrierArriveExpectTxOp>(loc, bar, bytes, b.getStringAttr("operand"),
                                             b.getI64IntegerAttr(maxBytes));
  for (TmaParam &t : tma) {
    if (!t.operand || t.perChunk)
      continue;
    auto offsets = offsetScalars(t.operand.getOffsets());
    if (failed(offsets))
      return failure();
    const size_t rank = offsets->size();
    const int64_t cols = 128 / t.operand.getRef().getType().getElementBytes();
    auto ifUsable = b.create<scf::IfOp>(loc, TypeRange{}, t.usable, /*withElse=*/false);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(ifUsable.thenBlock());
    for (int64_t i = 0; i < rowBlocks; ++i) {
      Value row = b.create<arith::AddIOp>(
          loc, (*offsets)[rank - 2],
          b.create<arith::MulIOp>(loc, b.create<arith::AddIOp>(loc, firstRowBlock, i32(i)), i32(64)));
      for (int64_t c = 0; c * cols < outBN; ++c) {
        SmallVector<Value, 3> coords{b.create<arith::AddIOp>(loc, (*offsets)[rank - 1], i32(c * cols)), row};
        if (rank == 3)
          coords.push_back((*offsets)[0]);
        b.create<hopper::TmaLoadOp>(loc, t.desc, coords, operandChunk(t, consumer, i, c), bar, Value(),
                                    kChunkBytes);
      }
    }
  }
  return success();
}

void KernelBuilder::waitOperandLoads(Value consumer, Value local) {
  auto ifAny = b.create<scf::IfOp>(loc, TypeRange{}, anyOperandByTma(), /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifAny.thenBlock());
  mbarrierWait(operandBar(consumer), b.create<arith::AndIOp>(loc, local, i32(1)), "operand", consumer);
}

LogicalResult KernelBuilder::copyChunkFromMemory(LoadOp load, Value buffer, Value rowBlock, int64_t chunk,
                                                Value inWg) {
  const int64_t bytes = load.getRef().getType().getElementBytes();
  const int64_t cols = 128 / bytes;
  // Thread i copies column i % cols of rows i / cols + k (128 / cols), as
  // stageChunk's fallback stores them.
  Value col = b.create<arith::RemUIOp>(loc, inWg, i32(cols));
  Value rowStart = b.create<arith::DivUIOp>(loc, inWg, i32(cols));
  auto rows = b.create<scf::ForOp>(loc, rowStart, i32(64), i32(kThreadsPerWarpgroup / cols));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(rows.getBody());
  Value row = rows.getInductionVar();
  Value tileRow = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, rowBlock, i32(64)), row);
  auto v = loadElement(load, {tileRow, b.create<arith::AddIOp>(loc, col, i32(chunk * cols))});
  if (failed(v))
    return failure();
  Value byteCol = b.create<arith::MulIOp>(loc, col, i32(bytes));
  Value phys = b.create<arith::XOrIOp>(loc, b.create<arith::DivUIOp>(loc, byteCol, i32(16)),
                                       b.create<arith::AndIOp>(loc, row, i32(7)));
  Value addr = b.create<arith::AddIOp>(
      loc, buffer,
      b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, row, i32(128)),
                              b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, phys, i32(16)),
                                                      b.create<arith::RemUIOp>(loc, byteCol, i32(16)))));
  ptx("st.shared.b16 [$0], $1;", "r,h", {addr, b.create<LLVM::BitcastOp>(loc, b.getI16Type(), *v)});
  return success();
}

LogicalResult KernelBuilder::fillOperandsFromMemory(Value consumer, Value firstRowBlock, Value inWg) {
  for (TmaParam &t : tma) {
    if (!t.operand || t.perChunk)
      continue;
    const int64_t cols = 128 / t.operand.getRef().getType().getElementBytes();
    Value unusable = b.create<arith::XOrIOp>(loc, t.usable, b.create<arith::ConstantIntOp>(loc, b.getI1Type(), 1));
    auto ifNot = b.create<scf::IfOp>(loc, TypeRange{}, unusable, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifNot.thenBlock());
    // Rule O3.
    for (int64_t i = 0; i < rowBlocks; ++i)
      for (int64_t c = 0; c * cols < outBN; ++c)
        if (failed(copyChunkFromMemory(t.operand, operandChunk(t, consumer, i, c),
                                       b.create<arith::AddIOp>(loc, firstRowBlock, i32(i)), c, inWg)))
          return failure();
    consumerBarrier(consumer);
  }
  return success();
}

LoadOp KernelBuilder::chunkOperandLoad() {
  SmallVector<LoadOp> loads = operandLoadsOn("tma_chunk");
  return loads.empty() ? LoadOp() : loads.front();
}

FailureOr<Value> KernelBuilder::issueOperandChunk(TmaParam &t, Value buffer, Value rowBlock, int64_t chunk,
                                                  Value inWg, Value consumer, int64_t waitRead) {
  Value isIssuer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
  auto one = b.create<scf::IfOp>(loc, TypeRange{b.getI64Type()}, b.create<arith::AndIOp>(loc, t.usable, isIssuer),
                                 /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(one.elseBlock());
  b.create<scf::YieldOp>(loc, ValueRange{b.create<arith::ConstantIntOp>(loc, b.getI64Type(), 0).getResult()});
  b.setInsertionPointToStart(one.thenBlock());
  auto offsets = offsetScalars(t.operand.getOffsets());
  if (failed(offsets))
    return failure();
  if (waitRead >= 0)
    b.create<hopper::TmaStoreWaitOp>(loc, waitRead, /*read=*/true);
  const size_t rank = offsets->size();
  SmallVector<Value, 3> coords{
      b.create<arith::AddIOp>(loc, (*offsets)[rank - 1], i32(chunk * 64)),
      b.create<arith::AddIOp>(loc, (*offsets)[rank - 2], b.create<arith::MulIOp>(loc, rowBlock, i32(64)))};
  if (rank == 3)
    coords.push_back((*offsets)[0]);
  // Rule O5: the arrival's state names the phase this load completes.
  Value bar = operandBar(consumer);
  Value state = b.create<hopper::MBarrierArriveExpectTxOp>(loc, b.getI64Type(), bar, i32(kChunkBytes),
                                                           b.getStringAttr("operand"), IntegerAttr())
                    .getState();
  b.create<hopper::TmaLoadOp>(loc, t.desc, coords, buffer, bar, Value(), kChunkBytes);
  b.create<scf::YieldOp>(loc, ValueRange{state});
  return one.getResult(0);
}

LogicalResult KernelBuilder::loadOperandChunk(TmaParam &t, Value buffer, Value rowBlock, int64_t chunk, Value inWg,
                                              Value consumer, Value issued) {
  Value state = issued;
  if (!state) {
    auto s = issueOperandChunk(t, buffer, rowBlock, chunk, inWg, consumer, /*waitRead=*/-1);
    if (failed(s))
      return failure();
    state = *s;
  }
  auto viaTma = b.create<scf::IfOp>(loc, TypeRange{}, t.usable, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.thenBlock());
    Value isIssuer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, /*withElse=*/false);
    b.setInsertionPointToStart(one.thenBlock());
    b.create<hopper::MBarrierWaitStateOp>(loc, operandBar(consumer), state, consumer, b.getStringAttr("operand"),
                                          boundedWaits);
  }
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.elseBlock());
    if (failed(copyChunkFromMemory(t.operand, buffer, rowBlock, chunk, inWg)))
      return failure();
  }
  // Rule O6.
  consumerBarrier(consumer);
  return success();
}

void KernelBuilder::readOperandFragments(Value v, Value consumer, int64_t localRowBlock, int64_t firstBlock,
                                         int64_t blocks, Value row0, Value colLane, Value inWg, Value staged) {
  Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  // stmatrix's lane addresses (stageChunk): lane l gives row l % 8 of matrix
  // l / 8, which is rows (0-7 | 8-15) x n8 blocks (nb | nb + 1).
  Value mat = b.create<arith::DivUIOp>(loc, lane, i32(8));
  Value srow = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
      b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, mat, i32(2)), i32(8)),
                              b.create<arith::RemUIOp>(loc, lane, i32(8))));
  Value half = b.create<arith::DivUIOp>(loc, mat, i32(2));
  auto x4Ty = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, b.getI32Type()));
  for (TmaParam &t : tma) {
    if (!t.operand || t.perChunk != bool(staged))
      continue;
    if (!readsResultOf(v, t.operand))
      continue;
    Type elt = t.operand.getRef().getType().getElementType();
    auto vecTy = VectorType::get({2}, elt);
    for (int64_t nb = firstBlock; nb < firstBlock + blocks; nb += 2) {
      // n8 block nb is 16-byte piece nb % 8 of 128-byte chunk nb / 8.
      Value piece = b.create<arith::AddIOp>(loc, half, i32(nb % 8));
      Value phys = b.create<arith::XOrIOp>(loc, piece, b.create<arith::AndIOp>(loc, srow, i32(7)));
      Value addr = b.create<arith::AddIOp>(
          loc, staged ? staged : operandChunk(t, consumer, localRowBlock, nb / 8),
          b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, srow, i32(128)),
                                  b.create<arith::MulIOp>(loc, phys, i32(16))));
      Value x4 = b.create<hopper::LdMatrixOp>(loc, x4Ty, addr, b.getI64IntegerAttr(0), UnitAttr());
      for (int64_t m = 0; m < 4; ++m) {
        // Matrix m: registers (r, r + 1) of the accumulator fragment.
        int64_t r = 4 * (nb + m / 2) + 2 * (m % 2);
        Value pair = b.create<LLVM::BitcastOp>(loc, vecTy, b.create<LLVM::ExtractValueOp>(loc, x4, m));
        Value row = coordinate(row0, 8 * ((r % 4) / 2));
        for (int64_t e = 0; e < 2; ++e)
          operandElements[{t.operand.getResult(), row, coordinate(colLane, 8 * (r / 4) + e)}] =
              b.create<LLVM::ExtractElementOp>(loc, pair, i32(e));
      }
    }
  }
}

void KernelBuilder::consumerBarrier(Value consumer) {
  b.create<hopper::NamedBarrierOp>(loc, /*arrive=*/false,
                                   b.create<arith::AddIOp>(loc, consumer, i32(consumerBarrierBase)),
                                   128);
}

Value KernelBuilder::stagingBuffer(Value consumer, Value sequence) {
  return smemAddr(b.create<arith::AddIOp>(
      loc, i32(stagingOff),
      b.create<arith::MulIOp>(
          loc, b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, consumer, i32(2)),
                                       b.create<arith::AndIOp>(loc, sequence, i32(1))),
          i32(kChunkBytes))));
}

LogicalResult KernelBuilder::stageChunk(TmaParam &t, Value acc, Value rowBlock, int64_t localRowBlock,
                                        int64_t chunk, Value inWg, Value consumer, Value sequence,
                                        bool drainAll, Value &pending,
                                        std::optional<std::pair<Value, int64_t>> next) {
  StoreOp store = t.store;
  Type outTy = store.getRef().getType().getElementType();
  int64_t bytes = outTy.getIntOrFloatBitWidth() / 8;
  int64_t cols = 128 / bytes; // columns per chunk
  Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  Value isIssuer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
  Value buffer = stagingBuffer(consumer, sequence);
  // Byte address of (row, 16-byte piece, byte) in the swizzled buffer.
  auto swizzled = [&](Value row, Value piece, Value byte) {
    Value phys = b.create<arith::XOrIOp>(loc, piece, b.create<arith::AndIOp>(loc, row, i32(7)));
    return b.create<arith::AddIOp>(
        loc, buffer,
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, row, i32(128)),
            b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, phys, i32(16)), byte)));
  };
  // Rule E1. (With an odd number of chunks per tile, a skipped cluster tile
  // would break the strict alternation: the first chunk of a tile then waits
  // for every store.)
  {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<hopper::TmaStoreWaitOp>(loc, drainAll ? 0 : 1, /*read=*/true);
  }
  consumerBarrier(consumer);
  // Rule 7 of tessel-lower-epilogue: the operand's chunk into this buffer
  // (rules O4-O6).
  TmaParam *chunkOperand = nullptr;
  for (TmaParam &o : tma)
    if (o.operand && o.perChunk && readsResultOf(store.getValue(), o.operand))
      chunkOperand = &o;
  Value issued = pending;
  pending = Value();
  if (chunkOperand) {
    if (failed(loadOperandChunk(*chunkOperand, buffer, rowBlock, chunk, inWg, consumer, issued)))
      return failure();
    // Rule O7: the next chunk's operand into the other buffer, while this
    // chunk is evaluated and stored.
    if (next) {
      auto s = issueOperandChunk(*chunkOperand,
                                 stagingBuffer(consumer, b.create<arith::AddIOp>(loc, sequence, i32(1))),
                                 next->first, next->second, inWg, consumer, /*waitRead=*/0);
      if (failed(s))
        return failure();
      pending = *s;
    }
  }

  // Fragment coordinates in the tile: register r of an m64nN accumulator is
  // row 16*warp + lane/4 + 8*(r%4/2), column 8*(r/4) + 2*(lane%4) + r%2.
  Value rowInBlock = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
                                             b.create<arith::DivUIOp>(loc, lane, i32(4)));
  Value row0 = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, rowBlock, i32(64)),
                                       rowInBlock);
  Value colLane = fragmentColumn(inWg);
  // The two elements of registers (r, r+1), r even, evaluated and converted.
  auto pairAt = [&](int64_t r) -> FailureOr<std::pair<Value, Value>> {
    Value row = coordinate(row0, 8 * ((r % 4) / 2));
    Value col = coordinate(colLane, 8 * (r / 4));
    selectAccRegisters(acc, r);
    auto v0 = element(store.getValue(), {row, col});
    selectAccRegisters(acc, r + 1);
    auto v1 = element(store.getValue(), {row, coordinate(colLane, 8 * (r / 4) + 1)});
    if (failed(v0) || failed(v1))
      return failure();
    return std::pair{*v0, *v1};
  };
  int64_t firstBlock = chunk * cols / 8; // first n8 block of the chunk
  // The chunk's elements of the operands read through shared memory (rules 6 and 7).
  operandElements.clear();
  readOperandFragments(store.getValue(), consumer, localRowBlock, firstBlock, cols / 8, row0, colLane, inWg);
  if (chunkOperand)
    readOperandFragments(store.getValue(), consumer, localRowBlock, firstBlock, cols / 8, row0, colLane, inWg,
                         buffer);
  if (bytes == 2) {
    // stmatrix .x4: matrices (rows 0-7 | 8-15) x (n8 blocks nb | nb+1); lane l
    // gives the address of row l%8 of matrix l/8.
    Value mat = b.create<arith::DivUIOp>(loc, lane, i32(8));
    Value srow = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, mat, i32(2)), i32(8)),
            b.create<arith::RemUIOp>(loc, lane, i32(8))));
    Value half = b.create<arith::DivUIOp>(loc, mat, i32(2));
    auto vecTy = VectorType::get({2}, outTy);
    for (int64_t p = 0; p < cols / 16; ++p) {
      SmallVector<Value> packed;
      for (int64_t m = 0; m < 4; ++m) {
        int64_t r = 4 * (firstBlock + 2 * p + m / 2) + 2 * (m % 2);
        auto pr = pairAt(r);
        if (failed(pr))
          return failure();
        Value v = b.create<LLVM::PoisonOp>(loc, vecTy);
        v = b.create<LLVM::InsertElementOp>(loc, v, pr->first, i32(0));
        v = b.create<LLVM::InsertElementOp>(loc, v, pr->second, i32(1));
        packed.push_back(b.create<LLVM::BitcastOp>(loc, b.getI32Type(), v));
      }
      Value piece = b.create<arith::AddIOp>(loc, half, i32(2 * p));
      Value addr = swizzled(srow, piece, i32(0));
      b.create<hopper::StMatrixOp>(loc, addr, packed[0], packed[1], packed[2], packed[3]);
    }
  } else if (bytes == 1) {
    // fp8: each register pair is 2 bytes of one row, byte column nb*8 +
    // 2*(lane%4): piece nb/2, byte 8*(nb%2) + 2*(lane%4). When the stored
    // value is a cast to fp8 (the usual quantized output), the pair is
    // converted by one cvt.rn.satfinite.*x2.f32 (first column in the low byte).
    auto cast = store.getValue().getDefiningOp<CastOp>();
    const bool castPair = cast && isFp8(cast.getType().getElementType()) &&
                          !isFp8(cast.getSrc().getType().getElementType());
    Value q4 = b.create<arith::RemUIOp>(loc, lane, i32(4));
    for (int64_t nb = 0; nb < cols / 8; ++nb)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t r = 4 * (firstBlock + nb) + 2 * h;
        Value pair;
        if (castPair) {
          Value row = coordinate(row0, 8 * h);
          SmallVector<Value, 2> f;
          for (int64_t e = 0; e < 2; ++e) {
            selectAccRegisters(acc, r + e);
            auto v = element(cast.getSrc(), {row, coordinate(colLane, 8 * (r / 4) + e)});
            if (failed(v))
              return failure();
            f.push_back(v->getType().isF32() ? *v
                                             : b.create<arith::ExtFOp>(loc, b.getF32Type(), *v).getResult());
          }
          pair = f32ToFp8Pair(cast.getType().getElementType(), f[0], f[1]);
        } else {
          auto pr = pairAt(r);
          if (failed(pr))
            return failure();
          Value lo = b.create<arith::ExtUIOp>(loc, b.getI16Type(), pr->first);
          Value hi = b.create<arith::ShLIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI16Type(), pr->second),
                                             b.create<arith::ConstantIntOp>(loc, b.getI16Type(), 8));
          pair = b.create<arith::OrIOp>(loc, lo, hi);
        }
        Value srow = b.create<arith::AddIOp>(loc, rowInBlock, i32(8 * h));
        Value byte = b.create<arith::AddIOp>(loc, i32(8 * (nb % 2)), b.create<arith::MulIOp>(loc, q4, i32(2)));
        ptx("st.shared.b16 [$0], $1;", "r,h", {swizzled(srow, i32(nb / 2), byte), pair});
      }
  } else {
    // f32: each register pair is 8 bytes of one row.
    for (int64_t nb = 0; nb < cols / 8; ++nb)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t r = 4 * (firstBlock + nb) + 2 * h;
        auto pr = pairAt(r);
        if (failed(pr))
          return failure();
        Value srow = b.create<arith::AddIOp>(loc, rowInBlock, i32(8 * h));
        // Byte column nb*32 + (lane%4)*8: piece 2*nb + (lane%4)/2, byte 8*(lane%2).
        Value q4 = b.create<arith::RemUIOp>(loc, lane, i32(4));
        Value piece = b.create<arith::AddIOp>(loc, i32(2 * nb), b.create<arith::DivUIOp>(loc, q4, i32(2)));
        Value byte = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, q4, i32(2)), i32(8));
        ptx("st.shared.v2.f32 [$0], {$1, $2};", "r,f,f",
            {swizzled(srow, piece, byte), pr->first, pr->second});
      }
  }
  operandElements.clear();
  // Rule E2.
  b.create<hopper::FenceProxyAsyncOp>(loc);
  consumerBarrier(consumer);

  auto offsetsOrFail = offsetScalars(store.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  Value tileRow = b.create<arith::MulIOp>(loc, rowBlock, i32(64));
  auto viaTma = b.create<scf::IfOp>(loc, TypeRange{}, t.usable, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.thenBlock());
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, false);
    b.setInsertionPointToStart(one.thenBlock());
    // (A batched output: offsets {matrix, row, column}; the matrix is the
    // box's third coordinate.)
    ArrayRef<Value> offsets = *offsetsOrFail;
    const size_t rank = offsets.size();
    Value row = b.create<arith::AddIOp>(loc, offsets[rank - 2], tileRow);
    Value col = b.create<arith::AddIOp>(loc, offsets[rank - 1], i32(chunk * cols));
    b.create<hopper::TmaStoreOp>(loc, t.desc, col, row, rank == 3 ? offsets[0] : Value(), buffer);
    b.create<hopper::TmaStoreCommitOp>(loc);
  }
  {
    // The output breaks TMA's rules: thread i copies column i % cols of rows
    // i / cols + k * (128 / cols), with bounds-checked stores.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.elseBlock());
    Value col = b.create<arith::RemUIOp>(loc, inWg, i32(cols));
    Value rowStart = b.create<arith::DivUIOp>(loc, inWg, i32(cols));
    int64_t rowStep = kThreadsPerWarpgroup / cols;
    auto rows = b.create<scf::ForOp>(loc, rowStart, i32(64), i32(rowStep));
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    Value byteCol = b.create<arith::MulIOp>(loc, col, i32(bytes));
    Value addr = swizzled(row, b.create<arith::DivUIOp>(loc, byteCol, i32(16)),
                          b.create<arith::RemUIOp>(loc, byteCol, i32(16)));
    auto sptr = b.create<LLVM::IntToPtrOp>(loc, LLVM::LLVMPointerType::get(ctx, 3), addr);
    // (fp8 is i8 bits here, as everywhere in the lowering.)
    Value v = b.create<LLVM::LoadOp>(loc, isFp8(outTy) ? b.getI8Type() : outTy, sptr);
    if (failed(storeValue(store, {b.create<arith::AddIOp>(loc, tileRow, row),
                                  b.create<arith::AddIOp>(loc, col, i32(chunk * cols))},
                          v)))
      return failure();
  }
  return success();
}

LogicalResult KernelBuilder::emitConsumerEpilogue(ArrayRef<Value> accs, Value firstRowBlock,
                                                  Value inWg, Value consumer, Value tileIter) {
  EpilogueReuse reuse(*this);
  SmallVector<StoreOp> staged = stagedStores();
  // Chunks per tile of this warpgroup, to continue the buffer alternation
  // across tiles (rule E1 relies on strict alternation).
  int64_t perTile = 0;
  for (StoreOp s : staged)
    perTile += accs.size() * outBN * s.getRef().getType().getElementBytes() / 128;
  Value sequence = b.create<arith::MulIOp>(loc, tileIter, i32(perTile));
  const bool operands = !stagedOperandLoads().empty();
  if (operands && failed(fillOperandsFromMemory(consumer, firstRowBlock, inWg)))
    return failure();
  int64_t q = 0;
  LogicalResult stored = emitStores([&](StoreOp store) -> LogicalResult {
    if (storePath(store) == "reduce_atomic") {
      // All of this warpgroup's row blocks at once: one atomic per warp and
      // row (column) of the tile.
      Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
      Value rowBase = fragmentRow(firstRowBlock, inWg);
      Value colBase =
          b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(2));
      return emitReduceStore(store, accs, wgmmaFragments(accs.size()), rowBase, colBase, lane);
    }
    auto it = llvm::find_if(tma, [&](const TmaParam &t) { return t.store == store; });
    if (it != tma.end() && failed(storesTransposed(store)))  // a transposed store is never staged
      return failure();
    Value pending;  // rule O7: a chunk's operand load issued by the chunk before it
    for (auto [i, acc] : llvm::enumerate(accs)) {
      Value rowBlock = b.create<arith::AddIOp>(loc, firstRowBlock, i32(i));
      if (it == tma.end()) {
        // Not stageable (shape, rank or element type): register stores.
        if (failed(emitRegisterStore(store, acc, rowBlock, inWg)))
          return failure();
        continue;
      }
      int64_t chunks = outBN * store.getRef().getType().getElementBytes() / 128;
      for (int64_t c = 0; c < chunks; ++c, ++q) {
        // The store's next chunk of this tile, for rule 7's lookahead (O7).
        std::optional<std::pair<Value, int64_t>> next;
        if (c + 1 < chunks)
          next = std::pair{rowBlock, c + 1};
        else if (i + 1 < accs.size())
          next = std::pair{Value(b.create<arith::AddIOp>(loc, firstRowBlock, i32(i + 1))), int64_t(0)};
        if (failed(stageChunk(*it, acc, rowBlock, i, c, inWg, consumer,
                              b.create<arith::AddIOp>(loc, sequence, i32(q)),
                              /*drainAll=*/q == 0 && perTile % 2 == 1 && (clusterSize > 1 || workspace),
                              pending, next)))
          return failure();
      }
    }
    return success();
  });
  // Rule O1: without a staged chunk, no barrier follows the reads of the
  // operands' buffers yet.
  if (succeeded(stored) && operands && staged.empty())
    consumerBarrier(consumer);
  return stored;
}

//===----------------------------------------------------------------------===//
// Reductions in the epilogue (docs/reductions.md)
//===----------------------------------------------------------------------===//
//
// `V.reduce_into({m}, ts::amax(y, ts::axis<1>))` is a tessel.reduce of an
// expression of the accumulator tile, stored with {combine}. In both
// accumulator layouts (wgmma, mma.sync) the 4 lanes of a quad (lane / 4
// equal) hold the columns 2 (lane % 4) + {0, 1} + 8j of the same rows, and
// the 8 quads of a warp hold 8 consecutive rows (+ 8, + 16 ...). So:
//   1. each thread evaluates its fragments' elements, leaves out those
//      outside the GEMM's M x N along the reduced axis (the identity takes
//      their place: 0 for sum, -inf for max, 0 for amax), and combines the
//      elements of each row (axis 1) or column (axis 0) it holds;
//   2. shuffles combine a row over the quad (xor 1, 2), a column over the
//      quads (xor 4, 8, 16);
//   3. lane 0 of the quad (row) or lanes 0..3 (column) combine the warp's
//      partial into global memory, bounds-checked like any store:
//      sum: atomic f32 add (red.global.add.f32; the order of the adds is not
//      fixed); amax: atomic signed max on the f32 bits (non-negative floats
//      order like their bits; +NaN is above +inf); max: the same for x >= 0
//      (sign bit clear), atomic unsigned min on the bits for x < 0 (negative
//      floats order inversely to their bits, and every one is above the bits
//      of any non-negative float). max and amax are therefore exact and
//      deterministic; NaN propagates (maximumf gives +NaN).
// Stream-K: the finisher runs the epilogue on the summed tile, contributors
// run none, so a reduction sees whole-tile values.

FailureOr<std::pair<Value, Value>> KernelBuilder::gemmTileLimits() {
  auto limit = [&](const GemmOperand &o, bool isB) -> FailureOr<Value> {
    // The dot sees A as BM x BK and B as BK x BN: M (N) is the loaded tile's
    // first dimension, unless the dot sees the load transposed (for A) or
    // untransposed (for B).
    int64_t rank = o.refType().getRank();
    bool first = isB ? o.transposed : !o.transposed;
    int64_t d = first ? rank - 2 : rank - 1;
    auto off = scalar(o.offsets()[d]);
    if (failed(off))
      return failure();
    Value size = refs[o.argIndex].sizes[d];
    Value lim = b.create<arith::SubIOp>(loc, size,
                                        b.create<arith::ExtSIOp>(loc, b.getI64Type(), *off));
    // Clamp to i32 (a tile far past the edge: negative, nothing inside).
    lim = b.create<arith::MaxSIOp>(loc, lim, i64(-1));
    lim = b.create<arith::MinSIOp>(loc, lim, i64(INT32_MAX));
    return b.create<arith::TruncIOp>(loc, b.getI32Type(), lim).getResult();
  };
  auto rows = limit(gemm->a, /*isB=*/false);
  auto cols = limit(gemm->b, /*isB=*/true);
  if (failed(rows) || failed(cols))
    return failure();
  return std::pair(*rows, *cols);
}

SmallVector<KernelBuilder::FragmentElement>
KernelBuilder::wgmmaFragments(int64_t rowBlocks) const {
  // wgmma m64nN: register r of a thread is at row 8 * ((r % 4) / 2),
  // column 8 * (r / 4) + r % 2 from its base in the 64-row block.
  SmallVector<FragmentElement> frags;
  for (int64_t i = 0; i < rowBlocks; ++i)
    for (int64_t r = 0; r < outBN / 2; ++r)
      frags.push_back({i, r, 64 * i + 8 * ((r % 4) / 2), 8 * (r / 4) + r % 2});
  return frags;
}

LogicalResult KernelBuilder::emitReduceStore(StoreOp store, ArrayRef<Value> accs,
                                             ArrayRef<FragmentElement> frags, Value rowBase,
                                             Value colBase, Value lane) {
  auto reduce = store.getValue().getDefiningOp<ReduceOp>();
  if (!gemm)
    return store.emitError("reductions (ts::sum / ts::max / ts::amax) are supported in GEMM "
                           "epilogues only"),
           failure();
  auto limits = gemmTileLimits();
  if (failed(limits))
    return failure();
  auto [rowLimit, colLimit] = *limits;
  const int64_t axis = reduce.getAxis();
  const ReduceKind kind = reduce.getKind();
  Type f32 = b.getF32Type();
  auto f32Const = [&](float v) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v)).getResult();
  };
  Value identity = f32Const(kind == ReduceKind::max ? -std::numeric_limits<float>::infinity() : 0.0f);
  auto combine = [&](Value x, Value y) -> Value {
    if (kind == ReduceKind::sum)
      return b.create<arith::AddFOp>(loc, x, y);
    return b.create<arith::MaximumFOp>(loc, x, y);
  };

  auto offsets = offsetScalars(store.getOffsets());
  if (failed(offsets))
    return failure();
  unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
  Value leader = axis == 1
                     ? b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                               b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(0))
                     : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, lane, i32(4));
  SmallVector<int64_t> xors = axis == 1 ? SmallVector<int64_t>{1, 2} : SmallVector<int64_t>{4, 8, 16};

  // The rows (columns) this thread holds, in batches: a column reduction of
  // a wide tile would otherwise keep BN / 4 partials live at once. Within a
  // batch, all accumulators' elements of a row (column) are combined before
  // the shuffles, so that one atomic per warp covers every row block.
  constexpr size_t kBatch = 8;
  SmallVector<int64_t> keys;
  for (const FragmentElement &f : frags)
    keys.push_back(axis == 1 ? f.row : f.col);
  llvm::sort(keys);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    ArrayRef<int64_t> batch = ArrayRef(keys).slice(first, std::min(kBatch, keys.size() - first));
    // 1. This thread's elements of the batch's rows (columns).
    std::map<int64_t, Value> partial;
    for (const FragmentElement &f : frags) {
      int64_t key = axis == 1 ? f.row : f.col;
      if (!llvm::is_contained(batch, key))
        continue;
      Value row = b.create<arith::AddIOp>(loc, rowBase, i32(f.row));
      Value col = b.create<arith::AddIOp>(loc, colBase, i32(f.col));
      selectAccRegisters(accs[f.acc], f.reg);
      auto e = element(reduce.getSrc(), {row, col});
      if (failed(e))
        return failure();
      Value x = *e;
      if (x.getType() != f32)
        x = b.create<arith::ExtFOp>(loc, f32, x);
      if (kind == ReduceKind::amax)
        x = b.create<math::AbsFOp>(loc, x);
      Value inside = axis == 1
                         ? b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, col, colLimit)
                         : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, row, rowLimit);
      x = b.create<arith::SelectOp>(loc, inside, x, identity);
      auto [it, inserted] = partial.try_emplace(key, x);
      if (!inserted)
        it->second = combine(it->second, x);
    }

    // 2. Across the lanes that share a row (column).
    for (auto &[key, v] : partial)
      for (int64_t x : xors) {
        Value other = b.create<NVVM::ShflOp>(loc, f32, i32(-1), v, i32(x), i32(0x1f),
                                             NVVM::ShflKind::bfly, UnitAttr());
        v = combine(v, other);
      }

    // 3. One lane per row (column) and warp combines into global memory.
    auto ifLeader = b.create<scf::IfOp>(loc, TypeRange{}, leader, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifLeader.thenBlock());
    for (auto &[key, v] : partial)
      combineIntoGlobal(kind, arg, *offsets, b.create<arith::AddIOp>(loc, axis == 1 ? rowBase : colBase, i32(key)),
                        v);
  }
  return success();
}

void KernelBuilder::combineIntoGlobal(ReduceKind kind, unsigned arg, ArrayRef<Value> offsets, Value at, Value v) {
  auto [linear, inBounds] = address(arg, offsets, {at});
  auto ifIn = b.create<scf::IfOp>(loc, TypeRange{}, inBounds, /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifIn.thenBlock());
  RefParams &r = refs[arg];
  Value p = b.create<LLVM::GEPOp>(loc, r.ptr.getType(), r.elementType, r.ptr, linear);
  if (kind == ReduceKind::sum) {
    b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::fadd, p, v, LLVM::AtomicOrdering::monotonic);
    return;
  }
  Value bits = b.create<LLVM::BitcastOp>(loc, b.getI32Type(), v);
  if (kind == ReduceKind::amax) {
    b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::max, p, bits, LLVM::AtomicOrdering::monotonic);
    return;
  }
  Value nonNegative = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, bits, i32(0));
  auto ifSign = b.create<scf::IfOp>(loc, TypeRange{}, nonNegative, /*withElse=*/true);
  b.setInsertionPointToStart(ifSign.thenBlock());
  b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::max, p, bits, LLVM::AtomicOrdering::monotonic);
  b.setInsertionPointToStart(ifSign.elseBlock());
  b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::umin, p, bits, LLVM::AtomicOrdering::monotonic);
}

//===----------------------------------------------------------------------===//
// Reductions in kernels without a dot
//===----------------------------------------------------------------------===//
//
// `V.reduce_into({m}, ts::amax(x, ts::axis<1>))` in an elementwise kernel:
// the R x C tile is spread over the CTA's threads element by element (as an
// elementwise store is), so the threads that share a row (column) are not one
// quad: the partials meet in shared memory.
//   1. The CTA's threads set the L slots of a shared f32 vector (L = R for
//      axis 1, C for axis 0, at a dynamic shared-memory offset of its own) to
//      the identity (0 for sum and amax, -inf for max); bar.sync 0.
//   2. Each thread evaluates its elements that lie inside every tensor the
//      expression loads (insideLoads; the others are left out, as a GEMM
//      reduction leaves out what lies outside M x N) and combines each into
//      its row's (column's) slot with a shared atomic (red.shared: add.f32,
//      or max / min on the f32 bits as in combineIntoGlobal); where a warp's
//      lanes hold one row's elements, shuffles combine them first (outside
//      elements as the identity) and lane 0 alone combines; bar.sync 0.
//   3. Thread i < L combines slot i into the output vector at the store's
//      offset + i, bounds-checked, with one global atomic (combineIntoGlobal).
// Ordering: rule 1's barrier orders the initialisation before every shared
// atomic, rule 2's every shared atomic before the reads of step 3. sum's
// order of additions is not fixed (as in a GEMM epilogue); max and amax are
// exact.

FailureOr<Value> KernelBuilder::insideLoads(Value v, ArrayRef<Value> coords) {
  Value yes = b.create<arith::ConstantIntOp>(loc, b.getI1Type(), 1);
  Operation *op = v.getDefiningOp();
  if (!op || isa<arith::ConstantOp, SplatOp>(op))
    return yes;
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    SmallVector<Value> src;
    for (int64_t d : bc.getDims())
      src.push_back(coords[d]);
    return insideLoads(bc.getSrc(), src);
  }
  if (auto tr = dyn_cast<TransOp>(op))
    return insideLoads(tr.getSrc(), {coords[1], coords[0]});
  if (auto load = dyn_cast<LoadOp>(op)) {
    auto offsets = offsetScalars(load.getOffsets());
    if (failed(offsets))
      return failure();
    return address(cast<BlockArgument>(load.getRef()).getArgNumber(), *offsets, coords).second;
  }
  Value all = yes;
  for (Value o : op->getOperands()) {
    if (!isa<ShapedType>(o.getType()))
      continue;
    auto in = insideLoads(o, coords);
    if (failed(in))
      return failure();
    all = b.create<arith::AndIOp>(loc, all, *in);
  }
  return all;
}

LogicalResult KernelBuilder::emitElementwiseReduce(StoreOp store) {
  auto reduce = store.getValue().getDefiningOp<ReduceOp>();
  if (!reduce)
    return store.emitError("a {combine} store stores a tessel.reduce"), failure();
  auto src = cast<RankedTensorType>(reduce.getSrc().getType());
  const int64_t rows = src.getDimSize(0), cols = src.getDimSize(1), axis = reduce.getAxis();
  const int64_t length = axis == 1 ? rows : cols;
  const ReduceKind kind = reduce.getKind();
  const float identity = kind == ReduceKind::max ? -std::numeric_limits<float>::infinity() : 0.0f;
  const int64_t slotsOffset = smemBytes;
  smemBytes += 4 * length;
  auto slot = [&](Value i) {
    return smemAddr(b.create<arith::AddIOp>(loc, i32(slotsOffset), b.create<arith::MulIOp>(loc, i, i32(4))));
  };
  auto forEachSlot = [&](function_ref<LogicalResult(Value)> body) -> LogicalResult {
    for (int64_t k = 0; k * threads < length; ++k) {
      Value i = b.create<arith::AddIOp>(loc, tid, i32(k * threads));
      auto ifIn = b.create<scf::IfOp>(loc, TypeRange{}, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, i,
                                                                               i32(length)),
                                      /*withElse=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifIn.thenBlock());
      if (failed(body(i)))
        return failure();
    }
    return success();
  };
  // 1.
  Value identityBits = i32(llvm::bit_cast<int32_t>(identity));
  if (failed(forEachSlot([&](Value i) {
        ptx("st.shared.b32 [$0], $1;", "r,r", {slot(i), identityBits});
        return success();
      })))
    return failure();
  ptx("bar.sync 0;", "", {});
  // 2. With rows of whole warps (a row reduction, cols a multiple of 32, no partial last pass)
  //    the 32 lanes of a warp hold 32 elements of one row: they combine them with shuffles
  //    first (an element outside the loaded tensors is the identity there), and lane 0 alone
  //    does the shared atomic, not 32 lanes on one address.
  const int64_t numel = rows * cols;
  const bool warpRows = axis == 1 && cols % 32 == 0 && numel % threads == 0;
  Value lane = b.create<arith::RemUIOp>(loc, tid, i32(32));
  for (int64_t k = 0; k * threads < numel; ++k) {
    Value e = b.create<arith::AddIOp>(loc, tid, i32(k * threads));
    OpBuilder::InsertionGuard g(b);
    if (!warpRows) {
      auto ifIn = b.create<scf::IfOp>(loc, TypeRange{}, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e,
                                                                               i32(numel)),
                                      /*withElse=*/false);
      b.setInsertionPointToStart(ifIn.thenBlock());
    }
    EpilogueReuse reuse(*this);
    Value row = b.create<arith::DivUIOp>(loc, e, i32(cols));
    Value col = b.create<arith::RemUIOp>(loc, e, i32(cols));
    auto inside = insideLoads(reduce.getSrc(), {row, col});
    if (failed(inside))
      return failure();
    if (!warpRows) {
      auto ifInside = b.create<scf::IfOp>(loc, TypeRange{}, *inside, /*withElse=*/false);
      b.setInsertionPointToStart(ifInside.thenBlock());
    }
    auto x = element(reduce.getSrc(), {row, col});
    if (failed(x))
      return failure();
    Value v = *x;
    if (!v.getType().isF32())
      v = b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
    if (kind == ReduceKind::amax)
      v = b.create<math::AbsFOp>(loc, v);
    if (warpRows) {
      v = b.create<arith::SelectOp>(loc, *inside, v,
                                    b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(identity)).getResult());
      for (int64_t d : {16, 8, 4, 2, 1}) {
        Value other = b.create<NVVM::ShflOp>(loc, b.getF32Type(), i32(-1), v, i32(d), i32(0x1f),
                                             NVVM::ShflKind::bfly, UnitAttr());
        v = kind == ReduceKind::sum ? b.create<arith::AddFOp>(loc, v, other).getResult()
                                    : b.create<arith::MaximumFOp>(loc, v, other).getResult();
      }
      auto ifLead = b.create<scf::IfOp>(loc, TypeRange{}, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                                                                 lane, i32(0)),
                                        /*withElse=*/false);
      b.setInsertionPointToStart(ifLead.thenBlock());
    }
    Value at = slot(axis == 1 ? row : col);
    if (kind == ReduceKind::sum) {
      ptx("red.shared.add.f32 [$0], $1;", "r,f", {at, v});
      continue;
    }
    Value bits = b.create<LLVM::BitcastOp>(loc, b.getI32Type(), v);
    if (kind == ReduceKind::amax) {
      ptx("red.shared.max.s32 [$0], $1;", "r,r", {at, bits});
      continue;
    }
    ptx("{\n.reg .pred p;\nsetp.ge.s32 p, $1, 0;\n@p red.shared.max.s32 [$0], $1;\n@!p red.shared.min.u32 "
        "[$0], $1;\n}",
        "r,r", {at, bits});
  }
  ptx("bar.sync 0;", "", {});
  // 3.
  auto offsets = offsetScalars(store.getOffsets());
  if (failed(offsets))
    return failure();
  unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
  return forEachSlot([&](Value i) -> LogicalResult {
    Value v = ptx("ld.shared.f32 $0, [$1];", "=f,r", {slot(i)}, b.getF32Type());
    combineIntoGlobal(kind, arg, *offsets, i, v);
    return success();
  });
}

//===----------------------------------------------------------------------===//
// The "fragments" path (schedule multistage)
//===----------------------------------------------------------------------===//

LogicalResult KernelBuilder::msEpilogue(const MultistagePlan &p, Value acc) {
  Value g = b.create<arith::DivUIOp>(loc, p.lane, i32(4));
  Value t2 = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, p.lane, i32(4)), i32(2));
  Value rowBase = b.create<arith::AddIOp>(loc, p.warpRow, g);
  Value colBase = b.create<arith::AddIOp>(loc, p.warpCol, t2);
  return emitStores([&](StoreOp store) -> LogicalResult {
    if (storePath(store) == "reduce_atomic") {
      // C fragment of tile (mi, ni): register 2h + e at row 16 mi + 8 h,
      // column 8 ni + e from the thread's base.
      SmallVector<FragmentElement> frags;
      for (int64_t mi = 0; mi < p.mTiles(); ++mi)
        for (int64_t ni = 0; ni < p.nTiles(); ++ni)
          for (int64_t i = 0; i < 4; ++i)
            frags.push_back({0, p.accIndex(mi, ni, i), 16 * mi + 8 * (i / 2), 8 * ni + i % 2});
      return emitReduceStore(store, {acc}, frags, rowBase, colBase, p.lane);
    }
    FailureOr<bool> transposed = storesTransposed(store);
    if (failed(transposed) || failed(checkStoredTile(store, *transposed)))
      return failure();
    // C fragment of tile (mi, ni): c0, c1 at (g, 2t), (g, 2t+1); c2, c3 at
    // row g + 8. Each pair is two adjacent columns of one row: storePair
    // (transposed: two adjacent rows of the stored tile, element stores).
    for (int64_t mi = 0; mi < p.mTiles(); ++mi) {
      for (int64_t ni = 0; ni < p.nTiles(); ++ni) {
        for (int64_t h = 0; h < 2; ++h) {
          Value row = b.create<arith::AddIOp>(loc, rowBase, i32(16 * mi + 8 * h));
          Value col = b.create<arith::AddIOp>(loc, colBase, i32(8 * ni));
          Value col1 = b.create<arith::AddIOp>(loc, col, i32(1));
          if (*transposed) {
            selectAccRegisters(acc, p.accIndex(mi, ni, 2 * h));
            if (failed(storeElement(store, {col, row})))
              return failure();
            selectAccRegisters(acc, p.accIndex(mi, ni, 2 * h + 1));
            if (failed(storeElement(store, {col1, row})))
              return failure();
            continue;
          }
          selectAccRegisters(acc, p.accIndex(mi, ni, 2 * h));
          auto v0 = element(store.getValue(), {row, col});
          selectAccRegisters(acc, p.accIndex(mi, ni, 2 * h + 1));
          auto v1 = element(store.getValue(), {row, col1});
          if (failed(v0) || failed(v1) || failed(storePair(store, row, col, *v0, *v1)))
            return failure();
        }
      }
    }
    return success();
  });
}

} // namespace mlir::tessel::lowering
