//===- GemmMatch.cpp - recognise the GEMM mainloop ------------------------===//

#include "tessel/Transforms/GemmMatch.h"

#include "tessel/Dialect/Hopper/Hopper.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/IR/Matchers.h"

#include <functional>

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

static bool isZeroSplat(Value v) {
  DenseElementsAttr init;
  return matchPattern(v, m_Constant(&init)) && init.isSplat() &&
         init.getSplatValue<APFloat>().isZero();
}

/// A scaled accumulation (GemmMatch.h): `dot`'s accumulator is zero and the
/// loop yields `%c + f(dot)` for one of its iter_args %c, where f is
/// elementwise: arith / math ops, broadcast vectors and splat scalars, tiles
/// and elements loaded in the loop, casts. Returns the iter_arg position, or
/// failure with a diagnostic at the dot; std::nullopt when the loop has no
/// such form (the caller reports the plain accumulation's rule).
static FailureOr<std::optional<unsigned>> matchPromotion(scf::ForOp loop, DotOp dot) {
  if (!isZeroSplat(dot.getAcc()))
    return std::optional<unsigned>();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [i, y] : llvm::enumerate(yield.getOperands())) {
    auto add = y.getDefiningOp<arith::AddFOp>();
    if (!add || add->getParentOp() != loop)
      continue;
    BlockArgument c = loop.getRegionIterArgs()[i];
    Value f = add.getLhs() == c ? add.getRhs() : add.getRhs() == c ? add.getLhs() : Value();
    if (!f)
      continue;
    if (!c.hasOneUse())
      return dot.emitOpError("a scaled accumulation (acc += dot(a, b) * s) may use the "
                             "accumulator only in that one addition"),
           failure();
    // f's operations inside the loop, back from f; the dot ends the walk.
    bool usesDot = false;
    SmallVector<Value> work{f};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (v == dot.getResult()) {
        usesDot = true;
        continue;
      }
      if (v == c)
        return dot.emitOpError("a scaled accumulation (acc += dot(a, b) * s) may use the "
                               "accumulator only in that one addition"),
               failure();
      Operation *op = v.getDefiningOp();
      if (!op || !loop->isAncestor(op) || !seen.insert(op).second)
        continue;
      StringRef dialect = op->getName().getDialectNamespace();
      bool elementwise = (dialect == "arith" || dialect == "math") && op->getNumRegions() == 0;
      if (!elementwise && !isa<BroadcastOp, SplatOp, LoadOp, LoadElementOp, CastOp>(op))
        return op->emitOpError()
                   << "cannot be part of a scaled accumulation (acc += dot(a, b) * s): its "
                      "factor may use elementwise operations, .row() / .col() vectors, scalars "
                      "and tensor elements (ts::tensor::at) only",
               failure();
      llvm::append_range(work, op->getOperands());
    }
    if (usesDot)
      return std::optional<unsigned>(i);
  }
  return std::optional<unsigned>();
}

/// The factors of a scaled accumulation (GemmMatch::factors): the tile
/// operands inside `promoted` that depend on neither `dot` nor `acc`.
static SmallVector<Value> promotionFactors(scf::ForOp loop, Value dot, Value acc, Value promoted) {
  DenseMap<Value, bool> dependent;
  std::function<bool(Value)> depends = [&](Value v) -> bool {
    if (v == dot || v == acc)
      return true;
    if (auto it = dependent.find(v); it != dependent.end())
      return it->second;
    Operation *op = v.getDefiningOp();
    bool d = false;
    if (op && loop->isAncestor(op))
      for (Value o : op->getOperands())
        d = d || depends(o);
    return dependent[v] = d;
  };
  SmallVector<Value> factors;
  SmallVector<Value> work{promoted};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second || v == dot || v == acc || !depends(v))
      continue;
    for (Value o : v.getDefiningOp()->getOperands()) {
      if (!isa<ShapedType>(o.getType()))
        continue;
      if (depends(o))
        work.push_back(o);
      else if (!llvm::is_contained(factors, o))
        factors.push_back(o);
    }
  }
  return factors;
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
    unsigned accIndex;
    auto acc = dyn_cast<BlockArgument>(d.getAcc());
    if (!acc || acc.getOwner() != loop.getBody() || acc.getArgNumber() == 0) {
      auto promotion = matchPromotion(loop, d);
      if (failed(promotion))
        return failure();
      if (!*promotion)
        return d.emitOpError("the accumulator must be the loop-carried tile (acc += dot(...), "
                             "or acc += dot(...) * s for a scaled accumulation)");
      if (dots.size() > 1)
        return d.emitOpError("a dual GEMM cannot scale its accumulations (acc += dot(a, b) * s): "
                             "use acc += dot(a, b)");
      accIndex = **promotion;
      m.promoted = yield.getOperand(accIndex);
      m.factors = promotionFactors(loop, d.getResult(), loop.getRegionIterArgs()[accIndex],
                                   m.promoted);
    } else {
      accIndex = acc.getArgNumber() - 1;
      if (llvm::is_contained(m.accIndices, accIndex))
        return d.emitOpError("each dot of a dual GEMM needs its own accumulator");
      if (yield.getOperand(accIndex) != d.getResult())
        return d.emitOpError("the loop must carry the dot's result to the next iteration");
    }
    if (!isZeroSplat(loop.getInitArgs()[accIndex]))
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
                                             : "the mainloop may carry only the accumulators")
           << " (acc += ts::dot(...)): another value (a tile, scalar or index) reassigned in the "
              "loop is not built yet; compute it after the loop";
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

bool mlir::tessel::dependsOnProgramId(Value v, int64_t axis) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *op = x.getDefiningOp();
    if (!op) {
      // A kernel argument is the same for every tile; a loop's index takes
      // lb + i * step; any other block argument (a loop-carried value, a
      // region's argument) is taken to depend on the tile.
      auto arg = cast<BlockArgument>(x);
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<func::FuncOp>(owner))
        continue;
      if (auto loop = dyn_cast<scf::ForOp>(owner); loop && x == loop.getInductionVar()) {
        work.push_back(loop.getLowerBound());
        work.push_back(loop.getStep());
        continue;
      }
      return true;
    }
    if (auto pid = dyn_cast<ProgramIdOp>(op); pid && pid.getAxis() == axis)
      return true;
    if (isa<hopper::TileSchedulerOp>(op) && cast<OpResult>(x).getResultNumber() == axis)
      return true;
    llvm::append_range(work, op->getOperands());
  }
  return false;
}

bool mlir::tessel::tripCountDependsOnTile(scf::ForOp loop) {
  for (Value v : {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
    for (int64_t axis = 0; axis < 3; ++axis)
      if (dependsOnProgramId(v, axis))
        return true;
  return false;
}

AccumulatorView mlir::tessel::accumulatorView(Value v, ValueRange accs) {
  // Which parities of tessel.trans lie on the paths from `v` to an
  // accumulator: bit 0 even, bit 1 odd.
  llvm::DenseMap<Value, unsigned> memo[2]; // by the parity so far
  std::function<unsigned(Value, bool)> walk = [&](Value x, bool odd) -> unsigned {
    if (llvm::is_contained(accs, x))
      return odd ? 2u : 1u;
    Operation *op = x.getDefiningOp();
    if (!op || isa<LoadOp>(op))
      return 0;
    if (auto it = memo[odd].find(x); it != memo[odd].end())
      return it->second;
    bool flips = isa<TransOp>(op);
    unsigned found = 0;
    for (Value o : op->getOperands())
      if (isa<ShapedType>(o.getType()))
        found |= walk(o, odd != flips);
    memo[odd][x] = found;
    return found;
  };
  switch (walk(v, false)) {
  case 0:
    return AccumulatorView::none;
  case 1:
    return AccumulatorView::direct;
  case 2:
    return AccumulatorView::transposed;
  default:
    return AccumulatorView::mixed;
  }
}

bool mlir::tessel::storesTransposedTile(Value stored, AccumulatorView view, int64_t rows, int64_t cols) {
  switch (view) {
  case AccumulatorView::transposed:
    return true;
  case AccumulatorView::none: {
    auto ty = dyn_cast<RankedTensorType>(stored.getType());
    return ty && ty.getRank() == 2 && rows != cols && ty.getDimSize(0) == cols && ty.getDimSize(1) == rows;
  }
  default:
    return false;
  }
}

bool mlir::tessel::readsResultOf(Value v, Operation *op) {
  // A walk of the expression's operands, each defining op once.
  SmallVector<Value> work{v};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (def == op)
      return true;
    llvm::append_range(work, def->getOperands());
  }
  return false;
}
