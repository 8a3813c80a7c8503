//===- ConvertHopperToNVVM.cpp - tessel-convert-hopper-to-nvvm ------------===//
//
// Rewrites each hopper op into the PTX it names, 1:1, in place (the only
// place the hopper ops' PTX strings live). The IR it writes is exactly what
// tessel-lower-to-nvvm wrote before the hopper dialect existed, so the PTX of
// every kernel is unchanged (scripts/golden-ptx).
//
//   hopper.mbarrier.arrive_expect_tx %full, %c32768
//   hopper.tma.load %desc[%k, %m] -> %dst, %full : !llvm.ptr
//   hopper.mbarrier.wait %full, %ph stage %s {ring = "full"}
// becomes
//   llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
//       "r,r,~{memory}" %full, %c32768 : (i32, i32) -> ()
//   llvm.inline_asm has_side_effects "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::
//       complete_tx::bytes [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}" ...
//   llvm.inline_asm has_side_effects "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity...
//       @!p bra WAIT;\n}", "r,r,~{memory}" %full, %ph
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Transforms/Passes.h"

#include "PtxEmitter.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELCONVERTHOPPERTONVVM
#include "tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// An op that becomes one PTX string (fixed, or made from the op's
/// attributes by `code`) with its operands in order.
template <typename Op>
struct ToPtx : OpRewritePattern<Op> {
  using Code = std::function<std::string(Op)>;
  ToPtx(MLIRContext *ctx, StringRef fixed, StringRef constraints)
      : ToPtx(ctx, Code([s = fixed.str()](Op) { return s; }), constraints) {}
  ToPtx(MLIRContext *ctx, Code code, StringRef constraints)
      : OpRewritePattern<Op>(ctx), code(std::move(code)), constraints(constraints) {}
  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    emitPtx(b, op.getLoc(), code(op), constraints, op->getOperands());
    b.eraseOp(op);
    return success();
  }
  Code code;
  std::string constraints;
};

/// The wgmma ops become the upstream nvvm ops (which print the same PTX).
struct WgmmaToNVVM : OpRewritePattern<hopper::WgmmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::WgmmaOp op, PatternRewriter &b) const override {
    MLIRContext *ctx = op.getContext();
    auto wgmmaType = [](StringRef t) {
      return t == "bf16"   ? NVVM::WGMMATypes::bf16
             : t == "e4m3" ? NVVM::WGMMATypes::e4m3
             : t == "e5m2" ? NVVM::WGMMATypes::e5m2
                           : NVVM::WGMMATypes::f16;
    };
    auto type = wgmmaType(op.getType());
    auto typeB = wgmmaType(op.getTypeB().value_or(op.getType()));
    ArrayRef<int64_t> shape = op.getShape();
    // imm-trans-a = 1 for an M-major A (layout col), imm-trans-b = 1 for an
    // N-major B (layout row).
    auto layoutA = op.getAMnMajor() ? NVVM::MMALayout::col : NVVM::MMALayout::row;
    auto layoutB = op.getBMnMajor() ? NVVM::MMALayout::row : NVVM::MMALayout::col;
    b.replaceOpWithNewOp<NVVM::WgmmaMmaAsyncOp>(
        op, op.getAcc().getType(), op.getAcc(), op.getDescA(), op.getDescB(),
        NVVM::MMAShapeAttr::get(ctx, shape[0], shape[1], shape[2]), NVVM::WGMMATypesAttr::get(ctx, type),
        NVVM::WGMMATypesAttr::get(ctx, typeB), NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, op.getZeroAcc() ? NVVM::WGMMAScaleOut::zero
                                                          : NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one), NVVM::MMALayoutAttr::get(ctx, layoutA),
        NVVM::MMALayoutAttr::get(ctx, layoutB), NVVM::MMAIntOverflowAttr{});
    return success();
  }
};

template <typename From, typename To>
struct ToNVVM : OpRewritePattern<From> {
  using OpRewritePattern<From>::OpRewritePattern;
  LogicalResult matchAndRewrite(From op, PatternRewriter &b) const override {
    b.replaceOpWithNewOp<To>(op);
    return success();
  }
};

struct WgmmaWaitToNVVM : OpRewritePattern<hopper::WgmmaWaitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::WgmmaWaitOp op, PatternRewriter &b) const override {
    b.replaceOpWithNewOp<NVVM::WgmmaWaitGroupSyncOp>(op, op.getPending());
    return success();
  }
};

struct CpAsyncToPtx : OpRewritePattern<hopper::CpAsyncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::CpAsyncOp op, PatternRewriter &b) const override {
    std::string code = "cp.async.cg.shared.global [$0+" + std::to_string(op.getOffset()) + "], [$1], 16" +
                       (op.getSrcBytes() ? ", $2;" : ";");
    emitPtx(b, op.getLoc(), code, op.getSrcBytes() ? "r,l,r" : "r,l", op->getOperands());
    b.eraseOp(op);
    return success();
  }
};

struct LdMatrixToPtx : OpRewritePattern<hopper::LdMatrixOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::LdMatrixOp op, PatternRewriter &b) const override {
    std::string code = std::string("ldmatrix.sync.aligned.m8n8.x4") + (op.getTrans() ? ".trans" : "") +
                       ".shared.b16 {$0, $1, $2, $3}, [$4+" + std::to_string(op.getOffset()) + "];";
    b.replaceOp(op, emitPtx(b, op.getLoc(), code, "=r,=r,=r,=r,r", {op.getAddr()}, op.getType()));
    return success();
  }
};

/// mma.sync has no side effects and no memory: LLVM may schedule it freely.
struct MmaSyncToPtx : OpRewritePattern<hopper::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::MmaSyncOp op, PatternRewriter &b) const override {
    std::string code = "mma.sync.aligned.m16n8k16.row.col.f32." +
                       std::string(op.getType() == "bf16" ? "bf16.bf16" : "f16.f16") +
                       ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
    b.replaceOpWithNewOp<LLVM::InlineAsmOp>(
        op, op.getResult().getType(), op->getOperands(), code, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
        /*has_side_effects=*/false, /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
        LLVM::AsmDialectAttr{}, ArrayAttr{});
    return success();
  }
};

struct TmaLoadToPtx : OpRewritePattern<hopper::TmaLoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::TmaLoadOp op, PatternRewriter &b) const override {
    const bool threeD = op.getCoords().size() == 3, multicast = bool(op.getMask());
    std::string coords = threeD ? "{$2, $3, $4}" : "{$2, $3}";
    int bar = threeD ? 5 : 4;
    std::string code = std::string("cp.async.bulk.tensor.") + (threeD ? "3d" : "2d") +
                       ".shared::cluster.global.mbarrier::complete_tx::bytes" +
                       (multicast ? ".multicast::cluster" : "") + " [$0], [$1, " + coords + "], [$" +
                       std::to_string(bar) + "]" +
                       (multicast ? ", $" + std::to_string(bar + 1) : std::string()) + ";";
    std::string constraints = std::string("r,l,r,r,") + (threeD ? "r," : "") + "r" + (multicast ? ",h" : "");
    SmallVector<Value> operands = {op.getDst(), op.getDesc()};
    operands.append(op.getCoords().begin(), op.getCoords().end());
    operands.push_back(op.getBar());
    if (multicast)
      operands.push_back(op.getMask());
    emitPtx(b, op.getLoc(), code, constraints, operands);
    b.eraseOp(op);
    return success();
  }
};

/// The tensor operand of a 2-d or 3-d bulk tensor copy, `[$0, {$1, $2}]` or `[$0, {$1, $2, $3}]`,
/// its constraints and operands (desc, x, y[, z]).
struct TensorAddress {
  std::string text, constraints;
  SmallVector<Value> operands;
  bool threeD;
};
TensorAddress tensorAddress(Value desc, Value x, Value y, Value z) {
  if (z)
    return {"[$0, {$1, $2, $3}]", "l,r,r,r", {desc, x, y, z}, true};
  return {"[$0, {$1, $2}]", "l,r,r", {desc, x, y}, false};
}

struct TmaPrefetchToPtx : OpRewritePattern<hopper::TmaPrefetchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::TmaPrefetchOp op, PatternRewriter &b) const override {
    TensorAddress t = tensorAddress(op.getDesc(), op.getX(), op.getY(), op.getZ());
    emitPtx(b, op.getLoc(),
            std::string("cp.async.bulk.prefetch.tensor.") + (t.threeD ? "3d" : "2d") + ".L2.global.tile " + t.text +
                ";",
            t.constraints, t.operands);
    b.eraseOp(op);
    return success();
  }
};

struct TmaStoreToPtx : OpRewritePattern<hopper::TmaStoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::TmaStoreOp op, PatternRewriter &b) const override {
    TensorAddress t = tensorAddress(op.getDesc(), op.getX(), op.getY(), op.getZ());
    t.operands.push_back(op.getSrc());
    emitPtx(b, op.getLoc(),
            std::string("cp.async.bulk.tensor.") + (t.threeD ? "3d" : "2d") + ".global.shared::cta.bulk_group " +
                t.text + ", [$" + std::to_string(t.operands.size() - 1) + "];",
            t.constraints + ",r", t.operands);
    b.eraseOp(op);
    return success();
  }
};

/// The spin of an mbarrier wait: `tryWait` (with `bar` as $n, `phase` as $n+1)
/// until it says the phase completed; bounded (TESSEL_DEBUG), the report names
/// the ring, the stage and `reported` as the parity.
static void emitMBarrierSpin(PatternRewriter &b, Operation *op, StringRef tryWait, StringRef constraints,
                             Value bar, Value phase, bool bounded, StringRef ring, Value stage,
                             function_ref<Value()> reported) {
  Location loc = op->getLoc();
  WaitReport report;
  if (bounded) {
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    report = {fn ? fn.getSymName() : StringRef("?"), ring, b.create<NVVM::ThreadIdXOp>(loc, b.getI32Type()), stage,
              reported()};
  }
  // try_wait itself suspends the thread for a while in hardware.
  emitSpinWait(
      b, loc, "",
      [t = tryWait.str()](int n) {
        return t + " p, [$" + std::to_string(n) + "], $" + std::to_string(n + 1) + ";\n";
      },
      /*doneIfP=*/true, constraints, {bar, phase}, bounded, report);
}

struct MBarrierWaitToPtx : OpRewritePattern<hopper::MBarrierWaitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::MBarrierWaitOp op, PatternRewriter &b) const override {
    emitMBarrierSpin(b, op, "mbarrier.try_wait.parity.shared::cta.b64", "r,r", op.getBar(), op.getParity(),
                     op.getBounded(), op.getRing(), op.getStage(), [&] { return op.getParity(); });
    b.eraseOp(op);
    return success();
  }
};

/// Without a result, ToPtx's fixed text; with one, the arrival's state (a
/// constant byte count as an immediate).
struct MBarrierArriveExpectTxToPtx : OpRewritePattern<hopper::MBarrierArriveExpectTxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::MBarrierArriveExpectTxOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    if (!op.getState()) {
      emitPtx(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", op->getOperands());
      b.eraseOp(op);
      return success();
    }
    APInt bytes;
    Value state =
        matchPattern(op.getBytes(), m_ConstantInt(&bytes))
            ? emitPtx(b, loc,
                      "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], " + std::to_string(bytes.getSExtValue()) + ";",
                      "=l,r", {op.getBar()}, b.getI64Type())
            : emitPtx(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], $2;", "=l,r,r", op->getOperands(),
                      b.getI64Type());
    b.replaceOp(op, state);
    return success();
  }
};

struct MBarrierWaitStateToPtx : OpRewritePattern<hopper::MBarrierWaitStateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(hopper::MBarrierWaitStateOp op, PatternRewriter &b) const override {
    // A state names its phase; the report shows parity 0.
    emitMBarrierSpin(b, op, "mbarrier.try_wait.shared::cta.b64", "r,l", op.getBar(), op.getState(), op.getBounded(),
                     op.getRing(), op.getStage(),
                     [&] { return b.create<arith::ConstantIntOp>(op.getLoc(), b.getI32Type(), 0).getResult(); });
    b.eraseOp(op);
    return success();
  }
};

struct TesselConvertHopperToNVVM
    : tessel::impl::TesselConvertHopperToNVVMBase<TesselConvertHopperToNVVM> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ToPtx<hopper::MBarrierInitOp>>(ctx, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r");
    patterns.add<ToPtx<hopper::MBarrierArriveOp>>(ctx, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r");
    patterns.add<MBarrierArriveExpectTxToPtx, MBarrierWaitStateToPtx>(ctx);
    patterns.add<ToPtx<hopper::FenceMBarrierInitOp>>(ctx, "fence.mbarrier_init.release.cluster;", "");
    patterns.add<TmaLoadToPtx, TmaPrefetchToPtx, TmaStoreToPtx, MBarrierWaitToPtx, CpAsyncToPtx, LdMatrixToPtx,
                 MmaSyncToPtx>(ctx);
    patterns.add<ToPtx<hopper::CpAsyncCommitOp>>(ctx, "cp.async.commit_group;", "");
    patterns.add<ToPtx<hopper::CpAsyncWaitOp>>(
        ctx, [](hopper::CpAsyncWaitOp op) { return "cp.async.wait_group " + std::to_string(op.getPending()) + ";"; },
        "");
    patterns.add<WgmmaToNVVM, WgmmaWaitToNVVM, ToNVVM<hopper::WgmmaFenceOp, NVVM::WgmmaFenceAlignedOp>,
                 ToNVVM<hopper::WgmmaCommitOp, NVVM::WgmmaGroupSyncAlignedOp>>(ctx);
    patterns.add<ToPtx<hopper::MBarrierArriveClusterOp>>(ctx,
                                                       "{\n"
                                                       ".reg .b32 remote;\n"
                                                       "mapa.shared::cluster.u32 remote, $0, $1;\n"
                                                       "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                                                       "}",
                                                       "r,r");
    patterns.add<ToPtx<hopper::ClusterSyncOp>>(ctx,
                                             "barrier.cluster.arrive.release;\n"
                                             "barrier.cluster.wait.acquire;",
                                             "");
    patterns.add<ToPtx<hopper::SetMaxNRegOp>>(
        ctx,
        [](hopper::SetMaxNRegOp op) {
          return std::string("setmaxnreg.") + (op.getIncrease() ? "inc" : "dec") + ".sync.aligned.u32 " +
                 std::to_string(op.getRegs()) + ";";
        },
        "");
    patterns.add<ToPtx<hopper::NamedBarrierOp>>(
        ctx,
        [](hopper::NamedBarrierOp op) {
          return std::string(op.getArrive() ? "bar.arrive" : "bar.sync") + " $0, " +
                 std::to_string(op.getThreads()) + ";";
        },
        "r");
    patterns.add<ToPtx<hopper::PrefetchTensorMapOp>>(ctx, "prefetch.tensormap [$0];", "l");
    patterns.add<ToPtx<hopper::StMatrixOp>>(ctx, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
                                          "r,r,r,r,r");
    patterns.add<ToPtx<hopper::FenceProxyAsyncOp>>(ctx, "fence.proxy.async.shared::cta;", "");
    patterns.add<ToPtx<hopper::TmaStoreCommitOp>>(ctx, "cp.async.bulk.commit_group;", "");
    patterns.add<ToPtx<hopper::TmaStoreWaitOp>>(
        ctx,
        [](hopper::TmaStoreWaitOp op) {
          return std::string("cp.async.bulk.wait_group") + (op.getRead() ? ".read " : " ") +
                 std::to_string(op.getPending()) + ";";
        },
        "");
    // One pass over the ops in order, no folding: the IR stays as the builder wrote it.
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps).enableFolding(false).enableConstantCSE(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([&](Operation *op) {
      if (isa<hopper::HopperDialect>(op->getDialect())) {
        op->emitError() << "'" << op->getName() << "' has no conversion to nvvm";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
