//===- PTX.cpp - LLVM-dialect kernels to PTX ------------------------------===//
//
// No failure of LLVM ends the host process (DESIGN.md §7). LLVM reports two
// kinds of failure, and each is caught here:
//  1. Diagnostics of severity error (e.g. `no libcall available for fexp`):
//     without a handler the LLVMContext prints them and calls exit(1). A
//     handler on the context records them; the translation then fails.
//  2. Fatal errors (`report_fatal_error`, e.g. `Cannot select: ftanh`): LLVM
//     calls the fatal-error handler and then abort(). tessel installs one
//     handler for the process; on a thread inside `guarded()` it records the
//     reason and longjmps back, so abort() is never reached. The frames
//     skipped by the longjmp do not run their destructors, so the LLVM module
//     and context of a failed translation are deliberately leaked (a few MB
//     per failure; a correct program never gets here).
// Either way the caller gets a failure with the message as an MLIR error on
// the module, which compileModule turns into a tessel::error.
//

#include "tessel/Target/PTX.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <chrono>
#include <csetjmp>
#include <cstdio>
#include <mutex>

using namespace mlir;

void mlir::tessel::registerPTXTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

/// Milliseconds since `t0`, and restarts it (for PTXResult::timings).
static double lap(std::chrono::steady_clock::time_point &t0) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - t0).count();
  t0 = now;
  return ms;
}

static std::string print(const llvm::Module &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

namespace {

/// Where a fatal LLVM error on this thread jumps to (rule 2), or null.
thread_local std::jmp_buf *fatalJump = nullptr;
thread_local std::string *fatalReason = nullptr;

void onFatalError(void *, const char *reason, bool) {
  if (fatalJump) {
    *fatalReason = reason;
    std::longjmp(*fatalJump, 1);
  }
  // Not inside guarded(): LLVM's own behaviour (message, then abort).
  std::fprintf(stderr, "LLVM ERROR: %s\n", reason);
}

/// Runs `fn`; false (with `reason`) when LLVM raised a fatal error in it.
/// Only trivially destructible state may live in this frame (longjmp).
bool guarded(llvm::function_ref<void()> fn, std::string &reason) {
  static std::once_flag installed;
  std::call_once(installed, [] { llvm::install_fatal_error_handler(onFatalError); });
  std::jmp_buf buf;
  std::jmp_buf *outerJump = fatalJump;
  std::string *outerReason = fatalReason;
  fatalJump = &buf;
  fatalReason = &reason;
  bool ok;
  if (setjmp(buf) == 0) {
    fn();
    ok = true;
  } else {
    ok = false;
  }
  fatalJump = outerJump;
  fatalReason = outerReason;
  return ok;
}

/// The first line of an LLVM message without SelectionDAG node addresses:
/// "Cannot select: 0x55..: f32 = fsin 0x55..\n  0x55..: ..." -> "Cannot select: f32 = fsin".
std::string firstLine(StringRef message) {
  StringRef line = message.trim().split('\n').first;
  std::string out;
  while (!line.empty()) {
    auto [word, rest] = line.split(' ');
    line = rest;
    if (word.starts_with("0x"))
      continue;
    if (!out.empty())
      out += ' ';
    out += word.str();
  }
  return out;
}

} // namespace

FailureOr<tessel::PTXResult> mlir::tessel::translateToPTX(ModuleOp module,
                                                          const PTXOptions &options) {
  static std::once_flag init;
  std::call_once(init, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });

  // Heap-allocated so that a fatal error can leak them (rule 2).
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::string llvmErrors; // rule 1
  llvmContext->setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *d, void *errors) {
        if (d->getSeverity() != llvm::DS_Error)
          return;
        llvm::raw_string_ostream os(*static_cast<std::string *>(errors));
        llvm::DiagnosticPrinterRawOStream printer(os);
        d->print(printer);
        os << "\n";
      },
      &llvmErrors);
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, *llvmContext, "tessel");
  const double translateMs = lap(t0);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed"), failure();

  // Errors point at the kernel (its location is the user's functor), else the module.
  Operation *at = module;
  module.walk([&](LLVM::LLVMFuncOp fn) {
    if (at == module.getOperation() && !fn.isExternal())
      at = fn;
  });
  PTXResult result;
  result.timings.emplace_back("llvm translate", translateMs);
  std::string fatal;
  LogicalResult emitted = success();
  bool survived = guarded(
      [&] { emitted = emitPTX(*llvmModule, options, result); }, fatal);
  if (!survived) {
    (void)llvmModule.release();
    (void)llvmContext.release();
    // An error diagnostic, when there was one, is the cause of the fatal error that followed.
    return at->emitError() << "LLVM's NVPTX backend failed: "
                           << (llvmErrors.empty() ? "" : firstLine(llvmErrors) + "; ")
                           << firstLine(fatal),
           failure();
  }
  if (!llvmErrors.empty())
    return at->emitError() << "LLVM's NVPTX backend failed: " << firstLine(llvmErrors), failure();
  if (failed(emitted))
    return at->emitError("NVPTX cannot emit assembly"), failure();
  return result;
}

LogicalResult mlir::tessel::emitPTX(llvm::Module &llvmModule, const PTXOptions &options,
                                    PTXResult &result) {
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    llvm::report_fatal_error(llvm::Twine("NVPTX target unavailable: ") + err, false);
  llvm::TargetOptions targetOptions;
  targetOptions.AllowFPOpFusion =
      options.fpContract ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, options.chip, options.features, targetOptions, std::nullopt,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule.setTargetTriple(triple);
  llvmModule.setDataLayout(tm->createDataLayout());

  auto t0 = std::chrono::steady_clock::now();
  if (options.printIR) {
    result.llvmIR = print(llvmModule);
    result.timings.emplace_back("llvm print", lap(t0));
  }

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = options.optLevel >= 3   ? llvm::OptimizationLevel::O3
                                    : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                    : options.optLevel == 1 ? llvm::OptimizationLevel::O1
                                                            : llvm::OptimizationLevel::O0;
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
    mpm.run(llvmModule, mam);
  }
  result.timings.emplace_back("llvm O3", lap(t0));
  if (options.printIR) {
    result.llvmIROpt = print(llvmModule);
    result.timings.emplace_back("llvm print opt", lap(t0));
  }

  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      return failure();
    pm.run(llvmModule);
  }
  result.ptx = std::string(ptx.str());
  result.timings.emplace_back("llvm codegen", lap(t0));
  return success();
}
