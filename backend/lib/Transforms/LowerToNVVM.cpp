//===- LowerToNVVM.cpp - write the sm_90a kernel of a planned tessel kernel ===//
//
// Replaces each `tessel.kernel` func.func by an `llvm.func` kernel written in
// hopper / nvvm / llvm / scf / arith ops on LLVM-compatible types (i32 for
// index math, i64 for addresses), ready for tessel-convert-hopper-to-nvvm and
// convert-scf-to-cf + convert-to-llvm.
//
// This file: the pass, the kernel's signature, scalars and element
// evaluation, elementwise kernels, and for GEMM kernels reading the plan
// (readPlan) and the setup it implies (barrier initialisation, trip count).
// The plan's parts are lowered by the files of Lowering/ (KernelBuilder.h
// lists them): before this pass (08-allocate-resources.mlir)
//
//   %pid:3 = hopper.tile_scheduler "persistent" raster_group 8 cluster [1, 1] stream_k
//   hopper.ring "ab" stages 4 copy "tma" stage_bytes 32768
//   hopper.warp_specialize producer "warpgroup" regs 40 { hopper.produce "ab" }
//     consumers 2 regs 232 order "pingpong" { hopper.consume "ab"  hopper.mma_schedule ...
//                                              hopper.epilogue ... }
//   hopper.resources threads 384 smem_bytes 163904 {...}
//   ... the traced program, its loads as hopper.async_load, its stores with hopper.store
//
// after it (09-lower-to-nvvm.mlir): one llvm.func, its roles, loops, barriers
// and copies as hopper protocol ops, its math as nvvm.wgmma and arith.
//
// Kernel parameters (recorded in `tessel.params` for the runtime), in order:
//   for every argument i:  ptr_i (.u64), size_i_0.. (.u64), stride_i_0.. (.u64);
//                          a scalar argument (ts::scalar, f32 / i32): its value (.f32 / .u32)
//   then one CUtensorMap per TMA-loaded operand, as a __grid_constant__
//   `.param .align 64 .b8 [128]` (llvm.byval + nvvm.grid_constant).
//
// The epilogue evaluates the traced tile expression element by element on the
// wgmma accumulator layout (m64nNk16, f32: register r of thread t holds row
// 16*warp + t%32/4 + 8*(r%4/2), column 8*(r/4) + 2*(t%4) + r%2), so any
// elementwise chain (bias rows, activations, casts, other loads) is fused.
// Kernels without a dot evaluate their stores on a blocked layout (element
// e = r*threads + tid), which keeps global accesses coalesced.
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/Passes.h"
#include "tessel/Transforms/SharedMemory.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOWERTONVVM
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

#include "Lowering/KernelBuilder.h"
#include "PtxEmitter.h"
#include "SchedulePlan.h"

namespace mlir::tessel::lowering {

Value KernelBuilder::ptx(StringRef code, StringRef constraints, ValueRange operands,
                         Type result) {
  return emitPtx(b, loc, code, constraints, operands, result);
}

static StringRef fp8Pair(Type fp8) { return isa<Float8E4M3FNType>(fp8) ? "e4m3x2" : "e5m2x2"; }

Value KernelBuilder::fp8ToF32(Type fp8, Value bits) {
  // cvt.rn.f16x2.{e4m3,e5m2}x2 (exact), then cvt.f32.f16 (exact).
  return ptx(("{\n.reg .b32 h2;\n.reg .b16 lo, hi;\ncvt.rn.f16x2." + fp8Pair(fp8) +
              " h2, $1;\nmov.b32 {lo, hi}, h2;\ncvt.f32.f16 $0, lo;\n}")
                 .str(),
             "=f,h", {b.create<arith::ExtUIOp>(loc, b.getI16Type(), bits)}, b.getF32Type());
}

Value KernelBuilder::f32ToFp8Pair(Type fp8, Value first, Value second) {
  // The instruction's first source lands in the high byte.
  return ptx(("cvt.rn.satfinite." + fp8Pair(fp8) + ".f32 $0, $1, $2;").str(), "=h,f,f",
             {second, first}, b.getI16Type());
}

void KernelBuilder::spinWait(StringRef decls, function_ref<std::string(int)> probe, bool doneIfP,
                             StringRef constraints, ValueRange operands, StringRef what, Value id,
                             Value parity) {
  emitSpinWait(b, loc, decls, probe, doneIfP, constraints, operands, boundedWaits,
               WaitReport{fn.getSymName(), what, tid, id, parity});
}

void KernelBuilder::mbarrierWait(Value bar, Value parity, StringRef ring, Value stage) {
  auto wait = b.create<hopper::MBarrierWaitOp>(loc, bar, parity, stage, b.getStringAttr(ring));
  wait.setBounded(boundedWaits);
}

//===----------------------------------------------------------------------===//
// Scalars and elements
//===----------------------------------------------------------------------===//

bool KernelBuilder::availableHere(Value v) {
  Block *here = b.getInsertionBlock();
  Block *def = v.getParentBlock();
  if (isa<BlockArgument>(v))
    return def == here || def->findAncestorOpInBlock(*here->getParentOp());
  Operation *defOp = v.getDefiningOp();
  if (def == here)
    return b.getInsertionPoint() == here->end() || defOp->isBeforeInBlock(&*b.getInsertionPoint());
  Operation *ancestor = def->findAncestorOpInBlock(*here->getParentOp());
  return ancestor && defOp->isBeforeInBlock(ancestor);
}

FailureOr<Value> KernelBuilder::scalar(Value v, Value ivRepl) {
  if (gemm && v == gemm->loop.getInductionVar()) {
    if (!ivRepl)
      ivRepl = mainloopK;
    return ivRepl ? ivRepl : (fn.emitError("loop index used outside the mainloop"), Value());
  }
  bool inLoop = gemm && gemm->loop->isAncestor(v.getParentBlock()->getParentOp());
  // A cached value is reused where it dominates the insertion point (a value
  // first computed inside a loop's body, or after it, is computed again).
  if (!inLoop)
    if (auto it = scalars.find(v); it != scalars.end() && availableHere(it->second))
      return it->second;
  auto arg = dyn_cast<BlockArgument>(v);
  if (arg && arg.getOwner()->getParentOp() == fn.getOperation()) {
    // A ts::scalar argument: its kernel parameter, "scalar:<i>" in tessel.params.
    std::string name = "scalar:" + std::to_string(arg.getArgNumber());
    for (auto [i, p] : llvm::enumerate(kernel->getAttrOfType<ArrayAttr>("tessel.params")))
      if (cast<StringAttr>(p).getValue() == name)
        return kernel.getArgument(i);
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return fn.emitError("a kernel argument is used as a scalar"), failure();
  Value result;
  // The tile scheduler's results are the program ids of the tile computed.
  std::optional<int64_t> axis;
  if (auto pid = dyn_cast<ProgramIdOp>(op))
    axis = pid.getAxis();
  else if (isa<hopper::TileSchedulerOp>(op))
    axis = cast<OpResult>(v).getResultNumber();
  if (axis && !programIds.empty()) {
    result = programIds[*axis];
  } else if (axis) {
    switch (*axis) {
    case 0: result = b.create<NVVM::BlockIdXOp>(loc, b.getI32Type()); break;
    case 1: result = b.create<NVVM::BlockIdYOp>(loc, b.getI32Type()); break;
    default: result = b.create<NVVM::BlockIdZOp>(loc, b.getI32Type()); break;
    }
  } else if (auto np = dyn_cast<NumProgramsOp>(op); np && !gridParams.empty()) {
    result = gridParams[np.getAxis()];
  } else if (np) {
    switch (np.getAxis()) {
    case 0: result = b.create<NVVM::GridDimXOp>(loc, b.getI32Type()); break;
    case 1: result = b.create<NVVM::GridDimYOp>(loc, b.getI32Type()); break;
    default: result = b.create<NVVM::GridDimZOp>(loc, b.getI32Type()); break;
    }
  } else if (auto dim = dyn_cast<DimOp>(op)) {
    unsigned arg = cast<BlockArgument>(dim.getRef()).getArgNumber();
    result = b.create<arith::TruncIOp>(loc, b.getI32Type(), refs[arg].sizes[dim.getAxis()]);
  } else if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    if (auto ia = dyn_cast<IntegerAttr>(cst.getValue()))
      result = b.create<arith::ConstantOp>(
          loc, b.getIntegerAttr(mapScalarType(ia.getType()), ia.getValue().getSExtValue()));
    else if (isa<FloatAttr>(cst.getValue()))
      result = b.create<arith::ConstantOp>(loc, cast<TypedAttr>(cst.getValue()));
    else
      return op->emitError("unsupported scalar constant"), failure();
  } else if (auto le = dyn_cast<LoadElementOp>(op)) {
    // One element of a tensor (ts::tensor::at), 0 outside it.
    auto offsets = offsetScalars(le.getOffsets(), ivRepl);
    if (failed(offsets))
      return failure();
    unsigned arg = cast<BlockArgument>(le.getRef()).getArgNumber();
    auto [linear, inBounds] = address(arg, *offsets, {});
    result = loadPredicated(arg, linear, inBounds);
  } else if (auto ic = dyn_cast<arith::IndexCastOp>(op)) {
    auto in = scalar(ic.getIn(), ivRepl);
    if (failed(in))
      return failure();
    Type to = mapScalarType(ic.getType());
    unsigned fromW = (*in).getType().getIntOrFloatBitWidth(), toW = to.getIntOrFloatBitWidth();
    result = fromW == toW ? *in
             : fromW < toW ? b.create<arith::ExtSIOp>(loc, to, *in).getResult()
                           : b.create<arith::TruncIOp>(loc, to, *in).getResult();
  } else if (op->getDialect() == ctx->getLoadedDialect<arith::ArithDialect>() ||
             op->getDialect() == ctx->getLoadedDialect<math::MathDialect>()) {
    SmallVector<Value> operands;
    for (Value o : op->getOperands()) {
      auto s = scalar(o, ivRepl);
      if (failed(s))
        return failure();
      operands.push_back(*s);
    }
    SmallVector<Type> types;
    for (Type t : op->getResultTypes())
      types.push_back(mapScalarType(t));
    OperationState st(loc, op->getName().getStringRef(), operands, types, op->getAttrs());
    result = b.create(st)->getResult(0);
  } else {
    return op->emitError() << "cannot compute '" << op->getName()
                           << "' as a scalar in the kernel", failure();
  }
  if (!inLoop)
    scalars[v] = result;
  return result;
}

FailureOr<SmallVector<Value>> KernelBuilder::offsetScalars(ValueRange vs, Value ivRepl) {
  SmallVector<Value> out;
  for (Value v : vs) {
    auto s = scalar(v, ivRepl);
    if (failed(s))
      return failure();
    out.push_back(*s);
  }
  return out;
}

FailureOr<Value> KernelBuilder::cloneElementwise(Operation *op, ArrayRef<Value> operands) {
  SmallVector<Type> types;
  for (Type t : op->getResultTypes())
    types.push_back(cast<ShapedType>(t).getElementType());
  OperationState st(loc, op->getName().getStringRef(), operands, types, op->getAttrs());
  return b.create(st)->getResult(0);
}

std::pair<Value, Value> KernelBuilder::address(unsigned arg, ArrayRef<Value> offsets,
                                               ArrayRef<Value> coords) {
  RefParams &r = refs[arg];
  Value linear = i64(0), inBounds;
  // A tile of lower rank than its tensor covers the innermost dimensions; the
  // leading offsets are single indices (a batch).
  size_t lead = offsets.size() - coords.size();
  for (size_t d = 0; d < offsets.size(); ++d) {
    Value idx = d < lead ? offsets[d] : b.create<arith::AddIOp>(loc, offsets[d], coords[d - lead]);
    Value idx64 = b.create<arith::ExtSIOp>(loc, b.getI64Type(), idx);
    // Unsigned compare: negative indices are out of bounds too.
    Value ok = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, idx64, r.sizes[d]);
    inBounds = inBounds ? b.create<arith::AndIOp>(loc, inBounds, ok).getResult() : ok;
    linear = b.create<arith::AddIOp>(loc, linear,
                                     b.create<arith::MulIOp>(loc, idx64, r.strides[d]));
  }
  return {linear, inBounds};
}

/// The element of a loaded tile, 0 where ref[offsets + coords] is outside the
/// tensor. 16- and 32-bit elements (every tensor dtype: f16, bf16, f32, i32) are
/// one predicated load (docs/benchmarks.md run 35: 4% faster than a branch
/// around each load in the C0 / residual epilogues at 4096 x 14336 x 4096;
/// reading two adjacent bf16 at once was slower still); other widths keep the
/// branch:
///
///   %v = llvm.inline_asm "{ .reg .pred p; setp.ne.b32 p, $2, 0;
///                           mov.b16 $0, 0; @p ld.global.b16 $0, [$1]; }"
///
/// While an epilogue reuses its values (KernelBuilder.h), an element is loaded
/// once per coordinates.
FailureOr<Value> KernelBuilder::loadElement(LoadOp load, ArrayRef<Value> coords) {
  std::tuple<Operation *, Value, Value> key{load, coords.empty() ? Value() : coords[0],
                                            coords.size() > 1 ? coords[1] : Value()};
  const bool memo = reuseEpilogueValues && coords.size() <= 2;
  if (memo)
    if (auto it = loadedElements.find(key); it != loadedElements.end())
      return it->second;
  auto offsetsOrFail = offsetScalars(load.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  SmallVector<Value> offsets = std::move(*offsetsOrFail);
  unsigned arg = cast<BlockArgument>(load.getRef()).getArgNumber();
  auto [linear, inBounds] = address(arg, offsets, coords);
  Value v = loadPredicated(arg, linear, inBounds);
  if (memo)
    loadedElements[key] = v;
  return v;
}

Value KernelBuilder::loadPredicated(unsigned arg, Value linear, Value inBounds) {
  Type elt = refs[arg].elementType;
  Value p = b.create<LLVM::GEPOp>(loc, refs[arg].ptr.getType(), elt, refs[arg].ptr, linear);
  Value v;
  if (unsigned bits = elt.getIntOrFloatBitWidth(); bits == 16 || bits == 32) {
    std::string n = std::to_string(bits);
    Value raw = ptx("{\n.reg .pred p;\nsetp.ne.b32 p, $2, 0;\nmov.b" + n + " $0, 0;\n@p ld.global.b" +
                        n + " $0, [$1];\n}",
                    bits == 16 ? "=h,l,r" : "=r,l,r",
                    {b.create<LLVM::PtrToIntOp>(loc, b.getI64Type(), p),
                     b.create<arith::ExtUIOp>(loc, b.getI32Type(), inBounds)},
                    b.getIntegerType(bits));
    v = b.create<LLVM::BitcastOp>(loc, elt, raw);
  } else {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{elt}, inBounds, /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<scf::YieldOp>(loc, b.create<LLVM::LoadOp>(loc, elt, p).getResult());
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, b.create<arith::ConstantOp>(loc, b.getZeroAttr(elt)).getResult());
    v = ifOp.getResult(0);
  }
  return v;
}

LogicalResult KernelBuilder::storeElement(StoreOp store, ArrayRef<Value> coords) {
  auto v = element(store.getValue(), coords);
  if (failed(v))
    return failure();
  return storeValue(store, coords, *v);
}

LogicalResult KernelBuilder::storeValue(StoreOp store, ArrayRef<Value> coords, Value v) {
  auto offsetsOrFail = offsetScalars(store.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
  auto [linear, inBounds] = address(arg, *offsetsOrFail, coords);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, inBounds, /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Type elt = refs[arg].elementType;
  Value p = b.create<LLVM::GEPOp>(loc, refs[arg].ptr.getType(), elt, refs[arg].ptr, linear);
  b.create<LLVM::StoreOp>(loc, v, p);
  return success();
}

LogicalResult KernelBuilder::storePair(StoreOp store, Value row, Value col, Value v0, Value v1) {
  auto offsetsOrFail = offsetScalars(store.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  SmallVector<Value> offsets = std::move(*offsetsOrFail);
  unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
  RefParams &r = refs[arg];
  Type eltTy = r.elementType;
  int64_t bytes = eltTy.getIntOrFloatBitWidth() / 8;
  Value col1 = b.create<arith::AddIOp>(loc, col, i32(1));
  auto [linear, ok0] = address(arg, offsets, {row, col});
  auto [linear1, ok1] = address(arg, offsets, {row, col1});
  // One 2-element store when both are in bounds, adjacent in memory and the
  // address is aligned to the pair; element stores otherwise (edges, strided C).
  Value p0 = b.create<LLVM::GEPOp>(loc, r.ptr.getType(), eltTy, r.ptr, linear);
  Value addr = b.create<LLVM::PtrToIntOp>(loc, b.getI64Type(), p0);
  Value aligned = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::eq, b.create<arith::AndIOp>(loc, addr, i64(2 * bytes - 1)), i64(0));
  Value unit = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, r.strides.back(), i64(1));
  Value vec = b.create<arith::AndIOp>(loc, b.create<arith::AndIOp>(loc, ok0, ok1),
                                      b.create<arith::AndIOp>(loc, aligned, unit));
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, vec, /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto vecTy = VectorType::get({2}, eltTy);
  Value pair = b.create<LLVM::PoisonOp>(loc, vecTy);
  pair = b.create<LLVM::InsertElementOp>(loc, pair, v0, i32(0));
  pair = b.create<LLVM::InsertElementOp>(loc, pair, v1, i32(1));
  b.create<LLVM::StoreOp>(loc, pair, p0, /*alignment=*/2 * bytes);
  b.setInsertionPointToStart(ifOp.elseBlock());
  for (auto [ok, lin, v] : {std::tuple{ok0, linear, v0}, std::tuple{ok1, linear1, v1}}) {
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, ok, /*withElse=*/false);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(one.thenBlock());
    Value p = b.create<LLVM::GEPOp>(loc, r.ptr.getType(), eltTy, r.ptr, lin);
    b.create<LLVM::StoreOp>(loc, v, p);
  }
  return success();
}

Value KernelBuilder::coordinate(Value base, int64_t offset) {
  if (!reuseEpilogueValues)
    return b.create<arith::AddIOp>(loc, base, i32(offset));
  Value &v = coordinates[{base, offset}];
  if (!v)
    v = b.create<arith::AddIOp>(loc, base, i32(offset));
  return v;
}

Value KernelBuilder::fragmentColumn(Value inWg) {
  auto make = [&] {
    Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
    return b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(2)).getResult();
  };
  if (!reuseEpilogueValues)
    return make();
  Value &v = fragmentColumns[inWg];
  if (!v)
    v = make();
  return v;
}

Value KernelBuilder::fragmentRow(Value rowBlock, Value inWg) {
  Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  return b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, rowBlock, i32(64)),
      b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
                              b.create<arith::DivUIOp>(loc, lane, i32(4))));
}

void KernelBuilder::selectAccRegisters(Value acc, int64_t r) {
  accRegisters.clear();
  for (int64_t j = 0; j < numAccs; ++j)
    accRegisters.push_back(b.create<LLVM::ExtractValueOp>(loc, acc, r + j * outBN / 2));
}

FailureOr<Value> KernelBuilder::element(Value v, ArrayRef<Value> coords) {
  for (auto [result, reg] : llvm::zip(accLoopResults, accRegisters))
    if (v == result)
      return reg;
  if (!factorElements.empty() && coords.size() == 2)
    if (auto it = factorElements.find(std::make_tuple(v, coords[0], coords[1]));
        it != factorElements.end())
      return it->second;
  // An epilogue operand's element that ldmatrix read from shared memory
  // (readOperandFragments, Epilogue.cpp).
  if (!operandElements.empty() && coords.size() == 2)
    if (auto it = operandElements.find(std::make_tuple(v, coords[0], coords[1]));
        it != operandElements.end())
      return it->second;
  Operation *op = v.getDefiningOp();
  if (!op)
    return fn.emitError("a kernel argument is used as a tile"), failure();
  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (!dense || !dense.isSplat())
      return op->emitError("only splat tile constants are supported"), failure();
    return b.create<arith::ConstantOp>(loc, dense.getSplatValue<TypedAttr>()).getResult();
  }
  if (auto splat = dyn_cast<SplatOp>(op)) {
    // Once per epilogue (or promoted k-step): a scalar computed in the
    // mainloop (a tensor element read with ts::tensor::at) is not cached by
    // scalar().
    if (!reuseEpilogueValues)
      return scalar(splat.getValue());
    auto key = std::make_pair(op, Value());
    if (auto it = broadcastElements.find(key); it != broadcastElements.end())
      return it->second;
    auto e = scalar(splat.getValue());
    if (succeeded(e))
      broadcastElements[key] = *e;
    return e;
  }
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    SmallVector<Value> src;
    for (int64_t d : bc.getDims())
      src.push_back(coords[d]);
    // A 1-d tile broadcast over the other dimension: once per coordinate
    // while an epilogue reuses its values (KernelBuilder.h).
    if (!reuseEpilogueValues || src.size() != 1)
      return element(bc.getSrc(), src);
    auto key = std::make_pair(op, src[0]);
    if (auto it = broadcastElements.find(key); it != broadcastElements.end())
      return it->second;
    auto e = element(bc.getSrc(), src);
    if (succeeded(e))
      broadcastElements[key] = *e;
    return e;
  }
  if (auto tr = dyn_cast<TransOp>(op))
    return element(tr.getSrc(), {coords[1], coords[0]});
  if (isa<ReduceOp>(op))
    return op->emitError("the result of a reduction (ts::sum / ts::max / ts::amax) can only be "
                         "stored with reduce_into"),
           failure();
  if (auto load = dyn_cast<LoadOp>(op)) {
    if (gemm && load->getParentOp() == gemm->loop && !promoting)
      return load.emitError("tiles loaded in the mainloop can only feed the dot, or scale it "
                            "(acc += dot(a, b) * s)"),
             failure();
    return loadElement(load, coords);
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto in = element(cast.getSrc(), coords);
    if (failed(in))
      return failure();
    Type from = (*in).getType();
    Type to = cast.getType().getElementType();
    Type fromTessel = cast.getSrc().getType().getElementType();
    if (fromTessel == to)
      return *in;
    // fp8 elements are i8 bits here (LLVM has no fp8 type). Both directions
    // go through f32, which holds every fp8, f16 and bf16 value exactly, so
    // each conversion rounds once:
    //   fp8 -> f32:  cvt.rn.f16x2.{e4m3,e5m2}x2 (exact), cvt.f32.f16 (exact)
    //   f32 -> fp8:  cvt.rn.satfinite.{e4m3,e5m2}x2.f32, round to nearest
    //                even, out-of-range values to the largest finite value of
    //                the sign (+-448, +-57344), NaN to NaN.
    Value in32 = *in; // the source as f32 where fp8 is involved
    if (isFp8(fromTessel)) {
      in32 = fp8ToF32(fromTessel, *in);
      if (to.isF32())
        return in32;
      if (!isFp8(to))
        return b.create<arith::TruncFOp>(loc, to, in32).getResult();
      from = in32.getType(); // e4m3 <-> e5m2: on through f32
    }
    if (isFp8(to)) {
      Value f = from.isF32() ? in32 : b.create<arith::ExtFOp>(loc, b.getF32Type(), in32).getResult();
      // A pair with zero in the high byte, truncated.
      Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
      return b.create<arith::TruncIOp>(loc, b.getI8Type(), f32ToFp8Pair(to, f, zero)).getResult();
    }
    if (isa<FloatType>(from) && isa<FloatType>(to))
      return from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth()
                 ? b.create<arith::TruncFOp>(loc, to, *in).getResult()
                 : b.create<arith::ExtFOp>(loc, to, *in).getResult();
    if (isa<FloatType>(from))
      return b.create<arith::FPToSIOp>(loc, to, *in).getResult();
    return b.create<arith::SIToFPOp>(loc, to, *in).getResult();
  }
  if (op->getDialect() == ctx->getLoadedDialect<arith::ArithDialect>() ||
      op->getDialect() == ctx->getLoadedDialect<math::MathDialect>()) {
    auto fp8Tile = [](Type t) {
      auto s = dyn_cast<ShapedType>(t);
      return isFp8(s ? s.getElementType() : t);
    };
    if (llvm::any_of(op->getOperandTypes(), fp8Tile) || llvm::any_of(op->getResultTypes(), fp8Tile))
      return op->emitError() << "'" << op->getName()
                             << "' on fp8 values: fp8 tiles are storage and dot inputs; "
                                "tessel.cast them to f32 first",
             failure();
    SmallVector<Value> operands;
    for (Value o : op->getOperands()) {
      auto e = isa<ShapedType>(o.getType()) ? element(o, coords) : scalar(o);
      if (failed(e))
        return failure();
      operands.push_back(*e);
    }
    return cloneElementwise(op, operands);
  }
  return op->emitError() << "cannot lower '" << op->getName() << "' in a tile expression",
         failure();
}

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

/// Whether an operand tile whose rows start at `rowOffset` may have its box
/// clipped to the tensor's rows (Ring.cpp, "Clipped boxes"): the offset is a
/// tile index (a tessel.program_id or the tile scheduler's) times the tile's
/// `rows`, so that it is >= 0 and the rows left out lie past the tensor; and
/// every store but a reduction's (which masks by the operands' sizes) writes
/// at that offset, so the launch's size contracts tie its rows to the
/// operand's and no stored element comes from a row left out. Anything else
/// (a halo at m - 8, a constant offset, an output written elsewhere) keeps
/// TMA's zero fill.
bool KernelBuilder::clipsSafely(Value rowOffset, int64_t rows) {
  if (!tileIndexOf(rowOffset, rows))
    return false;
  bool everyStore = true;
  fn.walk([&](StoreOp store) {
    if (!store.getCombine() && !llvm::is_contained(store.getOffsets(), rowOffset))
      everyStore = false;
  });
  return everyStore;
}

LogicalResult KernelBuilder::buildSignature() {
  SmallVector<Type> types;
  SmallVector<Attribute> params; // for the runtime: "ptr:i", "size:i:d", "stride:i:d", "tma:..."
  auto ptrTy = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1);
  for (auto [i, argTy] : llvm::enumerate(fn.getArgumentTypes())) {
    if (argTy.isF32() || argTy.isInteger(32)) { // a ts::scalar: its value
      types.push_back(argTy);
      params.push_back(b.getStringAttr("scalar:" + std::to_string(i)));
      continue;
    }
    auto ref = dyn_cast<RefType>(argTy);
    if (!ref)
      return fn.emitError() << "kernel argument " << i << " must be a tensor or an f32 / i32 scalar";
    types.push_back(ptrTy);
    params.push_back(b.getStringAttr("ptr:" + std::to_string(i)));
    for (unsigned d = 0; d < ref.getRank(); ++d) {
      types.push_back(b.getI64Type());
      params.push_back(b.getStringAttr("size:" + std::to_string(i) + ":" + std::to_string(d)));
    }
    for (unsigned d = 0; d < ref.getRank(); ++d) {
      types.push_back(b.getI64Type());
      params.push_back(b.getStringAttr("stride:" + std::to_string(i) + ":" + std::to_string(d)));
    }
  }
  // Schedule `multistage` reads its operands through the pointers: no TMA.
  if (gemm && !multistage) {
    // In a cluster each CTA loads 1/clusterSize of the shared operand's tile
    // and multicasts it: B is shared along program_id 0, A along program_id 1.
    ArrayRef<int64_t> cluster = schedulerOp.getCluster();
    clusterX = cluster[0];
    clusterY = cluster[1];
    clusterSize = clusterX * clusterY;
    // Operand tiles: boxes of one swizzle row along the contiguous dimension
    // (OperandLayout.h) with the swizzle the plan chose; a cluster splits the
    // other one. The geometry must be the one the plan recorded.
    // (A dual GEMM: one B per dot, each its own tensor map; the wgmma reads
    // them side by side, bLayout.)
    bLoads.resize(asyncLoads.size() - 1);
    for (auto [i, load] : llvm::enumerate(asyncLoads)) {
      OperandLayout *l = i == 0 ? &aLayout : &bLoads[i - 1];
      auto layout =
          getOperandLayout(fn, *gemm, /*isB=*/i >= 1, load.getSwizzle(), i >= 1 ? i - 1 : 0);
      if (failed(layout))
        return failure();
      *l = *layout;
      int64_t cs = i == 0 ? clusterY : clusterX;
      if (load.getBox() != ArrayRef<int64_t>{l->boxInner(), l->outer / cs} ||
          load.getBoxes() != l->numBoxes() || load.getMnMajor() != l->mnMajor ||
          load.getMulticast() != cs)
        return load.emitError() << "the copy plan of operand " << (i ? "B" : "A")
                                << " does not match its layout: box " << l->boxInner() << "x"
                                << l->outer / cs << " x " << l->numBoxes() << ", multicast " << cs
                                << (l->mnMajor ? ", MN-major" : ", K-major");
      TmaParam t{l->argIndex, {l->boxInner(), l->outer / cs}, {}};
      t.swizzle = l->swizzle;
      int64_t rank = cast<RefType>(fn.getArgumentTypes()[l->argIndex]).getRank();
      if (l->contiguousDim != rank - 1)
        t.contiguousDim = l->contiguousDim;
      // A K-major tile that one CTA loads whole has its box rows clipped to
      // the tensor's rows (rounded up to 8) at launch: with M < BM (or N <
      // BN) TMA would otherwise fill the rows past the tensor with zeros,
      // and that costs as much as loading them (docs/small-m.md). The rows
      // left out only ever reach accumulator rows (columns) past M (N),
      // which no store writes and every reduction leaves out
      // (clipsSafely: the tile starts at a tile index times its rows, and
      // every store writes at that same offset).
      const GemmOperand &operand = i == 0 ? gemm->a : gemm->bs[i - 1];
      if (!l->mnMajor && cs == 1 && l->outer > 8 &&
          clipsSafely(operand.offsets()[l->lead + 1 - l->tileContiguousDim()], l->outer)) {
        t.clipDim = l->lead + 1 - l->tileContiguousDim();
        t.clipRowBytes = l->tileBytes() / l->outer;
      }
      tma.push_back(t);
    }
    bLayout = bLoads[0].sideBySide(static_cast<int64_t>(bLoads.size()));
    // Staged outputs: one 64-row x 128-byte box, 128B swizzle.
    for (StoreOp store : stagedStores()) {
      unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
      int64_t bytes = store.getRef().getType().getElementBytes();
      tma.push_back({arg, {128 / bytes, 64}, {}, store});
    }
    // Prefetched epilogue operands: the whole BM x BN tile as one box, no
    // swizzle (it never reaches shared memory).
    for (LoadOp load : prefetchedLoads()) {
      auto shape = cast<RankedTensorType>(load.getResult().getType()).getShape();
      TmaParam t{cast<BlockArgument>(load.getRef()).getArgNumber(), {shape[1], shape[0]}, {}};
      t.prefetch = load;
      t.swizzle = 0;
      tma.push_back(t);
    }
    // Epilogue operands read through shared memory: the staging chunks'
    // boxes, 64 rows x 128 bytes, 128B swizzle.
    // (Also the one that goes chunk by chunk through the staging buffers.)
    SmallVector<LoadOp> operandLoads = stagedOperandLoads();
    LoadOp chunked = chunkOperandLoad();
    if (chunked)
      operandLoads.push_back(chunked);
    for (LoadOp load : operandLoads) {
      int64_t bytes = load.getRef().getType().getElementBytes();
      TmaParam t{cast<BlockArgument>(load.getRef()).getArgNumber(), {128 / bytes, 64}, {}};
      t.operand = load;
      t.perChunk = load == chunked;
      tma.push_back(t);
    }
    // "tma:<arg>:<box inner>x<box outer>:<swizzle bytes>[:c<contiguous dim>][:r]";
    // ":c" only when the tensor's unit-stride dimension is not its last, ":r"
    // when the box's rows are clipped to the tensor's (clippedRows).
    for (TmaParam &t : tma) {
      types.push_back(LLVM::LLVMPointerType::get(ctx));
      std::string text = (t.store      ? "tmastore:"
                          : t.prefetch ? "tmaprefetch:"
                          : t.operand  ? "tmaoperand:"
                                       : "tma:") +
                         std::to_string(t.arg) + ":" +
                         std::to_string(t.box[0]) + "x" + std::to_string(t.box[1]) + ":" +
                         std::to_string(t.store ? 128 : t.swizzle);
      if (t.contiguousDim >= 0)
        text += ":c" + std::to_string(t.contiguousDim);
      if (t.clipDim >= 0)
        text += ":r";
      params.push_back(b.getStringAttr(text));
    }
    for (TmaParam &t : tma)
      if (t.optional()) {
        types.push_back(b.getI64Type());
        params.push_back(b.getStringAttr("tmaok:" + std::to_string(t.arg)));
      }
  }
  // Persistent schedules get the user's grid; the runtime launches about one
  // CTA per SM instead.
  unsigned numGridParams = persistent ? 3 : 0;
  for (unsigned d = 0; d < numGridParams; ++d) {
    types.push_back(b.getI64Type());
    params.push_back(b.getStringAttr("grid:" + std::to_string(d)));
  }
  // Stream-K: the workspace (StreamK.cpp), "workspace:<bytes of one slot>".
  // (hopper.tile_scheduler's verifier: stream-K is persistent, 1x1 clusters.)
  bool streamK = gemm && schedulerOp.getStreamK();
  if (streamK) {
    auto tile = sched.getTile();
    types.push_back(ptrTy);
    // (One slot holds a tile's accumulators: both of a dual GEMM.)
    params.push_back(b.getStringAttr("workspace:" +
                                     std::to_string(tile[0] * gemm->accumulatorN() * 4)));
  }
  b.setInsertionPoint(fn);
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types);
  kernel = b.create<LLVM::LLVMFuncOp>(fn.getLoc(), fn.getSymName(), fnTy);
  kernel->setAttr("nvvm.kernel", b.getUnitAttr());
  kernel->setAttr("tessel.params", b.getArrayAttr(params));
  unsigned numUsable = llvm::count_if(tma, [](const TmaParam &t) { return t.optional(); });
  unsigned firstTma = types.size() - (streamK ? 1 : 0) - numGridParams - numUsable - tma.size();
  for (unsigned i = 0; i < tma.size(); ++i) {
    unsigned p = firstTma + i;
    kernel.setArgAttr(p, "llvm.byval", TypeAttr::get(LLVM::LLVMArrayType::get(b.getI8Type(), 128)));
    kernel.setArgAttr(p, "llvm.align", b.getI64IntegerAttr(64));
    kernel.setArgAttr(p, "nvvm.grid_constant", b.getUnitAttr());
  }
  Block *entry = kernel.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  unsigned p = 0;
  for (Type argTy : fn.getArgumentTypes()) {
    auto ref = dyn_cast<RefType>(argTy);
    if (!ref) { // a scalar (scalar() reads its parameter); refs stay indexed by argument
      refs.emplace_back();
      ++p;
      continue;
    }
    RefParams r;
    // fp8 lives in memory (and in an epilogue's values) as i8 bits.
    r.elementType = isFp8(ref.getElementType()) ? b.getI8Type() : ref.getElementType();
    r.ptr = entry->getArgument(p++);
    for (unsigned d = 0; d < ref.getRank(); ++d)
      r.sizes.push_back(entry->getArgument(p++));
    for (unsigned d = 0; d < ref.getRank(); ++d)
      r.strides.push_back(entry->getArgument(p++));
    refs.push_back(r);
  }
  for (TmaParam &t : tma)
    t.desc = entry->getArgument(p++);
  for (TmaParam &t : tma)
    if (t.optional())
      t.usable = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, entry->getArgument(p++),
                                         i64(0));
  for (unsigned d = 0; d < numGridParams; ++d)
    gridParams.push_back(b.create<arith::TruncIOp>(loc, b.getI32Type(), entry->getArgument(p++)));
  if (streamK)
    workspace = entry->getArgument(p++);
  if (persistent)
    kernel->setAttr("tessel.persistent", b.getUnitAttr());
  if (clusterSize > 1) {
    // .reqnctapercluster: the persistent grid is 1-d, clusters of clusterSize.
    auto dims = b.getDenseI32ArrayAttr({(int32_t)clusterSize, 1, 1});
    kernel->setAttr("nvvm.cluster_dim", dims);
    kernel->setAttr("tessel.cluster", dims);
    clusterRank = ptx("mov.u32 $0, %cluster_ctarank;", "=r", {}, b.getI32Type());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Stores over a layout
//===----------------------------------------------------------------------===//

LogicalResult KernelBuilder::emitStores(function_ref<LogicalResult(StoreOp)> perStore) {
  for (Operation &op : fn.getBody().front()) {
    if (auto store = dyn_cast<StoreOp>(op)) {
      if (failed(perStore(store)))
        return failure();
    } else if (isa<scf::ForOp>(op) && (!gemm || &op != gemm->loop.getOperation())) {
      return op.emitError("loops other than the GEMM mainloop are not supported yet");
    }
  }
  for (Operation &op : fn.getBody().front())
    for (Region &r : op.getRegions())
      if (gemm && &op != gemm->loop.getOperation() && !r.empty() &&
          !isa<hopper::WarpSpecializeOp>(op))
        return op.emitError("nested regions are not supported outside the mainloop");
  return success();
}

LogicalResult KernelBuilder::buildElementwise() {
  kernel->setAttr("nvvm.reqntid", b.getDenseI32ArrayAttr({(int32_t)threads, 1, 1}));
  return emitStores([&](StoreOp store) -> LogicalResult {
    if (store.getCombine())
      return emitElementwiseReduce(store);
    auto ty = cast<RankedTensorType>(store.getValue().getType());
    int64_t numel = ty.getNumElements();
    for (int64_t r = 0; r * threads < numel; ++r) {
      // Element e = r * threads + tid; row-major coordinates in the tile.
      Value e = b.create<arith::AddIOp>(loc, tid, i32(r * threads));
      Value inTile = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e, i32(numel));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, inTile, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      // The element is evaluated in this one block: each tile element it reads
      // is loaded once however often the expression uses it (ts::gelu(x) reads
      // x three times).
      EpilogueReuse reuse(*this);
      SmallVector<Value> coords(ty.getRank());
      int64_t stride = 1;
      for (int64_t d = ty.getRank() - 1; d >= 0; --d) {
        Value q = b.create<arith::DivUIOp>(loc, e, i32(stride));
        coords[d] = b.create<arith::RemUIOp>(loc, q, i32(ty.getDimSize(d)));
        stride *= ty.getDimSize(d);
      }
      if (failed(storeElement(store, coords)))
        return failure();
    }
    return success();
  });
}

//===----------------------------------------------------------------------===//
// Schedule `tma`
//===----------------------------------------------------------------------===//



LogicalResult KernelBuilder::computeTripCount() {
  // nk = max(0, ceil((ub - lb) / step)), from the program ids set now.
  auto ubS = scalar(gemm->loop.getUpperBound());
  auto lbS = scalar(gemm->loop.getLowerBound());
  auto stepS = scalar(gemm->loop.getStep());
  if (failed(ubS) || failed(lbS) || failed(stepS))
    return failure();
  lb = *lbS;
  step = *stepS;
  Value span = b.create<arith::SubIOp>(loc, *ubS, lb);
  Value ceil = b.create<arith::DivSIOp>(
      loc, b.create<arith::AddIOp>(loc, span, b.create<arith::SubIOp>(loc, step, i32(1))), step);
  nk = b.create<arith::MaxSIOp>(loc, ceil, i32(0));
  return success();
}

LogicalResult KernelBuilder::setupGemm() {
  auto tile = sched.getTile();
  BM = tile[0];
  outBN = tile[1];
  BN = gemm->accumulatorN();
  BK = tile[2];
  stages = ringOp.getStages();
  elt = cast<RankedTensorType>(gemm->dot.getA().getType()).getElementType();
  eltB = cast<RankedTensorType>(gemm->dot.getB().getType()).getElementType();
  eltBytes = elt.getIntOrFloatBitWidth() / 8;
  aBytes = BM * BK * eltBytes;
  bBytes = BN * BK * eltBytes; // every dot's B tile
  // The plan's roles and shared-memory map (tessel-warp-specialize,
  // tessel-allocate-resources).
  consumers = wsOp ? wsOp.getConsumers() : 0;
  threads = resourcesOp.getThreads();
  smemBytes = resourcesOp.getSmemBytes();
  kernel->setAttr("nvvm.reqntid", b.getDenseI32ArrayAttr({(int32_t)threads, 1, 1}));
  // One CTA per SM: lets ptxas use the whole register file, and makes ptxas
  // honour setmaxnreg (it ignores it without .minnctapersm or .maxnreg: C7508).
  kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));

  Value isLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, i32(0));
  // Rule 1: barriers initialised by thread 0, fenced, then a CTA barrier.
  // A stage is released by every warpgroup that read it (emptyArrivals:
  // tessel-allocate-resources' rule 3).
  // (Schedule `multistage` has no mbarriers: Lowering/CpAsyncRing.cpp.)
  // What the roles arrive per phase, for tessel-verify-rings (rule R6): one
  // arrive_expect_tx per full phase; on an empty barrier one arrival per
  // consumer warpgroup that read the stage (pingpong: the one whose tile it
  // was), from every CTA of the cluster. Derived from the roles, not from
  // hopper.resources' `arrivals`, so that an edited plan that would hang is
  // caught.
  if (!multistage) {
    int64_t readers = (pingpong ? 1 : consumers) * clusterSize;
    // (The epilogue operands' barriers, ring "operand": one arrive_expect_tx
    // of the consumer's thread 0 per tile.)
    SmallVector<NamedAttribute> arrivals{b.getNamedAttr("full", b.getI64IntegerAttr(1)),
                                         b.getNamedAttr("empty", b.getI64IntegerAttr(readers))};
    if (!stagedOperandLoads().empty() || chunkOperandLoad())
      arrivals.push_back(b.getNamedAttr("operand", b.getI64IntegerAttr(1)));
    kernel->setAttr("tessel.ring_arrivals", b.getDictionaryAttr(arrivals));
  }
  if (!multistage) {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isLeader, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (int64_t s = 0; s < stages; ++s) {
      b.create<hopper::MBarrierInitOp>(loc, smemAddr(fullBarOff + 8 * s), i32(1), b.getStringAttr("full"));
      b.create<hopper::MBarrierInitOp>(loc, smemAddr(emptyBarOff + 8 * s), i32(emptyArrivals),
                                       b.getStringAttr("empty"));
    }
    if (!stagedOperandLoads().empty() || chunkOperandLoad())
      for (int64_t c = 0; c < consumers; ++c)
        b.create<hopper::MBarrierInitOp>(loc, smemAddr(operandFullOff + 8 * c), i32(1),
                                         b.getStringAttr("operand"));
    b.create<hopper::FenceMBarrierInitOp>(loc);
    for (TmaParam &t : tma)
      b.create<hopper::PrefetchTensorMapOp>(loc, t.desc);
    b.setInsertionPointAfter(ifOp);
    // Rule C1: no CTA multicasts into, or arrives on, a peer's barriers
    // before the peer initialised them.
    clusterSync();
  }

  // A trip count per tile: a persistent walk carries the ring position as a
  // running sum (forEachUnit), which neither the stream-K split (one count
  // for every tile) nor a cluster's pair (one k-walk for two tiles) can
  // (tessel-select-schedule rule 9; an edited plan may say otherwise).
  tileTrips = tripCountDependsOnTile(gemm->loop);
  if (tileTrips && persistent && (schedulerOp.getStreamK() || clusterSize > 1))
    return gemm->loop.emitError("the mainloop's bounds depend on the tile: the stream-K split and "
                                "a CTA cluster need one trip count for every tile (run "
                                "tessel-select-schedule, which checks its rules)");
  if (failed(computeTripCount()))
    return failure();
  for (unsigned i : gemm->accIndices)
    accLoopResults.push_back(gemm->loop.getResult(i));
  return success();
}








LogicalResult KernelBuilder::buildGemm() {
  if (failed(setupGemm()))
    return failure();
  // The plan's shape, not the schedule's name, picks the kernel's structure.
  if (multistage)
    return lowerAllWarps();
  return lowerWarpSpecialize();
}

LogicalResult KernelBuilder::readPlan() {
  auto need = [&](auto &op, StringRef pass) -> LogicalResult {
    using OpT = std::remove_reference_t<decltype(op)>;
    auto found = plan::require<OpT>(fn, pass);
    if (failed(found))
      return failure();
    op = *found;
    return success();
  };
  if (failed(need(schedulerOp, "tessel-materialize-tile-scheduler")) ||
      failed(need(ringOp, "tessel-insert-async-copies")) ||
      failed(need(mmaOp, "tessel-schedule-mma")) ||
      failed(need(epilogueOp, "tessel-lower-epilogue")) ||
      failed(need(resourcesOp, "tessel-allocate-resources")))
    return failure();
  multistage = ringOp.getCopy() == "cp.async";
  if (!multistage && failed(need(wsOp, "tessel-warp-specialize")))
    return failure();
  SmallVector<GemmOperand> operands = {gemm->a};
  llvm::append_range(operands, gemm->bs);
  for (auto [i, op] : llvm::enumerate(operands)) {
    auto load = dyn_cast<hopper::AsyncLoadOp>(op.load);
    if (!load || load.getInto() != ringOp.getRing() ||
        load.getSlot() != static_cast<int64_t>(i))
      return op.load->emitError() << "operand " << (i ? "B" : "A")
                                  << " of the dot must be a hopper.async_load into slot " << i
                                  << " of ring '" << ringOp.getRing()
                                  << "': run tessel-insert-async-copies first";
    asyncLoads.push_back(load);
  }
  numAccs = gemm->numDots();
  if (mmaOp.getAccumulators().value_or(1) != numAccs)
    return mmaOp.emitError() << "the mainloop has " << numAccs << " dots but the mma schedule "
                             << mmaOp.getAccumulators().value_or(1) << " accumulators";
  if (numAccs > 1 && mmaOp.getShape()[1] != gemm->accumulatorN())
    return mmaOp.emitError() << "a dual GEMM's wgmma must be N = 2 x BN = "
                             << gemm->accumulatorN() << ", got " << mmaOp.getShape()[1];
  // The operands' element width (setupGemm's eltBytes, which runs after the plan is read).
  const int64_t bits =
      cast<RankedTensorType>(gemm->dot.getA().getType()).getElementType().getIntOrFloatBitWidth();
  persistent = schedulerOp.getKind() == "persistent";
  inlineProducer = wsOp && wsOp.getProducer() == "inline";
  pingpong = wsOp && wsOp.getOrder() == "pingpong";
  rowBlocks = mmaOp.getRowBlocks();
  waitDepth = mmaOp.getWaitDepth();
  // The tile, the tile walk and the threads must be those of this program and of these roles
  // (each edit below compiled, without a word, a kernel that skips tiles, columns or k-steps, or
  // launches warpgroups the roles do not have; found by reading the builder after
  // scripts/fuzz-compile --mutate):
  //  - the schedule's tile is the dot's (BM x BN, step BK): the epilogue stores tile[1] columns
  //    and the k-loop steps by the traced loop's step;
  //  - only a producer warpgroup walks tiles: tma and multistage compute one tile per CTA, so a
  //    persistent launch (min(tiles, SMs) CTAs) would leave tiles unwritten;
  //  - the grouped raster divides by raster_group (0 means program ids from %ctaid, for the
  //    one-tile-per-CTA schedules only);
  //  - threads are 128 per warpgroup of the roles (multistage: its warp grid, lowerAllWarps).
  {
    ArrayRef<int64_t> tile = sched.getTile();
    if (tile.size() != 3 || tile[0] != gemm->tileM || tile[1] != gemm->tileN || tile[2] != gemm->tileK)
      return schedulerOp.emitError()
             << "the schedule's tile " << (tile.size() == 3 ? std::to_string(tile[0]) + "x" +
                                                                 std::to_string(tile[1]) + "x" +
                                                                 std::to_string(tile[2])
                                                           : std::string("(not 3 sizes)"))
             << " is not the dot's " << gemm->tileM << "x" << gemm->tileN << " tile with step "
             << gemm->tileK;
    const bool walker = wsOp && wsOp.getProducer() == "warpgroup";
    if (persistent && !walker)
      return schedulerOp.emitError()
             << "a persistent tile scheduler needs a producer warpgroup to walk the tiles "
                "(schedules tma and multistage compute one tile per CTA)";
    if ((persistent || multistage) && schedulerOp.getRasterGroup() < 1)
      return schedulerOp.emitError()
             << "raster_group must be at least 1 for a persistent tile scheduler or a multistage "
                "kernel (0 means program ids from %ctaid, for one tile per CTA), got "
             << schedulerOp.getRasterGroup();
    // hopper.epilogue records what the tile scheduler (the stream-K fixup) and the roles (two
    // staging buffers per consumer of a producer warpgroup) decided, and the builder follows
    // those: an edit of it alone would change nothing, so it is refused, naming what to edit.
    const StringRef fixup = schedulerOp.getStreamK() ? "stream_k" : "none";
    const int64_t staging = walker ? 2 : 0;
    if (epilogueOp.getFixup() != fixup || epilogueOp.getStagingBuffers() != staging)
      return epilogueOp.emitError()
             << "hopper.epilogue records the tile scheduler's and the roles' decisions "
                "(staging_buffers "
             << staging << " fixup \"" << fixup
             << "\" here): edit hopper.tile_scheduler or hopper.warp_specialize instead";
    if (!multistage) {
      const int64_t want = ((walker ? 1 : 0) + wsOp.getConsumers()) * 128;
      if (resourcesOp.getThreads() != want)
        return resourcesOp.emitError()
               << "threads " << resourcesOp.getThreads() << " are not the roles' "
               << (walker ? 1 : 0) + wsOp.getConsumers() << " warpgroups x 128 = " << want;
    }
  }
  if ((!multistage && mmaOp.getInstr() != "wgmma") || (multistage && mmaOp.getInstr() != "mma.sync"))
    return mmaOp.emitError() << "a " << ringOp.getCopy() << " ring feeds "
                             << (multistage ? "mma.sync" : "wgmma") << ", not " << mmaOp.getInstr();
  // An edited plan must still describe this tile (each of these compiled to a wrong kernel or
  // crashed before): wgmma m64 n(accumulator N) k(32 bytes), BK / k of them per stage, the row
  // blocks a warpgroup of this schedule holds, and at most one group in flight (rule W1 releases
  // the previous stage after wait_group 1: a deeper wait would release a stage still being read).
  if (!multistage) {
    ArrayRef<int64_t> shape = mmaOp.getShape();
    ArrayRef<int64_t> tile = sched.getTile();
    const int64_t k = 256 / bits, n = gemm->accumulatorN();
    const int64_t blocks = consumerRowBlocks(sched.getKind(), tile[0]);
    if (shape[1] != n || shape[2] != k || mmaOp.getKSteps() * k != tile[2])
      return mmaOp.emitError() << "a " << tile[0] << "x" << tile[1] << "x" << tile[2] << " tile of "
                               << bits << "-bit operands takes wgmma shape [64, " << n << ", " << k
                               << "] with k_steps " << tile[2] / k << ", got [" << shape[0] << ", "
                               << shape[1] << ", " << shape[2] << "] with k_steps " << mmaOp.getKSteps();
    if (rowBlocks != blocks)
      return mmaOp.emitError() << "schedule '" << stringifyScheduleKind(sched.getKind())
                               << "' holds " << blocks << " row block(s) of 64 per warpgroup for BM = "
                               << tile[0] << ", got row_blocks " << rowBlocks;
    if (waitDepth > 1)
      return mmaOp.emitError() << "wait_depth must be 0 or 1 (a stage is released once the wgmma "
                                  "group after it was issued and the one reading it retired), got "
                               << waitDepth;
  }
  // What the kernel uses of the resources.
  DictionaryAttr offsets = resourcesOp.getOffsets();
  auto offset = [&](StringRef name) -> FailureOr<int64_t> {
    if (auto v = offsets.getAs<IntegerAttr>(name))
      return v.getInt();
    return resourcesOp.emitError() << "has no shared-memory offset '" << name << "'", failure();
  };
  auto a = offset("a"), bo = offset("b");
  if (failed(a) || failed(bo))
    return failure();
  if (*a != 0)
    return resourcesOp.emitError("the ring's A slots must start at offset 0");
  bOff = *bo;
  // Each epilogue operand's path (tessel-lower-epilogue rules 6-8): one the builder has, on a
  // tile it can build it for (an edited plan may say otherwise; rule 7 would otherwise read the
  // wrong columns).
  {
    const bool producerWarp = !multistage && wsOp && wsOp.getProducer() == "warpgroup";
    const int64_t tileM = sched.getTile()[0], tileN = sched.getTile()[1];
    int64_t chunked = 0;
    for (Operation &op : fn.getBody().front()) {
      auto load = dyn_cast<LoadOp>(op);
      auto attr = load ? load->getAttrOfType<StringAttr>("hopper.prefetch") : StringAttr();
      if (!attr)
        continue;
      StringRef path = attr.getValue();
      if (!llvm::is_contained({"tma_smem", "tma_chunk", "tma_l2"}, path))
        return load.emitError() << "unknown epilogue operand path '" << path
                                << "' (expected tma_smem, tma_chunk or tma_l2): run tessel-lower-epilogue";
      auto ty = cast<RankedTensorType>(load.getResult().getType());
      RefType ref = load.getRef().getType();
      const unsigned bits = ref.getElementType().getIntOrFloatBitWidth();
      const bool tile = ty.getRank() == 2 && ty.getDimSize(0) == tileM && ty.getDimSize(1) == tileN &&
                        (ref.getRank() == 2 || ref.getRank() == 3) && isa<FloatType>(ref.getElementType()) &&
                        (bits == 16 || (bits == 32 && path == "tma_l2")) &&
                        (path == "tma_l2" || (tileN * bits / 8) % 128 == 0);
      if (!producerWarp || !tile)
        return load.emitError() << "epilogue operand path '" << path << "' needs a warp-specialized schedule and a "
                                << tileM << "x" << tileN << " tile of 16-bit floats (or 32-bit for tma_l2) from a "
                                << "2-d or 3-d tensor: run tessel-lower-epilogue, which checks its rules";
      if (path != "tma_chunk")
        continue;
      bool ok = ++chunked == 1 && stagedOperandLoads().empty();
      for (Operation &user : fn.getBody().front())
        if (auto store = dyn_cast<StoreOp>(user); store && readsResultOf(store.getValue(), load))
          ok &= storePath(store) == "tma_store" &&
                store.getRef().getType().getElementType().getIntOrFloatBitWidth() == 16;
      if (!ok)
        return load.emitError("epilogue operand path 'tma_chunk' is one operand of a kernel without "
                              "'tma_smem' operands, read only by stores of 16-bit elements through staging "
                              "buffers (path 'tma_store'): run tessel-lower-epilogue, which checks its rules");
    }
  }
  if (!multistage) {
    auto staging = offset("staging"), full = offset("full"), empty = offset("empty");
    auto arrivals = resourcesOp.getArrivals().getAs<IntegerAttr>("empty");
    if (failed(staging) || failed(full) || failed(empty) || !arrivals)
      return resourcesOp.emitError("needs the staging, full and empty offsets and the empty "
                                   "barriers' arrivals of a TMA ring");
    stagingOff = *staging;
    fullBarOff = *full;
    emptyBarOff = *empty;
    emptyArrivals = arrivals.getInt();
    if (!stagedOperandLoads().empty() || chunkOperandLoad()) {
      auto ops = offset("operands"), opFull = offset("operand_full");
      if (failed(ops) || failed(opFull))
        return failure();
      operandsOff = *ops;
      operandFullOff = *opFull;
    }
  }
  // The ring against the layout tessel-allocate-resources made for it (planSharedMemory): an
  // edited stage count under the old layout would put the last stages' slots over the next region
  // or past the end of shared memory, and a huge one would unroll the barriers' setup for ever.
  const int64_t operandBytes = bits / 8;
  int64_t epilogueOperands = 0;
  for (LoadOp load : stagedOperandLoads())
    epilogueOperands += epilogueOperandBytes(
        sched.getKind(), sched.getTile(), load.getRef().getType().getElementBytes());
  const bool chunkOperand = bool(chunkOperandLoad());
  const SharedMemoryMap smem = planSharedMemory(sched.getKind(), gemm->ringTile(), operandBytes,
                                                ringOp.getStages(), epilogueOperands, chunkOperand);
  if (!smem.fits())
    return ringOp.emitError() << ringOp.getStages() << " stages of " << smem.stageBytes
                              << " bytes do not fit in shared memory (" << smem.budget
                              << " bytes for the ring and the staging buffers)";
  if (ringOp.getStageBytes() != smem.stageBytes)
    return ringOp.emitError() << "stage_bytes " << ringOp.getStageBytes() << " is not the "
                              << smem.stageBytes << " bytes of one stage's A and B tiles";
  if (*bo != smem.b || resourcesOp.getSmemBytes() != smem.bytes ||
      (!multistage &&
       (stagingOff != smem.staging || fullBarOff != smem.full || emptyBarOff != smem.empty ||
        ((epilogueOperands || chunkOperand) &&
         (operandsOff != smem.operands || operandFullOff != smem.operandFull)))))
    return resourcesOp.emitError()
           << "the shared-memory layout is not the one of the ring's " << ringOp.getStages()
           << " stages of " << smem.stageBytes << " bytes (smem_bytes " << smem.bytes << ", b "
           << smem.b
           << (multistage ? std::string()
                          : ", staging " + std::to_string(smem.staging) + ", full " +
                                std::to_string(smem.full) + ", empty " +
                                std::to_string(smem.empty))
           << "): run tessel-allocate-resources again after editing the ring";
  // Each store's path (tessel-lower-epilogue): one the builder has, and "reduce_atomic" exactly
  // for the {combine} stores of a tessel.reduce (an edited plan may say otherwise).
  for (Operation &op : fn.getBody().front()) {
    auto store = dyn_cast<StoreOp>(op);
    if (!store)
      continue;
    StringRef path = storePath(store);
    if (!llvm::is_contained({"tma_store", "registers", "register_pairs", "fragments", "reduce_atomic"},
                            path))
      return store.emitError() << "unknown store path '" << path
                               << "' (expected tma_store, registers, register_pairs, fragments or "
                                  "reduce_atomic): run tessel-lower-epilogue";
    const bool reduction = store.getCombine() && store.getValue().getDefiningOp<ReduceOp>();
    if ((path == "reduce_atomic") != reduction)
      return store.emitError() << "store path 'reduce_atomic' is the path of a {combine} store of a "
                                  "tessel.reduce, and the only one: got '"
                               << path << "' for " << (reduction ? "one" : "another store");
    if (multistage != (path == "fragments") && path != "reduce_atomic")
      return store.emitError() << "store path '" << path << "' is not built for a "
                               << (multistage ? "multistage" : "wgmma") << " kernel (multistage "
                                  "stores take 'fragments', the others do not)";
  }
  DictionaryAttr ids = resourcesOp.getBarriers();
  // Named barriers: ids 1..15 (0 is the whole CTA's bar.sync 0), none shared between the
  // consumers' epilogues, pingpong's turns and cooperative stream-K's barrier (each is used with
  // its own thread count; a shared id deadlocks or is undefined), consecutive within a kind (the
  // builder adds the consumer's index to the first).
  {
    llvm::SmallDenseSet<int64_t> seen;
    for (NamedAttribute kind : ids) {
      auto list = dyn_cast<DenseI64ArrayAttr>(kind.getValue());
      if (!list)
        return resourcesOp.emitError() << "barriers." << kind.getName().getValue()
                                       << " must be an array of ids";
      for (auto [i, id] : llvm::enumerate(list.asArrayRef())) {
        if (id < 1 || id > 15 || !seen.insert(id).second || id != list[0] + static_cast<int64_t>(i))
          return resourcesOp.emitError()
                 << "named barrier ids must be distinct, in [1, 15] and consecutive within a kind "
                    "(0 is the CTA's bar.sync 0): barriers."
                 << kind.getName().getValue() << " has " << id;
      }
    }
  }
  if (auto c = ids.getAs<DenseI64ArrayAttr>("consumer"); c && !c.empty())
    consumerBarrierBase = c[0];
  if (auto t = ids.getAs<DenseI64ArrayAttr>("turn"); t && !t.empty())
    turnBarrierBase = t[0];
  if (auto k = ids.getAs<DenseI64ArrayAttr>("stream_k"); k && !k.empty())
    streamKBarrierId = k[0];
  return success();
}

/// The path tessel-lower-epilogue chose for `store` ("" when none).
StringRef KernelBuilder::storePath(StoreOp store) {
  auto path = store->getAttrOfType<StringAttr>("hopper.store");
  return path ? path.getValue() : StringRef();
}

LogicalResult KernelBuilder::build() {
  loc = fn.getLoc();
  if (gemm && failed(readPlan()))
    return failure();
  if (failed(buildSignature()))
    return failure();
  tid = b.create<NVVM::ThreadIdXOp>(loc, b.getI32Type());
  // Dynamic shared memory: one extern base, 1024-aligned (128B swizzle atoms).
  Value base = b.create<LLVM::AddressOfOp>(loc, LLVM::LLVMPointerType::get(ctx, 3), kSmemSymbol);
  smemBase32 = b.create<LLVM::PtrToIntOp>(loc, b.getI32Type(), base);
  // Scalars of the prologue first, so that they dominate everything after
  // (the tile scheduler's program ids too, where they are first used).
  for (Operation &op : fn.getBody().front())
    if (op.getNumResults() == 1 && !isa<ShapedType>(op.getResult(0).getType()) &&
        op.getNumRegions() == 0 && failed(scalar(op.getResult(0))))
      return failure();
  if (schedulerOp)
    for (Value id : schedulerOp.getResults())
      if (failed(scalar(id)))
        return failure();
  LogicalResult r = gemm ? buildGemm() : buildElementwise();
  if (failed(r))
    return failure();
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
  kernel->setAttr("tessel.threads", b.getI32IntegerAttr(threads));
  kernel->setAttr("tessel.shared_bytes", b.getI32IntegerAttr(smemBytes));
  if (sched)
    kernel->setAttr("tessel.schedule", sched);
  return success();
}

} // namespace mlir::tessel::lowering

namespace {

using mlir::tessel::lowering::KernelBuilder;
using mlir::tessel::lowering::kSmemSymbol;

struct LowerToNVVM : mlir::tessel::impl::TesselLowerToNVVMBase<LowerToNVVM> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(TesselDialect::getKernelAttrName()))
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    OpBuilder b(module.getBodyRegion());
    if (!module.lookupSymbol(kSmemSymbol))
      b.create<LLVM::GlobalOp>(module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                               /*isConstant=*/false, LLVM::Linkage::External, kSmemSymbol,
                               Attribute{}, /*alignment=*/1024, /*addrSpace=*/3);
    for (func::FuncOp fn : kernels) {
      auto match = matchGemm(fn);
      if (failed(match))
        return signalPassFailure();
      auto sched = fn->getAttrOfType<ScheduleAttr>(TesselDialect::getScheduleAttrName());
      if (*match && !sched) {
        fn.emitError("GEMM kernel has no schedule: run tessel-select-schedule first");
        return signalPassFailure();
      }
      KernelBuilder kb(fn, *match, sched, boundedWaits);
      if (failed(kb.build()))
        return signalPassFailure();
      fn.erase();
    }
  }
};

} // namespace
