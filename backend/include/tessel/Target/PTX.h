//===- PTX.h - LLVM-dialect kernels to PTX -------------------------*- C++ -*-===//
//
// Translates a module of `llvm.func` kernels (LLVM + NVVM dialects only) to LLVM
// IR, optimises it (O3) and emits PTX with LLVM's NVPTX backend, in process.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TARGET_PTX_H
#define TESSEL_TARGET_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/Module.h"
#include <string>
#include <utility>
#include <vector>

namespace mlir::tessel {

struct PTXOptions {
  std::string chip = "sm_90a";
  /// PTX ISA >= 8.3: older ones crash LLVM 22 on the tensormap fence (DESIGN.md §6).
  std::string features = "+ptx85";
  unsigned optLevel = 3;
  /// options::fp_contract: fmul + fadd may become one fma (TargetOptions::AllowFPOpFusion
  /// Fast, nvcc's --fmad=true). Off (Standard): NVPTX prints `mul.rn` / `add.rn`, which
  /// ptxas leaves unfused too.
  bool fpContract = true;
  /// Print the LLVM IR before and after optimisation into PTXResult::llvmIR / llvmIROpt
  /// (stages 12 and 13; ~5% of a cold GEMM compile). Off: they stay empty.
  bool printIR = true;
};

struct PTXResult {
  std::string llvmIR;     ///< after translation, before optimisation
  std::string llvmIROpt;  ///< after O3
  std::string ptx;
  /// Wall time of each step in milliseconds, in order ("llvm translate", "llvm print",
  /// "llvm O3", "llvm print opt", "llvm codegen"): the JIT latency benchmark prints them.
  std::vector<std::pair<std::string, double>> timings;
};

/// Registers the LLVM IR translations this needs (builtin, llvm, nvvm).
void registerPTXTranslations(DialectRegistry &registry);

/// Emits PTX for `module`; diagnostics go to the module's context. No LLVM
/// failure (error diagnostic or fatal error) ends the process: each becomes a
/// failure with LLVM's message as an error on `module` (PTX.cpp).
FailureOr<PTXResult> translateToPTX(ModuleOp module, const PTXOptions &options);

/// Optimises `llvmModule` (O`options.optLevel`) and emits its PTX into
/// `result`. Unguarded: translateToPTX calls it under its fatal-error guard.
LogicalResult emitPTX(llvm::Module &llvmModule, const PTXOptions &options, PTXResult &result);

} // namespace mlir::tessel

#endif // TESSEL_TARGET_PTX_H
