//===- OperandLayout.h - shared-memory layout of a wgmma operand -*- C++ -*-===//
//
// Where the TMA-fed schedules put one GEMM operand tile in shared memory, and
// the wgmma descriptor fields that read it back. One layout covers K-major
// and MN-major operands and every swizzle mode.
//
// Terms. The operand tile is loaded from a kernel argument whose dimension
// `contiguousDim` has unit stride (argument attribute `tessel.contiguous_dim`,
// default: the last dimension). Along that dimension the tile has `inner`
// elements, along the other `outer`. The operand is K-major when the
// contiguous dimension is its K dimension, MN-major otherwise:
//
//   operand      K-major (imm-trans = 0)         MN-major (imm-trans = 1)
//   A (M x K)    inner = BK, outer = BM          inner = BM, outer = BK
//   B (K x N)    inner = BK, outer = BN          inner = BN, outer = BK
//
// Shared memory. With swizzle S in {32, 64, 128} bytes a "row" is S bytes
// (w = S); without swizzle it is 16 bytes (w = 16, the core-matrix row). The
// tile is cut along `inner` into boxes of w bytes, each loaded by one TMA box
// {w / eltBytes, outer} (innermost first), stored one after the other:
//
//   byte offset of tile element (i inner, o outer) before the swizzle:
//     (i * elt / w) * (outer * w)  +  o * w  +  (i * elt) % w
//
//   e.g. MN-major B, BN = 128 bf16, BK = 64, S = 64 (w = 64, 32 elements):
//     box 0: n 0..31   k 0..63  bytes [0, 4096)      rows k, 64 B each
//     box 1: n 32..63  k 0..63  bytes [4096, 8192)
//     box 2, box 3 likewise; the box is the "swizzle atom column" of the
//     PTX ISA's canonical layouts, 8 rows of it one 512 B swizzle pattern.
//
// TMA swizzles each S-byte row by address bits (16-byte chunk bits [4, 4+b)
// ^= bits [7, 7+b), b = log2(S / 16)), so every box starts on a multiple of
// 8 * w bytes and the pattern of TMA's writes is the one wgmma reads.
//
// Descriptors (PTX ISA "Matrix Descriptor Format" and "Strides"): for the
// instruction's operand starting at (mn0, k0) of the tile,
//   start = offset(mn0, k0) as above;
//   K-major,  swizzled:  LBO unused (16), SBO = 8 * w        (next 8 MN rows)
//   K-major,  none:      LBO = outer * 16 (next 8 K),  SBO = 128 (next 8 MN)
//   MN-major, swizzled:  LBO = outer * w  (next MN atom), SBO = 8 * w (next 8 K)
//   MN-major, none:      LBO = 128 (next 8 K),  SBO = outer * 16 (next 8 MN)
// and the swizzle field is 1 (128B), 2 (64B), 3 (32B) or 0 (none).
// tests/lit/Inputs/wgmma_layout_model.py checks these against the canonical
// layouts element by element.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TRANSFORMS_OPERANDLAYOUT_H
#define TESSEL_TRANSFORMS_OPERANDLAYOUT_H

#include "tessel/Transforms/GemmMatch.h"

namespace mlir::tessel {

/// Argument attribute: the dimension of the kernel argument with unit stride
/// (i64). Absent: the last dimension (row-major).
constexpr StringLiteral kContiguousDimAttrName = "tessel.contiguous_dim";

struct OperandLayout {
  unsigned argIndex = 0;
  int64_t contiguousDim = 1; ///< dimension of the argument with unit stride
  /// Leading tensor dimensions the tile does not cover (a batch index: a
  /// rank-2 tile of a rank-3 tensor has lead 1). Tile dimension d is tensor
  /// dimension lead + d.
  int64_t lead = 0;
  bool mnMajor = false;      ///< wgmma imm-trans-a / imm-trans-b
  int64_t inner = 0;         ///< tile extent (elements) along contiguousDim
  /// The tile dimension (0 or 1) that has unit stride.
  int64_t tileContiguousDim() const { return contiguousDim - lead; }
  int64_t outer = 0;         ///< tile extent along the other dimension
  int64_t eltBytes = 2;
  int64_t swizzle = 128;     ///< bytes: 128, 64, 32, or 0 (none)

  /// Bytes of one shared-memory row: the swizzle span, or 16 without swizzle.
  int64_t rowBytes() const { return swizzle ? swizzle : 16; }
  /// TMA box, innermost first: {rowBytes / eltBytes, outer}.
  int64_t boxInner() const { return rowBytes() / eltBytes; }
  int64_t numBoxes() const { return inner * eltBytes / rowBytes(); }
  int64_t boxBytes() const { return outer * rowBytes(); }
  int64_t tileBytes() const { return numBoxes() * boxBytes(); }
  /// Byte offset (before the swizzle) of the wgmma operand starting at
  /// (mn0, k0) of the tile; mn0 a multiple of 8 (and of the atom for MN-major),
  /// k0 a multiple of 16 elements.
  int64_t offset(int64_t mn0, int64_t k0) const;
  int64_t leadingByteOffset() const;
  int64_t strideByteOffset() const;
  /// The descriptor without its start address (bits 16..63).
  uint64_t descriptorHighBits() const;

  /// A dual GEMM's B operand as its one wgmma (N = n x BN) reads it: n such
  /// tiles side by side along MN. K-major: the rows of tile j follow those
  /// of tile j - 1 in every box (outer x n); MN-major: tile j's boxes follow
  /// tile j - 1's (inner x n). E.g. two K-major 128 x 64 bf16 tiles, 64B
  /// swizzle (2 boxes of 64 B rows each):
  ///   box 0: B1 rows 0..127, B3 rows 0..127 (k 0..31)   16 KiB
  ///   box 1: B1 rows 0..127, B3 rows 0..127 (k 32..63)  16 KiB
  OperandLayout sideBySide(int64_t n) const {
    OperandLayout l = *this;
    (mnMajor ? l.inner : l.outer) *= n;
    return l;
  }
  /// Where tile j of sideBySide(n) starts (bytes from the combined tile's
  /// start); its boxes are sideBySide(n).boxBytes() apart.
  int64_t sideBySideOffset(int64_t j) const { return j * (mnMajor ? tileBytes() : boxBytes()); }
};

/// The unit-stride dimension of kernel argument `arg` of `fn`: the
/// `tessel.contiguous_dim` argument attribute, or rank - 1. Fails with a
/// diagnostic if the attribute is out of range.
FailureOr<int64_t> getContiguousDim(func::FuncOp fn, unsigned arg);

/// Largest swizzle (128, 64, 32 bytes) dividing `innerBytes`, else 0 (none).
int64_t naturalSwizzle(int64_t innerBytes);

/// The layout of operand A (`isB` false) or B of `m` (of dot `dot`: a dual
/// GEMM has two Bs) for swizzle `swizzle` (bytes, 0 = none). Fails with a
/// diagnostic at the dot when the operand cannot use it (see rules L1-L3 in
/// OperandLayout.cpp; L5 for a dual GEMM's second B).
FailureOr<OperandLayout> getOperandLayout(func::FuncOp fn, const GemmMatch &m, bool isB,
                                          int64_t swizzle, unsigned dot = 0);

/// The swizzle a kernel uses for both operands given options::swizzle
/// (`requested`: 0 auto, -1 none, 32, 64, 128). Fails with a diagnostic naming
/// the option and the rule when the request is not valid for an operand.
FailureOr<int64_t> selectSwizzle(func::FuncOp fn, const GemmMatch &m, int64_t requested);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_OPERANDLAYOUT_H
