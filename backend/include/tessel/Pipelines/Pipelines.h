//===- Pipelines.h - tessel's pass pipeline and compile driver -----*- C++ -*-===//
//
// The JIT's steps, one dumped stage each (docs/pipeline.md):
//
//   01-tessel.mlir                      the traced program
//   02-select-schedule.mlir             canonicalize, cse, --tessel-select-schedule
//   03-materialize-tile-scheduler.mlir  --tessel-materialize-tile-scheduler
//   04-insert-async-copies.mlir         --tessel-insert-async-copies
//   05-warp-specialize.mlir             --tessel-warp-specialize
//   06-schedule-mma.mlir                --tessel-schedule-mma
//   07-lower-epilogue.mlir              --tessel-lower-epilogue
//   08-allocate-resources.mlir          --tessel-allocate-resources
//   09-lower-to-nvvm.mlir               --tessel-lower-to-nvvm, --tessel-legalize-math,
//                                       --tessel-verify-rings
//   10-convert-hopper-to-nvvm.mlir      --tessel-convert-hopper-to-nvvm
//   11-convert-to-llvm.mlir             scf-to-cf, convert-to-llvm, reconcile casts, cse
//   12-kernel.ll, 13-kernel.opt.ll, 14-kernel.ptx   LLVM IR, O3, NVPTX; then ptxas
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PIPELINES_PIPELINES_H
#define TESSEL_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <optional>

#include "tessel/Runtime/AutoSchedule.h"
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
  int64_t rasterGroup = 0;      ///< options::raster_group: 0 = tessel's default (8; 16 for BM <= 64)
  std::string decomposition = "auto";  ///< options::decomposition: auto, data-parallel, stream-k
  bool boundedWaits = false;  ///< TESSEL_DEBUG: mbarrier waits time out and report
};

/// tessel IR -> scheduled tessel IR (stage "select-schedule").
void buildSchedulePipeline(mlir::OpPassManager &pm, const PipelineOptions &o);
/// One step of the plan: its stage's name and the pass that writes it.
struct PlanStep {
  const char *stage;  ///< "materialize-tile-scheduler", ... (the pass without "tessel-")
  std::unique_ptr<mlir::Pass> (*create)();
};
/// The schedule's decisions, one pass each, in order (stages 03-08).
const std::vector<PlanStep> &planSteps();
/// The six plan passes: scheduled tessel IR -> its plan (stage "allocate-resources").
void buildPlanPipeline(mlir::OpPassManager &pm);
/// The planned kernel -> kernels in hopper/nvvm/llvm ops (stage "lower-to-nvvm").
void buildKernelPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);
/// tessel-convert-hopper-to-nvvm: the hopper ops to inline PTX (stage
/// "convert-hopper-to-nvvm").
void buildHopperToNVVMPipeline(mlir::OpPassManager &pm);
/// nvvm kernels -> LLVM dialect only (stage "convert-to-llvm").
void buildToLLVMPipeline(mlir::OpPassManager &pm);
/// All of them, in order (`tessel-opt --tessel-pipeline`).
void buildTesselPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);

/// What compileModule records and runs besides the compile itself.
struct CompileMode {
  /// Record every stage (01-tessel.mlir ... 14-kernel.ptx) in CompiledKernel::stages. When
  /// false only 01-tessel.mlir is recorded (printing the others is ~10% of a cold GEMM compile):
  /// recompileStages makes the rest, byte for byte, from that text and the same options. A
  /// failure still gets its IR reproducer: compileModule then compiles the 01 text again with
  /// every stage recorded (the same deterministic failure) and throws that compile's error.
  bool recordStages = true;
  /// Run ptxas (when the toolkit has it). recompileStages does not: no stage is ptxas's.
  bool assemble = true;
};

/// Compiles a traced module (one kernel) all the way to cubin, recording every
/// stage (or, with `mode.recordStages` false, the first). Throws tessel::error
/// with the diagnostics (which quote the user's source lines) on failure.
CompiledKernel compileModule(mlir::ModuleOp module, const options &o, CompileMode mode = {});

/// Every stage of the kernel whose 01-tessel.mlir is `tracedText`, compiled with `o` (as
/// compileModule with `o` recorded them: byte-identical, tests/unit/jit/LazyStagesTest.cpp),
/// in a fresh MLIRContext, without ptxas. Throws tessel::error like compileModule.
std::vector<std::pair<std::string, std::string>> recompileStages(const std::string &tracedText,
                                                                 const options &o);
/// compileModule of `tracedText` parsed into a fresh MLIRContext (recompileStages, and a
/// compile without recorded stages that failed: its reproducer).
CompiledKernel recompileStagesFor(const std::string &tracedText, const options &o, CompileMode mode);

/// What schedule::automatic needs from the traced GEMM (tessel/Runtime/AutoSchedule.h): the tile
/// and element type of its (first) tessel.dot, how many dots share the mainloop (a dual GEMM: 2),
/// and the argument dimension its k-loop runs to (`scf.for ... to %d` with `%d = tessel.dim %argI,
/// D`); nullopt when the kernel has no dot. ts::jit and tessel-compile resolve schedule::automatic
/// with it (runtime::chooseAutomatic for a large K), so that both build the same kernel.
std::optional<runtime::AutoGemmInfo> automaticGemmInfo(mlir::ModuleOp module, const options &o);

std::string scheduleName(schedule s);
/// The dtype of an MLIR element type (f16, bf16, f32, i1, f8E4M3FN, f8E5M2; i32 otherwise): what
/// the runtime records for kernel arguments and for the dot's operands.
dtype dtypeOf(mlir::Type t);
/// options::decomposition as the pass option spells it: auto, data-parallel, stream-k.
std::string decompositionName(decomposition d);

} // namespace tessel

#endif // TESSEL_PIPELINES_PIPELINES_H
