//===- GemmMatch.h - recognise the GEMM mainloop of a tessel kernel -*- C++ -*-===//
//
// The backend builds a schedule around one structure (DESIGN.md §5):
//
//   %acc0 = arith.constant dense<0.0> : tensor<BMxBNxf32>
//   %acc = scf.for %k = %lb to %ub step %s iter_args(%c = %acc0) {
//     %a  = tessel.load %A[...] : ... -> tensor<BMxBKxT>
//     %b  = tessel.load %B[...] : ... -> tensor<BNxBKxT>
//     %bt = tessel.trans %b
//     %d  = tessel.dot %a, %bt, %c
//     scf.yield %d
//   }
//   ... epilogue: elementwise ops on %acc, tessel.store ...
//
// A dual GEMM (SwiGLU / GeGLU: gate and up projections of the same A tile)
// has two dots in the loop, each with its own B and loop-carried accumulator:
//
//   %r:2 = scf.for ... iter_args(%g = %acc0, %u = %acc1) {
//     %a  = tessel.load %A[...]
//     %d1 = tessel.dot %a, %b1t, %g
//     %d2 = tessel.dot %a, %b3t, %u
//     scf.yield %d1, %d2
//   }
//
// The backend computes both with one wgmma of N = 2 x BN: the two B tiles
// sit side by side in a ring stage (B1 rows, then B3 rows) and the
// accumulator's columns [0, BN) are the first dot's, [BN, 2 BN) the second's.
//
// A scaled accumulation (block-scaled fp8: DeepGEMM's 1 x 128 scales of A
// and 128 x 128 scales of B) multiplies each k-step's product before adding
// it, with factors loaded in the loop at offsets that may depend on %k:
//
//   %r = scf.for %k = ... iter_args(%c = %acc0) {
//     %d  = tessel.dot %a, %bt, %zero            // this k-step alone
//     %sa = tessel.load %SA[%kb, %m] ...          // tensor<BMxf32>
//     %x  = arith.mulf %d, (tessel.broadcast %sa [0]) ...
//     %y  = arith.mulf %x, (tessel.splat (tessel.load_element %SB[...]))
//     %n  = arith.addf %c, %y
//     scf.yield %n
//   }
//
// `promoted` is then %n: the backend runs each k-step's wgmmas into a
// partial accumulator and adds f(partial) into the loop's (Mma.cpp).
//
// `matchGemm` finds it and says, in a diagnostic at the user's line, why a
// kernel does not have it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TRANSFORMS_GEMMMATCH_H
#define TESSEL_TRANSFORMS_GEMMMATCH_H

#include "tessel/Dialect/Tessel/Tessel.h"

namespace mlir::tessel {

/// One operand of the mainloop's dot: a tile loaded from a global tensor.
struct GemmOperand {
  /// The load inside the loop: tessel.load, or hopper.async_load once
  /// tessel-insert-async-copies put it on a ring.
  Operation *load;
  bool transposed;        ///< the dot sees tessel.trans(load)
  unsigned argIndex;      ///< which kernel argument is loaded

  Value ref() const { return load->getOperand(0); }
  RefType refType() const { return cast<RefType>(ref().getType()); }
  /// The tile offsets (one per tensor dimension).
  OperandRange offsets() const { return load->getOperands().drop_front(); }
  RankedTensorType tileType() const { return cast<RankedTensorType>(load->getResult(0).getType()); }
};

/// At most two dots share the A tile (a dual GEMM).
constexpr unsigned kMaxDots = 2;

struct GemmMatch {
  scf::ForOp loop;        ///< the mainloop
  unsigned accIndex;      ///< iter_arg position of the (first) accumulator
  DotOp dot;              ///< the first dot
  GemmOperand a, b;       ///< A, and the first dot's B
  int64_t tileM, tileN, tileK; ///< one dot's tile: BM x BN, BK
  /// Every dot in program order (dots[0] == dot), its B (bs[0] == b) and its
  /// accumulator's iter_arg position (accIndices[0] == accIndex).
  SmallVector<DotOp, kMaxDots> dots;
  SmallVector<GemmOperand, kMaxDots> bs;
  SmallVector<unsigned, kMaxDots> accIndices;

  /// A scaled accumulation: the yielded `acc + f(dot)` (one dot whose own
  /// accumulator is zero); null for `acc += dot(...)`.
  Value promoted;
  /// Its factors: the tile operands inside `promoted` that depend on neither
  /// the product nor the accumulator (sa.col(), a splat of SB[..]), in a
  /// fixed order; the backend loads them ahead of the k-step they scale.
  SmallVector<Value> factors;

  bool scaled() const { return static_cast<bool>(promoted); }
  int64_t numDots() const { return static_cast<int64_t>(dots.size()); }
  /// Columns of the accumulator the tensor cores compute: numDots() x BN.
  int64_t accumulatorN() const { return numDots() * tileN; }
  /// The tile whose A and B slots a ring stage holds: {BM, numDots() x BN, BK}.
  SmallVector<int64_t, 3> ringTile() const { return {tileM, accumulatorN(), tileK}; }
};

/// How an epilogue value reads the accumulator tiles (the mainloop's results):
/// each thread holds its own fragment of the tile, so an element of the value
/// at tile coordinates (i, j) is computed from the accumulator's element
/// (i, j) (`direct`) or, through one tessel.trans (`acc.T()`), (j, i)
/// (`transposed`): the store then writes the thread's fragment element (r, c)
/// at (c, r) of the stored tile. A value that needs both (`acc + acc.T()`)
/// would need other threads' elements: `mixed`, an error. `none`: it does not
/// read the accumulator.
enum class AccumulatorView { none, direct, transposed, mixed };

/// The view of `accs` (the accumulator values) that `v` takes, through
/// elementwise ops, casts, broadcasts and transposes.
AccumulatorView accumulatorView(Value v, ValueRange accs);

/// The error for AccumulatorView::mixed, at the store.
inline constexpr const char *kMixedAccumulatorView =
    "this store reads the accumulator both as is and transposed (acc.T()): each thread holds its "
    "own fragment of the tile, not the element across the diagonal; store the two separately";

/// Whether a store after the mainloop of a `rows` x `cols` accumulator writes
/// it transposed, given `view`, the stored tile's accumulatorView: it reads the
/// accumulator transposed, or reads none and is cols x rows (in a kernel
/// tessel-swap-operands rewrote, a store of loaded values in the user's tile).
bool storesTransposedTile(Value stored, AccumulatorView view, int64_t rows, int64_t cols);

/// Whether evaluating `v` (an epilogue expression) reads the result of `op`
/// (a tessel.load of an epilogue operand, say).
bool readsResultOf(Value v, Operation *op);

/// tessel-swap-operands' tile rule S1 (SwapOperands.cpp): a BM x BN tile with
/// 8 <= BM < 64, BM a multiple of 8, and BN a multiple of 64 up to 256, is
/// computed as its BN x BM transpose (C^T = B A^T: the few rows of A become
/// wgmma's N).
inline bool swapsTile(int64_t bm, int64_t bn) {
  return bm >= 8 && bm < 64 && bm % 8 == 0 && bn >= 64 && bn <= 256 && bn % 64 == 0;
}

/// Whether tessel-swap-operands rewrites `kernel`, whose GEMM is `m`, when it
/// is compiled with `schedule` and `cluster` ("1x1"): rules S1-S5 of
/// SwapOperands.cpp. schedule::automatic's rules ask the same question.
bool swapsOperands(func::FuncOp kernel, GemmMatch &m, StringRef schedule, StringRef cluster);

/// Returns the GEMM structure of `kernel`, std::nullopt if it has no tessel.dot,
/// or failure (with a diagnostic) if it has one that the backend cannot build.
FailureOr<std::optional<GemmMatch>> matchGemm(func::FuncOp kernel);

/// The tile index that `offset` multiplies by `extent` (`offset = index *
/// extent`): a tessel.program_id, or a hopper.tile_scheduler result once the
/// tile scheduler is materialised; null when the offset has another form. A
/// tile's offset of this form is >= 0 and a whole number of tiles (the clipped
/// TMA boxes of tessel-lower-to-nvvm, schedule::automatic's grid axes).
Operation *tileIndexOf(Value offset, int64_t extent);

/// Whether the scalar `v` depends on the program id of grid axis `axis`: a
/// tessel.program_id of that axis (or the hopper.tile_scheduler result that
/// replaced it) lies in its backward slice, through any op, including the
/// offsets of a tessel.load_element (a tile's group read from a table), a
/// loop index through its lower bound and step. Kernel arguments do not;
/// any other block argument (a loop-carried value) is taken to. The operand
/// tile a CTA cluster multicasts must not (SelectSchedule rule 5).
bool dependsOnProgramId(Value v, int64_t axis);

/// Whether the mainloop's trip count may differ between tiles: a bound (or
/// the step) depends on a program id, as in a triangular GEMM's
/// `ts::range(0, m + BM, BK)` or a K read per tile with ts::tensor::at. The
/// persistent schedules run every tile of a CTA with one trip count
/// (SelectSchedule rule 9); multistage computes it from the tile's program ids.
bool tripCountDependsOnTile(scf::ForOp loop);

/// Warp tiling of schedule `multistage` (shared by tessel-select-schedule, which
/// checks it, and the kernel builder): a BM x BN CTA tile is split into
/// warpsM x warpsN warps of wm x wn. A side of at least 128 (and a multiple of
/// 64) gets 64-wide warp tiles, a smaller one 32-wide, so that small tiles still
/// have several warps and large ones keep CUTLASS's 64x64 warp tile.
struct MultistageWarps {
  int64_t wm, wn, warpsM, warpsN;
  int64_t count() const { return warpsM * warpsN; }
};
inline MultistageWarps multistageWarps(int64_t bm, int64_t bn) {
  int64_t wm = bm >= 128 && bm % 64 == 0 ? 64 : 32;
  int64_t wn = bn >= 128 && bn % 64 == 0 ? 64 : 32;
  return {wm, wn, bm / wm, bn / wn};
}

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_GEMMMATCH_H
