//===- Lowering/Mma.cpp - the wgmma mainloop step ---------------------------===//
//
// Part of tessel-lower-to-nvvm: the `hopper.consume` step as
// `hopper.mma_schedule "wgmma"` says it: wait for the stage's full barrier,
// BK/16 x wgmma m64nBNk16 per 64-row block from shared-memory descriptors
// (fp8: BK/32 x m64nBNk32, the same 32 bytes of K per instruction), one
// commit group, `wgmma.wait_group wait_depth`.
//
//   hopper.consume "ab"
//   hopper.mma_schedule "wgmma" shape [64, 128, 16] k_steps 4 row_blocks 2 wait_depth 1
//     ==> per k-step at ring position it:
//   hopper.mbarrier.wait %full_s, %parity stage %s {ring = "full"}
//   hopper.wgmma.fence
//   %d = hopper.wgmma %descA, %descB, %acc shape [64, 128, 16] "bf16" : ...  (x 4 x 2)
//   hopper.wgmma.commit
//   hopper.wgmma.wait 1
//
// Also the accumulator's zeroing and the fence that pins its registers after
// a wait (ptxas would otherwise serialise the wgmma pipeline: C7514).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"
#include "tessel/Transforms/Passes.h"

#include "KernelBuilder.h"


using namespace mlir;
using namespace mlir::tessel;

namespace mlir::tessel::lowering {

/// wgmma shared-memory descriptor (PTX ISA "Matrix Descriptor Format") of the
/// operand at shared-window byte address `addr`, with the layout's fields:
///   bits [0,14)  start address >> 4
///   bits [16,30) leading byte offset >> 4
///   bits [32,46) stride byte offset >> 4
///   bits [49,52) base offset: 0 (every swizzle pattern starts aligned)
///   bits [62,64) swizzle: 1 = 128B, 2 = 64B, 3 = 32B, 0 = none
/// (OperandLayout::descriptorHighBits gives bits 16..63.)
static Value wgmmaDescriptor(OpBuilder &b, Location loc, Value addr, uint64_t high) {
  Value start = b.create<arith::AndIOp>(
      loc, b.create<arith::ShRUIOp>(loc, addr, b.create<arith::ConstantIntOp>(loc, b.getI32Type(), 4)),
      b.create<arith::ConstantIntOp>(loc, b.getI32Type(), 0x3FFF));
  Value start64 = b.create<arith::ExtUIOp>(loc, b.getI64Type(), start);
  return b.create<arith::OrIOp>(loc, start64,
                                b.create<arith::ConstantIntOp>(loc, b.getI64Type(), (int64_t)high));
}

Value KernelBuilder::fenceAccumulator(Value acc) {
  // An empty asm that "rewrites" every accumulator register: LLVM cannot move
  // reads of the accumulators above it (and so above the wgmma wait before it),
  // which would make ptxas serialise the wgmma pipeline (C7514).
  int64_t n = BN / 2;
  SmallVector<Value> regs;
  for (int64_t r = 0; r < n; ++r)
    regs.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, r));
  std::string cons;
  for (int64_t r = 0; r < n; ++r)
    cons += (r ? ",=f" : "=f");
  for (int64_t r = 0; r < n; ++r)
    cons += "," + std::to_string(r);
  auto asmOp = b.create<LLVM::InlineAsmOp>(
      loc, acc.getType(), regs, "", cons, /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr{}, ArrayAttr{});
  return asmOp.getResult(0);
}

Value KernelBuilder::zeroAccumulator() {
  auto accTy = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(BN / 2, b.getF32Type()));
  Value acc = b.create<LLVM::PoisonOp>(loc, accTy);
  Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
  for (int64_t r = 0; r < BN / 2; ++r)
    acc = b.create<LLVM::InsertValueOp>(loc, acc, zero, r);
  return acc;
}

SmallVector<Value> KernelBuilder::wgmmaStage(ArrayRef<Value> accs, Value s, Value rowBlock,
                                             bool zeroFirst) {
  Value bBase = smemAddr(b.create<arith::AddIOp>(
      loc, i32(bOff), b.create<arith::MulIOp>(loc, s, i32(bBytes))));
  auto wgmmaType = [](Type t) -> StringRef {
    return t.isBF16() ? "bf16" : t.isF16() ? "f16" : isa<Float8E4M3FNType>(t) ? "e4m3" : "e5m2";
  };
  // 32 bytes of K per instruction: k16 for 16-bit types, k32 for fp8.
  const int64_t kInst = 32 / eltBytes;
  SmallVector<Value> out(accs);
  b.create<hopper::WgmmaFenceOp>(loc);
  for (auto [i, acc] : llvm::enumerate(out)) {
    // The 64-row block of A: offset(64, 0) bytes per block in either layout
    // (64 K-major rows, or 64 * eltBytes / rowBytes MN-major boxes).
    Value aBase = smemAddr(b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, s, i32(aBytes)),
        b.create<arith::MulIOp>(loc, b.create<arith::AddIOp>(loc, rowBlock, i32(i)),
                                i32(aLayout.offset(64, 0)))));
    for (int64_t kk = 0; kk < BK / kInst; ++kk) {
      // A k step (32 bytes of K): +32 B inside a K-major swizzle row, the
      // next box of a narrower K-major row, or 16 rows further in an MN-major
      // box (16-bit types only).
      Value da = wgmmaDescriptor(
          b, loc, b.create<arith::AddIOp>(loc, aBase, i32(aLayout.offset(0, kk * kInst))),
          aLayout.descriptorHighBits());
      Value db = wgmmaDescriptor(
          b, loc, b.create<arith::AddIOp>(loc, bBase, i32(bLayout.offset(0, kk * kInst))),
          bLayout.descriptorHighBits());
      // wgmma's transpose immediates: an M-major A, an N-major B.
      acc = b.create<hopper::WgmmaOp>(loc, da, db, acc, ArrayRef<int64_t>{64, BN, kInst},
                                      wgmmaType(elt), wgmmaType(eltB), aLayout.mnMajor,
                                      bLayout.mnMajor, zeroFirst && kk == 0);
    }
  }
  b.create<hopper::WgmmaCommitOp>(loc);
  return out;
}

SmallVector<Value> KernelBuilder::consumeStage(Value it, ArrayRef<Value> accs, Value rowBlock) {
  // Rule 3: read stage it % stages once its full barrier reached the parity of
  // fill number it / stages.
  Value s = b.create<arith::RemUIOp>(loc, it, i32(stages));
  Value ph = b.create<arith::AndIOp>(loc, b.create<arith::DivUIOp>(loc, it, i32(stages)), i32(1));
  mbarrierWait(fullBar(s), ph, "full", s);
  SmallVector<Value> out = wgmmaStage(accs, s, rowBlock);
  // Keep waitDepth (1) wgmma groups in flight: the group of position it - 1
  // has retired (hopper.mma_schedule).
  b.create<hopper::WgmmaWaitOp>(loc, waitDepth);
  return out;
}

//===----------------------------------------------------------------------===//
// Scaled accumulation (block-scaled fp8)
//===----------------------------------------------------------------------===//
//
// `acc += dot(a, b) * s` (GemmMatch.h): DeepGEMM's promotion. Each k-step's
// product is computed alone, into a partial accumulator, then scaled and
// added in f32 by the CUDA cores, so the factor may change with k (a scale
// per 128-wide block of K) and the tensor cores' reduced-precision fp8
// accumulation (docs/fp8.md, "Accuracy") spans one k-step only. Two partial
// accumulators X and Y alternate, so that the tensor cores compute k-step
// j + 1 while the CUDA cores add k-step j (Roles.cpp runs the k-steps in
// pairs, X then Y):
//
//   %s = arith.mulf %sa, (tessel.splat %sb) : tensor<BMxf32>     (sa * sb)
//   %n = arith.addf %c, (arith.mulf %d, (tessel.broadcast %s [0]))   acc += d * s.col()
//     ==> k-step j + 1 (issuePartial), then k-step j's promotion (promote):
//   hopper.mbarrier.wait %full[j+1], %parity
//   hopper.wgmma.fence
//   %y = hopper.wgmma %da, %db, %y zero_acc ...; hopper.wgmma ... (BK/kInst - 1 more)
//   hopper.wgmma.commit
//   ld.global of the factors at k_{j+1} (sa[kb][m + row], SB[nb][kb]: once
//     per row and column coordinate of the thread's fragments; loadFactors)
//   hopper.wgmma.wait 1                      -> X (k-step j) retired
//   arrive empty[j]                          (rule P2)
//   acc[r] = fma(x[r], s[row], acc[r])       per fragment register r, with s
//                                            loaded at k_j, once per row
//                                            coordinate (axesOf)
//
// Ordering rules:
//   P1. A partial is read only after the wait_group that retires its
//       wgmmas (wait 1 with the next k-step in flight, wait 0 for the last);
//       a k-step's factors are loaded one k-step before its promotion (the
//       loop carries them), so their latency hides behind a whole k-step of
//       tensor work (ld.global are side-effecting asm: neither LLVM nor
//       ptxas reorders them with the waits).
//   P2. A stage is released right after the wait that retired its wgmmas.
//   P3. The first wgmma of each row block ignores the partial's old value
//       (scale-d = 0), so partials need no zeroing; a partial is rewritten
//       only after its promotion read it (program order in one thread).
// Registers: the tile's accumulator and two partials, 3 x BN / 2 per row
// block (tessel-select-schedule rule 8: BN <= 128 per consumer row block).

SmallVector<Value> KernelBuilder::issuePartial(Value it, ArrayRef<Value> partials, Value rowBlock) {
  Value s = b.create<arith::RemUIOp>(loc, it, i32(stages));
  Value ph = b.create<arith::AndIOp>(loc, b.create<arith::DivUIOp>(loc, it, i32(stages)), i32(1));
  mbarrierWait(fullBar(s), ph, "full", s);
  return wgmmaStage(partials, s, rowBlock, /*zeroFirst=*/true);
}

/// The fragment coordinates (row, column; i32, from the tile's origin) of
/// every register of the thread's `rowBlocks` accumulators, row block by row
/// block (wgmmaFragments), interned (KernelBuilder.h): the registers of one
/// row (column) share one coordinate value.
SmallVector<std::array<Value, 2>> KernelBuilder::fragmentCoords(int64_t rowBlocks, Value rowBlock,
                                                                Value inWg) {
  Value rowBase = fragmentRow(rowBlock, inWg), colBase = fragmentColumn(inWg);
  SmallVector<std::array<Value, 2>> coords;
  for (const FragmentElement &f : wgmmaFragments(rowBlocks))
    coords.push_back({coordinate(rowBase, f.row), coordinate(colBase, f.col)});
  return coords;
}

/// The tile axes (bit 0: rows, bit 1: columns) along which the tile `v` of
/// the loop body can vary: a .col() vector (broadcast of dims [0]) only along
/// rows, a splat along none. Conservative: anything else varies along both.
static unsigned axesOf(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  if (!shaped)
    return 0;
  Operation *op = v.getDefiningOp();
  if (!op)
    return 3;
  if (isa<SplatOp>(op) || isa<arith::ConstantOp>(op))
    return 0;
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    unsigned axes = 0;
    for (int64_t d : bc.getDims())
      axes |= 1u << d;
    return axes & 3;
  }
  if (auto tr = dyn_cast<TransOp>(op)) {
    unsigned a = axesOf(tr.getSrc());
    return ((a & 1) << 1) | ((a & 2) >> 1);
  }
  StringRef dialect = op->getName().getDialectNamespace();
  if (isa<CastOp>(op) || ((dialect == "arith" || dialect == "math") && op->getNumRegions() == 0)) {
    unsigned axes = 0;
    for (Value o : op->getOperands())
      axes |= axesOf(o);
    return axes;
  }
  return 3;
}

FailureOr<SmallVector<Value>> KernelBuilder::loadFactors(Value k, int64_t rowBlocks, Value rowBlock,
                                                         Value inWg) {
  EpilogueReuse reuse(*this);
  mainloopK = k;
  promoting = true;
  SmallVector<std::array<Value, 2>> coords = fragmentCoords(rowBlocks, rowBlock, inWg);
  // Each distinct element once: a factor that varies only along rows (sa.col()
  // * SB.at(...)) once per row coordinate, whatever it computes; factorTable
  // maps (factor, register) to its position.
  SmallVector<Value> unique;
  factorTable.clear();
  DenseMap<std::tuple<Value, Value, Value>, Value> perAxes;
  for (Value f : gemm->factors) {
    unsigned axes = axesOf(f);
    for (auto &c : coords) {
      Value &memo = perAxes[std::make_tuple(f, axes & 1 ? c[0] : Value(), axes & 2 ? c[1] : Value())];
      if (!memo) {
        auto e = element(f, c);
        if (failed(e))
          return failure();
        memo = *e;
      }
      FailureOr<Value> e = memo;
      auto *it = llvm::find(unique, *e);
      factorTable.push_back(static_cast<unsigned>(it - unique.begin()));
      if (it == unique.end())
        unique.push_back(*e);
    }
  }
  promoting = false;
  mainloopK = {};
  return unique;
}

SmallVector<Value> KernelBuilder::promote(ArrayRef<Value> accs, ArrayRef<Value> partials,
                                          ArrayRef<Value> factorValues, int64_t pending,
                                          Value rowBlock, Value inWg,
                                          function_ref<void()> afterWait) {
  b.create<hopper::WgmmaWaitOp>(loc, pending);
  afterWait();
  SmallVector<Value> fenced;
  for (Value p : partials)
    fenced.push_back(fenceAccumulator(p));

  EpilogueReuse reuse(*this);
  promoting = true;
  SmallVector<std::array<Value, 2>> coords = fragmentCoords(accs.size(), rowBlock, inWg);
  // The factors' elements, loaded one k-step earlier (rule P1).
  for (auto [fi, f] : llvm::enumerate(gemm->factors))
    for (auto [ci, c] : llvm::enumerate(coords))
      factorElements[std::make_tuple(f, c[0], c[1])] =
          factorValues[factorTable[fi * coords.size() + ci]];

  Value dotResult = gemm->dot.getResult();
  Value accArg = gemm->loop.getRegionIterArgs()[gemm->accIndex];
  SmallVector<Value, 2> savedResults(accLoopResults), savedRegisters(accRegisters);
  accLoopResults = {accArg, dotResult};
  SmallVector<Value> out;
  for (auto [i, acc] : llvm::enumerate(accs)) {
    Value next = acc;
    for (int64_t r = 0; r < BN / 2; ++r) {
      accRegisters = {b.create<LLVM::ExtractValueOp>(loc, acc, r),
                      b.create<LLVM::ExtractValueOp>(loc, fenced[i], r)};
      auto v = element(gemm->promoted, coords[i * (BN / 2) + r]);
      if (failed(v))
        return {};
      next = b.create<LLVM::InsertValueOp>(loc, next, *v, r);
    }
    out.push_back(next);
  }
  llvm::append_range(out, fenced);
  accLoopResults = savedResults;
  accRegisters = savedRegisters;
  factorElements.clear();
  promoting = false;
  return out;
}
} // namespace mlir::tessel::lowering
