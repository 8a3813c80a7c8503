//===- GemmMatch.cpp - recognise the GEMM mainloop ------------------------===//

#include "tessel/Transforms/GemmMatch.h"

#include "tessel/Dialect/Hopper/Hopper.h"

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
  if (dots.size() != 1)
    return dots[1].emitOpError("a kernel may hold one tessel.dot (one GEMM mainloop)");
  DotOp dot = dots.front();
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  if (!loop || loop->getParentOp() != kernel)
    return dot.emitOpError("tessel.dot must sit directly in a top-level loop "
                           "(for (auto k : ts::range(...)))");
  auto acc = dyn_cast<BlockArgument>(dot.getAcc());
  if (!acc || acc.getOwner() != loop.getBody() || acc.getArgNumber() == 0)
    return dot.emitOpError("the accumulator must be the loop-carried tile (acc += dot(...))");
  unsigned accIndex = acc.getArgNumber() - 1;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(accIndex) != dot.getResult())
    return dot.emitOpError("the loop must carry the dot's result to the next iteration");
  if (loop.getNumRegionIterArgs() != 1)
    return loop.emitOpError("the mainloop may carry only the accumulator");
  DenseElementsAttr init;
  if (!matchPattern(loop.getInitArgs()[accIndex], m_Constant(&init)) || !init.isSplat() ||
      !init.getSplatValue<APFloat>().isZero())
    return dot.emitOpError("the accumulator must start at zero (ts::zeros)");

  GemmMatch m{};
  m.loop = loop;
  m.accIndex = accIndex;
  m.dot = dot;
  auto a = matchOperand(dot.getA(), loop, "a", dot);
  auto b = matchOperand(dot.getB(), loop, "b", dot);
  if (failed(a) || failed(b))
    return failure();
  m.a = *a;
  m.b = *b;
  auto aTy = cast<RankedTensorType>(dot.getA().getType());
  auto bTy = cast<RankedTensorType>(dot.getB().getType());
  m.tileM = aTy.getDimSize(0);
  m.tileK = aTy.getDimSize(1);
  m.tileN = bTy.getDimSize(1);
  return std::optional<GemmMatch>(m);
}
