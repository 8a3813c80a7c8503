//===- StreamK.cpp - stream-K decomposition of the persistent schedules ---===//
//
// Part of tessel-lower-to-nvvm: how the persistent CTAs of a `cooperative` or
// `pingpong` kernel with `stream_k = 1` (#tessel.schedule,
// options::decomposition stream_k) split the work, and how the CTAs that
// share a tile sum their partial accumulators.
//
// A data-parallel persistent kernel gives CTA c the tiles c, c + P, ... of T
// tiles (P = gridDim.x). When T % P != 0 the last wave leaves P - T % P SMs
// idle: for 8192^3 with 128 x 256 tiles (T = 2048, P = 132) that is 64 SMs
// for one whole tile time, 3% of the kernel. Stream-K (Osama et al., PPoPP
// 2023; CUTLASS's "stream-K + data-parallel" hybrid) cuts the k-iterations
// (I = ceil(K / BK) per tile) of the first S tiles into P equal ranges:
//
//   iterations of the S stream-K tiles, tile-major (g = t * I + k):
//     | tile 0          | tile 1          | tile 2          | ...  S * I
//     |cta 0     |cta 1     |cta 2     |cta 3     | ...            P ranges
//   CTA c: [start(c), start(c + 1)),  start(c) = floor(c * S * I / P),
//   then the data-parallel tiles S + c, S + c + P, ... (T - S is a multiple
//   of P, so every CTA gets the same number).
//
//   S = T % P + P (the partial wave and one full wave, so that each range
//     spans at least one tile's iterations), or S = T when T < P (the
//     runtime then launches up to 4 CTAs per tile, at most one per SM), and
//     only when the longest CTA gets shorter by more than the partial sums
//     cost: gain = ceil(T / P) * I - ((T - S) / P * I + ceil(S * I / P)) >=
//     8 + 2 * ceil(P / S) iterations (a partial tile is written and read
//     once, ~2 iterations each, a tile has up to ceil(P / S) + 1 parts, and
//     margin: 4096^3 with 128x256 tiles gains 7 and measured 2% slower,
//     docs/benchmarks.md run 15), and gain >= floor(ceil(T / P) * I / 50),
//     about 2% (below that the split tiles and the change in L2 reuse cost
//     what they save: 8192x28672x8192 gains 0.4% with 128x128 tiles and
//     measured 1% slower, 1.3% with 128x256 and measured -1..+1%;
//     16384x8192x1024 with 128x128 gains 1.5% and measured 0.6-3% slower;
//     runs 18-20). Otherwise S = 0: data-parallel.
//
// A CTA's range covers: the end of one tile t0 (k from k0 > 0), whole tiles,
// the start of another (k to ke < I). It processes them in the order
//   whole tiles, the start of its last tile, the end of t0      (rule S5)
// (t0 last). The part that ends a tile (k to I, processed last by its CTA)
// is the "finisher": it adds the other parts and runs the epilogue; every
// other part of a split tile is a "contributor" (at most one per CTA: only
// the range's last tile can end before I):
//
//   contributor (ke < I), CTA c:                 finisher (kb > 0, ke = I), CTA f:
//     mainloop over [kb, ke)                       mainloop over [kb, I)
//     slot[c] = accumulators  (st.global.v4)       for c' in owner(first k of the tile) .. f-1
//     fence.acq_rel.gpu                               with a non-empty range:
//     bar.sync (tile threads)                         thread 0: spin until flag[c'] != 0
//     thread 0: st.release.gpu flag[c] = 1                      (ld.acquire.gpu), flag[c'] = 0
//     (no epilogue)                                   bar.sync (tile threads)
//                                                     acc += slot[c'] (ld.global.cg.v4)
//                                                   epilogue(acc)
//
// Why this order (S5): with contiguous ranges, CTA c's range starts at
// k0 = c q mod I, so if each CTA began with its first tile's end, co-resident
// CTAs would run at k offsets spread over the whole K extent and never read
// the same A / B k-slices at the same time; with operands larger than L2 the
// stream-K phase then ran from DRAM at about half speed (4096x4096x14336:
// 0.74x of whole tiles, docs/benchmarks.md run 12). In this order every CTA
// starts its whole tiles and then its last tile at k = 0, and the end of t0
// (k0 .. I) at time (q - (I - k0)), i.e. at k = time - (q - I) mod I: the
// CTAs run at no more than two k offsets at any time.

// Pingpong: the same plan and unit order per CTA; unit w runs on consumer
// warpgroup w % 2 (the mainloops take turns as for whole tiles), which holds
// the whole tile, so the "tile threads" below are that warpgroup's 128 and
// their barrier is the consumer's own named barrier 1 + consumer.
//
// Workspace (kernel parameter "workspace:<slot bytes>", one per CUDA stream,
// CompiledKernel.h): 4 * 1024 bytes of u32 flags (one per CTA), then one
// slot of BM x BN f32 per CTA. Slot layout: tile thread u (of N = W * 128
// for cooperative, 128 for pingpong) holds accumulators a = 0, 1, ... (one
// per m64 row block it computes), registers r of each stored as float4 number
// q = a * BN / 8 + r / 4 at 16 * (q * N + u): consecutive threads write
// consecutive 16 bytes.
//
// Ordering rules:
//   S1. A contributor's slot is complete before its flag is set: every
//       tile thread stores its fragment and fences at gpu scope
//       (fence.acq_rel.gpu), then the tile threads' barrier, then one
//       thread's release store of the flag.
//   S2. The finisher reads a slot only after an acquire load saw its flag
//       set, then the tile threads' barrier; it reads through L2 (ld.global.cg),
//       which holds the contributor's stores (L1 is not coherent across SMs).
//   S3. Each flag is set once per launch (a CTA has at most one contributor
//       part) and consumed once (a tile has one finisher), and the finisher
//       clears it, so the workspace is all zeros between launches and the
//       next launch on the stream (stream order) starts clean.
//   S4. Every wait ends: a CTA's contributor part comes before its finisher
//       part (S5), so it never waits before publishing; waits go from CTA f
//       to lower CTAs only (the earlier parts of f's first tile), so there is
//       no cycle; and a lower CTA is dispatched no later than f (CTAs start
//       in index order), so it holds an SM or has finished whenever f waits,
//       even when other kernels occupy some SMs. Pingpong: the contributor
//       runs on one consumer, the finisher (the next unit) on the other; the
//       contributor publishes in its epilogue, which depends on nothing the
//       finisher does, and the finisher waits only after handing the
//       mainloop back, so neither consumer holds the other up.
//   S5. Processing order within a range: the range's first tile last; ring
//       positions follow the processing order.
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

#include "KernelBuilder.h"

namespace mlir::tessel::lowering {

namespace {
// The runtime allocates the workspace: flags first, then the slots. Must equal
// CompiledKernel::kStreamKFlagBytes (a runtime header the passes do not see).
constexpr int64_t kFlagBytes = 4 * 1024;
} // namespace

// Register pressure: the consumers' 128-register accumulators leave no room
// for the whole plan kept live across the mainloop (16 bytes of spills when
// it was). S (sk.tiles), the unit count and the range [begin, end) stay live
// (their 64-bit divisions once per kernel, not per unit: per unit they cost
// 12% on 16384x8192x1024); the rest is recomputed where it is used, from
// %ctaid.x / %nctaid.x read afresh through opaque moves that LLVM can
// neither hoist nor merge with earlier reads.
Value KernelBuilder::streamKCta() { return ptx("mov.u32 $0, %ctaid.x;", "=r", {}, b.getI32Type()); }

Value KernelBuilder::streamKCtas() { return ptx("mov.u32 $0, %nctaid.x;", "=r", {}, b.getI32Type()); }

Value KernelBuilder::streamKTotal() {
  return b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI64Type(), sk.tiles),
                                 b.create<arith::ExtUIOp>(loc, b.getI64Type(), nk));
}

Value KernelBuilder::streamKStart(Value cta, Value ctas, Value total) {
  Value c64 = b.create<arith::ExtUIOp>(loc, b.getI64Type(), cta);
  Value p64 = b.create<arith::ExtUIOp>(loc, b.getI64Type(), ctas);
  Value s = b.create<arith::DivUIOp>(loc, b.create<arith::MulIOp>(loc, c64, total), p64);
  return b.create<arith::TruncIOp>(loc, b.getI32Type(), s);
}

std::pair<Value, Value> KernelBuilder::streamKTiles(Value begin, Value end) {
  // Units of the range [begin, end): tiles begin / I .. (end - 1) / I, none
  // when it is empty.
  Value safeI = b.create<arith::MaxUIOp>(loc, nk, i32(1));
  Value firstTile = b.create<arith::DivUIOp>(loc, begin, safeI);
  Value lastTile = b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, end, i32(1)), safeI);
  Value units = b.create<arith::SelectOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, end, begin),
      b.create<arith::AddIOp>(loc, b.create<arith::SubIOp>(loc, lastTile, firstTile), i32(1)), i32(0));
  return {firstTile, units};
}

void KernelBuilder::planStreamK(Value numTiles) {
  auto ceilDiv = [&](Value x, Value d) {
    return b.create<arith::DivUIOp>(
        loc, b.create<arith::AddIOp>(loc, x, b.create<arith::SubIOp>(loc, d, i32(1))), d);
  };
  auto sel = [&](Value c, Value t, Value f) { return b.create<arith::SelectOp>(loc, c, t, f); };
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return b.create<arith::CmpIOp>(loc, p, x, y);
  };
  using P = arith::CmpIPredicate;
  Value T = numTiles, I = nk;
  Value ctas = b.create<NVVM::GridDimXOp>(loc, b.getI32Type());
  Value cta = b.create<NVVM::BlockIdXOp>(loc, b.getI32Type());
  Value S;
  {
    Value rem = b.create<arith::RemUIOp>(loc, T, ctas);
    Value s1 = sel(cmp(P::ult, T, ctas), T,
                   sel(cmp(P::eq, rem, i32(0)), i32(0), b.create<arith::AddIOp>(loc, rem, ctas)));
    // Iterations of the longest CTA, data-parallel and hybrid (i64: S * I).
    Value dp = b.create<arith::MulIOp>(loc, ceilDiv(T, ctas), I);
    Value i64I = b.create<arith::ExtUIOp>(loc, b.getI64Type(), I);
    Value i64P = b.create<arith::ExtUIOp>(loc, b.getI64Type(), ctas);
    Value skIters64 = b.create<arith::DivUIOp>(
        loc,
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI64Type(), s1), i64I),
            b.create<arith::SubIOp>(loc, i64P, i64(1))),
        i64P);
    Value hybrid = b.create<arith::AddIOp>(
        loc,
        b.create<arith::MulIOp>(loc, b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, T, s1), ctas), I),
        b.create<arith::TruncIOp>(loc, b.getI32Type(), skIters64));
    Value splits = ceilDiv(ctas, b.create<arith::MaxUIOp>(loc, s1, i32(1)));
    Value cost = b.create<arith::AddIOp>(loc, i32(8), b.create<arith::MulIOp>(loc, splits, i32(2)));
    Value gain = b.create<arith::SubIOp>(loc, dp, hybrid);
    Value enough = b.create<arith::AndIOp>(
        loc, cmp(P::sge, gain, cost), cmp(P::sge, gain, b.create<arith::DivUIOp>(loc, dp, i32(50))));
    Value use = b.create<arith::AndIOp>(
        loc, b.create<arith::AndIOp>(loc, cmp(P::ugt, s1, i32(0)), cmp(P::sge, I, i32(2))), enough);
    S = sel(use, s1, i32(0));
  }
  sk.tiles = S;
  // This CTA's units: the tiles of its range [begin, end), then the
  // data-parallel tiles S + cta, S + cta + P, ... below T.
  Value total = streamKTotal();
  Value begin = streamKStart(cta, ctas, total);
  Value end = streamKStart(b.create<arith::AddIOp>(loc, cta, i32(1)), ctas, total);
  Value units = streamKTiles(begin, end).second;
  Value firstDp = b.create<arith::AddIOp>(loc, S, cta);
  Value dpTiles = sel(cmp(P::ugt, T, firstDp), ceilDiv(b.create<arith::SubIOp>(loc, T, firstDp), ctas), i32(0));
  sk.count = b.create<arith::AddIOp>(loc, units, dpTiles);
  sk.begin = begin;
  sk.end = end;
}

KernelBuilder::WorkUnit KernelBuilder::streamKUnit(Value w) {
  auto sel = [&](Value c, Value t, Value f) { return b.create<arith::SelectOp>(loc, c, t, f); };
  Value I = nk;
  Value cta = streamKCta(), ctas = streamKCtas();
  Value begin = sk.begin, end = sk.end;
  auto [firstTile, units] = streamKTiles(begin, end);
  Value isSk = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, w, units);
  // Stream-K unit w: tile firstTile + (w + 1) % units (the range's first
  // tile last, rule S5), iterations [max(begin, t I), min(end, (t + 1) I)).
  Value rot = b.create<arith::AddIOp>(loc, w, i32(1));
  rot = sel(b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rot, units), i32(0), rot);
  Value tSk = b.create<arith::AddIOp>(loc, firstTile, rot);
  Value tileStart = b.create<arith::MulIOp>(loc, tSk, I);
  Value from = b.create<arith::MaxUIOp>(loc, begin, tileStart);
  Value to = b.create<arith::MinUIOp>(loc, end, b.create<arith::AddIOp>(loc, tileStart, I));
  // Ring positions in processing order: the first tile's part (length L0)
  // comes last.
  Value firstLen = b.create<arith::SubIOp>(
      loc,
      b.create<arith::MinUIOp>(
          loc, end, b.create<arith::MulIOp>(loc, b.create<arith::AddIOp>(loc, firstTile, i32(1)), I)),
      begin);
  Value isFirst = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rot, i32(0));
  Value baseSk = b.create<arith::SubIOp>(
      loc, sel(isFirst, b.create<arith::SubIOp>(loc, end, begin), b.create<arith::SubIOp>(loc, from, begin)),
      firstLen);
  // Data-parallel tile j = w - units: S + cta + j P, after the range's iterations.
  Value j = b.create<arith::SubIOp>(loc, w, units);
  Value tDp = b.create<arith::AddIOp>(loc, b.create<arith::AddIOp>(loc, sk.tiles, cta),
                                      b.create<arith::MulIOp>(loc, j, ctas));
  Value baseDp = b.create<arith::AddIOp>(loc, b.create<arith::SubIOp>(loc, end, begin),
                                         b.create<arith::MulIOp>(loc, j, I));
  WorkUnit u;
  u.tile = sel(isSk, tSk, tDp);
  u.kBegin = sel(isSk, b.create<arith::SubIOp>(loc, from, tileStart), i32(0));
  u.kEnd = sel(isSk, b.create<arith::SubIOp>(loc, to, tileStart), I);
  u.base = sel(isSk, baseSk, baseDp);
  return u;
}

Value KernelBuilder::streamKFlag(Value cta) {
  Value ws = b.create<LLVM::PtrToIntOp>(loc, b.getI64Type(), workspace);
  return b.create<arith::AddIOp>(
      loc, ws, b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI64Type(), cta), i64(4)));
}

int64_t KernelBuilder::streamKTileThreads() const {
  return pingpong ? kThreadsPerWarpgroup : consumers * kThreadsPerWarpgroup;
}

Value KernelBuilder::streamKSlot(Value cta, Value u, int64_t q) {
  int64_t tileThreads = streamKTileThreads();
  Value ws = b.create<LLVM::PtrToIntOp>(loc, b.getI64Type(), workspace);
  Value slot = b.create<arith::AddIOp>(
      loc, b.create<arith::AddIOp>(loc, ws, i64(kFlagBytes)),
      b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI64Type(), cta),
                              i64(BM * BN * 4)));
  Value piece = b.create<arith::AddIOp>(loc, i32(q * tileThreads), u);
  return b.create<arith::AddIOp>(
      loc, slot,
      b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI64Type(), piece), i64(16)));
}

void KernelBuilder::streamKBarrier(Value consumer) {
  if (pingpong)
    return consumerBarrier(consumer);
  ptx(("bar.sync " + std::to_string(streamKBarrierId) + ", " +
       std::to_string(consumers * kThreadsPerWarpgroup) + ";")
          .c_str(),
      "", {});
}

void KernelBuilder::streamKStorePartial(ArrayRef<Value> accs, Value u, Value consumer) {
  // Rule S1.
  int64_t quads = BN / 2 / 4; // float4s per accumulator (m64 x BN row block)
  Value cta = streamKCta();
  for (auto [a, acc] : llvm::enumerate(accs))
    for (int64_t q = 0; q < quads; ++q) {
      SmallVector<Value> ops = {streamKSlot(cta, u, a * quads + q)};
      for (int64_t i = 0; i < 4; ++i)
        ops.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, 4 * q + i));
      ptx("st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f", ops);
    }
  ptx("fence.acq_rel.gpu;", "", {});
  streamKBarrier(consumer);
  Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, u, i32(0));
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, first, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  ptx("st.release.gpu.global.u32 [$0], 1;", "l", {streamKFlag(cta)});
}

void KernelBuilder::streamKWaitFlag(Value cta) {
  Value flag = streamKFlag(cta);
  spinWait(
      ".reg .b32 f;\n",
      [](int n) {
        return "ld.acquire.gpu.global.u32 f, [$" + std::to_string(n) + "];\nsetp.eq.u32 p, f, 0;\n";
      },
      /*doneIfP=*/false, "l", {flag}, "stream-K flag (CTA)", cta, i32(1));
  // Rule S3: consumed once; the next launch finds it clear.
  ptx("st.relaxed.gpu.global.u32 [$0], 0;", "l", {flag});
}

SmallVector<Value> KernelBuilder::streamKAddPartials(ArrayRef<Value> accs, Value tile, Value u,
                                                    Value consumer) {
  auto i64v = [&](Value v) { return b.create<arith::ExtUIOp>(loc, b.getI64Type(), v); };
  Value cta = streamKCta(), ctas = streamKCtas(), total = streamKTotal();
  // owner(g) = floor(((g + 1) P - 1) / N): the CTA whose range holds
  // iteration g. The tile's earlier parts: CTAs owner(tile I) .. cta - 1.
  Value firstIter = b.create<arith::MulIOp>(loc, tile, nk);
  Value owner64 = b.create<arith::DivUIOp>(
      loc,
      b.create<arith::SubIOp>(
          loc, b.create<arith::MulIOp>(loc, b.create<arith::AddIOp>(loc, i64v(firstIter), i64(1)), i64v(ctas)),
          i64(1)),
      total);
  Value from = b.create<arith::TruncIOp>(loc, b.getI32Type(), owner64);
  Value to = cta;
  auto loop = b.create<scf::ForOp>(loc, from, to, i32(1), ValueRange(accs));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Value c = loop.getInductionVar();
  SmallVector<Value> cur(loop.getRegionIterArgs());
  // CTAs with an empty range (more CTAs than iterations) own nothing.
  Value nonEmpty = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ult, streamKStart(c, ctas, total),
      streamKStart(b.create<arith::AddIOp>(loc, c, i32(1)), ctas, total));
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange(ValueRange(cur)), nonEmpty, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // Rule S2.
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, u, i32(0));
    auto waitIf = b.create<scf::IfOp>(loc, TypeRange{}, first, false);
    {
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(waitIf.thenBlock());
      streamKWaitFlag(c);
    }
    streamKBarrier(consumer);
    Type f32 = b.getF32Type();
    auto quad = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
    int64_t quads = BN / 2 / 4;
    SmallVector<Value> sums;
    for (auto [a, acc] : llvm::enumerate(cur)) {
      Value sum = acc;
      for (int64_t q = 0; q < quads; ++q) {
        auto ld = b.create<LLVM::InlineAsmOp>(
            loc, quad, ValueRange{streamKSlot(c, u, a * quads + q)},
            "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l,~{memory}",
            /*has_side_effects=*/true, /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
            LLVM::AsmDialectAttr{}, ArrayAttr{});
        for (int64_t i = 0; i < 4; ++i) {
          Value part = b.create<LLVM::ExtractValueOp>(loc, ld.getResult(0), i);
          Value old = b.create<LLVM::ExtractValueOp>(loc, sum, 4 * q + i);
          sum = b.create<LLVM::InsertValueOp>(loc, sum, b.create<arith::AddFOp>(loc, old, part), 4 * q + i);
        }
      }
      sums.push_back(sum);
    }
    b.create<scf::YieldOp>(loc, sums);
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, cur);
  }
  b.create<scf::YieldOp>(loc, ifOp.getResults());
  return SmallVector<Value>(loop.getResults());
}

} // namespace mlir::tessel::lowering
