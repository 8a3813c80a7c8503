//===- Multistage.h - schedule `multistage`: its ring, warps and fragments -*- C++ -*-===//
//
// Schedule `multistage` (CUTLASS KernelMultistage): every warp copies global
// tiles into an N-stage shared-memory ring with cp.async and computes on it
// with ldmatrix + mma.sync.m16n8k16 (f32 accumulators). No TMA descriptors and
// no mbarriers: operands come from the raw pointer / size / stride parameters,
// so any base alignment and any strides work (DESIGN.md §5: the fallback when
// TMA's rules do not hold).
//
// Geometry (warps = warpsM x warpsN of wm x wn, multistageWarps()):
//
//   smem:  A[stages][tile] | B[stages][tile]
//   K-major operand (K has unit stride, the default): MN rows of BK elements;
//   MN-major operand (tessel.contiguous_dim names the M / N dim): BK rows of
//   BM / BN elements. Either way a row is cpr 16-byte chunks along the
//   unit-stride dim (cpr = 4 or a multiple of 8), and
//     chunk c of row r is stored at chunk c ^ swz(r):
//   swz(r) = r % 8             for cpr >= 8 (128-byte groups of a row)
//   swz(r) = (r / 2) % 4       for cpr = 4 (64-byte rows: two rows per 128 B)
//   ldmatrix reads one logical chunk of 8 consecutive rows per 8x8 matrix;
//   the XOR spreads those 8 x 16 B over the 8 distinct 16-byte slots of a
//   128-byte bank window, so neither ldmatrix nor the cp.async writes (8
//   consecutive threads = 8 distinct slots) conflict.
//
// Pipeline, for nk k-tiles, S = stages, KS = BK / 16 k16 steps per tile:
//
//   prologue:  for t in [0, S-1):  copy tile t if t < nk; commit_group
//   cp.async.wait_group S-2; bar.sync; load the fragments of tile 0, step 0
//   loop j in [0, nk) (reads stage j % S, writes stage (j+S-1) % S):
//     for kk in [0, KS):
//       kk < KS-1: copy group kk of tile j+S-1 (a tile's chunks are spread
//                  over the first KS-1 steps; none past nk)
//       ldmatrix the B fragments of the next step (kk+1, or the next tile's
//       step 0 when kk = KS-1), and per 16-row block mi the A fragment of the
//       next block, then this block's row of mma.sync (register double
//       buffer: the loads overlap the mma);
//       kk = KS-2: also every A fragment of step KS-1; then commit_group,
//                  cp.async.wait_group S-2, bar.sync
//   cp.async.wait_group 0; epilogue on the C fragments.
//
// Ordering rules of the asynchronous parts:
//   1. Every thread commits exactly one cp.async group per prologue step and
//      per loop iteration, empty or not, so that group g always holds tile g
//      and `wait_group S-2` in iteration j means "tiles 0..j+1 are complete".
//   2. wait_group only covers the calling thread's copies: the bar.sync after
//      it makes all threads' copies of tile j+1 visible to every warp before
//      any warp loads the fragments of tile j+1's step 0 (step KS-1).
//   3. Stage (j-1) % S is overwritten in iteration j only after iteration
//      j-1's bar.sync; every read of tile j-1's stage comes before it (steps
//      0..KS-2 of iteration j-1 load everything of step KS-1; step KS-1 reads
//      only tile j's stage).
//   4. The synchronous fallback copy (unaligned rows) writes with st.shared at
//      the same point as the cp.async it replaces; rules 2 and 3 cover it.
//   5. The epilogue reads only registers; wait_group 0 before it leaves no
//      copy in flight at kernel exit.
//
// Fragments (PTX ISA, mma.m16n8k16 with .bf16/.f16; g = lane / 4, t = lane % 4):
//   A (16x16, row): a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//     = ldmatrix.x4 of matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15),
//       (m 8-15, k 8-15).
//   B (16x8, col): b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g); one x4 loads two
//     n8 tiles: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
//   Lane l addresses row / chunk ("x16": row l % 16, chunk l / 16; "x8": row
//   l % 8 + 8 (l / 16), chunk (l / 8) % 2) of its matrix:
//     A K-major  x16, rows m, chunks k;      A MN-major x8 .trans, rows k, chunks m
//     B K-major  x8,  rows n, chunks k;      B MN-major x16 .trans, rows k, chunks n
//   (.trans hands lane l the elements (2t, g) and (2t+1, g) of the stored 8x8
//   matrix, which is the row-major A / column-major B fragment of an MN-major
//   tile.) Every row a lane addresses is l % 8 modulo 8, so its swizzle is
//   swz(l % 8). K-major: block +16 rows = immediate offset, k16 step = chunk
//   + 2 kk = address XOR 32 kk; MN-major: block = address XOR 32 blk, k16 step
//   = +16 rows = immediate (the chunk bits of the rest of the address are 0).
//   C (16x8, f32): c0, c1 (g, 2t and 2t+1)  c2, c3 (g+8, 2t and 2t+1).
//
// Copies (per tile, uniform for the CTA): when the tile lies inside the
// tensor and its rows are 16-byte aligned (base, row stride and the tile's
// offset along the row multiples of 16 bytes, unit stride along the row),
// unpredicated 16-byte `cp.async.cg`, thread chunk i at [dst ^ xor_i + imm_i]
// from a pointer stepped by a constant row distance; at the edges the same
// with a source size of 0..16 bytes (the rest zero-filled); otherwise each
// chunk's 8 elements are loaded with bounds checks and the real strides and
// stored with one st.shared.v4 (synchronous, any alignment and strides).
// Grid: %ctaid is remapped to the user's program ids in grouped raster order
// (ScheduleAttr::getRasterGroup() tiles along program_id 0), so that co-resident CTAs share
// tiles of A and B in L2.
//
// Shared by the files that lower a multistage kernel's plan: CpAsyncRing.cpp
// (a "cp.async" ring and its async loads), MmaSync.cpp (hopper.mma_schedule
// "mma.sync": ldmatrix fragments and mma.sync), Epilogue.cpp (the "fragments"
// store path) and Roles.cpp (lowerAllWarps: every warp copies and computes,
// no warp specialization).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_TRANSFORMS_LOWERING_MULTISTAGE_H
#define TESSEL_LIB_TRANSFORMS_LOWERING_MULTISTAGE_H

#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"

#include "KernelBuilder.h"

namespace mlir::tessel::lowering {

/// One operand's tile in the shared ring. A K-major tile (K is the tensor's
/// unit-stride dim) is stored as MN rows of BK elements, an MN-major one as BK
/// rows of MN elements; either way a row is `cpr` 16-byte chunks along the
/// unit-stride dim, swizzled with swz(row).
struct KernelBuilder::MsOperand {
  GemmOperand op;
  bool isA = false;
  int64_t mnDim = 0, kDim = 1; ///< tile dims of the MN and K extents
  /// Leading tensor dims the tile does not cover (1 for a matrix of a rank-3
  /// batch): tile dim d is tensor dim lead + d.
  int64_t lead = 0;
  int64_t extent = 0;          ///< MN extent (BM or BN)
  bool kMajor = true;          ///< K-major: shared rows are MN indices
  int64_t cd = 1, od = 0;      ///< tile dims along / across a shared row
  int64_t ec = 0, eo = 0;      ///< tile extents along cd / od
  int64_t cpr = 0, pitch = 0;  ///< chunks and bytes per shared row
  int64_t stageBytes = 0, base = 0;
  int64_t rowStep = 0;         ///< shared rows between a thread's chunks
  int64_t iters = 0;           ///< chunks per thread (the last may be partial)
  Value vecOk;                 ///< i1: pointer and strides allow 16-byte copies
  Value lane;                  ///< i32: ldmatrix lane address in stage 0
};

struct KernelBuilder::MultistagePlan {
  MultistageWarps warps{};
  int64_t kSteps = 0;          ///< k16 steps per k-tile: BK / 16
  MsOperand a, b;
  Value warpRow, warpCol;      ///< this warp's tile origin inside the CTA tile (i32)
  Value lane;
  int64_t mTiles() const { return warps.wm / 16; }
  int64_t nTiles() const { return warps.wn / 8; }
  int64_t numAcc() const { return mTiles() * nTiles() * 4; }
  int64_t accIndex(int64_t mi, int64_t ni, int64_t r) const {
    return (mi * nTiles() + ni) * 4 + r;
  }
  /// Fragments carried from one k16 step to the next: B (nTiles x 2
  /// registers), then the A fragment of the first 16-row block (4).
  int64_t numFrag() const { return nTiles() * 2 + 4; }
};

/// The swizzle of shared row `row` of a tile with `cpr` chunks per row.
inline int64_t swz(int64_t row, int64_t cpr) { return cpr >= 8 ? row & 7 : (row >> 1) & 3; }

/// `v`, through an empty side-effecting asm: LLVM cannot hoist what is computed
/// from the result out of the mainloop (keeps per-chunk addresses from being
/// precomputed into registers, which made the 64x64 warp tiles spill).
inline Value opaque(OpBuilder &b, Location loc, Value v) {
  bool wide = v.getType().getIntOrFloatBitWidth() == 64;
  return b
      .create<LLVM::InlineAsmOp>(loc, v.getType(), ValueRange{v},
                                 wide ? "mov.b64 $0, $1;" : "mov.b32 $0, $1;",
                                 wide ? "=l,l" : "=r,r", /*has_side_effects=*/true,
                                 /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
                                 LLVM::AsmDialectAttr{}, ArrayAttr{})
      .getResult(0);
}

} // namespace mlir::tessel::lowering

#endif // TESSEL_LIB_TRANSFORMS_LOWERING_MULTISTAGE_H
