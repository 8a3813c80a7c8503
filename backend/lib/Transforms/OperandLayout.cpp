//===- OperandLayout.cpp - shared-memory layout of a wgmma operand --------===//
//
// Rules an operand layout must meet (L1 and L4 first: they decide which tile
// dimension is the contiguous one; then L2, L3):
//   L1. The argument's `tessel.contiguous_dim` names one of its dimensions.
//   L2. An MN-major operand has f16 or bf16 elements: wgmma's transpose
//       immediates (imm-trans-a / imm-trans-b) exist only for 16-bit types.
//   L3. The tile's contiguous extent in bytes is a multiple of the row of the
//       swizzle mode (S bytes, or 16 without swizzle): the tile is a whole
//       number of TMA boxes / swizzle atoms.
//   L4. A tile of lower rank than its tensor (one matrix of a batch) has the
//       unit-stride dimension among the tile's dimensions.
//   L5. The two B operands of a dual GEMM have one layout (both K-major or
//       both MN-major, the same tile rank): one wgmma reads them side by side
//       (OperandLayout::sideBySide).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/OperandLayout.h"

using namespace mlir;
using namespace mlir::tessel;

int64_t OperandLayout::offset(int64_t mn0, int64_t k0) const {
  int64_t w = rowBytes();
  // (i along the contiguous dimension, o along the other one.)
  int64_t i = mnMajor ? mn0 : k0;
  int64_t o = mnMajor ? k0 : mn0;
  return (i * eltBytes / w) * boxBytes() + o * w + (i * eltBytes) % w;
}

int64_t OperandLayout::leadingByteOffset() const {
  if (!mnMajor)
    return swizzle ? 16 : boxBytes(); // swizzled K-major: unused, "assumed 1"
  return swizzle ? boxBytes() : 128;
}

int64_t OperandLayout::strideByteOffset() const {
  if (!mnMajor)
    return 8 * rowBytes();
  return swizzle ? 8 * rowBytes() : boxBytes();
}

uint64_t OperandLayout::descriptorHighBits() const {
  uint64_t mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0;
  uint64_t lbo = (uint64_t(leadingByteOffset()) >> 4) & 0x3FFF;
  uint64_t sbo = (uint64_t(strideByteOffset()) >> 4) & 0x3FFF;
  return (lbo << 16) | (sbo << 32) | (mode << 62);
}

FailureOr<int64_t> mlir::tessel::getContiguousDim(func::FuncOp fn, unsigned arg) {
  auto ref = cast<RefType>(fn.getArgumentTypes()[arg]);
  int64_t rank = ref.getRank();
  auto attr = fn.getArgAttrOfType<IntegerAttr>(arg, kContiguousDimAttrName);
  if (!attr)
    return rank - 1;
  int64_t c = attr.getInt();
  // L1.
  if (c < 0 || c >= rank)
    return fn.emitError() << "argument " << arg << ": " << kContiguousDimAttrName << " = " << c
                          << " is not a dimension of a rank-" << rank << " tensor";
  return c;
}

int64_t mlir::tessel::naturalSwizzle(int64_t innerBytes) {
  for (int64_t s : {128, 64, 32})
    if (innerBytes % s == 0)
      return s;
  return 0;
}

static StringRef swizzleName(int64_t s) {
  switch (s) {
  case 128: return "128B";
  case 64: return "64B";
  case 32: return "32B";
  default: return "none";
  }
}

FailureOr<OperandLayout> mlir::tessel::getOperandLayout(func::FuncOp fn, const GemmMatch &m,
                                                        bool isB, int64_t swizzle, unsigned dotIndex) {
  GemmOperand op = isB ? m.bs[dotIndex] : m.a; // (op handles: copies are cheap and non-const)
  DotOp dot = m.dots[dotIndex];
  std::string name = isB ? (dotIndex ? "B of dot " + std::to_string(dotIndex + 1) : "B") : "A";
  auto c = getContiguousDim(fn, op.argIndex);
  if (failed(c))
    return failure();
  auto tileTy = op.tileType();
  int64_t lead = op.refType().getRank() - tileTy.getRank();
  // L4.
  if (*c < lead)
    return dot.emitError() << "operand " << name << " (argument " << op.argIndex
                           << ") has unit stride along dimension " << *c
                           << ", which its tile does not cover (a batch dimension); TMA needs "
                              "the unit-stride dimension inside the tile";
  int64_t tc = *c - lead;
  // The K dimension of the loaded tile: A is loaded M x K (or K x M and
  // transposed), B K x N (or N x K and transposed).
  int64_t kDim = isB ? (op.transposed ? 1 : 0) : (op.transposed ? 0 : 1);
  OperandLayout l;
  l.argIndex = op.argIndex;
  l.contiguousDim = *c;
  l.lead = lead;
  l.mnMajor = tc != kDim;
  l.inner = tileTy.getDimSize(tc);
  l.outer = tileTy.getDimSize(1 - tc);
  Type elt = tileTy.getElementType();
  l.eltBytes = elt.getIntOrFloatBitWidth() / 8;
  l.swizzle = swizzle;
  // L2.
  if (l.mnMajor && !elt.isBF16() && !elt.isF16())
    return dot.emitError() << "operand " << name << " (argument " << op.argIndex
                             << ", contiguous along dimension " << *c
                             << ") is MN-major, which wgmma reads only for f16/bf16 "
                                "(imm-trans-" << (isB ? "b" : "a") << "), got " << elt
                             << "; make its K dimension contiguous";
  // L3.
  if ((l.inner * l.eltBytes) % l.rowBytes() != 0)
    return dot.emitError() << "swizzle " << swizzleName(swizzle) << " (option swizzle) does not fit operand "
                             << name << " (argument " << op.argIndex << ", "
                             << (l.mnMajor ? "MN" : "K") << "-major): its contiguous extent "
                             << l.inner << " x " << l.eltBytes << " bytes must be a multiple of "
                             << l.rowBytes() << " bytes (one swizzle row)";
  // L5.
  if (isB && dotIndex > 0) {
    auto first = getOperandLayout(fn, m, isB, swizzle, 0);
    if (failed(first))
      return failure();
    if (first->mnMajor != l.mnMajor || first->lead != l.lead)
      return dot.emitError() << "the two B operands of a dual GEMM must have one layout: B "
                                "(argument "
                             << first->argIndex << ") is " << (first->mnMajor ? "MN" : "K")
                             << "-major, B of dot 2 (argument " << op.argIndex << ") is "
                             << (l.mnMajor ? "MN" : "K") << "-major";
  }
  return l;
}

FailureOr<int64_t> mlir::tessel::selectSwizzle(func::FuncOp fn, const GemmMatch &m,
                                               int64_t requested) {
  if (requested != 0 && requested != -1 && requested != 32 && requested != 64 &&
      requested != 128)
    return fn.emitError() << "option swizzle = " << requested
                          << " is not one of 0 (automatic), 128, 64, 32, -1 (none)";
  if (requested != 0) {
    int64_t s = requested == -1 ? 0 : requested;
    if (failed(getOperandLayout(fn, m, false, s)))
      return failure();
    for (unsigned d = 0; d < m.dots.size(); ++d)
      if (failed(getOperandLayout(fn, m, true, s, d)))
        return failure();
    return s;
  }
  // Automatic: the widest swizzle both tiles' contiguous extents allow.
  int64_t s = 128;
  for (unsigned i = 0; i <= m.dots.size(); ++i) {
    auto l = getOperandLayout(fn, m, /*isB=*/i > 0, /*swizzle=*/0, i > 0 ? i - 1 : 0);
    if (failed(l))
      return failure();
    s = std::min(s, naturalSwizzle(l->inner * l->eltBytes));
  }
  return s;
}
