//===- MultistageSchedule.cpp - schedule `multistage` (cp.async + mma.sync) ===//
//
// Schedule `multistage` (CUTLASS KernelMultistage): every warp copies global
// tiles into an N-stage shared-memory ring with cp.async and computes on it
// with ldmatrix + mma.sync.m16n8k16 (f32 accumulators). No TMA descriptors and
// no mbarriers: operands come from the raw pointer / size / stride parameters,
// so any base alignment and any strides work (DESIGN.md §5: the fallback when
// TMA's rules do not hold).
//
// Geometry (BK * 2 bytes = 64 or 128 bytes per tile row, i.e. C = 4 or 8
// 16-byte chunks; warps = warpsM x warpsN of wm x wn, multistageWarps()):
//
//   smem:  A[stages][BM rows x BK] | B[stages][BN rows x BK]      (K-major rows)
//
//   one tile row (C = 8 shown), chunk c of row r is stored at chunk c ^ swz(r):
//     row r:  | c0^s | c1^s | ... | c7^s |   16 B each, s = swz(r)
//   swz(r) = r % 8             for C = 8 (128-byte rows)
//   swz(r) = (r / 2) % 4       for C = 4 (64-byte rows: two rows per 128 B)
//   ldmatrix reads one logical chunk of 8 consecutive rows per 8x8 matrix;
//   the XOR spreads those 8 x 16 B over the 8 distinct 16-byte slots of a
//   128-byte bank window, so neither ldmatrix nor the cp.async writes (8
//   threads = 8 distinct slots) conflict.
//
// Pipeline, for nk k-tiles and S = stages (tile j lives in stage j % S):
//
//   prologue:  for t in [0, S-1):  copy tile t if t < nk; commit_group
//   loop j in [0, nk):
//     cp.async.wait_group S-2       -> this thread's copies of tile j landed
//     bar.sync                      -> everyone's copies of tile j landed, and
//                                      everyone finished computing tile j-1
//     copy tile j+S-1 into stage (j-1) % S if j+S-1 < nk; commit_group
//     for kk in [0, BK/16): ldmatrix A (wm/16 x .x4), B (wn/16 x .x4);
//                           (wm/16) x (wn/8) mma.sync m16n8k16
//   cp.async.wait_group 0; epilogue on the C fragments.
//
// Ordering rules of the asynchronous parts:
//   1. Every thread commits exactly one cp.async group per prologue step and
//      per loop iteration, empty or not, so that group g always holds tile g
//      and `wait_group S-2` at iteration j means "tiles 0..j are complete".
//   2. wait_group only covers the calling thread's copies: the bar.sync after
//      it makes all threads' copies of tile j visible to every warp.
//   3. Stage (j-1) % S is overwritten in iteration j only after that bar.sync,
//      i.e. after every warp's ldmatrix of tile j-1 (iteration j-1) completed.
//   4. The synchronous fallback copy (unaligned rows) writes with st.shared at
//      the same point as the cp.async it replaces; rules 2 and 3 cover it.
//   5. The epilogue reads only registers; wait_group 0 before it leaves no
//      copy in flight at kernel exit.
//
// Fragments (PTX ISA, mma.m16n8k16 with .bf16/.f16; g = lane / 4, t = lane % 4):
//   A (16x16, row): a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//     = ldmatrix.x4 of matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
//       (rows 0-7, k 8-15), (rows 8-15, k 8-15): lane l addresses row l % 16,
//       chunk l / 16.
//   B (16x8, col; stored N x K): b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//     = ldmatrix.x4 (non-transposed: rows are n, k contiguous) of matrices
//       (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15):
//       two n8 tiles; lane l addresses row l % 8 + 8 (l / 16), chunk (l / 8) % 2.
//   C (16x8, f32): c0, c1 (g, 2t and 2t+1)  c2, c3 (g+8, 2t and 2t+1).
//
// Copies: 16-byte `cp.async.cg` with a source size of 0..16 bytes (the rest is
// zero-filled) when the operand's rows are 16-byte aligned (base address, row
// stride and the tile's k offset multiples of 16 bytes, unit inner stride:
// checked at run time, uniformly for the CTA); otherwise each chunk's 8
// elements are loaded with bounds checks and stored with one st.shared.v4 (a
// synchronous copy: correct for any alignment and stride, slower).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/GemmMatch.h"

#include "KernelBuilder.h"

namespace mlir::tessel::lowering {

struct KernelBuilder::MultistagePlan {
  MultistageWarps warps{};
  int64_t rowBytes = 0;   ///< BK * eltBytes: 64 or 128
  int64_t chunks = 0;     ///< 16-byte chunks per tile row: 4 or 8
  int64_t aStage = 0, bStage = 0;
  Value warpRow, warpCol; ///< this warp's tile origin inside the CTA tile (i32)
  Value lane;
  Value swz;              ///< swz(row) of the rows this lane addresses in ldmatrix
  int64_t numAcc() const { return warps.wm / 16 * (warps.wn / 8) * 4; }
  int64_t accIndex(int64_t mi, int64_t ni, int64_t r) const {
    return (mi * (warps.wn / 8) + ni) * 4 + r;
  }
};

/// `v`, through an empty side-effecting asm: LLVM cannot hoist what is computed
/// from the result out of the mainloop. Used on the per-thread copy indices so
/// that the per-chunk addresses and bounds are recomputed each k-tile (a few
/// integer ops) instead of being hoisted and kept live in ~3 registers per
/// chunk, which made the 64x64 warp tiles spill.
static Value opaque(OpBuilder &b, Location loc, Value v) {
  bool wide = v.getType().getIntOrFloatBitWidth() == 64;
  return b
      .create<LLVM::InlineAsmOp>(loc, v.getType(), ValueRange{v},
                                 wide ? "mov.b64 $0, $1;" : "mov.b32 $0, $1;",
                                 wide ? "=l,l" : "=r,r", /*has_side_effects=*/true,
                                 /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
                                 LLVM::AsmDialectAttr{}, ArrayAttr{})
      .getResult(0);
}

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile.
static Value swizzledOffset(OpBuilder &b, Location loc, Value row, Value chunk, int64_t rowBytes,
                            int64_t chunks) {
  auto c32 = [&](int64_t v) { return b.create<arith::ConstantIntOp>(loc, b.getI32Type(), v); };
  Value swz = chunks == 8 ? b.create<arith::AndIOp>(loc, row, c32(7)).getResult()
                          : b.create<arith::AndIOp>(loc, b.create<arith::ShRUIOp>(loc, row, c32(1)),
                                                    c32(3))
                                .getResult();
  Value phys = b.create<arith::XOrIOp>(loc, chunk, swz);
  return b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, row, c32(rowBytes)),
                                 b.create<arith::MulIOp>(loc, phys, c32(16)));
}

LogicalResult KernelBuilder::msCopyTile(const MultistagePlan &p, GemmOperand op, Value kv,
                                        Value dst, int64_t rows) {
  auto offOrFail = offsetScalars(op.load.getOffsets(), kv);
  if (failed(offOrFail))
    return failure();
  Value off0 = opaque(b, loc, (*offOrFail)[0]), off1 = (*offOrFail)[1];
  Value tidV = opaque(b, loc, tid);
  RefParams &r = refs[op.argIndex];
  auto gptrTy = r.ptr.getType();
  Type i64Ty = b.getI64Type();
  int64_t perChunk = 16 / eltBytes;
  Value rowsTotal = r.sizes[0], kTotal = r.sizes[1];
  Value off0_64 = b.create<arith::ExtSIOp>(loc, i64Ty, off0);
  Value off1_64 = b.create<arith::ExtSIOp>(loc, i64Ty, off1);

  // Uniform for the CTA: may this tile use 16-byte cp.async?
  Value base = b.create<LLVM::PtrToIntOp>(loc, i64Ty, r.ptr);
  auto zero64 = [&](Value v) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, v, i64(0)).getResult();
  };
  Value rowStrideBytes = b.create<arith::MulIOp>(loc, r.strides[0], i64(eltBytes));
  Value kOffBytes = b.create<arith::MulIOp>(loc, off1_64, i64(eltBytes));
  // A dimension of size <= 1 is never stepped along, so its stride is free.
  auto single = [&](Value size) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, size, i64(1)).getResult();
  };
  Value rowStrideOk = b.create<arith::OrIOp>(
      loc, zero64(b.create<arith::AndIOp>(loc, rowStrideBytes, i64(15))), single(r.sizes[0]));
  Value unitInner = b.create<arith::OrIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, r.strides[1], i64(1)),
      single(r.sizes[1]));
  Value vec = b.create<arith::AndIOp>(
      loc,
      b.create<arith::AndIOp>(loc, zero64(b.create<arith::AndIOp>(loc, base, i64(15))), rowStrideOk),
      b.create<arith::AndIOp>(loc, zero64(b.create<arith::AndIOp>(loc, kOffBytes, i64(15))),
                              unitInner));

  int64_t total = rows * p.chunks;
  int64_t iters = (total + threads - 1) / threads;
  // Chunk e = i * threads + tid: row e / chunks, chunk e % chunks.
  auto forEachChunk = [&](function_ref<void(Value row, Value chunk, Value rowOk, Value gk,
                                            Value dstAddr)> body) {
    for (int64_t i = 0; i < iters; ++i) {
      OpBuilder::InsertionGuard g(b);
      Value e = b.create<arith::AddIOp>(loc, tidV, i32(i * threads));
      if ((i + 1) * threads > total) {
        Value inTile = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e, i32(total));
        auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, inTile, false);
        b.setInsertionPointToStart(ifOp.thenBlock());
      }
      Value row = b.create<arith::DivUIOp>(loc, e, i32(p.chunks));
      Value chunk = b.create<arith::RemUIOp>(loc, e, i32(p.chunks));
      Value gr = b.create<arith::AddIOp>(
          loc, off0_64, b.create<arith::ExtUIOp>(loc, i64Ty, row));
      // Unsigned compares: negative indices are out of bounds too.
      Value rowOk = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, gr, rowsTotal);
      Value gk = b.create<arith::AddIOp>(
          loc, off1_64,
          b.create<arith::ExtUIOp>(loc, i64Ty,
                                   b.create<arith::MulIOp>(loc, chunk, i32(perChunk))));
      Value dstAddr = b.create<arith::AddIOp>(
          loc, dst, swizzledOffset(b, loc, row, chunk, p.rowBytes, p.chunks));
      body(gr, chunk, rowOk, gk, dstAddr);
    }
  };

  auto ifVec = b.create<scf::IfOp>(loc, TypeRange{}, vec, /*withElse=*/true);
  {
    // 16-byte cp.async, src-size = the in-bounds bytes of the chunk (0..16).
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifVec.thenBlock());
    forEachChunk([&](Value gr, Value, Value rowOk, Value gk, Value dstAddr) {
      Value ok = b.create<arith::AndIOp>(
          loc, rowOk, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, gk, kTotal));
      Value left = b.create<arith::MulIOp>(loc, b.create<arith::SubIOp>(loc, kTotal, gk),
                                           i64(eltBytes));
      Value bytes64 = b.create<arith::SelectOp>(
          loc, ok, b.create<arith::MinSIOp>(loc, left, i64(16)), i64(0));
      Value bytes = b.create<arith::TruncIOp>(loc, b.getI32Type(), bytes64);
      // Out of bounds: no byte is read; the source is the (valid) base.
      Value linear = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, gr, r.strides[0]), gk);
      linear = b.create<arith::SelectOp>(loc, ok, linear, i64(0));
      Value src = b.create<LLVM::GEPOp>(loc, gptrTy, r.elementType, r.ptr, linear);
      ptx("cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r", {dstAddr, src, bytes});
    });
  }
  {
    // Unaligned rows or strided K: element loads, one 16-byte shared store.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifVec.elseBlock());
    Type i16Ty = b.getI16Type(), i32Ty = b.getI32Type();
    forEachChunk([&](Value gr, Value, Value rowOk, Value gk, Value dstAddr) {
      Value rowLinear = b.create<arith::MulIOp>(loc, gr, r.strides[0]);
      SmallVector<Value, 4> words;
      Value word;
      for (int64_t e = 0; e < perChunk; ++e) {
        Value k = b.create<arith::AddIOp>(loc, gk, i64(e));
        Value ok = b.create<arith::AndIOp>(
            loc, rowOk, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, k, kTotal));
        auto ifOp = b.create<scf::IfOp>(loc, TypeRange{i16Ty}, ok, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          Value linear = b.create<arith::AddIOp>(loc, rowLinear,
                                                 b.create<arith::MulIOp>(loc, k, r.strides[1]));
          Value ptr = b.create<LLVM::GEPOp>(loc, gptrTy, i16Ty, r.ptr, linear);
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
          {dstAddr, words[0], words[1], words[2], words[3]});
    });
  }
  return success();
}

LogicalResult KernelBuilder::msIssueTile(const MultistagePlan &p, Value j, Value s) {
  Value valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, j, nk);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, valid, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  // k offset of tile j, substituted for the induction variable in the offsets.
  Value kv = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, j, step));
  Value aDst = smemAddr(b.create<arith::MulIOp>(loc, s, i32(p.aStage)));
  Value bDst = smemAddr(b.create<arith::AddIOp>(loc, i32(stages * p.aStage),
                                                b.create<arith::MulIOp>(loc, s, i32(p.bStage))));
  if (failed(msCopyTile(p, gemm->a, kv, aDst, BM)) || failed(msCopyTile(p, gemm->b, kv, bDst, BN)))
    return failure();
  return success();
}

Value KernelBuilder::msMmaStage(const MultistagePlan &p, Value acc, Value s) {
  const int64_t mTiles = p.warps.wm / 16, nTiles = p.warps.wn / 8;
  Type i32Ty = b.getI32Type(), f32Ty = b.getF32Type();
  auto x4Ty = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, i32Ty));
  auto c4Ty = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, f32Ty));
  Value aBase = smemAddr(b.create<arith::MulIOp>(loc, s, i32(p.aStage)));
  Value bBase = smemAddr(b.create<arith::AddIOp>(loc, i32(stages * p.aStage),
                                                 b.create<arith::MulIOp>(loc, s, i32(p.bStage))));
  // Rows this lane addresses: A row warpRow + 16 mi + l % 16; B row
  // warpCol + 16 nj + l % 8 + 8 (l / 16). Both are l % 8 modulo 8, so the
  // swizzle of every row this lane addresses is the lane's p.swz.
  Value aRow = b.create<arith::AddIOp>(loc, p.warpRow, b.create<arith::RemUIOp>(loc, p.lane, i32(16)));
  Value bRow = b.create<arith::AddIOp>(
      loc, p.warpCol,
      b.create<arith::AddIOp>(loc, b.create<arith::RemUIOp>(loc, p.lane, i32(8)),
                              b.create<arith::MulIOp>(loc, b.create<arith::DivUIOp>(loc, p.lane, i32(16)),
                                                      i32(8))));
  Value aChunkHi = b.create<arith::DivUIOp>(loc, p.lane, i32(16));
  Value bChunkHi = b.create<arith::RemUIOp>(loc, b.create<arith::DivUIOp>(loc, p.lane, i32(8)), i32(2));
  // Lane address of k16 step 0: stage + row * rowBytes + ((hi ^ swz) << 4).
  // Stage bases and row starts have the chunk bits [4, 7) clear, and logical
  // chunk hi + 2 kk == hi ^ 2 kk, so step kk's address is that XOR (32 kk)
  // (CUTLASS's trick); the 16-row blocks mi / nj are immediate offsets in the
  // PTX. That keeps the per-lane address math at one register per operand.
  auto laneAddr = [&](Value base, Value row, Value hi) {
    Value chunk = b.create<arith::ShLIOp>(loc, b.create<arith::XOrIOp>(loc, hi, p.swz), i32(4));
    return b.create<arith::AddIOp>(
        loc, base,
        b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, row, i32(p.rowBytes)), chunk));
  };
  Value aLane = laneAddr(aBase, aRow, aChunkHi);
  Value bLane = laneAddr(bBase, bRow, bChunkHi);
  auto ldmatrix = [&](Value addr, int64_t imm) {
    std::string code = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4+" +
                       std::to_string(imm) + "];";
    Value x4 = ptx(code, "=r,=r,=r,=r,r", {addr}, x4Ty);
    SmallVector<Value, 4> regs;
    for (int64_t i = 0; i < 4; ++i)
      regs.push_back(b.create<LLVM::ExtractValueOp>(loc, x4, i));
    return regs;
  };
  std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") +
                    (elt.isBF16() ? "bf16.bf16" : "f16.f16") +
                    ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";

  for (int64_t kk = 0; kk < BK / 16; ++kk) {
    Value aK = b.create<arith::XOrIOp>(loc, aLane, i32(32 * kk));
    Value bK = b.create<arith::XOrIOp>(loc, bLane, i32(32 * kk));
    // All B fragments of the step (wn/8 x 2 registers), then per 16-row block
    // its A fragment (4 registers) and its row of mma.sync: fewer fragment
    // registers live at once than loading every A fragment first.
    SmallVector<SmallVector<Value, 2>> bFrag; // bFrag[ni] = {b0, b1}
    for (int64_t nj = 0; nj < nTiles / 2; ++nj) {
      auto r = ldmatrix(bK, nj * 16 * p.rowBytes);
      bFrag.push_back({r[0], r[1]});
      bFrag.push_back({r[2], r[3]});
    }
    for (int64_t mi = 0; mi < mTiles; ++mi) {
      SmallVector<Value, 4> aFrag = ldmatrix(aK, mi * 16 * p.rowBytes);
      for (int64_t ni = 0; ni < nTiles; ++ni) {
        SmallVector<Value> operands(aFrag.begin(), aFrag.end());
        operands.append(bFrag[ni].begin(), bFrag[ni].end());
        for (int64_t r = 0; r < 4; ++r)
          operands.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, p.accIndex(mi, ni, r)));
        // Pure: no side effects, no memory; LLVM may schedule it freely.
        auto op = b.create<LLVM::InlineAsmOp>(
            loc, c4Ty, operands, mma, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
            /*has_side_effects=*/false, /*is_align_stack=*/false,
            LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr{}, ArrayAttr{});
        for (int64_t r = 0; r < 4; ++r)
          acc = b.create<LLVM::InsertValueOp>(
              loc, acc, b.create<LLVM::ExtractValueOp>(loc, op.getResult(0), r),
              p.accIndex(mi, ni, r));
      }
    }
  }
  return acc;
}

LogicalResult KernelBuilder::msEpilogue(const MultistagePlan &p, Value acc) {
  const int64_t mTiles = p.warps.wm / 16, nTiles = p.warps.wn / 8;
  Value g = b.create<arith::DivUIOp>(loc, p.lane, i32(4));
  Value t2 = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, p.lane, i32(4)), i32(2));
  Value rowBase = b.create<arith::AddIOp>(loc, p.warpRow, g);
  Value colBase = b.create<arith::AddIOp>(loc, p.warpCol, t2);
  return emitStores([&](StoreOp store) -> LogicalResult {
    auto ty = cast<RankedTensorType>(store.getValue().getType());
    if (ty.getRank() != 2 || ty.getDimSize(0) != BM || ty.getDimSize(1) != BN)
      return store.emitError() << "after the mainloop, stores must be " << BM << "x" << BN
                               << " tiles (the accumulator's shape)";
    // C fragment of tile (mi, ni): c0, c1 at (g, 2t), (g, 2t+1); c2, c3 at
    // row g + 8. Each pair is two adjacent columns of one row: storePair.
    for (int64_t mi = 0; mi < mTiles; ++mi) {
      for (int64_t ni = 0; ni < nTiles; ++ni) {
        for (int64_t h = 0; h < 2; ++h) {
          Value row = b.create<arith::AddIOp>(loc, rowBase, i32(16 * mi + 8 * h));
          Value col = b.create<arith::AddIOp>(loc, colBase, i32(8 * ni));
          Value col1 = b.create<arith::AddIOp>(loc, col, i32(1));
          accRegister = b.create<LLVM::ExtractValueOp>(loc, acc, p.accIndex(mi, ni, 2 * h));
          auto v0 = element(store.getValue(), {row, col});
          accRegister = b.create<LLVM::ExtractValueOp>(loc, acc, p.accIndex(mi, ni, 2 * h + 1));
          auto v1 = element(store.getValue(), {row, col1});
          if (failed(v0) || failed(v1) || failed(storePair(store, row, col, *v0, *v1)))
            return failure();
        }
      }
    }
    return success();
  });
}

LogicalResult KernelBuilder::buildMultistage() {
  MultistagePlan p;
  p.warps = multistageWarps(BM, BN);
  p.rowBytes = BK * eltBytes;
  p.chunks = p.rowBytes / 16;
  p.aStage = BM * p.rowBytes;
  p.bStage = BN * p.rowBytes;
  if ((p.chunks != 4 && p.chunks != 8) || eltBytes != 2 || BM % p.warps.wm || BN % p.warps.wn ||
      stages < 2)
    return fn.emitError() << "schedule 'multistage' cannot build tile " << BM << "x" << BN << "x"
                          << BK << " with " << stages
                          << " stages (run tessel-select-schedule, which checks its rules)";
  // setupGemm sized the kernel for the TMA schedules: no mbarriers here.
  threads = p.warps.count() * 32;
  smemBytes = stages * (p.aStage + p.bStage);
  kernel->setAttr("nvvm.reqntid", b.getDenseI32ArrayAttr({(int32_t)threads, 1, 1}));

  Value warp = b.create<arith::DivUIOp>(loc, tid, i32(32));
  p.lane = b.create<arith::RemUIOp>(loc, tid, i32(32));
  p.warpRow = b.create<arith::MulIOp>(
      loc, b.create<arith::RemUIOp>(loc, warp, i32(p.warps.warpsM)), i32(p.warps.wm));
  p.warpCol = b.create<arith::MulIOp>(
      loc, b.create<arith::DivUIOp>(loc, warp, i32(p.warps.warpsM)), i32(p.warps.wn));
  Value l8 = b.create<arith::RemUIOp>(loc, p.lane, i32(8));
  p.swz = p.chunks == 8 ? l8 : b.create<arith::DivUIOp>(loc, l8, i32(2)).getResult();

  // Prologue (rule 1): tiles 0..S-2, one commit group each.
  {
    auto pro = b.create<scf::ForOp>(loc, i32(0), i32(stages - 1), i32(1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(pro.getBody());
    Value t = pro.getInductionVar();
    if (failed(msIssueTile(p, t, t)))
      return failure();
    ptx("cp.async.commit_group;", "", {});
  }

  auto accTy = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(p.numAcc(), b.getF32Type()));
  Value acc0 = b.create<LLVM::PoisonOp>(loc, accTy);
  Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
  for (int64_t r = 0; r < p.numAcc(); ++r)
    acc0 = b.create<LLVM::InsertValueOp>(loc, acc0, zero, r);

  auto loop = b.create<scf::ForOp>(loc, i32(0), nk, i32(1), ValueRange{acc0});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    // Rules 1-2: tile j complete for this thread, then for every thread; and
    // (rule 3) every warp is done with stage (j-1) % S.
    ptx(("cp.async.wait_group " + std::to_string(stages - 2) + ";").c_str(), "", {});
    barSync();
    Value next = b.create<arith::AddIOp>(loc, j, i32(stages - 1));
    if (failed(msIssueTile(p, next, b.create<arith::RemUIOp>(loc, next, i32(stages)))))
      return failure();
    ptx("cp.async.commit_group;", "", {});
    Value s = b.create<arith::RemUIOp>(loc, j, i32(stages));
    b.create<scf::YieldOp>(loc, msMmaStage(p, loop.getRegionIterArgs()[0], s));
  }
  // Rule 5.
  ptx("cp.async.wait_group 0;", "", {});
  return msEpilogue(p, loop.getResult(0));
}

} // namespace mlir::tessel::lowering
