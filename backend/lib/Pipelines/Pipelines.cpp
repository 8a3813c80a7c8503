//===- Pipelines.cpp - tessel's pass pipelines ----------------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "tessel/Target/PTX.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ::tessel::registerAllDialects(DialectRegistry &registry) {
  registry.insert<mlir::tessel::TesselDialect, mlir::tessel::hopper::HopperDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, func::FuncDialect, cf::ControlFlowDialect,
                  LLVM::LLVMDialect, NVVM::NVVMDialect, ub::UBDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  mlir::tessel::registerPTXTranslations(registry);
}

void ::tessel::buildSchedulePipeline(OpPassManager &pm, const PipelineOptions &o) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  mlir::tessel::TesselSwapOperandsOptions swap;
  swap.scheduleName = o.schedule;
  swap.cluster = o.cluster;
  pm.addPass(mlir::tessel::createTesselSwapOperands(swap));
  mlir::tessel::TesselSelectScheduleOptions so;
  so.scheduleName = o.schedule;
  so.stages = o.stages;
  so.cluster = o.cluster;
  so.swizzle = o.swizzle;
  so.rasterGroup = o.rasterGroup;
  so.decomposition = o.decomposition;
  pm.addPass(mlir::tessel::createTesselSelectSchedule(so));
}

const std::vector<::tessel::PlanStep> &::tessel::planSteps() {
  static const std::vector<PlanStep> steps = {
      {"materialize-tile-scheduler", [] { return mlir::tessel::createTesselMaterializeTileScheduler(); }},
      {"insert-async-copies", [] { return mlir::tessel::createTesselInsertAsyncCopies(); }},
      {"warp-specialize", [] { return mlir::tessel::createTesselWarpSpecialize(); }},
      {"schedule-mma", [] { return mlir::tessel::createTesselScheduleMma(); }},
      {"lower-epilogue", [] { return mlir::tessel::createTesselLowerEpilogue(); }},
      {"allocate-resources", [] { return mlir::tessel::createTesselAllocateResources(); }},
  };
  return steps;
}

void ::tessel::buildPlanPipeline(OpPassManager &pm) {
  for (const PlanStep &step : planSteps())
    pm.addPass(step.create());
}

void ::tessel::buildKernelPipeline(OpPassManager &pm, const PipelineOptions &o) {
  mlir::tessel::TesselLowerToNVVMOptions lo;
  lo.boundedWaits = o.boundedWaits;
  pm.addPass(mlir::tessel::createTesselLowerToNVVM(lo));
  pm.addPass(mlir::tessel::createTesselLegalizeMath());
  pm.addPass(mlir::tessel::createTesselVerifyRings());
}

void ::tessel::buildHopperToNVVMPipeline(OpPassManager &pm) {
  pm.addPass(mlir::tessel::createTesselConvertHopperToNVVM());
}

void ::tessel::buildToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void ::tessel::buildTesselPipeline(OpPassManager &pm, const PipelineOptions &o) {
  buildSchedulePipeline(pm, o);
  buildPlanPipeline(pm);
  buildKernelPipeline(pm, o);
  buildHopperToNVVMPipeline(pm);
  buildToLLVMPipeline(pm);
}

namespace {
struct TesselPipelineCLOptions : public PassPipelineOptions<TesselPipelineCLOptions> {
  PassOptions::Option<std::string> schedule{*this, "schedule",
                                            llvm::cl::desc("schedule name or auto"),
                                            llvm::cl::init("auto")};
  PassOptions::Option<int64_t> stages{*this, "stages", llvm::cl::desc("ring depth (0: auto, -1: as many as fit)"),
                                      llvm::cl::init(0)};
  PassOptions::Option<std::string> cluster{*this, "cluster",
                                           llvm::cl::desc("CTA cluster: 1x1, 2x1 or 1x2"),
                                           llvm::cl::init("1x1")};
  PassOptions::Option<int64_t> swizzle{
      *this, "swizzle", llvm::cl::desc("operand swizzle: 0 auto, 128, 64, 32, -1 none"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> rasterGroup{
      *this, "raster-group", llvm::cl::desc("rows of tiles per raster group (0: 8)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> decomposition{
      *this, "decomposition", llvm::cl::desc("auto, data-parallel or stream-k"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> boundedWaits{*this, "bounded-waits",
                                         llvm::cl::desc("mbarrier waits time out and report"),
                                         llvm::cl::init(false)};
};
::tessel::PipelineOptions fromCommandLine(const TesselPipelineCLOptions &cl) {
  ::tessel::PipelineOptions o;
  o.schedule = cl.schedule;
  o.stages = cl.stages;
  o.cluster = cl.cluster;
  o.swizzle = cl.swizzle;
  o.rasterGroup = cl.rasterGroup;
  o.decomposition = cl.decomposition;
  o.boundedWaits = cl.boundedWaits;
  return o;
}
} // namespace

void ::tessel::registerAllPasses() {
  mlir::tessel::registerTesselPasses();
  // The upstream passes the pipeline uses, so that each step can be replayed alone.
  registerTransformsPasses();
  registerSCFToControlFlowPass();
  registerConvertToLLVMPass();
  registerReconcileUnrealizedCastsPass();
  // The JIT's steps, one per dumped stage (Compile.cpp), so that each stage
  // replays to the next (the plan's six steps 03-08 are single passes).
  PassPipelineRegistration<TesselPipelineCLOptions>(
      "tessel-schedule-pipeline", "01-tessel.mlir -> 02-select-schedule.mlir",
      [](OpPassManager &pm, const TesselPipelineCLOptions &cl) {
        buildSchedulePipeline(pm, fromCommandLine(cl));
      });
  PassPipelineRegistration<>("tessel-plan-pipeline",
                             "02-select-schedule.mlir -> 08-allocate-resources.mlir (the six "
                             "plan passes)",
                             [](OpPassManager &pm) { buildPlanPipeline(pm); });
  PassPipelineRegistration<TesselPipelineCLOptions>(
      "tessel-build-kernel-pipeline",
      "08-allocate-resources.mlir -> 09-lower-to-nvvm.mlir (lower-to-nvvm, legalize-math, "
      "verify-rings)",
      [](OpPassManager &pm, const TesselPipelineCLOptions &cl) {
        buildKernelPipeline(pm, fromCommandLine(cl));
      });
  PassPipelineRegistration<TesselPipelineCLOptions>(
      "tessel-kernel-pipeline",
      "02-select-schedule.mlir -> 09-lower-to-nvvm.mlir (the plan, then the kernel)",
      [](OpPassManager &pm, const TesselPipelineCLOptions &cl) {
        buildPlanPipeline(pm);
        buildKernelPipeline(pm, fromCommandLine(cl));
      });
  PassPipelineRegistration<>("tessel-hopper-to-nvvm-pipeline",
                             "09-lower-to-nvvm.mlir -> 10-convert-hopper-to-nvvm.mlir",
                             [](OpPassManager &pm) { buildHopperToNVVMPipeline(pm); });
  PassPipelineRegistration<>("tessel-to-llvm-pipeline",
                             "10-convert-hopper-to-nvvm.mlir -> 11-convert-to-llvm.mlir",
                             [](OpPassManager &pm) { buildToLLVMPipeline(pm); });
  PassPipelineRegistration<TesselPipelineCLOptions>(
      "tessel-pipeline", "tessel IR to LLVM-dialect kernels (the JIT's pipeline up to PTX)",
      [](OpPassManager &pm, const TesselPipelineCLOptions &cl) {
        buildTesselPipeline(pm, fromCommandLine(cl));
      });
}

namespace tessel {
// A value that is no enumerator (cast from a number) is spelled with its number, which
// tessel-select-schedule then reports: "unknown schedule 'ts::schedule(9)' (expected ...)".
std::string scheduleName(schedule s) {
  const std::string name = to_string(s);
  return name != "?" ? name : "ts::schedule(" + std::to_string(static_cast<unsigned>(s)) + ")";
}

std::string decompositionName(decomposition d) {
  switch (d) {
  case decomposition::automatic: return "auto";
  case decomposition::data_parallel: return "data-parallel";
  case decomposition::stream_k: return "stream-k";
  }
  // Not an enumerator: tessel-select-schedule rejects it, with the number (as scheduleName).
  return "ts::decomposition(" + std::to_string(static_cast<unsigned>(d)) + ")";
}
} // namespace tessel
