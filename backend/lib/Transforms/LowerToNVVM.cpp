//===- LowerToNVVM.cpp - build the sm_90a kernel of a tessel kernel -------===//
//
// Replaces each `tessel.kernel` func.func by an `llvm.func` kernel written in
// nvvm / llvm / scf / arith ops on LLVM-compatible types (i32 for index math,
// i64 for addresses), ready for convert-scf-to-cf + convert-to-llvm.
//
// Kernel parameters (recorded in `tessel.params` for the runtime), in order:
//   for every argument i:  ptr_i (.u64), size_i_0.. (.u64), stride_i_0.. (.u64);
//                          a scalar argument (ts::scalar, f32 / i32): its value (.f32 / .u32)
//   then one CUtensorMap per TMA-loaded operand, as a __grid_constant__
//   `.param .align 64 .b8 [128]` (llvm.byval + nvvm.grid_constant).
//
// Schedule `tma` (CUTLASS KernelTma), for W = BM/64 warpgroups:
//
//   smem:  A[stages][BM x BK] | B[stages][BN x BK] | full[stages] | empty[stages]
//          (one dynamic base, 1024-aligned: every tile is a multiple of 1 KiB so
//           each stays aligned for the 128B swizzle). Each tile is laid out by
//           OperandLayout.h: K-major or MN-major (wgmma imm-trans 1), cut into
//           TMA boxes one swizzle row (128/64/32 B, or 16 B unswizzled) wide.
//   thread 0:  init full[s] (count 1), empty[s] (count W); fence; bar.sync
//   thread 0:  fill stages 0..min(stages, nk)-1 (expect_tx + the TMA boxes of A, B)
//   loop j in [0, nk):                        s = j % stages, ph = (j / stages) & 1
//     all:      wait full[s] @ ph
//     all:      wgmma.fence; BK/16 x wgmma m64nBNk16 (warpgroup w: rows 64w..64w+63)
//               commit; wait_group 1          -> the group of tile j-1 is done
//     w-leader: arrive empty[(j-1) % stages]  (j > 0)
//     thread 0: if j-1+stages < nk: wait empty[(j-1) % stages], refill it with
//               tile j-1+stages
//   wait_group 0; epilogue on the accumulator fragments.
//
// Ordering rules of the asynchronous parts:
//   1. Barriers are initialised by one thread and fenced (fence.mbarrier_init)
//      before the CTA barrier; nobody touches them before that barrier.
//   2. A stage is refilled only after its empty barrier completed, i.e. after
//      every warpgroup's wgmma that read it retired (wait_group 1 of the next
//      tile); the TMA refill is issued after that wait by the same thread.
//   3. Consumers read a stage only after its full barrier flipped to the
//      parity of that fill, which the TMA transaction count completes.
//   4. Accumulators are read (epilogue) only after wait_group 0.
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

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <limits>
#include <map>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLOWERTONVVM
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

#include "KernelBuilder.h"
#include "PtxEmitter.h"
#include "SchedulePlan.h"

namespace mlir::tessel::lowering {

Value KernelBuilder::ptx(StringRef code, StringRef constraints, ValueRange operands,
                         Type result) {
  return emitPtx(b, loc, code, constraints, operands, result);
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

FailureOr<Value> KernelBuilder::scalar(Value v, Value ivRepl) {
  if (gemm && v == gemm->loop.getInductionVar())
    return ivRepl ? ivRepl : (fn.emitError("loop index used outside the mainloop"), Value());
  bool inLoop = gemm && gemm->loop->isAncestor(v.getParentBlock()->getParentOp());
  if (!inLoop)
    if (auto it = scalars.find(v); it != scalars.end())
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

FailureOr<Value> KernelBuilder::loadElement(LoadOp load, ArrayRef<Value> coords) {
  auto offsetsOrFail = offsetScalars(load.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  SmallVector<Value> offsets = std::move(*offsetsOrFail);
  unsigned arg = cast<BlockArgument>(load.getRef()).getArgNumber();
  auto [linear, inBounds] = address(arg, offsets, coords);
  Type elt = refs[arg].elementType;
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{elt}, inBounds, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value p = b.create<LLVM::GEPOp>(loc, refs[arg].ptr.getType(), elt, refs[arg].ptr, linear);
    Value v = b.create<LLVM::LoadOp>(loc, elt, p);
    b.create<scf::YieldOp>(loc, v);
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(elt));
    b.create<scf::YieldOp>(loc, zero);
  }
  return ifOp.getResult(0);
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

FailureOr<Value> KernelBuilder::element(Value v, ArrayRef<Value> coords) {
  if (v == accLoopResult)
    return accRegister;
  Operation *op = v.getDefiningOp();
  if (!op)
    return fn.emitError("a kernel argument is used as a tile"), failure();
  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (!dense || !dense.isSplat())
      return op->emitError("only splat tile constants are supported"), failure();
    return b.create<arith::ConstantOp>(loc, dense.getSplatValue<TypedAttr>()).getResult();
  }
  if (auto splat = dyn_cast<SplatOp>(op))
    return scalar(splat.getValue());
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    SmallVector<Value> src;
    for (int64_t d : bc.getDims())
      src.push_back(coords[d]);
    return element(bc.getSrc(), src);
  }
  if (auto tr = dyn_cast<TransOp>(op))
    return element(tr.getSrc(), {coords[1], coords[0]});
  if (isa<ReduceOp>(op))
    return op->emitError("the result of a reduction (ts::sum / ts::max / ts::amax) can only be "
                         "stored with reduce_into"),
           failure();
  if (auto load = dyn_cast<LoadOp>(op)) {
    if (gemm && load->getParentOp() == gemm->loop)
      return load.emitError("tiles loaded in the mainloop can only feed the dot"), failure();
    return loadElement(load, coords);
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto in = element(cast.getSrc(), coords);
    if (failed(in))
      return failure();
    Type from = (*in).getType();
    Type to = cast.getType().getElementType();
    if (from == to)
      return *in;
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
    for (auto [i, l] : llvm::enumerate(std::array<OperandLayout *, 2>{&aLayout, &bLayout})) {
      hopper::AsyncLoadOp load = asyncLoads[i];
      auto layout = getOperandLayout(fn, *gemm, /*isB=*/i == 1, load.getSwizzle());
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
    }
    for (auto [l, cs] : {std::pair(&aLayout, clusterY), std::pair(&bLayout, clusterX)}) {
      TmaParam t{l->argIndex, {l->boxInner(), l->outer / cs}, {}};
      t.swizzle = l->swizzle;
      int64_t rank = cast<RefType>(fn.getArgumentTypes()[l->argIndex]).getRank();
      if (l->contiguousDim != rank - 1)
        t.contiguousDim = l->contiguousDim;
      tma.push_back(t);
    }
    // Staged outputs: one 64-row x 128-byte box, 128B swizzle.
    for (StoreOp store : stagedStores()) {
      unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
      int64_t bytes = store.getRef().getType().getElementType().getIntOrFloatBitWidth() / 8;
      tma.push_back({arg, {128 / bytes, 64}, {}, store});
    }
    // "tma:<arg>:<box inner>x<box outer>:<swizzle bytes>[:c<contiguous dim>]";
    // the suffix only when the tensor's unit-stride dimension is not its last.
    for (TmaParam &t : tma) {
      types.push_back(LLVM::LLVMPointerType::get(ctx));
      std::string text = (t.store ? "tmastore:" : "tma:") + std::to_string(t.arg) + ":" +
                         std::to_string(t.box[0]) + "x" + std::to_string(t.box[1]) + ":" +
                         std::to_string(t.store ? 128 : t.swizzle);
      if (t.contiguousDim >= 0)
        text += ":c" + std::to_string(t.contiguousDim);
      params.push_back(b.getStringAttr(text));
    }
    for (TmaParam &t : tma)
      if (t.store) {
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
    params.push_back(b.getStringAttr("workspace:" + std::to_string(tile[0] * tile[1] * 4)));
  }
  b.setInsertionPoint(fn);
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types);
  kernel = b.create<LLVM::LLVMFuncOp>(fn.getLoc(), fn.getSymName(), fnTy);
  kernel->setAttr("nvvm.kernel", b.getUnitAttr());
  kernel->setAttr("tessel.params", b.getArrayAttr(params));
  unsigned numUsable = llvm::count_if(tma, [](const TmaParam &t) { return bool(t.store); });
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
    r.elementType = ref.getElementType();
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
    if (t.store)
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
      return store.emitError("reductions (ts::sum / ts::max / ts::amax) are supported in GEMM "
                             "epilogues only, not in kernels without a ts::dot"),
             failure();
    auto ty = cast<RankedTensorType>(store.getValue().getType());
    int64_t numel = ty.getNumElements();
    for (int64_t r = 0; r * threads < numel; ++r) {
      // Element e = r * threads + tid; row-major coordinates in the tile.
      Value e = b.create<arith::AddIOp>(loc, tid, i32(r * threads));
      Value inTile = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, e, i32(numel));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, inTile, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
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

LogicalResult KernelBuilder::issueStage(Value j, Value s) {
  // k offset of tile j: lb + j * step, substituted for the induction variable
  // in the offsets of both loads.
  Value kv = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, j, step));
  Value full = smemAddr(b.create<arith::AddIOp>(loc, i32(fullBarOff),
                                                b.create<arith::MulIOp>(loc, s, i32(8))));
  b.create<hopper::MBarrierArriveExpectTxOp>(loc, full, i32(aBytes + bBytes), b.getStringAttr("full"));
  Value aDst = smemAddr(b.create<arith::MulIOp>(loc, s, i32(aBytes)));
  Value bDst = smemAddr(b.create<arith::AddIOp>(
      loc, i32(bOff), b.create<arith::MulIOp>(loc, s, i32(bBytes))));
  if (failed(issueOperand(aLayout, gemm->a, tma[0], kv, aDst, full, clusterY)) ||
      failed(issueOperand(bLayout, gemm->b, tma[1], kv, bDst, full, clusterX)))
    return failure();
  return success();
}

// One operand tile of `inner` x `outer` elements (OperandLayout.h), e.g. an
// MN-major A tile, BM = 128, BK = 64, 64B swizzle (32 elements per row):
//
//   tensor (unit stride along m)         shared memory, 4 boxes of 64 x 64 B
//        m 0..31 32..63 64..95 96..127     box 0 | box 1 | box 2 | box 3
//   k 0  [ b0  |  b1  |  b2  |  b3  ]      each: 64 rows (k) of 32 m, 4 KiB,
//   ..   [     |      |      |      ]      swizzled by TMA in 512 B patterns
//   k 63 [     |      |      |      ]
//
// Box i is TMA box {rowBytes / eltBytes, outer} at tensor coordinates
// (inner offset + i * boxInner, outer offset), innermost first, into
// dst + i * boxBytes. In a cluster of cs CTAs (rule C2), rank r loads outer
// rows [r * outer / cs, (r + 1) * outer / cs) of every box into the same
// offset of every CTA; each CTA's full barrier expects the whole stage.
LogicalResult KernelBuilder::issueOperand(const OperandLayout &l, GemmOperand op, TmaParam &t,
                                          Value kv, Value dst, Value full, int64_t cs) {
  auto offOrFail = offsetScalars(op.offsets(), kv);
  if (failed(offOrFail))
    return failure();
  SmallVector<Value> off = std::move(*offOrFail);
  // Tile dimension d is tensor dimension lead + d; a leading (batch) offset
  // is the tensor map's outermost coordinate (tmaDimOrder in Validate.cpp).
  Value innerOff = off[l.contiguousDim];
  Value outerOff = off[l.lead + 1 - l.tileContiguousDim()];
  Value batchOff = l.lead ? off[0] : Value();
  int64_t part = t.box[1];
  Value mask;
  if (cs > 1) {
    outerOff = b.create<arith::AddIOp>(loc, outerOff,
                                       b.create<arith::MulIOp>(loc, clusterRank, i32(part)));
    dst = b.create<arith::AddIOp>(
        loc, dst, b.create<arith::MulIOp>(loc, clusterRank, i32(part * l.rowBytes())));
    mask = b.create<arith::ConstantIntOp>(loc, b.getI16Type(), (1 << clusterSize) - 1);
  }
  auto copyBox = [&](Value i) {
    Value x = b.create<arith::AddIOp>(loc, innerOff, b.create<arith::MulIOp>(loc, i, i32(l.boxInner())));
    Value d = b.create<arith::AddIOp>(loc, dst, b.create<arith::MulIOp>(loc, i, i32(l.boxBytes())));
    SmallVector<Value, 3> coords = {x, outerOff};
    if (batchOff)
      coords.push_back(batchOff);
    b.create<hopper::TmaLoadOp>(loc, t.desc, coords, d, full, mask, t.box[0] * t.box[1] * l.eltBytes);
  };
  // Up to 4 boxes unrolled; more (narrow swizzles) in a loop, which keeps the
  // producer's code and registers small (unrolled, 32 unswizzled boxes spill
  // in the clustered schedules).
  if (l.numBoxes() <= 4) {
    for (int64_t i = 0; i < l.numBoxes(); ++i)
      copyBox(i32(i));
    return success();
  }
  auto loop = b.create<scf::ForOp>(loc, i32(0), i32(l.numBoxes()), i32(1));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  copyBox(loop.getInductionVar());
  return success();
}

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

LogicalResult KernelBuilder::setupGemm() {
  auto tile = sched.getTile();
  BM = tile[0];
  BN = tile[1];
  BK = tile[2];
  stages = ringOp.getStages();
  elt = cast<RankedTensorType>(gemm->dot.getA().getType()).getElementType();
  eltBytes = elt.getIntOrFloatBitWidth() / 8;
  aBytes = BM * BK * eltBytes;
  bBytes = BN * BK * eltBytes;
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
  // (Schedule `multistage` has no mbarriers: MultistageSchedule.cpp.)
  if (!multistage) {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isLeader, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (int64_t s = 0; s < stages; ++s) {
      b.create<hopper::MBarrierInitOp>(loc, smemAddr(fullBarOff + 8 * s), i32(1), b.getStringAttr("full"));
      b.create<hopper::MBarrierInitOp>(loc, smemAddr(emptyBarOff + 8 * s), i32(emptyArrivals),
                                       b.getStringAttr("empty"));
    }
    b.create<hopper::FenceMBarrierInitOp>(loc);
    for (TmaParam &t : tma)
      b.create<hopper::PrefetchTensorMapOp>(loc, t.desc);
    b.setInsertionPointAfter(ifOp);
    // Rule C1: no CTA multicasts into, or arrives on, a peer's barriers
    // before the peer initialised them.
    clusterSync();
  }

  // Trip count of the mainloop: nk = max(0, ceil((ub - lb) / step)).
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
  accLoopResult = gemm->loop.getResult(gemm->accIndex);
  return success();
}

Value KernelBuilder::fullBar(Value s) {
  return smemAddr(b.create<arith::AddIOp>(loc, i32(fullBarOff), b.create<arith::MulIOp>(loc, s, i32(8))));
}

Value KernelBuilder::emptyBar(Value s) {
  return smemAddr(b.create<arith::AddIOp>(loc, i32(emptyBarOff), b.create<arith::MulIOp>(loc, s, i32(8))));
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

SmallVector<Value> KernelBuilder::wgmmaStage(ArrayRef<Value> accs, Value s, Value rowBlock) {
  Value bBase = smemAddr(b.create<arith::AddIOp>(
      loc, i32(bOff), b.create<arith::MulIOp>(loc, s, i32(bBytes))));
  auto wgmmaType = elt.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  SmallVector<Value> out(accs);
  b.create<NVVM::WgmmaFenceAlignedOp>(loc);
  // wgmma's transpose immediates: imm-trans-a = 1 for an M-major A (layout
  // col), imm-trans-b = 1 for an N-major B (layout row).
  auto layoutA = aLayout.mnMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row;
  auto layoutB = bLayout.mnMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col;
  for (auto [i, acc] : llvm::enumerate(out)) {
    // The 64-row block of A: offset(64, 0) bytes per block in either layout
    // (64 K-major rows, or 64 * eltBytes / rowBytes MN-major boxes).
    Value aBase = smemAddr(b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, s, i32(aBytes)),
        b.create<arith::MulIOp>(loc, b.create<arith::AddIOp>(loc, rowBlock, i32(i)),
                                i32(aLayout.offset(64, 0)))));
    for (int64_t kk = 0; kk < BK / 16; ++kk) {
      // A k16 step: +32 B inside a K-major swizzle row, the next box of a
      // narrower K-major row, or 16 rows further in an MN-major box.
      Value da = wgmmaDescriptor(
          b, loc, b.create<arith::AddIOp>(loc, aBase, i32(aLayout.offset(0, kk * 16))),
          aLayout.descriptorHighBits());
      Value db = wgmmaDescriptor(
          b, loc, b.create<arith::AddIOp>(loc, bBase, i32(bLayout.offset(0, kk * 16))),
          bLayout.descriptorHighBits());
      acc = b.create<NVVM::WgmmaMmaAsyncOp>(
          loc, acc.getType(), acc, da, db, NVVM::MMAShapeAttr::get(ctx, 64, BN, 16),
          NVVM::WGMMATypesAttr::get(ctx, wgmmaType), NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
          NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
          NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, layoutA), NVVM::MMALayoutAttr::get(ctx, layoutB),
          NVVM::MMAIntOverflowAttr{});
    }
  }
  b.create<NVVM::WgmmaGroupSyncAlignedOp>(loc);
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
  b.create<NVVM::WgmmaWaitGroupSyncOp>(loc, waitDepth);
  return out;
}

LogicalResult KernelBuilder::emitEpilogue(Value accFinal, Value rowBlock, Value inWg) {
  return emitStores(
      [&](StoreOp store) { return emitRegisterStore(store, accFinal, rowBlock, inWg); });
}

LogicalResult KernelBuilder::emitRegisterStore(StoreOp store, Value accFinal, Value rowBlock,
                                               Value inWg) {
  Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  Value rowBase = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, rowBlock, i32(64)),
      b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
                              b.create<arith::DivUIOp>(loc, lane, i32(4))));
  Value colBase = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(2));
  if (storePath(store) == "reduce_atomic")
    return emitReduceStore(store, {accFinal}, wgmmaFragments(1), rowBase, colBase, lane);
  {
    auto ty = cast<RankedTensorType>(store.getValue().getType());
    if (ty.getRank() != 2 || ty.getDimSize(0) != BM || ty.getDimSize(1) != BN)
      return store.emitError() << "after the mainloop, stores must be " << BM << "x" << BN
                               << " tiles (the accumulator's shape)";
    // Registers r and r+1 (r even) hold adjacent columns of one row: paired
    // stores in the tma schedule. (In the warp-specialized ones the paired
    // epilogue's register pressure makes ptxas serialise wgmma, C7514.)
    if (storePath(store) != "register_pairs") {
      for (int64_t r = 0; r < BN / 2; ++r) {
        accRegister = b.create<LLVM::ExtractValueOp>(loc, accFinal, r);
        Value row = b.create<arith::AddIOp>(loc, rowBase, i32(8 * ((r % 4) / 2)));
        Value col = b.create<arith::AddIOp>(loc, colBase, i32(8 * (r / 4) + r % 2));
        if (failed(storeElement(store, {row, col})))
          return failure();
      }
      return success();
    }
    for (int64_t r = 0; r < BN / 2; r += 2) {
      Value row = b.create<arith::AddIOp>(loc, rowBase, i32(8 * ((r % 4) / 2)));
      Value col = b.create<arith::AddIOp>(loc, colBase, i32(8 * (r / 4)));
      Value col1 = b.create<arith::AddIOp>(loc, col, i32(1));
      accRegister = b.create<LLVM::ExtractValueOp>(loc, accFinal, r);
      auto v0 = element(store.getValue(), {row, col});
      accRegister = b.create<LLVM::ExtractValueOp>(loc, accFinal, r + 1);
      auto v1 = element(store.getValue(), {row, col1});
      if (failed(v0) || failed(v1) || failed(storePair(store, row, col, *v0, *v1)))
        return failure();
    }
    return success();
  }
}

//===----------------------------------------------------------------------===//
// Reductions in the epilogue
//===----------------------------------------------------------------------===//
//
// `V.reduce_into({m}, ts::amax(y, ts::axis<1>))` is a tessel.reduce of an
// expression of the accumulator tile, stored with {combine}. In both
// accumulator layouts (wgmma, mma.sync) the 4 lanes of a quad (lane / 4
// equal) hold the columns 2 (lane % 4) + {0, 1} + 8j of the same rows, and
// the 8 quads of a warp hold 8 consecutive rows (+ 8, + 16 ...). So:
//   1. each thread evaluates its fragments' elements, leaves out those
//      outside the GEMM's M x N along the reduced axis (the identity takes
//      their place: 0 for sum, -inf for max, 0 for amax), and combines the
//      elements of each row (axis 1) or column (axis 0) it holds;
//   2. shuffles combine a row over the quad (xor 1, 2), a column over the
//      quads (xor 4, 8, 16);
//   3. lane 0 of the quad (row) or lanes 0..3 (column) combine the warp's
//      partial into global memory, bounds-checked like any store:
//      sum: atomic f32 add (red.global.add.f32; the order of the adds is not
//      fixed); amax: atomic signed max on the f32 bits (non-negative floats
//      order like their bits; +NaN is above +inf); max: the same for x >= 0
//      (sign bit clear), atomic unsigned min on the bits for x < 0 (negative
//      floats order inversely to their bits, and every one is above the bits
//      of any non-negative float). max and amax are therefore exact and
//      deterministic; NaN propagates (maximumf gives +NaN).
// Stream-K: the finisher runs the epilogue on the summed tile, contributors
// run none, so a reduction sees whole-tile values.

FailureOr<std::pair<Value, Value>> KernelBuilder::gemmTileLimits() {
  auto limit = [&](const GemmOperand &o, bool isB) -> FailureOr<Value> {
    // The dot sees A as BM x BK and B as BK x BN: M (N) is the loaded tile's
    // first dimension, unless the dot sees the load transposed (for A) or
    // untransposed (for B).
    int64_t rank = o.refType().getRank();
    bool first = isB ? o.transposed : !o.transposed;
    int64_t d = first ? rank - 2 : rank - 1;
    auto off = scalar(o.offsets()[d]);
    if (failed(off))
      return failure();
    Value size = refs[o.argIndex].sizes[d];
    Value lim = b.create<arith::SubIOp>(loc, size,
                                        b.create<arith::ExtSIOp>(loc, b.getI64Type(), *off));
    // Clamp to i32 (a tile far past the edge: negative, nothing inside).
    lim = b.create<arith::MaxSIOp>(loc, lim, i64(-1));
    lim = b.create<arith::MinSIOp>(loc, lim, i64(INT32_MAX));
    return b.create<arith::TruncIOp>(loc, b.getI32Type(), lim).getResult();
  };
  auto rows = limit(gemm->a, /*isB=*/false);
  auto cols = limit(gemm->b, /*isB=*/true);
  if (failed(rows) || failed(cols))
    return failure();
  return std::pair(*rows, *cols);
}

SmallVector<KernelBuilder::FragmentElement>
KernelBuilder::wgmmaFragments(int64_t rowBlocks) const {
  // wgmma m64nN: register r of a thread is at row 8 * ((r % 4) / 2),
  // column 8 * (r / 4) + r % 2 from its base in the 64-row block.
  SmallVector<FragmentElement> frags;
  for (int64_t i = 0; i < rowBlocks; ++i)
    for (int64_t r = 0; r < BN / 2; ++r)
      frags.push_back({i, r, 64 * i + 8 * ((r % 4) / 2), 8 * (r / 4) + r % 2});
  return frags;
}

LogicalResult KernelBuilder::emitReduceStore(StoreOp store, ArrayRef<Value> accs,
                                             ArrayRef<FragmentElement> frags, Value rowBase,
                                             Value colBase, Value lane) {
  auto reduce = store.getValue().getDefiningOp<ReduceOp>();
  if (!gemm)
    return store.emitError("reductions (ts::sum / ts::max / ts::amax) are supported in GEMM "
                           "epilogues only"),
           failure();
  auto limits = gemmTileLimits();
  if (failed(limits))
    return failure();
  auto [rowLimit, colLimit] = *limits;
  const int64_t axis = reduce.getAxis();
  const ReduceKind kind = reduce.getKind();
  Type f32 = b.getF32Type();
  auto f32Const = [&](float v) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v)).getResult();
  };
  Value identity = f32Const(kind == ReduceKind::max ? -std::numeric_limits<float>::infinity() : 0.0f);
  auto combine = [&](Value x, Value y) -> Value {
    if (kind == ReduceKind::sum)
      return b.create<arith::AddFOp>(loc, x, y);
    return b.create<arith::MaximumFOp>(loc, x, y);
  };

  auto offsets = offsetScalars(store.getOffsets());
  if (failed(offsets))
    return failure();
  unsigned arg = cast<BlockArgument>(store.getRef()).getArgNumber();
  RefParams &r = refs[arg];
  Value leader = axis == 1
                     ? b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                               b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(0))
                     : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, lane, i32(4));
  SmallVector<int64_t> xors = axis == 1 ? SmallVector<int64_t>{1, 2} : SmallVector<int64_t>{4, 8, 16};

  // The rows (columns) this thread holds, in batches: a column reduction of
  // a wide tile would otherwise keep BN / 4 partials live at once. Within a
  // batch, all accumulators' elements of a row (column) are combined before
  // the shuffles, so that one atomic per warp covers every row block.
  constexpr size_t kBatch = 8;
  SmallVector<int64_t> keys;
  for (const FragmentElement &f : frags)
    keys.push_back(axis == 1 ? f.row : f.col);
  llvm::sort(keys);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    ArrayRef<int64_t> batch = ArrayRef(keys).slice(first, std::min(kBatch, keys.size() - first));
    // 1. This thread's elements of the batch's rows (columns).
    std::map<int64_t, Value> partial;
    for (const FragmentElement &f : frags) {
      int64_t key = axis == 1 ? f.row : f.col;
      if (!llvm::is_contained(batch, key))
        continue;
      Value row = b.create<arith::AddIOp>(loc, rowBase, i32(f.row));
      Value col = b.create<arith::AddIOp>(loc, colBase, i32(f.col));
      accRegister = b.create<LLVM::ExtractValueOp>(loc, accs[f.acc], f.reg);
      auto e = element(reduce.getSrc(), {row, col});
      if (failed(e))
        return failure();
      Value x = *e;
      if (x.getType() != f32)
        x = b.create<arith::ExtFOp>(loc, f32, x);
      if (kind == ReduceKind::amax)
        x = b.create<math::AbsFOp>(loc, x);
      Value inside = axis == 1
                         ? b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, col, colLimit)
                         : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, row, rowLimit);
      x = b.create<arith::SelectOp>(loc, inside, x, identity);
      auto [it, inserted] = partial.try_emplace(key, x);
      if (!inserted)
        it->second = combine(it->second, x);
    }

    // 2. Across the lanes that share a row (column).
    for (auto &[key, v] : partial)
      for (int64_t x : xors) {
        Value other = b.create<NVVM::ShflOp>(loc, f32, i32(-1), v, i32(x), i32(0x1f),
                                             NVVM::ShflKind::bfly, UnitAttr());
        v = combine(v, other);
      }

    // 3. One lane per row (column) and warp combines into global memory.
    auto ifLeader = b.create<scf::IfOp>(loc, TypeRange{}, leader, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifLeader.thenBlock());
    for (auto &[key, v] : partial) {
      Value at = b.create<arith::AddIOp>(loc, axis == 1 ? rowBase : colBase, i32(key));
      auto [linear, inBounds] = address(arg, *offsets, {at});
      auto ifIn = b.create<scf::IfOp>(loc, TypeRange{}, inBounds, /*withElse=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(ifIn.thenBlock());
      Value p = b.create<LLVM::GEPOp>(loc, r.ptr.getType(), r.elementType, r.ptr, linear);
      if (kind == ReduceKind::sum) {
        b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::fadd, p, v,
                                    LLVM::AtomicOrdering::monotonic);
        continue;
      }
      Value bits = b.create<LLVM::BitcastOp>(loc, b.getI32Type(), v);
      if (kind == ReduceKind::amax) {
        b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::max, p, bits,
                                    LLVM::AtomicOrdering::monotonic);
        continue;
      }
      Value nonNegative = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, bits, i32(0));
      auto ifSign = b.create<scf::IfOp>(loc, TypeRange{}, nonNegative, /*withElse=*/true);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(ifSign.thenBlock());
      b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::max, p, bits,
                                  LLVM::AtomicOrdering::monotonic);
      b.setInsertionPointToStart(ifSign.elseBlock());
      b.create<LLVM::AtomicRMWOp>(loc, LLVM::AtomicBinOp::umin, p, bits,
                                  LLVM::AtomicOrdering::monotonic);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TMA-store epilogue (warp-specialized schedules)
//===----------------------------------------------------------------------===//
//
// Each consumer warpgroup owns two staging chunks of 64 rows x 128 bytes
// (64 bf16/f16 or 32 f32 columns), laid out as TMA's 128B swizzle expects:
// the 16-byte piece j of row r lives at r * 128 + ((j ^ (r % 8)) * 16), so
// the 8 rows a warp's fragments touch at once land in 8 different bank
// groups. Per chunk (sequence number q of the warpgroup, buffer q % 2):
//
//   thread 0 of wg:  cp.async.bulk.wait_group.read 1   (store q-2 read buffer)
//   wg:              bar.sync 1+consumer, 128
//   all:             traced epilogue on the fragments -> stmatrix (16-bit) or
//                    st.shared.v2.f32 into the buffer
//   all:             fence.proxy.async.shared::cta
//   wg:              bar.sync 1+consumer, 128
//   thread 0 of wg:  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
//                    [C, {col, row}], [buffer]; cp.async.bulk.commit_group
//      (output breaks TMA's rules: all threads copy the chunk to global
//       memory with bounds-checked stores instead)
//
// Ordering rules:
//   E1. A buffer is rewritten only after the TMA store that read it finished
//       reading (wait_group.read 1 leaves only the other buffer's store in
//       flight), and every thread learns that through the first bar.sync.
//   E2. Generic-proxy writes to shared memory are made visible to the async
//       proxy (fence.proxy.async) by each writing thread before the barrier
//       after which the store is issued.
//   E3. Before the CTA exits, the issuing thread waits for all its bulk
//       groups (wait_group 0): shared memory must outlive the stores.
// TMA stores clip at the tensor's bounds, so edge tiles need no predicate.

SmallVector<StoreOp> KernelBuilder::stagedStores() {
  SmallVector<StoreOp> out;
  if (!gemm)
    return out;
  for (Operation &op : fn.getBody().front())
    if (auto store = dyn_cast<StoreOp>(op); store && storePath(store) == "tma_store")
      out.push_back(store);
  return out;
}

void KernelBuilder::consumerBarrier(Value consumer) {
  b.create<hopper::NamedBarrierOp>(loc, /*arrive=*/false,
                                   b.create<arith::AddIOp>(loc, consumer, i32(consumerBarrierBase)),
                                   128);
}

LogicalResult KernelBuilder::stageChunk(TmaParam &t, Value acc, Value rowBlock, int64_t chunk,
                                        Value inWg, Value consumer, Value sequence, bool drainAll) {
  StoreOp store = t.store;
  Type outTy = store.getRef().getType().getElementType();
  int64_t bytes = outTy.getIntOrFloatBitWidth() / 8;
  int64_t cols = 128 / bytes; // columns per chunk
  Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
  Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
  Value isIssuer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
  Value buffer = smemAddr(b.create<arith::AddIOp>(
      loc, i32(stagingOff),
      b.create<arith::MulIOp>(
          loc, b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, consumer, i32(2)),
                                       b.create<arith::AndIOp>(loc, sequence, i32(1))),
          i32(kChunkBytes))));
  // Byte address of (row, 16-byte piece, byte) in the swizzled buffer.
  auto swizzled = [&](Value row, Value piece, Value byte) {
    Value phys = b.create<arith::XOrIOp>(loc, piece, b.create<arith::AndIOp>(loc, row, i32(7)));
    return b.create<arith::AddIOp>(
        loc, buffer,
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, row, i32(128)),
            b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, phys, i32(16)), byte)));
  };
  // Rule E1. (With an odd number of chunks per tile, a skipped cluster tile
  // would break the strict alternation: the first chunk of a tile then waits
  // for every store.)
  {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<hopper::TmaStoreWaitOp>(loc, drainAll ? 0 : 1, /*read=*/true);
  }
  consumerBarrier(consumer);

  // Fragment coordinates in the tile: register r of an m64nN accumulator is
  // row 16*warp + lane/4 + 8*(r%4/2), column 8*(r/4) + 2*(lane%4) + r%2.
  Value rowInBlock = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
                                             b.create<arith::DivUIOp>(loc, lane, i32(4)));
  Value row0 = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, rowBlock, i32(64)),
                                       rowInBlock);
  Value colLane = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(2));
  // The two elements of registers (r, r+1), r even, evaluated and converted.
  auto pairAt = [&](int64_t r) -> FailureOr<std::pair<Value, Value>> {
    Value row = b.create<arith::AddIOp>(loc, row0, i32(8 * ((r % 4) / 2)));
    Value col = b.create<arith::AddIOp>(loc, colLane, i32(8 * (r / 4)));
    accRegister = b.create<LLVM::ExtractValueOp>(loc, acc, r);
    auto v0 = element(store.getValue(), {row, col});
    accRegister = b.create<LLVM::ExtractValueOp>(loc, acc, r + 1);
    auto v1 = element(store.getValue(), {row, b.create<arith::AddIOp>(loc, col, i32(1))});
    if (failed(v0) || failed(v1))
      return failure();
    return std::pair{*v0, *v1};
  };
  int64_t firstBlock = chunk * cols / 8; // first n8 block of the chunk
  if (bytes == 2) {
    // stmatrix .x4: matrices (rows 0-7 | 8-15) x (n8 blocks nb | nb+1); lane l
    // gives the address of row l%8 of matrix l/8.
    Value mat = b.create<arith::DivUIOp>(loc, lane, i32(8));
    Value srow = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
        b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, mat, i32(2)), i32(8)),
            b.create<arith::RemUIOp>(loc, lane, i32(8))));
    Value half = b.create<arith::DivUIOp>(loc, mat, i32(2));
    auto vecTy = VectorType::get({2}, outTy);
    for (int64_t p = 0; p < cols / 16; ++p) {
      SmallVector<Value> packed;
      for (int64_t m = 0; m < 4; ++m) {
        int64_t r = 4 * (firstBlock + 2 * p + m / 2) + 2 * (m % 2);
        auto pr = pairAt(r);
        if (failed(pr))
          return failure();
        Value v = b.create<LLVM::PoisonOp>(loc, vecTy);
        v = b.create<LLVM::InsertElementOp>(loc, v, pr->first, i32(0));
        v = b.create<LLVM::InsertElementOp>(loc, v, pr->second, i32(1));
        packed.push_back(b.create<LLVM::BitcastOp>(loc, b.getI32Type(), v));
      }
      Value piece = b.create<arith::AddIOp>(loc, half, i32(2 * p));
      Value addr = swizzled(srow, piece, i32(0));
      b.create<hopper::StMatrixOp>(loc, addr, packed[0], packed[1], packed[2], packed[3]);
    }
  } else {
    // f32: each register pair is 8 bytes of one row.
    for (int64_t nb = 0; nb < cols / 8; ++nb)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t r = 4 * (firstBlock + nb) + 2 * h;
        auto pr = pairAt(r);
        if (failed(pr))
          return failure();
        Value srow = b.create<arith::AddIOp>(loc, rowInBlock, i32(8 * h));
        // Byte column nb*32 + (lane%4)*8: piece 2*nb + (lane%4)/2, byte 8*(lane%2).
        Value q4 = b.create<arith::RemUIOp>(loc, lane, i32(4));
        Value piece = b.create<arith::AddIOp>(loc, i32(2 * nb), b.create<arith::DivUIOp>(loc, q4, i32(2)));
        Value byte = b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, q4, i32(2)), i32(8));
        ptx("st.shared.v2.f32 [$0], {$1, $2};", "r,f,f",
            {swizzled(srow, piece, byte), pr->first, pr->second});
      }
  }
  // Rule E2.
  b.create<hopper::FenceProxyAsyncOp>(loc);
  consumerBarrier(consumer);

  auto offsetsOrFail = offsetScalars(store.getOffsets());
  if (failed(offsetsOrFail))
    return failure();
  Value tileRow = b.create<arith::MulIOp>(loc, rowBlock, i32(64));
  auto viaTma = b.create<scf::IfOp>(loc, TypeRange{}, t.usable, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.thenBlock());
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, isIssuer, false);
    b.setInsertionPointToStart(one.thenBlock());
    Value row = b.create<arith::AddIOp>(loc, (*offsetsOrFail)[0], tileRow);
    Value col = b.create<arith::AddIOp>(loc, (*offsetsOrFail)[1], i32(chunk * cols));
    b.create<hopper::TmaStoreOp>(loc, t.desc, col, row, buffer);
    b.create<hopper::TmaStoreCommitOp>(loc);
  }
  {
    // The output breaks TMA's rules: thread i copies column i % cols of rows
    // i / cols + k * (128 / cols), with bounds-checked stores.
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(viaTma.elseBlock());
    Value col = b.create<arith::RemUIOp>(loc, inWg, i32(cols));
    Value rowStart = b.create<arith::DivUIOp>(loc, inWg, i32(cols));
    int64_t rowStep = kThreadsPerWarpgroup / cols;
    auto rows = b.create<scf::ForOp>(loc, rowStart, i32(64), i32(rowStep));
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    Value byteCol = b.create<arith::MulIOp>(loc, col, i32(bytes));
    Value addr = swizzled(row, b.create<arith::DivUIOp>(loc, byteCol, i32(16)),
                          b.create<arith::RemUIOp>(loc, byteCol, i32(16)));
    auto sptr = b.create<LLVM::IntToPtrOp>(loc, LLVM::LLVMPointerType::get(ctx, 3), addr);
    Value v = b.create<LLVM::LoadOp>(loc, outTy, sptr);
    if (failed(storeValue(store, {b.create<arith::AddIOp>(loc, tileRow, row),
                                  b.create<arith::AddIOp>(loc, col, i32(chunk * cols))},
                          v)))
      return failure();
  }
  return success();
}

LogicalResult KernelBuilder::emitConsumerEpilogue(ArrayRef<Value> accs, Value firstRowBlock,
                                                  Value inWg, Value consumer, Value tileIter) {
  SmallVector<StoreOp> staged = stagedStores();
  // Chunks per tile of this warpgroup, to continue the buffer alternation
  // across tiles (rule E1 relies on strict alternation).
  int64_t perTile = 0;
  for (StoreOp s : staged)
    perTile += accs.size() * BN * s.getRef().getType().getElementType().getIntOrFloatBitWidth() /
               8 / 128;
  Value sequence = b.create<arith::MulIOp>(loc, tileIter, i32(perTile));
  int64_t q = 0;
  return emitStores([&](StoreOp store) -> LogicalResult {
    if (storePath(store) == "reduce_atomic") {
      // All of this warpgroup's row blocks at once: one atomic per warp and
      // row (column) of the tile.
      Value warp = b.create<arith::DivUIOp>(loc, inWg, i32(32));
      Value lane = b.create<arith::RemUIOp>(loc, inWg, i32(32));
      Value rowBase = b.create<arith::AddIOp>(
          loc, b.create<arith::MulIOp>(loc, firstRowBlock, i32(64)),
          b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, warp, i32(16)),
                                  b.create<arith::DivUIOp>(loc, lane, i32(4))));
      Value colBase =
          b.create<arith::MulIOp>(loc, b.create<arith::RemUIOp>(loc, lane, i32(4)), i32(2));
      return emitReduceStore(store, accs, wgmmaFragments(accs.size()), rowBase, colBase, lane);
    }
    auto it = llvm::find_if(tma, [&](const TmaParam &t) { return t.store == store; });
    for (auto [i, acc] : llvm::enumerate(accs)) {
      Value rowBlock = b.create<arith::AddIOp>(loc, firstRowBlock, i32(i));
      if (it == tma.end()) {
        // Not stageable (shape, rank or element type): register stores.
        if (failed(emitRegisterStore(store, acc, rowBlock, inWg)))
          return failure();
        continue;
      }
      int64_t chunks = BN * store.getRef().getType().getElementType().getIntOrFloatBitWidth() / 8 / 128;
      for (int64_t c = 0; c < chunks; ++c, ++q)
        if (failed(stageChunk(*it, acc, rowBlock, c, inWg, consumer,
                              b.create<arith::AddIOp>(loc, sequence, i32(q)),
                              /*drainAll=*/q == 0 && perTile % 2 == 1 &&
                                  (clusterSize > 1 || workspace))))
          return failure();
    }
    return success();
  });
}

LogicalResult KernelBuilder::buildTmaSchedule() {
  Value isLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, i32(0));
  Value wg = b.create<arith::DivUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value inWg = b.create<arith::RemUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value isWgLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));

  // Prologue: thread 0 fills the first min(stages, nk) stages.
  {
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isLeader, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value n = b.create<arith::MinSIOp>(loc, nk, i32(stages));
    auto pro = b.create<scf::ForOp>(loc, i32(0), n, i32(1));
    b.setInsertionPointToStart(pro.getBody());
    if (failed(issueStage(pro.getInductionVar(), pro.getInductionVar())))
      return failure();
  }

  // Mainloop.
  auto loop = b.create<scf::ForOp>(loc, i32(0), nk, i32(1), ValueRange{zeroAccumulator()});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value acc = consumeStage(j, {loop.getRegionIterArgs()[0]}, wg)[0];

    // Rule 2: tile j-1's wgmma retired in this warpgroup: release its stage,
    // then thread 0 refills it once every warpgroup released it.
    Value hasPrev = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, j, i32(0));
    auto prevIf = b.create<scf::IfOp>(loc, TypeRange{}, hasPrev, false);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(prevIf.thenBlock());
      Value jp = b.create<arith::SubIOp>(loc, j, i32(1));
      Value sp = b.create<arith::RemUIOp>(loc, jp, i32(stages));
      auto relIf = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(relIf.thenBlock());
        b.create<hopper::MBarrierArriveOp>(loc, emptyBar(sp), b.getStringAttr("empty"));
      }
      Value jn = b.create<arith::AddIOp>(loc, jp, i32(stages));
      Value refill = b.create<arith::AndIOp>(
          loc, isLeader, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, jn, nk));
      auto fillIf = b.create<scf::IfOp>(loc, TypeRange{}, refill, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(fillIf.thenBlock());
      Value php = b.create<arith::AndIOp>(loc, b.create<arith::DivUIOp>(loc, jp, i32(stages)), i32(1));
      mbarrierWait(emptyBar(sp), php, "empty", sp);
      if (failed(issueStage(jn, sp)))
        return failure();
    }
    b.create<scf::YieldOp>(loc, acc);
  }
  b.create<NVVM::WgmmaWaitGroupSyncOp>(loc, 0);
  return emitEpilogue(fenceAccumulator(loop.getResult(0)), wg, inWg);
}

/// The user's grid in cluster tiles: ceil(grid / cluster) along axes 0, 1.
static std::array<Value, 2> clusterGrid(OpBuilder &b, Location loc, ArrayRef<Value> grid,
                                        int64_t cx, int64_t cy) {
  auto ceilDiv = [&](Value v, int64_t d) -> Value {
    if (d == 1)
      return v;
    Value dv = b.create<arith::ConstantIntOp>(loc, b.getI32Type(), d);
    Value dm1 = b.create<arith::ConstantIntOp>(loc, b.getI32Type(), d - 1);
    return b.create<arith::DivUIOp>(loc, b.create<arith::AddIOp>(loc, v, dm1), dv);
  };
  return {ceilDiv(grid[0], cx), ceilDiv(grid[1], cy)};
}

/// Grouped raster order: tile `r` (i32, in [0, gx * gy)) of a gx x gy grid ->
/// (x, y). Groups of `raster` (ScheduleAttr::getRasterGroup) rows along axis 0
/// are walked column by column, so that CTAs running at the same time share A
/// and B tiles in L2:
///
///   raster 2, gx = 5, gy = 3:   x\y  0  1  2
///                                0    0  2  4
///                                1    1  3  5
///                                2    6  8 10
///                                3    7  9 11
///                                4   12 13 14   (a last, narrower group)
std::pair<Value, Value> KernelBuilder::groupedRaster(Value r, Value gx, Value gy) {
  int64_t g = schedulerOp.getRasterGroup();
  Value width = b.create<arith::MulIOp>(loc, i32(g), gy);
  Value group = b.create<arith::DivUIOp>(loc, r, width);
  Value firstX = b.create<arith::MulIOp>(loc, group, i32(g));
  Value size = b.create<arith::MinUIOp>(loc, b.create<arith::SubIOp>(loc, gx, firstX), i32(g));
  Value inGroup = b.create<arith::RemUIOp>(loc, r, width);
  return {b.create<arith::AddIOp>(loc, firstX, b.create<arith::RemUIOp>(loc, inGroup, size)),
          b.create<arith::DivUIOp>(loc, inGroup, size)};
}

/// Cluster tile `t` (i32) -> program ids in grouped raster order
/// (groupedRaster over the grid of cluster tiles). The CTA of rank r in a 2x1
/// (1x2) cluster takes row (column) 2X + r.
void KernelBuilder::setProgramIds(Value t) {
  auto [gx, gy] = clusterGrid(b, loc, gridParams, clusterX, clusterY);
  Value perSlice = b.create<arith::MulIOp>(loc, gx, gy);
  Value z = b.create<arith::DivUIOp>(loc, t, perSlice);
  Value r = b.create<arith::RemUIOp>(loc, t, perSlice);
  auto [x, y] = groupedRaster(r, gx, gy);
  if (clusterX > 1)
    x = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, x, i32(clusterX)), clusterRank);
  if (clusterY > 1)
    y = b.create<arith::AddIOp>(loc, b.create<arith::MulIOp>(loc, y, i32(clusterY)), clusterRank);
  programIds = {x, y, z};
  tileValid = b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, gridParams[0]),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, y, gridParams[1]));
  scalars.clear(); // everything derived from program ids is per tile
}

void KernelBuilder::releaseStage(Value s) {
  Value bar = emptyBar(s);
  if (clusterSize == 1) {
    b.create<hopper::MBarrierArriveOp>(loc, bar, b.getStringAttr("empty"));
    return;
  }
  // Rule C3: the stage is free once the consumers of every CTA it was
  // multicast into released it; arrive on each CTA's barrier.
  //
  // The arrive keeps its default semantics (.release.cta): what it publishes
  // is that this CTA's wgmma reads of the stage retired (wgmma.wait_group
  // before it), and the peer's producer only answers with a TMA write. An
  // explicit `.release.cluster` is not needed for that and is expensive:
  // ptxas emits MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before every arrive,
  // which stalls the consumer warpgroup once per stage and per peer (cluster
  // 2x1 ran at 0.58x cuBLAS with it, 1.02x without: docs/benchmarks.md).
  for (int64_t peer = 0; peer < clusterSize; ++peer)
    b.create<hopper::MBarrierArriveClusterOp>(loc, bar, i32(peer), b.getStringAttr("empty"));
}

void KernelBuilder::clusterSync() {
  if (clusterSize == 1)
    return barSync();
  // Not `.aligned`: warps arrive here diverged (thread 0 of the producer
  // warp is still issuing loads when its 31 siblings reach the final sync).
  b.create<hopper::ClusterSyncOp>(loc);
}

/// Warp-specialized schedules (CUTLASS KernelTmaWarpSpecialized*):
///
///   warpgroup 0 (producer, setmaxnreg.dec 40), thread 0:
///     for each tile of this CTA, for j in [0, nk):   it = tileIter * nk + j
///       wait empty[it % stages] (from the second round on); expect_tx; TMA A, B
///   warpgroups 1.. (consumers, setmaxnreg.inc):
///     warp_specialized / cooperative: every consumer takes every tile, rows
///       [64 (wg-1), 64 wg) of it;
///     pingpong: consumer c takes the CTA's units (tiles, or stream-K parts
///       of tiles) c, c+2, ... whole (BM/64 row blocks each), mainloops in
///       turn:
///         c: bar.sync 3+c, 256; mainloop; bar.arrive 3+(1-c), 256
///       so one consumer's epilogue overlaps the other's mainloop.
///     then the TMA-store epilogue (stageChunk) from the accumulators.
///
/// Persistent schedules (cooperative, pingpong) launch about one CTA per SM
/// and walk the user's grid in grouped raster order (setProgramIds).
///
/// Ordering rules, in addition to those of the tma schedule:
///   W1. The producer's n-th refill of a stage (n >= 1) waits for the n-th
///       completion of its empty barrier (parity (n - 1) & 1); every consumer
///       that read the stage arrives once, after the wgmma group that read it
///       retired (wait_group 1 of the next position, or wait_group 0).
///   W2. pingpong: the turn barriers pair each bar.arrive with exactly one
///       bar.sync of the other consumer: consumer 1 gives the first turn
///       (if the CTA has a unit) and nobody gives a turn after the CTA's
///       last unit, so no barrier is left half-arrived at exit.
LogicalResult KernelBuilder::buildWarpSpecialized() {
  // Register budgets, roles, row blocks: the plan's (tessel-warp-specialize,
  // tessel-schedule-mma).
  int64_t rowBlocksPerConsumer = rowBlocks;
  int64_t consumerRegs = wsOp.getConsumerRegs();
  Value wg = b.create<arith::DivUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value inWg = b.create<arith::RemUIOp>(loc, tid, i32(kThreadsPerWarpgroup));
  Value isProducer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, wg, i32(0));

  // Tiles this CTA computes: its own (non-persistent), or tiles
  // blockIdx.x, blockIdx.x + gridDim.x, ... of the user's grid (persistent).
  Value numTiles, firstTile, tileStride;
  if (persistent) {
    // Clusters walk cluster tiles: cluster c = blockIdx.x / clusterSize takes
    // c, c + gridDim.x / clusterSize, ...
    auto [gx, gy] = clusterGrid(b, loc, gridParams, clusterX, clusterY);
    numTiles = b.create<arith::MulIOp>(loc, b.create<arith::MulIOp>(loc, gx, gy), gridParams[2]);
    firstTile = b.create<arith::DivUIOp>(loc, b.create<NVVM::BlockIdXOp>(loc, b.getI32Type()),
                                         i32(clusterSize));
    tileStride = b.create<arith::DivUIOp>(loc, b.create<NVVM::GridDimXOp>(loc, b.getI32Type()),
                                          i32(clusterSize));
  } else {
    numTiles = i32(1);
    firstTile = i32(0);
    tileStride = i32(1);
  }
  // tileIter counts this CTA's tiles: the ring position is tileIter * nk + j.
  Value tileCount = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, b.create<arith::SubIOp>(loc, numTiles, firstTile),
                                   b.create<arith::SubIOp>(loc, tileStride, i32(1))),
      tileStride);
  // Stream-K (StreamK.cpp): this CTA's work is sk.count units, stream-K
  // parts of tiles first; otherwise whole tiles, unit i = tile firstTile +
  // i * tileStride with ring positions i * nk + j.
  bool streamK = bool(workspace);
  if (streamK)
    planStreamK(numTiles);
  Value unitCount = streamK ? sk.count : tileCount;
  auto forEachTile = [&](Value start, int64_t step,
                         function_ref<LogicalResult(Value tileIter, WorkUnit u)> body) -> LogicalResult {
    auto tiles = b.create<scf::ForOp>(loc, start, unitCount, i32(step));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value i = tiles.getInductionVar();
    WorkUnit u;
    if (streamK) {
      u = streamKUnit(i);
      setProgramIds(u.tile);
    } else {
      if (persistent)
        setProgramIds(b.create<arith::AddIOp>(loc, firstTile, b.create<arith::MulIOp>(loc, i, tileStride)));
      u = {Value(), i32(0), nk, b.create<arith::MulIOp>(loc, i, nk)};
    }
    return body(i, u);
  };
  // Ring position of k-iteration j of unit u.
  auto ringPos = [&](const WorkUnit &u, Value j) -> Value {
    return b.create<arith::AddIOp>(loc, u.base, b.create<arith::SubIOp>(loc, j, u.kBegin));
  };

  auto roleIf = b.create<scf::IfOp>(loc, TypeRange{}, isProducer, /*withElse=*/true);
  // ---- producer warpgroup: one thread issues every TMA load ----------------
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(roleIf.thenBlock());
    b.create<hopper::SetMaxNRegOp>(loc, /*increase=*/false, wsOp.getProducerRegs());
    Value elected = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
    auto one = b.create<scf::IfOp>(loc, TypeRange{}, elected, false);
    b.setInsertionPointToStart(one.thenBlock());
    LogicalResult r = forEachTile(i32(0), 1, [&](Value, WorkUnit u) -> LogicalResult {
      auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1));
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value j = kLoop.getInductionVar();
      Value it = ringPos(u, j);
      Value s = b.create<arith::RemUIOp>(loc, it, i32(stages));
      // Rule W1.
      Value round = b.create<arith::DivUIOp>(loc, it, i32(stages));
      Value reuse = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, it, i32(stages));
      auto waitIf = b.create<scf::IfOp>(loc, TypeRange{}, reuse, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(waitIf.thenBlock());
        Value ph = b.create<arith::AndIOp>(loc, b.create<arith::SubIOp>(loc, round, i32(1)), i32(1));
        mbarrierWait(emptyBar(s), ph, "empty", s);
      }
      return issueStage(j, s);
    });
    if (failed(r))
      return failure();
  }
  // ---- consumer warpgroups: wgmma on their row blocks, then the epilogue ---
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(roleIf.elseBlock());
    b.create<hopper::SetMaxNRegOp>(loc, /*increase=*/true, consumerRegs);
    Value consumer = b.create<arith::SubIOp>(loc, wg, i32(1));
    Value firstRowBlock = pingpong ? i32(0) : consumer;
    Value isWgLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inWg, i32(0));
    auto release = [&](Value it) {
      auto relIf = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(relIf.thenBlock());
      releaseStage(b.create<arith::RemUIOp>(loc, it, i32(stages)));
    };
    // Rule W2: turn barriers 3 (consumer 0's) and 4 (consumer 1's).
    auto turn = [&](bool arrive, Value who) {
      b.create<hopper::NamedBarrierOp>(loc, arrive,
                                       b.create<arith::AddIOp>(loc, who, i32(turnBarrierBase)), 256);
    };
    Value other = b.create<arith::SubIOp>(loc, i32(1), consumer);
    if (pingpong) {
      Value first = b.create<arith::AndIOp>(
          loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, consumer, i32(1)),
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, unitCount, i32(0)));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, first, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      turn(/*arrive=*/true, i32(0));
    }
    LogicalResult r = forEachTile(pingpong ? consumer : i32(0), pingpong ? 2 : 1,
                                  [&](Value tileIter, WorkUnit u) -> LogicalResult {
      if (pingpong)
        turn(/*arrive=*/false, consumer);
      // Zeroed and pinned before the mainloop: LLVM must not sink the zeroing
      // between the first wgmmas (ptxas would then fence them, C7517/C7519).
      SmallVector<Value> zeros;
      for (int64_t i = 0; i < rowBlocksPerConsumer; ++i)
        zeros.push_back(fenceAccumulator(zeroAccumulator()));
      auto kLoop = b.create<scf::ForOp>(loc, u.kBegin, u.kEnd, i32(1), zeros);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(kLoop.getBody());
        Value j = kLoop.getInductionVar();
        Value it = ringPos(u, j);
        SmallVector<Value> accs = consumeStage(
            it, SmallVector<Value>(kLoop.getRegionIterArgs()), firstRowBlock);
        // Rule W1: the wgmma group of position it-1 retired: release its stage.
        Value hasPrev = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt, j, u.kBegin);
        auto prevIf = b.create<scf::IfOp>(loc, TypeRange{}, hasPrev, false);
        {
          OpBuilder::InsertionGuard g3(b);
          b.setInsertionPointToStart(prevIf.thenBlock());
          release(b.create<arith::SubIOp>(loc, it, i32(1)));
        }
        b.create<scf::YieldOp>(loc, accs);
      }
      if (pingpong) {
        // Rule W2: hand the mainloop to the other consumer if a unit follows.
        Value more = b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::ult, b.create<arith::AddIOp>(loc, tileIter, i32(1)), unitCount);
        auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, more, false);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        turn(/*arrive=*/true, other);
      }
      // Stream-K: the unit is recomputed from an opaque copy of its index
      // rather than kept live across the mainloop (register pressure,
      // StreamK.cpp).
      if (streamK)
        u = streamKUnit(ptx("mov.u32 $0, $1;", "=r,r", {tileIter}, b.getI32Type()));
      b.create<NVVM::WgmmaWaitGroupSyncOp>(loc, 0);
      // The tile's last stage is released once all its wgmma retired.
      Value any = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, u.kEnd, u.kBegin);
      auto lastIf = b.create<scf::IfOp>(loc, TypeRange{}, any, false);
      {
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(lastIf.thenBlock());
        release(ringPos(u, b.create<arith::SubIOp>(loc, u.kEnd, i32(1))));
      }
      SmallVector<Value> accs;
      for (Value acc : kLoop.getResults())
        accs.push_back(fenceAccumulator(acc));
      // This consumer's own tile count picks its staging buffers.
      Value local = pingpong ? b.create<arith::DivUIOp>(loc, tileIter, i32(2)).getResult() : tileIter;
      if (streamK) {
        // StreamK.cpp: a part that does not end the tile goes to the
        // workspace; the part that ends it adds the others, then stores.
        // Tile thread: of both consumers (cooperative), of this one (pingpong).
        Value uThread = pingpong ? inWg : b.create<arith::SubIOp>(loc, tid, i32(kThreadsPerWarpgroup));
        Value contributor = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, u.kEnd, nk);
        auto partIf = b.create<scf::IfOp>(loc, TypeRange{}, contributor, /*withElse=*/true);
        OpBuilder::InsertionGuard g3(b);
        b.setInsertionPointToStart(partIf.thenBlock());
        streamKStorePartial(accs, uThread, consumer);
        b.setInsertionPointToStart(partIf.elseBlock());
        Value finisher = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, u.kBegin, i32(0));
        auto sumIf = b.create<scf::IfOp>(loc, TypeRange(ValueRange(accs)), finisher, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard g4(b);
          b.setInsertionPointToStart(sumIf.thenBlock());
          b.create<scf::YieldOp>(loc, streamKAddPartials(accs, u.tile, uThread, consumer));
          b.setInsertionPointToStart(sumIf.elseBlock());
          b.create<scf::YieldOp>(loc, accs);
        }
        return emitConsumerEpilogue(SmallVector<Value>(sumIf.getResults()), firstRowBlock, inWg,
                                    consumer, local);
      }
      if (!tileValid)
        return emitConsumerEpilogue(accs, firstRowBlock, inWg, consumer, local);
      // A cluster partner's tile past the grid's edge: nothing to store.
      auto validIf = b.create<scf::IfOp>(loc, TypeRange{}, tileValid, false);
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(validIf.thenBlock());
      return emitConsumerEpilogue(accs, firstRowBlock, inWg, consumer, local);
    });
    if (failed(r))
      return failure();
    // Rule E3: the staging buffers outlive the TMA stores that read them.
    auto ifOp = b.create<scf::IfOp>(loc, TypeRange{}, isWgLeader, false);
    OpBuilder::InsertionGuard g3(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<hopper::TmaStoreWaitOp>(loc, 0, /*read=*/false);
  }
  // Rule C4: no CTA leaves while a peer may still multicast into its shared
  // memory or arrive on its barriers.
  if (clusterSize > 1)
    clusterSync();
  return success();
}

LogicalResult KernelBuilder::buildGemm() {
  if (failed(setupGemm()))
    return failure();
  // The plan's shape, not the schedule's name, picks the kernel's structure.
  if (multistage)
    return buildMultistage();
  return inlineProducer ? buildTmaSchedule() : buildWarpSpecialized();
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
  for (auto [i, op] : llvm::enumerate(std::array<GemmOperand, 2>{gemm->a, gemm->b})) {
    asyncLoads[i] = dyn_cast<hopper::AsyncLoadOp>(op.load);
    if (!asyncLoads[i] || asyncLoads[i].getInto() != ringOp.getRing() ||
        asyncLoads[i].getSlot() != static_cast<int64_t>(i))
      return op.load->emitError() << "operand " << (i ? "B" : "A")
                                  << " of the dot must be a hopper.async_load into slot " << i
                                  << " of ring '" << ringOp.getRing()
                                  << "': run tessel-insert-async-copies first";
  }
  persistent = schedulerOp.getKind() == "persistent";
  inlineProducer = wsOp && wsOp.getProducer() == "inline";
  pingpong = wsOp && wsOp.getOrder() == "pingpong";
  rowBlocks = mmaOp.getRowBlocks();
  waitDepth = mmaOp.getWaitDepth();
  if ((!multistage && mmaOp.getInstr() != "wgmma") || (multistage && mmaOp.getInstr() != "mma.sync"))
    return mmaOp.emitError() << "a " << ringOp.getCopy() << " ring feeds "
                             << (multistage ? "mma.sync" : "wgmma") << ", not " << mmaOp.getInstr();
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
  }
  DictionaryAttr ids = resourcesOp.getBarriers();
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
