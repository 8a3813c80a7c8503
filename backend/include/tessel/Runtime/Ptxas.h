//===- Ptxas.h - PTX to cubin with the CUDA toolkit's ptxas --------*- C++ -*-===//
//
// tessel runs ptxas itself rather than relying on MLIR's serializer, because
// the serializer hides ptxas's log, and the log carries the performance
// cliffs that tests must be able to fail on: C7508 (setmaxnreg ignored),
// C7514/C7515 (wgmma serialized), spills (DESIGN.md §6, §7). ptxas runs as a
// child process (posix_spawn, no shell) on temporary files.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessel::runtime {

/// Finds ptxas: $TESSEL_PTXAS, $CUDA_HOME/bin/ptxas, $CUDA_PATH/bin/ptxas,
/// /usr/local/cuda/bin/ptxas, then ptxas on PATH. Returns false when none is
/// executable (then *path lists where it looked). An explicit $TESSEL_PTXAS
/// that is not executable is not skipped: it makes the lookup fail, so that a
/// typo does not silently select another toolkit.
bool ptxasAvailable(std::string* path = nullptr);

/// Assembles `ptx` for `arch` (e.g. "sm_90a") with
/// `ptxas -arch=<arch> -O3 -v --warn-on-spills` and returns the cubin. The
/// combined stdout+stderr of ptxas goes to *log (when non-null) whether or not
/// it succeeds. With TESSEL_VERBOSE, the command line and the log are also
/// printed to stderr (callers need not print them again). Throws tessel::error
/// when ptxas is missing, cannot run, or fails (the message carries the log).
std::string compilePtxToCubin(const std::string& ptx, const std::string& arch, std::string* log);

/// The version of the ptxas found by ptxasAvailable, for cache keys: its
/// release and build lines ("Cuda compilation tools, release 13.0, V13.0.88;
/// Build cuda_13.0.r13.0/compiler.36424714_0"). Throws tessel::error when
/// there is no ptxas.
std::string ptxasVersion();

/// `cuobjdump -sass` of `cubin` (cuobjdump from the toolkit that has ptxas).
/// Throws tessel::error, naming `kernel`, when there is none or it fails.
std::string disassembleCubin(const std::string& cubin, const std::string& kernel);

/// What `ptxas -v` said about one kernel.
struct PtxasReport {
  int registers = -1;              ///< registers per thread; -1 if the log has none
  int spillStores = 0;             ///< bytes
  int spillLoads = 0;              ///< bytes
  int stackFrame = 0;              ///< bytes
  bool setmaxnregIgnored = false;  ///< C7508: setmaxnreg had no effect
  bool wgmmaSerialized = false;    ///< C7514 or C7515: wgmma.mma_async serialized
  std::vector<std::string> codes;  ///< every diagnostic code seen ("C7508", ...), once each
};

/// Parses a ptxas -v log. With `kernel`, the register and spill figures are
/// those of that entry function when the log has it; otherwise they are
/// aggregated over every function (registers: max; spills, stack: sum). The
/// C75xx warnings are module-wide (ptxas prints some of them before naming a
/// function), so they are reported whatever `kernel` is.
PtxasReport parsePtxasLog(std::string_view log, std::string_view kernel = {});

}  // namespace tessel::runtime
