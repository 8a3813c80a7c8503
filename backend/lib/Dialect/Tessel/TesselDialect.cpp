//===- TesselDialect.cpp - tessel dialect, types, attributes, verifiers ---===//

#include "tessel/Dialect/Tessel/Tessel.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

#include "tessel/Dialect/Tessel/TesselDialect.cpp.inc"
#include "tessel/Dialect/Tessel/TesselEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tessel/Dialect/Tessel/TesselTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/Dialect/Tessel/TesselAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "tessel/Dialect/Tessel/TesselOps.cpp.inc"

void TesselDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tessel/Dialect/Tessel/TesselTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessel/Dialect/Tessel/TesselAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tessel/Dialect/Tessel/TesselOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

static bool isTesselElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32() || t.isInteger(32) || t.isInteger(1) || isFp8(t);
}

LogicalResult RefType::verify(function_ref<InFlightDiagnostic()> emitError,
                              unsigned rank, Type elementType) {
  if (rank < 1 || rank > 3)
    return emitError() << "rank must be 1, 2 or 3, got " << rank;
  if (!isTesselElementType(elementType))
    return emitError() << "element type must be f16, bf16, f32, i32 or i1, got "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// #tessel.schedule<kind = K, tile = [M, N, K], stages = S, warpgroups = W,
//                  swizzle = B[, cluster = [X, Y]][, raster = R][, stream_k = 1]>
// The optional entries in this order, each omitted when it has its default.
Attribute ScheduleAttr::parse(AsmParser &p, Type) {
  auto keyword = [&](StringRef name) -> ParseResult {
    return failure(failed(p.parseKeyword(name)) || failed(p.parseEqual()));
  };
  std::string kindName;
  SmallVector<int64_t> tile, cluster;
  int64_t stages = 0, warpgroups = 0, swizzle = 0, raster = 0, streamK = 0;
  auto intList = [&](SmallVectorImpl<int64_t> &out) -> ParseResult {
    return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
      return p.parseInteger(out.emplace_back());
    });
  };
  SMLoc kindLoc;
  if (p.parseLess() || keyword("kind") || (kindLoc = p.getCurrentLocation(), false) ||
      p.parseKeywordOrString(&kindName) || p.parseComma() || keyword("tile") || intList(tile) ||
      p.parseComma() || keyword("stages") || p.parseInteger(stages) || p.parseComma() ||
      keyword("warpgroups") || p.parseInteger(warpgroups) || p.parseComma() ||
      keyword("swizzle") || p.parseInteger(swizzle))
    return {};
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(kindName);
  if (!kind)
    return p.emitError(kindLoc) << "unknown schedule kind '" << kindName << "'", Attribute();
  int last = 0; // the optional entries, in order: 1 cluster, 2 raster, 3 stream_k
  while (succeeded(p.parseOptionalComma())) {
    StringRef name;
    SMLoc at = p.getCurrentLocation();
    if (p.parseKeyword(&name) || p.parseEqual())
      return {};
    int order = name == "cluster" ? 1 : name == "raster" ? 2 : name == "stream_k" ? 3 : 0;
    if (order <= last)
      return p.emitError(at) << "expected cluster, raster or stream_k (in this order) after '"
                             << (last ? "," : "swizzle") << "', got '" << name << "'",
             Attribute();
    last = order;
    if ((order == 1 && intList(cluster)) || (order == 2 && p.parseInteger(raster)) ||
        (order == 3 && p.parseInteger(streamK)))
      return {};
  }
  if (p.parseGreater())
    return {};
  return ScheduleAttr::get(p.getContext(), *kind, tile, stages, warpgroups, swizzle, cluster,
                           raster, streamK);
}

void ScheduleAttr::print(AsmPrinter &p) const {
  p << "<kind = " << stringifyScheduleKind(getKind()) << ", tile = [";
  llvm::interleaveComma(getTile(), p);
  p << "], stages = " << getStages() << ", warpgroups = " << getWarpgroups()
    << ", swizzle = " << getSwizzle();
  if (!getCluster().empty()) {
    p << ", cluster = [";
    llvm::interleaveComma(getCluster(), p);
    p << "]";
  }
  if (getRaster() != 0)
    p << ", raster = " << getRaster();
  if (getStreamk() != 0)
    p << ", stream_k = " << getStreamk();
  p << ">";
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult DimOp::verify() {
  unsigned rank = getRef().getType().getRank();
  if (getAxis() < 0 || static_cast<unsigned>(getAxis()) >= rank)
    return emitOpError() << "axis " << getAxis() << " out of range for rank " << rank;
  return success();
}

/// Shared checks of load and store: one offset per dimension, same rank and
/// element type for the tile and the tensor.
static LogicalResult verifyTileAccess(Operation *op, RefType ref, size_t numOffsets,
                                      RankedTensorType tile) {
  if (numOffsets != ref.getRank())
    return op->emitOpError() << "expects " << ref.getRank()
                             << " offsets (one per tensor dimension), got " << numOffsets;
  // A tile of lower rank covers the tensor's innermost dimensions; the
  // leading offsets then select one index each (e.g. a batch).
  if (tile.getRank() < 1 || tile.getRank() > static_cast<int64_t>(ref.getRank()))
    return op->emitOpError() << "tile rank " << tile.getRank()
                             << " must be between 1 and the tensor rank " << ref.getRank();
  if (tile.getElementType() != ref.getElementType())
    return op->emitOpError() << "tile element type " << tile.getElementType()
                             << " must equal the tensor element type " << ref.getElementType();
  return success();
}

LogicalResult LoadOp::verify() {
  return verifyTileAccess(*this, getRef().getType(), getOffsets().size(),
                          cast<RankedTensorType>(getResult().getType()));
}

LogicalResult LoadElementOp::verify() {
  RefType ref = getRef().getType();
  if (getOffsets().size() != ref.getRank())
    return emitOpError() << "expects " << ref.getRank()
                         << " offsets (one per tensor dimension), got " << getOffsets().size();
  if (getResult().getType() != ref.getElementType())
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the tensor element type " << ref.getElementType();
  return success();
}

LogicalResult StoreOp::verify() {
  if (failed(verifyTileAccess(*this, getRef().getType(), getOffsets().size(),
                              cast<RankedTensorType>(getValue().getType()))))
    return failure();
  if (getCombine() && !getValue().getDefiningOp<ReduceOp>())
    return emitOpError("`combine` stores the result of a tessel.reduce");
  return success();
}

LogicalResult ReduceOp::verify() {
  auto s = cast<RankedTensorType>(getSrc().getType());
  auto r = cast<RankedTensorType>(getResult().getType());
  if (s.getRank() != 2)
    return emitOpError() << "reduces a 2-d tile, got a tile of rank " << s.getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis > 1)
    return emitOpError() << "axis " << axis
                         << " is out of range for a 2-d tile (axis 1 reduces each row to one "
                            "value, axis 0 each column)";
  if (!isa<FloatType>(s.getElementType()))
    return emitOpError() << "reduces a floating-point tile, got " << s.getElementType();
  int64_t kept = s.getDimSize(1 - axis);
  if (r.getRank() != 1 || r.getDimSize(0) != kept || !r.getElementType().isF32())
    return emitOpError() << "result must be tensor<" << kept << "xf32> (axis " << axis
                         << " of a " << s.getDimSize(0) << "x" << s.getDimSize(1)
                         << " tile removed)";
  for (Operation *user : getResult().getUsers()) {
    auto store = dyn_cast<StoreOp>(user);
    if (!store || !store.getCombine() || store.getValue() != getResult())
      return emitOpError("the result of a reduction can only be stored with `tessel.store "
                         "... {combine}` (it is one program instance's partial)")
                 .attachNote(user->getLoc())
             << "used here";
  }
  return success();
}

LogicalResult DotOp::verify() {
  auto a = cast<RankedTensorType>(getA().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  auto c = cast<RankedTensorType>(getAcc().getType());
  if (a.getRank() != 2 || b.getRank() != 2 || c.getRank() != 2)
    return emitOpError("operands must be 2-d tiles");
  if (a.getDimSize(1) != b.getDimSize(0))
    return emitOpError() << "inner dimensions differ: a is " << a.getDimSize(0) << "x"
                         << a.getDimSize(1) << ", b is " << b.getDimSize(0) << "x"
                         << b.getDimSize(1);
  if (c.getDimSize(0) != a.getDimSize(0) || c.getDimSize(1) != b.getDimSize(1))
    return emitOpError() << "accumulator must be " << a.getDimSize(0) << "x"
                         << b.getDimSize(1);
  Type ea = a.getElementType(), eb = b.getElementType();
  if (!isFp8(ea) && !ea.isF16() && !ea.isBF16())
    return emitOpError() << "inputs must be f16, bf16, f8E4M3FN or f8E5M2, got " << ea;
  // wgmma pairs e4m3 and e5m2 freely; the 16-bit types only with themselves.
  if (ea != eb && !(isFp8(ea) && isFp8(eb)))
    return emitOpError() << "a and b must have the same element type, or both be fp8; got " << ea
                         << " and " << eb;
  if (!c.getElementType().isF32())
    return emitOpError("accumulator must be f32");
  return success();
}

LogicalResult TransOp::verify() {
  auto s = cast<RankedTensorType>(getSrc().getType());
  auto r = cast<RankedTensorType>(getResult().getType());
  if (s.getRank() != 2 || r.getRank() != 2)
    return emitOpError("only 2-d tiles can be transposed");
  if (s.getDimSize(0) != r.getDimSize(1) || s.getDimSize(1) != r.getDimSize(0) ||
      s.getElementType() != r.getElementType())
    return emitOpError("result must be the source with its two dimensions swapped");
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto s = cast<RankedTensorType>(getSrc().getType());
  auto r = cast<RankedTensorType>(getResult().getType());
  ArrayRef<int64_t> dims = getDims();
  if (s.getElementType() != r.getElementType())
    return emitOpError("element types must match");
  if (static_cast<int64_t>(dims.size()) != s.getRank())
    return emitOpError() << "needs one entry in dims per source dimension ("
                         << s.getRank() << "), got " << dims.size();
  int64_t prev = -1;
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d <= prev || d >= r.getRank())
      return emitOpError("dims must be increasing and within the result rank");
    if (s.getDimSize(i) != r.getDimSize(d))
      return emitOpError() << "source dim " << i << " (" << s.getDimSize(i)
                           << ") must equal result dim " << d << " (" << r.getDimSize(d) << ")";
    prev = d;
  }
  return success();
}

LogicalResult SplatOp::verify() {
  auto r = cast<RankedTensorType>(getResult().getType());
  if (r.getElementType() != getValue().getType())
    return emitOpError("result element type must be the scalar's type");
  return success();
}

LogicalResult CastOp::verify() {
  auto s = cast<RankedTensorType>(getSrc().getType()).getElementType();
  auto r = cast<RankedTensorType>(getResult().getType()).getElementType();
  auto ok = [](Type t) { return t.isF16() || t.isBF16() || t.isF32() || t.isInteger(32); };
  // fp8 converts to and from the float types (the i32 conversions would need
  // a saturation rule of their own).
  auto fp8Ok = [&](Type t) { return isFp8(t) || t.isF16() || t.isBF16() || t.isF32(); };
  if ((isFp8(s) || isFp8(r)) ? !(fp8Ok(s) && fp8Ok(r)) : !(ok(s) && ok(r)))
    return emitOpError() << "casts between f16, bf16, f32 and i32, and between fp8 and the float "
                            "types, only; got "
                         << s << " to " << r;
  return success();
}
