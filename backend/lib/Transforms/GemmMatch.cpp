//===- GemmMatch.cpp - recognise the GEMM mainloop ------------------------===//

#include "tessel/Transforms/GemmMatch.h"

#include "tessel/Dialect/Hopper/Hopper.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tessel;

/// A dot operand must be `tessel.load` (optionally through `tessel.trans`) of a
/// kernel argument, loaded inside the loop; after tessel-insert-async-copies,
/// `hopper.async_load` takes the place of the tessel.load.
static FailureOr<GemmOperand> matchOperand(Value v, scf::ForOp loop, StringRef which,
                                           DotOp dot) {
  GemmOperand op{};
  if (auto t = v.getDefiningOp<TransOp>()) {
    op.transposed = true;
    v = t.getSrc();
  }
  Operation *load = v.getDefiningOp();
  if (load && !isa<LoadOp, hopper::AsyncLoadOp>(load))
    load = nullptr;
  if (!load || load->getParentOp() != loop)
    return dot.emitOpError() << "operand " << which
                             << " must be a tile loaded (tessel.load, optionally "
                                "transposed) in the loop body";
  auto arg = dyn_cast<BlockArgument>(load->getOperand(0));
  if (!arg)
    return dot.emitOpError() << "operand " << which << " must load a kernel argument";
  op.load = load;
  op.argIndex = arg.getArgNumber();
  return op;
}

FailureOr<std::optional<GemmMatch>> mlir::tessel::matchGemm(func::FuncOp kernel) {
  SmallVector<DotOp> dots;
  kernel.walk([&](DotOp d) { dots.push_back(d); });
  if (dots.empty())
    return std::optional<GemmMatch>();
  if (dots.size() > kMaxDots)
    return dots[kMaxDots].emitOpError(
        "a kernel may hold one tessel.dot (one GEMM mainloop), or two that share the A tile "
        "(a dual GEMM)");
  DotOp dot = dots.front();
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  if (!loop || loop->getParentOp() != kernel)
    return dot.emitOpError("tessel.dot must sit directly in a top-level loop "
                           "(for (auto k : ts::range(...)))");
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());

  GemmMatch m{};
  m.loop = loop;
  m.dot = dot;
  auto a = matchOperand(dot.getA(), loop, "a", dot);
  if (failed(a))
    return failure();
  m.a = *a;
  for (DotOp d : dots) {
    if (d->getParentOp() != loop)
      return d.emitOpError("the two dots of a dual GEMM must sit in the same loop");
    if (d.getA() != dot.getA())
      return d.emitOpError("the two dots of a dual GEMM must share the A tile (one tile "
                           "variable: auto a = A.load(...); ts::dot(a, ...) twice)");
    if (d.getB().getType() != dot.getB().getType())
      return d.emitOpError() << "the two dots of a dual GEMM must have B tiles of one shape and "
                                "dtype, got "
                             << dot.getB().getType() << " and " << d.getB().getType();
    auto acc = dyn_cast<BlockArgument>(d.getAcc());
    if (!acc || acc.getOwner() != loop.getBody() || acc.getArgNumber() == 0)
      return d.emitOpError("the accumulator must be the loop-carried tile (acc += dot(...))");
    unsigned accIndex = acc.getArgNumber() - 1;
    if (llvm::is_contained(m.accIndices, accIndex))
      return d.emitOpError("each dot of a dual GEMM needs its own accumulator");
    if (yield.getOperand(accIndex) != d.getResult())
      return d.emitOpError("the loop must carry the dot's result to the next iteration");
    DenseElementsAttr init;
    if (!matchPattern(loop.getInitArgs()[accIndex], m_Constant(&init)) || !init.isSplat() ||
        !init.getSplatValue<APFloat>().isZero())
      return d.emitOpError("the accumulator must start at zero (ts::zeros)");
    auto b = matchOperand(d.getB(), loop, "b", d);
    if (failed(b))
      return failure();
    if (!m.bs.empty() && b->load == m.bs[0].load)
      return d.emitOpError("the two dots of a dual GEMM must load their own B tiles");
    if (!m.bs.empty() && b->transposed != m.bs[0].transposed)
      return d.emitOpError("the two dots of a dual GEMM must load B the same way (both "
                           "transposed with .T(), or neither)");
    m.dots.push_back(d);
    m.bs.push_back(*b);
    m.accIndices.push_back(accIndex);
  }
  if (loop.getNumRegionIterArgs() != dots.size())
    return loop.emitOpError(dots.size() == 1 ? "the mainloop may carry only the accumulator"
                                             : "the mainloop may carry only the accumulators");
  m.accIndex = m.accIndices[0];
  m.b = m.bs[0];
  auto aTy = cast<RankedTensorType>(dot.getA().getType());
  auto bTy = cast<RankedTensorType>(dot.getB().getType());
  m.tileM = aTy.getDimSize(0);
  m.tileK = aTy.getDimSize(1);
  m.tileN = bTy.getDimSize(1);
  return std::optional<GemmMatch>(m);
}

Operation *mlir::tessel::tileIndexOf(Value offset, int64_t extent) {
  auto mul = offset.getDefiningOp<arith::MulIOp>();
  if (!mul)
    return nullptr;
  for (int i = 0; i < 2; ++i) {
    Operation *index = mul->getOperand(i).getDefiningOp();
    APInt c;
    if (index && isa<ProgramIdOp, hopper::TileSchedulerOp>(index) &&
        matchPattern(mul->getOperand(1 - i), m_ConstantInt(&c)) && c == extent)
      return index;
  }
  return nullptr;
}
