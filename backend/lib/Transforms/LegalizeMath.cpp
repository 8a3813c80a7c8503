//===- LegalizeMath.cpp - tessel-legalize-math ----------------------------===//
//
// Rewrites the scalar transcendental `math` ops that tessel-lower-to-nvvm
// leaves in a kernel into what the NVPTX backend selects (Passes.td has the
// table with each op's PTX and error). Without it LLVM 22 aborts the host
// process on `math.tanh` (`Cannot select: ftanh`) and fails on `math.exp` /
// `math.log` (`no libcall available for fexp`).
//
//   %t = math.tanh %x : bf16
// becomes
//   %w = arith.extf %x : bf16 to f32
//   %u = llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %w : (f32) -> f32
//   %t = arith.truncf %u : f32 to bf16
//
// Decisions (docs/math.md has the user-facing accuracy table):
//  1. f16 and bf16 are computed in f32 and rounded once: the approximations'
//     error is then far below the result's half ulp.
//  2. The non-ftz `ex2.approx.f32` / `lg2.approx.f32` keep subnormal inputs
//     and results (exp(-100) is 3.7e-44, not 0).
//  3. Other math ops (sin, pow, ...) are not produced by the DSL and are left
//     alone: if one reaches the NVPTX backend, its failure is caught there
//     (Target/PTX.cpp) and becomes a tessel::error with an IR reproducer.
//  4. `tanh.approx.f32` (relative error 2^-10.99) is the fast path the issue
//     asked for; GELU's tanh form inherits it, `ts::gelu_erf` does not (the erf
//     polynomial is accurate to a few ulp).
//
//===----------------------------------------------------------------------===//

#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELLEGALIZEMATH
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {

constexpr double kLog2E = 1.4426950408889634; // log2(e)
constexpr double kLn2 = 0.6931471805599453;   // ln(2)

Value f32Constant(PatternRewriter &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
}

Value intrinsic(PatternRewriter &b, Location loc, StringRef name, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(), b.getStringAttr(name), ValueRange{x})
      .getResult(0);
}

/// One transcendental op on an f16 / bf16 / f32 scalar. `compute` builds the
/// f32 result from the f32 operand (rule 1 extends and rounds around it).
template <typename Op>
struct LegalizeScalar : OpRewritePattern<Op> {
  using Compute = Value (*)(PatternRewriter &, Location, Value);
  LegalizeScalar(MLIRContext *ctx, Compute compute)
      : OpRewritePattern<Op>(ctx), compute(compute) {}

  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    auto type = dyn_cast<FloatType>(op.getType());
    if (!type)
      return b.notifyMatchFailure(op, "not a scalar float (tile math is scalar here)");
    if (!type.isF16() && !type.isBF16() && !type.isF32())
      return b.notifyMatchFailure(op, "only f16, bf16 and f32 are legalized");
    Location loc = op.getLoc();
    Value x = op.getOperand();
    if (!type.isF32())
      x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    Value r = compute(b, loc, x);
    if (!type.isF32())
      r = arith::TruncFOp::create(b, loc, type, r);
    b.replaceOp(op, r);
    return success();
  }

  Compute compute;
};

Value exp2F32(PatternRewriter &b, Location loc, Value x) {
  return intrinsic(b, loc, "llvm.nvvm.ex2.approx.f32", x);
}
Value expF32(PatternRewriter &b, Location loc, Value x) {
  return exp2F32(b, loc, arith::MulFOp::create(b, loc, x, f32Constant(b, loc, kLog2E)));
}
Value log2F32(PatternRewriter &b, Location loc, Value x) {
  return intrinsic(b, loc, "llvm.nvvm.lg2.approx.f", x);
}
Value logF32(PatternRewriter &b, Location loc, Value x) {
  return arith::MulFOp::create(b, loc, log2F32(b, loc, x), f32Constant(b, loc, kLn2));
}
Value tanhF32(PatternRewriter &b, Location loc, Value x) {
  return LLVM::InlineAsmOp::create(b, loc, b.getF32Type(), ValueRange{x}, "tanh.approx.f32 $0, $1;",
                                   "=f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr{},
                                   ArrayAttr{})
      .getResult(0);
}
Value erfF32(PatternRewriter &b, Location loc, Value x) {
  // Stays math.erf on f32; the upstream polynomial pattern (same rewrite run) expands it.
  return math::ErfOp::create(b, loc, x);
}

/// f16 / bf16 erf is computed in f32 (rule 1); the f32 op is left to the upstream pattern.
struct ExtendErf : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &b) const override {
    auto type = dyn_cast<FloatType>(op.getType());
    if (!type || !(type.isF16() || type.isBF16()))
      return failure();
    Value x = arith::ExtFOp::create(b, op.getLoc(), b.getF32Type(), op.getOperand());
    b.replaceOpWithNewOp<arith::TruncFOp>(op, type, erfF32(b, op.getLoc(), x));
    return success();
  }
};

struct TesselLegalizeMath : tessel::impl::TesselLegalizeMathBase<TesselLegalizeMath> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<LegalizeScalar<math::ExpOp>>(ctx, expF32);
    patterns.add<LegalizeScalar<math::Exp2Op>>(ctx, exp2F32);
    patterns.add<LegalizeScalar<math::LogOp>>(ctx, logF32);
    patterns.add<LegalizeScalar<math::Log2Op>>(ctx, log2F32);
    patterns.add<LegalizeScalar<math::TanhOp>>(ctx, tanhF32);
    patterns.add<ExtendErf>(ctx);
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
