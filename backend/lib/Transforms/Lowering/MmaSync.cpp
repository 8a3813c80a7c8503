//===- Lowering/MmaSync.cpp - mma.sync on ldmatrix fragments (multistage) -===//
//
// Part of tessel-lower-to-nvvm: `hopper.mma_schedule "mma.sync"`: per k16
// step, `hopper.ldmatrix` x4 fragments of A (per 16-row block) and B (per
// pair of n8 tiles) from the ring, then `hopper.mma_sync` m16n8k16 over the
// warp tile, serpentine over n so that a row boundary reuses B's fragment.
//
//   hopper.mma_schedule "mma.sync" shape [16, 8, 16] k_steps 4 row_blocks 4 ...
//     ==> %a = hopper.ldmatrix %addr + imm : !llvm.struct<(i32, i32, i32, i32)>
//         %d = hopper.mma_sync %a0, ..., %b1, %c0, ..., %c3 "bf16" : !llvm.struct<(f32, ...)>
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "Multistage.h"

using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

/// ldmatrix.x4 of block `blk` (16 rows of A, or two n8 tiles of B) of k16
/// step `kk` from the lane address `laneS` of operand `o` in its stage.
static SmallVector<Value> ldmatrixX4(OpBuilder &b, Location loc, bool kMajor, int64_t pitch,
                                     Value laneS, int64_t blk, int64_t kk) {
  // K-major: block = +16 rows (immediate), k16 step = chunk + 2 kk (XOR);
  // MN-major: block = chunk + 2 blk (XOR), k16 step = +16 rows (immediate).
  int64_t x = 32 * (kMajor ? kk : blk), imm = 16 * (kMajor ? blk : kk) * pitch;
  // MN-major: the per-block XOR goes through an opaque copy of the lane
  // address, so that LLVM does not keep one XORed address per block live
  // across the k16 steps (the A operand's 4 blocks then spilled).
  Value src = !kMajor && x ? opaque(b, loc, laneS) : laneS;
  Value addr = x ? b.create<arith::XOrIOp>(
                        loc, src, b.create<arith::ConstantIntOp>(loc, b.getI32Type(), x))
                       .getResult()
                 : laneS;
  auto x4Ty = LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(4, b.getI32Type()));
  Value v = b.create<hopper::LdMatrixOp>(loc, x4Ty, addr, b.getI64IntegerAttr(imm),
                                         kMajor ? UnitAttr() : b.getUnitAttr());
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i)
    regs.push_back(b.create<LLVM::ExtractValueOp>(loc, v, i));
  return regs;
}

SmallVector<Value> KernelBuilder::msLoadA(const MultistagePlan &p, Value stage, int64_t kk,
                                          int64_t mi) {
  Value laneS = b.create<arith::AddIOp>(loc, p.a.lane,
                                        b.create<arith::MulIOp>(loc, stage, i32(p.a.stageBytes)));
  return ldmatrixX4(b, loc, p.a.kMajor, p.a.pitch, laneS, mi, kk);
}

SmallVector<Value> KernelBuilder::msLoadB(const MultistagePlan &p, Value stage, int64_t kk) {
  Value laneS = b.create<arith::AddIOp>(loc, p.b.lane,
                                        b.create<arith::MulIOp>(loc, stage, i32(p.b.stageBytes)));
  // One x4 covers two n8 tiles: (b0, b1) of tile 2 nj, then of 2 nj + 1.
  SmallVector<Value> frag;
  for (int64_t nj = 0; nj < p.nTiles() / 2; ++nj)
    llvm::append_range(frag, ldmatrixX4(b, loc, p.b.kMajor, p.b.pitch, laneS, nj, kk));
  return frag;
}

Value KernelBuilder::msMmaRow(const MultistagePlan &p, Value acc, int64_t mi, ArrayRef<Value> aFrag,
                              ArrayRef<Value> bFrag) {
  Type f32Ty = b.getF32Type();
  auto c4Ty = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, f32Ty));
  for (int64_t n = 0; n < p.nTiles(); ++n) {
    // Serpentine over n: the row boundary reuses the B fragment.
    int64_t ni = mi % 2 ? p.nTiles() - 1 - n : n;
    SmallVector<Value> operands(aFrag.begin(), aFrag.end());
    operands.push_back(bFrag[ni * 2]);
    operands.push_back(bFrag[ni * 2 + 1]);
    for (int64_t r = 0; r < 4; ++r)
      operands.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, p.accIndex(mi, ni, r)));
    // Pure: no side effects, no memory; LLVM may schedule it freely.
    OperationState st(loc, hopper::MmaSyncOp::getOperationName());
    st.addOperands(operands);
    st.addTypes(c4Ty);
    st.addAttribute("type", b.getStringAttr(elt.isBF16() ? "bf16" : "f16"));
    Operation *op = b.create(st);
    for (int64_t r = 0; r < 4; ++r)
      acc = b.create<LLVM::InsertValueOp>(
          loc, acc, b.create<LLVM::ExtractValueOp>(loc, op->getResult(0), r), p.accIndex(mi, ni, r));
  }
  return acc;
}

} // namespace mlir::tessel::lowering
