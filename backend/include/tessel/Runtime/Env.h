//===- Env.h - tessel's environment knobs, in one place ------------*- C++ -*-===//
//
// Every environment variable tessel reads is listed and documented here, and
// read only through this header (the README copies this list).
//
//   TESSEL_DUMP_DIR=<dir>     Write the stages of every compiled kernel (each
//                             IR stage, <kernel>.ptx, <kernel>.cubin and
//                             ptxas.log) under <dir>; options::dump_dir, when
//                             set, takes precedence. Honoured on a cache hit
//                             too. The directory is created if missing.
//   TESSEL_CACHE_DIR=<dir>    Where compiled kernels are cached on disk
//                             (DiskCache.h). Default: $XDG_CACHE_HOME/tessel,
//                             else $HOME/.cache/tessel.
//   TESSEL_CACHE_MAX_BYTES=<n> Size cap of the on-disk cache (bytes, or with
//                             a K, M, G or T suffix); least recently used
//                             entries go first. Default 1G.
//   TESSEL_DISABLE_CACHE=1    Compile every ts::jit afresh: neither the
//                             in-memory cache nor the on-disk one is used.
//   TESSEL_DEBUG=1            Debug mode: every launch is followed by a stream
//                             synchronisation, so that a fault is reported by
//                             the launch that caused it, naming the kernel.
//   TESSEL_VERBOSE=1          Print compile steps, the ptxas command line and
//                             its log to stderr (as options::verbose does).
//   TESSEL_FALLBACK=<policy>  When an argument breaks TMA's rules (alignment,
//                             strides) for a kernel whose schedule loads it with
//                             TMA, tessel launches a schedule `multistage`
//                             variant of it instead (compiled once). `warn`
//                             (default): say so once per kernel and reason, one
//                             "tessel: note: ..." line on stderr; `quiet`: say
//                             nothing; `error`: throw a tessel::error naming the
//                             argument and the rule instead of falling back.
//   TESSEL_AUTOTUNE=<mode>    ts::autotune (Autotune.h): `1` (default) use the
//                             choice saved in the disk cache for a shape
//                             bucket, tune on a miss; `0` launch the first
//                             candidate that compiles, untimed and unchecked;
//                             `force` tune again and replace the saved choice.
//   TESSEL_PTXAS=<path>       The ptxas to run. Default lookup:
//                             $CUDA_HOME/bin/ptxas, $CUDA_PATH/bin/ptxas,
//                             /usr/local/cuda/bin/ptxas, then ptxas on PATH.
//
// Flags are true unless empty, "0", "false", "no" or "off" (any case).
// Variables are read at each call rather than cached, so that a program (or a
// test) can change them between compilations. Any other TESSEL_* variable is
// almost certainly a misspelling: warnUnknownKnobsOnce() says so on stderr.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/Runtime/CompiledKernel.h"

namespace tessel::runtime {

/// Every knob tessel reads.
inline constexpr const char* kKnobNames[] = {
    "TESSEL_DUMP_DIR", "TESSEL_CACHE_DIR", "TESSEL_DISABLE_CACHE",
    "TESSEL_DEBUG",    "TESSEL_VERBOSE",   "TESSEL_PTXAS",
    "TESSEL_FALLBACK", "TESSEL_CACHE_MAX_BYTES", "TESSEL_AUTOTUNE",
};

/// TESSEL_FALLBACK: what a launch does when TMA's rules fail for an argument.
enum class FallbackPolicy { warn, quiet, error };

/// The knobs' values, read from the environment by knobs().
struct Knobs {
  std::string dumpDir;        ///< TESSEL_DUMP_DIR ("" = no dump)
  std::string cacheDir;       ///< resolved cache directory ("" if no default exists)
  bool disableCache = false;  ///< TESSEL_DISABLE_CACHE
  bool debug = false;         ///< TESSEL_DEBUG
  bool verbose = false;       ///< TESSEL_VERBOSE
  std::string ptxas;          ///< TESSEL_PTXAS ("" = default lookup)
  FallbackPolicy fallback = FallbackPolicy::warn;  ///< TESSEL_FALLBACK
};

/// Reads all knobs now.
Knobs knobs();

/// The value of an environment variable, "" when unset.
std::string envString(const char* name);
/// A flag in the syntax described above; false when unset.
bool envFlag(const char* name);
/// Parses a flag value (true unless "", "0", "false", "no", "off").
bool parseFlag(std::string_view value);

/// Parses a TESSEL_FALLBACK value: "warn" (also ""), "quiet", "error" (any
/// case, surrounding blanks ignored); nullopt for anything else.
std::optional<FallbackPolicy> parseFallbackPolicy(std::string_view value);
/// TESSEL_FALLBACK now; an unknown value is `warn`, and a warning naming the
/// accepted values is printed once per process.
FallbackPolicy fallbackPolicy();
/// "warn", "quiet", "error".
const char* fallbackPolicyName(FallbackPolicy p);

/// TESSEL_* variables in the environment that are not in kKnobNames.
std::vector<std::string> unknownKnobs();
/// Prints one warning to stderr per process listing unknownKnobs(), if any.
void warnUnknownKnobsOnce();

/// Creates `dir` and its parents if missing. Throws tessel::error.
void createDirectories(const std::string& dir);

/// Writes `data` to `path` atomically: to a temporary file in the same
/// directory, then renamed over `path`, so that readers (and a concurrent
/// writer) never see a partial file. Throws tessel::error.
void writeFileAtomic(const std::string& path, std::string_view data);

/// Writes a compiled kernel's stages into `dir` (created if missing): every
/// `stages` entry under its own name (a '/' in a name becomes '_'), then
/// <name>.ptx, <name>.cubin (when there is one; binary) and ptxas.log (the
/// last three only when there is PTX: not in a failed compile's reproducer). Each
/// file is written atomically. Throws tessel::error naming the file.
void writeStages(const std::string& dir, const CompiledKernel& k);

}  // namespace tessel::runtime
