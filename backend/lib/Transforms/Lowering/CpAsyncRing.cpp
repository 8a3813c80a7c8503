//===- Lowering/CpAsyncRing.cpp - a cp.async ring (schedule multistage) ---===//
//
// Part of tessel-lower-to-nvvm: `hopper.ring ... copy "cp.async"` and its
// `hopper.async_load`s: every thread copies its share of each operand tile
// in 16-byte `hopper.cp_async` chunks (zero-filled at the edges, element
// copies when rows are not 16-byte aligned) into the XOR-swizzled ring
// (Multistage.h draws the layout).
//
//   %a = hopper.async_load %A[%m, %k] into "ab"[0] {copy = "cp.async", ...}
//     ==> per k-tile and copy group: hopper.cp_async %src -> %dst + imm [src_bytes %n]
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "Multistage.h"

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

LogicalResult KernelBuilder::msPlanOperand(MultistagePlan &p, MsOperand &o) {
  // A is loaded as BM x BK (or BK x BM, transposed for the dot), B as BN x BK
  // transposed (or BK x BN).
  bool mnFirst = o.isA ? !o.op.transposed : o.op.transposed;
  o.mnDim = mnFirst ? 0 : 1;
  o.kDim = 1 - o.mnDim;
  o.extent = o.isA ? BM : BN;
  // (SelectSchedule validated the attribute: getContiguousDim cannot fail.
  // In a rank-3 batch, tile dimension d is tensor dimension 1 + d.)
  o.lead = o.op.refType().getRank() - 2;
  o.kMajor = *getContiguousDim(fn, o.op.argIndex) - o.lead == o.kDim;
  o.cd = o.kMajor ? o.kDim : o.mnDim;
  o.od = 1 - o.cd;
  o.ec = o.kMajor ? BK : o.extent;
  o.eo = o.kMajor ? o.extent : BK;
  o.pitch = o.ec * eltBytes;
  o.cpr = o.pitch / 16;
  o.stageBytes = o.eo * o.pitch;
  // The swizzle needs 4 chunks (two rows per 128 bytes) or a multiple of 8
  // per row; a thread's chunks are rowStep rows apart, which keeps their
  // swizzles related by a constant XOR (swz(row0 + i rowStep) ^ swz(row0) is
  // (i rowStep) & 4 for 8-chunk rows and 0 for 4-chunk rows).
  if (!(o.cpr == 4 || (o.cpr % 8 == 0 && o.cpr > 0)) || threads % o.cpr != 0 ||
      (threads / o.cpr) % (o.cpr == 4 ? 8 : 4) != 0)
    return fn.emitError() << "schedule 'multistage' cannot lay out operand "
                          << (o.isA ? "A" : "B") << " (" << (o.kMajor ? "K" : "MN")
                          << "-major, " << o.ec << " elements per shared row, " << threads
                          << " threads)";
  o.rowStep = threads / o.cpr;
  o.iters = (o.eo + o.rowStep - 1) / o.rowStep;

  Type i64Ty = b.getI64Type();
  RefParams &r = refs[o.op.argIndex];
  // A matrix of a batch (rank-3 tensor): tile dimension d is tensor
  // dimension lead + d.
  int64_t lead = o.lead;
  Value sOd = r.strides[lead + o.od], sCd = r.strides[lead + o.cd];
  // 16-byte copies: 16-byte aligned base, rows 16-byte multiples apart, unit
  // stride along the row (a dim of size <= 1 is never stepped along). The
  // tile's offset along the row is checked per tile (msCopyChunks).
  auto eq0 = [&](Value v) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, v, i64(0)).getResult();
  };
  auto single = [&](Value size) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, size, i64(1)).getResult();
  };
  Value base = b.create<LLVM::PtrToIntOp>(loc, i64Ty, r.ptr);
  Value baseOk = eq0(b.create<arith::AndIOp>(loc, base, i64(15)));
  Value rowsOk = b.create<arith::OrIOp>(
      loc, eq0(b.create<arith::AndIOp>(loc, b.create<arith::MulIOp>(loc, sOd, i64(eltBytes)), i64(15))),
      single(r.sizes[lead + o.od]));
  Value unitOk = b.create<arith::OrIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, sCd, i64(1)),
      single(r.sizes[lead + o.cd]));
  o.vecOk = b.create<arith::AndIOp>(loc, baseOk, b.create<arith::AndIOp>(loc, rowsOk, unitOk));
  // A matrix of a batch starts batch * strides[0] elements in: 16-byte
  // multiples too (or a batch of one).
  if (lead) {
    Value batchOk = b.create<arith::OrIOp>(
        loc, eq0(b.create<arith::AndIOp>(loc, b.create<arith::MulIOp>(loc, r.strides[0], i64(eltBytes)), i64(15))),
        single(r.sizes[0]));
    o.vecOk = b.create<arith::AndIOp>(loc, o.vecOk, batchOk);
  }

  // ldmatrix lane addresses (see the file comment): the shared row and
  // logical chunk lane l reads for block 0 and k16 step 0.
  Value l = p.lane;
  auto rem = [&](Value v, int64_t d) { return b.create<arith::RemUIOp>(loc, v, i32(d)).getResult(); };
  auto div = [&](Value v, int64_t d) { return b.create<arith::DivUIOp>(loc, v, i32(d)).getResult(); };
  auto add = [&](Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y).getResult(); };
  auto mul = [&](Value v, int64_t c) { return b.create<arith::MulIOp>(loc, v, i32(c)).getResult(); };
  Value warpOff = o.isA ? p.warpRow : p.warpCol;
  // "x16" lanes: row l % 16, chunk l / 16; "x8" lanes: row l % 8 + 8 (l / 16),
  // chunk (l / 8) % 2. A K-major / B MN-major use x16, the others x8.
  bool x16 = o.isA == o.kMajor;
  Value lr = x16 ? rem(l, 16) : add(rem(l, 8), mul(div(l, 16), 8));
  Value lc = x16 ? div(l, 16) : rem(div(l, 8), 2);
  Value row = o.kMajor ? add(warpOff, lr) : lr;
  Value ch = o.kMajor ? lc : add(div(warpOff, 8), lc);
  // Every row a lane addresses is l % 8 modulo 8: its swizzle is swz(l % 8).
  Value swzL = o.cpr >= 8 ? rem(l, 8) : div(rem(l, 8), 2);
  o.lane = smemAddr(add(i32(o.base), add(mul(row, o.pitch),
                                         b.create<arith::ShLIOp>(
                                             loc, b.create<arith::XOrIOp>(loc, ch, swzL), i32(4)))));
  return success();
}

LogicalResult KernelBuilder::msCopyChunks(const MultistagePlan &p, const MsOperand &o, Value t,
                                          Value stage, int64_t iBegin, int64_t iEnd) {
  if (iBegin >= iEnd)
    return success();
  Type i64Ty = b.getI64Type(), i32Ty = b.getI32Type();
  // k offset of tile t, substituted for the induction variable in the offsets.
  Value kv = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, t, step));
  auto offOrFail = offsetScalars(o.op.offsets(), kv);
  if (failed(offOrFail))
    return failure();
  const RefParams &r = refs[o.op.argIndex];
  auto gptrTy = r.ptr.getType();
  // This thread's first chunk (row0, chunk), its byte offset dst0 in a
  // stage, its element offset thrOff from the tile origin, and the element
  // distance of its chunks. For K-major operands of 2-d tensors LLVM keeps
  // them live across the mainloop (fewer address instructions per copy:
  // 0.42-0.45x -> 0.46-0.48x cuBLAS at 8192^3, docs/benchmarks.md run 10);
  // for MN-major and batched operands that spills, so they are recomputed
  // per tile from an opaque %tid (a few integer ops).
  const bool hoist = o.kMajor && o.lead == 0;
  Value tidO = hoist ? tid : opaque(b, loc, tid);
  Value row0 = b.create<arith::DivUIOp>(loc, tidO, i32(o.cpr));
  Value chunk = b.create<arith::RemUIOp>(loc, tidO, i32(o.cpr));
  auto swzOf = [&](Value row) -> Value {
    return o.cpr >= 8 ? b.create<arith::AndIOp>(loc, row, i32(7)).getResult()
                      : b.create<arith::AndIOp>(loc, b.create<arith::ShRUIOp>(loc, row, i32(1)),
                                                i32(3))
                            .getResult();
  };
  Value dst0 = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, row0, i32(o.pitch)),
      b.create<arith::ShLIOp>(loc, b.create<arith::XOrIOp>(loc, chunk, swzOf(row0)), i32(4)));
  // A matrix of a batch: tile dimension d is tensor dimension lead + d; the
  // batch offset moves the base, and a batch index outside the tensor makes
  // every row out of bounds (the tile reads as zeros).
  int64_t lead = o.lead;
  Value offOd = b.create<arith::ExtSIOp>(loc, i64Ty, (*offOrFail)[lead + o.od]);
  Value offCd = b.create<arith::ExtSIOp>(loc, i64Ty, (*offOrFail)[lead + o.cd]);
  Value sizeOd = r.sizes[lead + o.od], sizeCd = r.sizes[lead + o.cd];
  Value sOd = r.strides[lead + o.od], sCd = r.strides[lead + o.cd];
  Value tileElem = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, offOd, sOd),
                                           b.create<arith::MulIOp>(loc, offCd, sCd));
  // Element offset of this tile's matrix (0 for 2-d tensors): every copy path
  // (cp.async and the synchronous one) adds it.
  Value batchElem = i64(0);
  if (lead) {
    Value batch = b.create<arith::ExtSIOp>(loc, i64Ty, (*offOrFail)[0]);
    batchElem = b.create<arith::MulIOp>(loc, batch, r.strides[0]);
    tileElem = b.create<arith::AddIOp>(loc, tileElem, batchElem);
    Value batchOk = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, batch, r.sizes[0]);
    sizeOd = b.create<arith::SelectOp>(loc, batchOk, sizeOd, i64(0));
  }
  Value thrOff = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, b.create<arith::ExtUIOp>(loc, i64Ty, row0), sOd),
      b.create<arith::MulIOp>(
          loc, b.create<arith::ExtUIOp>(loc, i64Ty, b.create<arith::MulIOp>(loc, chunk, i32(8))),
          sCd));
  Value rowStepElems =
      b.create<arith::MulIOp>(loc, i64(o.rowStep), hoist ? sOd : opaque(b, loc, sOd));
  Value dst = b.create<arith::AddIOp>(
      loc, smemAddr(b.create<arith::AddIOp>(loc, i32(o.base),
                                            b.create<arith::MulIOp>(loc, stage, i32(o.stageBytes)))),
      dst0);
  // Chunk i: shared row row0 + i rowStep, at dst ^ xorOf(i) + immOf(i).
  auto xorOf = [&](int64_t i) { return (swz(i * o.rowStep, o.cpr) & 4) * 16 * (o.cpr >= 8); };
  auto immOf = [&](int64_t i) { return i * o.rowStep * o.pitch; };
  auto dstOf = [&](int64_t i) {
    return xorOf(i) ? b.create<arith::XOrIOp>(loc, dst, i32(xorOf(i))).getResult() : dst;
  };
  // The last chunk of a thread may lie past the tile's rows.
  auto guarded = [&](int64_t i, function_ref<void()> body) {
    if ((i + 1) * o.rowStep <= o.eo)
      return body();
    Value in = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row0,
                                       i32(o.eo - i * o.rowStep));
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, in, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  };
  auto cpAsync = [&](int64_t i, Value src, Value bytes) {
    b.create<hopper::CpAsyncOp>(loc, dstOf(i), src, bytes, b.getI64IntegerAttr(immOf(i)));
  };

  // Uniform per tile: 16-byte copies possible (row offset aligned too), and
  // the whole tile inside the tensor (no predicate, no zero-fill).
  auto sge0 = [&](Value v) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, v, i64(0)).getResult();
  };
  auto sle = [&](Value x, Value y) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, x, y).getResult();
  };
  auto andV = [&](Value x, Value y) { return b.create<arith::AndIOp>(loc, x, y).getResult(); };
  Value vec = andV(o.vecOk, b.create<arith::CmpIOp>(
                                loc, arith::CmpIPredicate::eq,
                                b.create<arith::AndIOp>(loc, offCd, i64(16 / eltBytes - 1)), i64(0)));
  Value inside = andV(andV(sge0(offOd), sge0(offCd)),
                      andV(sle(b.create<arith::AddIOp>(loc, offOd, i64(o.eo)), sizeOd),
                           sle(b.create<arith::AddIOp>(loc, offCd, i64(o.ec)), sizeCd)));
  auto ifFull = b.create<scf::IfOp>(loc, TypeRange{}, andV(vec, inside), /*withElse=*/true);
  {
    // Interior tile: chunk i reads tile + thrOff + i rowStepElems.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifFull.thenBlock());
    Value src = b.create<LLVM::GEPOp>(
        loc, gptrTy, r.elementType, r.ptr,
        ValueRange{b.create<arith::AddIOp>(loc, tileElem, thrOff)});
    Value stepV = rowStepElems;
    if (iBegin > 0)
      src = b.create<LLVM::GEPOp>(loc, gptrTy, r.elementType, src,
                                  ValueRange{b.create<arith::MulIOp>(loc, stepV, i64(iBegin))});
    for (int64_t i = iBegin; i < iEnd; ++i) {
      if (i > iBegin)
        src = b.create<LLVM::GEPOp>(loc, gptrTy, r.elementType, src, ValueRange{stepV});
      guarded(i, [&] { cpAsync(i, src, Value()); });
    }
  }
  b.setInsertionPointToStart(ifFull.elseBlock());
  Value colIdx = b.create<arith::AddIOp>(
      loc, offCd, b.create<arith::ExtUIOp>(loc, i64Ty, b.create<arith::MulIOp>(loc, chunk, i32(8))));
  // 16-byte copies on an edge tile only where no chunk straddles the end of a
  // row (the contiguous size a multiple of 8 elements): a chunk with a partial
  // src-size is legal PTX, but compute-sanitizer's memcheck counts its whole
  // 16 bytes and flagged a 14-byte row end at the end of an allocation (the
  // fuzzer's first case, K = 63). Such tiles take the element path below.
  Value rowEndsOnChunk = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::eq, b.create<arith::AndIOp>(loc, sizeCd, i64(16 / eltBytes - 1)),
      i64(0));
  auto ifVec = b.create<scf::IfOp>(loc, TypeRange{}, andV(vec, rowEndsOnChunk), /*withElse=*/true);
  auto rowIdxOf = [&](int64_t i) {
    return b
        .create<arith::AddIOp>(
            loc, offOd,
            b.create<arith::ExtUIOp>(loc, i64Ty,
                                     b.create<arith::AddIOp>(loc, row0, i32(i * o.rowStep))))
        .getResult();
  };
  {
    // Edge tile: each chunk is inside (src-size 16) or outside (src-size 0: no
    // byte is read, the source is the base, the chunk is zero-filled).
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifVec.thenBlock());
    Value colOk = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, colIdx, sizeCd);
    Value left = b.create<arith::MulIOp>(loc, b.create<arith::SubIOp>(loc, sizeCd, colIdx),
                                         i64(eltBytes));
    Value colBytes = b.create<arith::TruncIOp>(
        loc, i32Ty,
        b.create<arith::SelectOp>(loc, colOk, b.create<arith::MinSIOp>(loc, left, i64(16)), i64(0)));
    for (int64_t i = iBegin; i < iEnd; ++i)
      guarded(i, [&] {
        Value ok = andV(colOk, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                                       rowIdxOf(i), sizeOd));
        Value lin = b.create<arith::AddIOp>(
            loc, b.create<arith::AddIOp>(loc, tileElem, thrOff),
            b.create<arith::MulIOp>(loc, rowStepElems, i64(i)));
        lin = b.create<arith::SelectOp>(loc, ok, lin, i64(0));
        Value bytes = b.create<arith::SelectOp>(loc, ok, colBytes, i32(0));
        cpAsync(i, b.create<LLVM::GEPOp>(loc, gptrTy, r.elementType, r.ptr, ValueRange{lin}),
                bytes);
      });
  }
  {
    // Unaligned or strided rows: element loads with the real strides, one
    // 16-byte shared store per chunk (synchronous; rules 2-4 cover it). A
    // loop over the chunks (its bound opaque, so not unrolled) keeps only one
    // chunk's 8 loads in flight: the interior path's registers stay free.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifVec.elseBlock());
    Type i16Ty = b.getI16Type();
    Value stageAddr = b.create<arith::SubIOp>(loc, dst, dst0);
    auto chunks = b.create<scf::ForOp>(loc, i32(iBegin), opaque(b, loc, i32(iEnd)), i32(1));
    b.setInsertionPointToStart(chunks.getBody());
    Value row = b.create<arith::AddIOp>(
        loc, row0, b.create<arith::MulIOp>(loc, chunks.getInductionVar(), i32(o.rowStep)));
    auto inTile = b.create<scf::IfOp>(
        loc, TypeRange{}, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row, i32(o.eo)),
        false);
    b.setInsertionPointToStart(inTile.thenBlock());
    Value swzRow = o.cpr >= 8 ? b.create<arith::AndIOp>(loc, row, i32(7)).getResult()
                              : b.create<arith::AndIOp>(loc, b.create<arith::ShRUIOp>(loc, row, i32(1)),
                                                        i32(3))
                                    .getResult();
    Value dstRow = b.create<arith::AddIOp>(
        loc, stageAddr,
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, row, i32(o.pitch)),
            b.create<arith::ShLIOp>(loc, b.create<arith::XOrIOp>(loc, chunk, swzRow), i32(4))));
    Value rowIdx = b.create<arith::AddIOp>(loc, offOd, b.create<arith::ExtUIOp>(loc, i64Ty, row));
    Value rowOk = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, rowIdx, sizeOd);
    Value rowLinear = b.create<arith::AddIOp>(loc, batchElem, b.create<arith::MulIOp>(loc, rowIdx, sOd));
    SmallVector<Value, 4> words;
    Value word;
    for (int64_t e = 0; e < 16 / eltBytes; ++e) {
      Value c = b.create<arith::AddIOp>(loc, colIdx, i64(e));
      Value ok = andV(rowOk, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, c, sizeCd));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{i16Ty}, ok, /*withElse=*/true);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        Value linear = b.create<arith::AddIOp>(loc, rowLinear, b.create<arith::MulIOp>(loc, c, sCd));
        Value ptr = b.create<LLVM::GEPOp>(loc, gptrTy, i16Ty, r.ptr, ValueRange{linear});
        b.create<scf::YieldOp>(loc, b.create<LLVM::LoadOp>(loc, i16Ty, ptr).getResult());
        b.setInsertionPointToStart(ifOp.elseBlock());
        b.create<scf::YieldOp>(loc, b.create<arith::ConstantIntOp>(loc, i16Ty, 0).getResult());
      }
      Value v = b.create<arith::ExtUIOp>(loc, i32Ty, ifOp.getResult(0));
      if (e % 2 == 0) {
        word = v;
      } else {
        word = b.create<arith::OrIOp>(loc, word, b.create<arith::ShLIOp>(loc, v, i32(16)));
        words.push_back(word);
      }
    }
    ptx("st.shared.v4.b32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r",
        {dstRow, words[0], words[1], words[2], words[3]});
  }
  b.setInsertionPointAfter(ifFull);
  return success();
}

LogicalResult KernelBuilder::msIssueGroup(const MultistagePlan &p, Value t, Value stage,
                                          int64_t group, int64_t groups) {
  Value valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, t, nk);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, valid, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  for (const MsOperand *o : {&p.a, &p.b})
    if (failed(msCopyChunks(p, *o, t, stage, group * o->iters / groups,
                            (group + 1) * o->iters / groups)))
      return failure();
  return success();
}

} // namespace mlir::tessel::lowering
