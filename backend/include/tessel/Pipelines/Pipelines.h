//===- Pipelines.h - tessel's pass pipeline and compile driver -----*- C++ -*-===//
//
//   traced tessel IR
//     --tessel-select-schedule      #tessel.schedule on GEMM kernels
//     --tessel-lower-to-nvvm        llvm.func kernels in nvvm/llvm/scf/arith
//     --convert-scf-to-cf, --convert-to-llvm, --reconcile-unrealized-casts, cse
//   LLVM dialect --translate--> LLVM IR --O3, NVPTX--> PTX --ptxas--> cubin
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PIPELINES_PIPELINES_H
#define TESSEL_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include "tessel/Runtime/CompiledKernel.h"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel {

/// Every dialect tessel IR can hold at any stage, with the LLVM IR translations.
void registerAllDialects(mlir::DialectRegistry &registry);
/// tessel's passes and the `tessel-pipeline` pipeline (for tessel-opt).
void registerAllPasses();

struct PipelineOptions {
  std::string schedule = "auto";
  int64_t stages = 0;
  std::string cluster = "1x1";  ///< CTA cluster, "MxN" along program_id 0 x 1
  int64_t swizzle = 0;          ///< options::swizzle: 0 auto, -1 none, 32, 64, 128
  int64_t rasterGroup = 0;      ///< options::raster_group: 0 = tessel's default (8)
  std::string decomposition = "auto";  ///< options::decomposition: auto, data-parallel, stream-k
  bool boundedWaits = false;  ///< TESSEL_DEBUG: mbarrier waits time out and report
};

/// tessel IR -> scheduled tessel IR (stage "scheduled").
void buildSchedulePipeline(mlir::OpPassManager &pm, const PipelineOptions &o);
/// scheduled tessel IR -> kernels in nvvm/llvm and hopper ops (stage "hopper").
void buildKernelPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);
/// tessel-convert-hopper-to-nvvm: the hopper ops to inline PTX (stage "nvvm").
void buildHopperToNVVMPipeline(mlir::OpPassManager &pm);
/// nvvm kernels -> LLVM dialect only (stage "llvm").
void buildToLLVMPipeline(mlir::OpPassManager &pm);
/// All four, in order (`tessel-opt --tessel-pipeline`).
void buildTesselPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);

/// Compiles a traced module (one kernel) all the way to cubin, recording every
/// stage. Throws tessel::error with the diagnostics (which quote the user's
/// source lines) on failure.
CompiledKernel compileModule(mlir::ModuleOp module, const options &o);

std::string scheduleName(schedule s);
/// options::decomposition as the pass option spells it: auto, data-parallel, stream-k.
std::string decompositionName(decomposition d);

} // namespace tessel

#endif // TESSEL_PIPELINES_PIPELINES_H
