//===- CompiledKernel.h - what the compiler hands the runtime ------*- C++ -*-===//
//
// The result of compiling one traced kernel: the cubin, the PTX parameter list
// (how user arguments become kernel parameters), launch shape, and the text of
// every intermediate stage for dumping. No MLIR or CUDA types: the runtime
// links without MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/core/trace.hpp"

namespace tessel {

/// One user-visible kernel argument: a global tensor (rank 1..3), or a runtime scalar
/// (ts::scalar<T>: rank 0, `type` f32 or i32, one ParamSpec::Kind::Scalar parameter).
struct ArgSpec {
  dtype type = dtype::f32;
  int rank = 0;  ///< 0: a scalar
  bool isScalar() const { return rank == 0; }
  bool loadedByTma = false;  ///< at least one parameter is a TMA descriptor of this arg
  bool stored = false;       ///< the program stores into it (an output)
};

/// Two tensor dimensions the traced program reads or writes at the same offset with the same tile
/// extent (A's K and B's K: both loaded at [.., k] with BK columns; C's rows and A's rows: both at
/// m with BM rows; a bias vector and B's rows). Their sizes must be equal at launch, or the
/// kernel silently computes over the smaller one. Offsets that are constants make no contract.
struct SizeContract {
  int argA = 0, dimA = 0;  ///< the first access (in program order)
  int argB = 0, dimB = 0;  ///< a later access with the same offset and extent
  std::string whereA, whereB;  ///< the accesses' source positions ("file:line:col"), or ""
};

/// One PTX kernel parameter, in order.
struct ParamSpec {
  enum class Kind : std::uint8_t {
    Pointer,        ///< .u64 base address of args[arg]
    Size,           ///< .u64 sizes[dim] of args[arg] (elements)
    Stride,         ///< .u64 strides[dim] of args[arg] (elements)
    TmaDescriptor,  ///< .param .align 64 .b8 [128]: CUtensorMap of args[arg]
    GridDim,        ///< .u64 the user's launch grid along axis `dim` (persistent kernels)
    TmaUsable,      ///< .u64 1 when args[arg] meets TMA's rules (its `store` descriptor is valid), else 0
    Workspace,      ///< .u64 stream-K workspace (CompiledKernel::workspaceSlotBytes); `arg` is 0
    Scalar,         ///< .f32 / .u32 the value of scalar args[arg] (its ArgSpec::type)
  };
  Kind kind = Kind::Pointer;
  int arg = 0;
  int dim = 0;
  /// TMA only: box extents, innermost first (box[0] is along the contiguous dim), and the
  /// shared-memory swizzle in bytes (0, 32, 64, 128). The tensor map covers the whole tensor
  /// with dims innermost first; out-of-bounds elements are filled with zeros.
  std::array<std::uint32_t, 3> box{1, 1, 1};
  int swizzleBytes = 0;
  /// TMA only: the argument's dimension with unit stride, the tensor map's innermost one
  /// (the others follow from the last to the first); -1: the last dimension (row-major).
  /// A kernel compiled for an MN-major operand has 0 here for it. Written `:c<d>` after the
  /// swizzle in `tessel.params`.
  int contiguousDim = -1;
  /// TMA only: an optional descriptor, for TMA stores of an output ("tmastore"), for the L2
  /// prefetch of an epilogue operand ("tmaprefetch") or for its loads into shared memory
  /// ("tmaoperand"). It is encoded only when the argument
  /// meets TMA's rules (16-byte aligned base, contiguous inner dimension, outer strides multiples
  /// of 16 bytes); otherwise it is zeroed, a TmaUsable parameter says so, and the kernel stores
  /// through its fallback path (or does not prefetch). Such arguments are not `loadedByTma`.
  bool store = false;
  /// TMA only: the box's rows (box[1]) are clipped to the tensor's at launch: min(box[1], the
  /// extent of the tensor map's second dimension rounded up to 8), as the kernel computes the
  /// bytes it expects (a tile taller than the tensor, M < BM, loads no zero-filled rows).
  /// Written `:r` last in `tessel.params`.
  bool clipRows = false;
};

struct CompiledKernel {
  std::string name;               ///< PTX entry name
  std::vector<ArgSpec> args;      ///< user arguments, in order
  std::vector<ParamSpec> params;  ///< PTX parameters, in order
  std::vector<SizeContract> sizeContracts;  ///< checked at launch (validateCommonArgs)
  unsigned blockThreads = 128;
  unsigned dynamicSmemBytes = 0;
  std::array<unsigned, 3> cluster{1, 1, 1};
  /// Persistent kernels walk the user's grid of tiles themselves: the runtime
  /// launches min(tiles, SMs) CTAs and passes the grid as GridDim parameters.
  bool persistent = false;
  /// Stream-K kernels (a Workspace parameter): the bytes of one CTA's partial tile (BM x BN
  /// f32). The workspace is kStreamKFlagBytes of flags (one u32 per CTA, zero between
  /// launches: each kernel resets what it set) followed by one slot per CTA; the runtime
  /// keeps one per CUDA stream, zeroed when allocated, and launches at most
  /// kMaxStreamKCtas CTAs.
  std::uint64_t workspaceSlotBytes = 0;
  static constexpr unsigned kMaxStreamKCtas = 1024;
  static constexpr std::uint64_t kStreamKFlagBytes = 4 * kMaxStreamKCtas;
  std::string arch = "sm_90a";
  /// The schedule the kernel was built with ("tma", "multistage", ...; "" when unknown or not a
  /// GEMM), for messages.
  std::string schedule;
  /// "" for the kernel ts::jit compiled eagerly; otherwise the launch-time variant's tag
  /// (runtime::variantTag), e.g. "multistage" or "tma-L0__".
  std::string variant;
  std::string ptx;
  std::string cubin;              ///< binary image (empty if ptxas was unavailable)
  std::string ptxasLog;
  /// Every stage, in pipeline order: {"01-tessel.mlir", text}, ..., {"14-kernel.ptx", ptx};
  /// or only {"01-tessel.mlir", text} when compiled without recording the others (ts::jit
  /// without a dump directory or TESSEL_VERBOSE: compileModule's CompileMode). Then `restage`
  /// makes them again on demand (kernel::stage, a dump on a disk-cache hit).
  std::vector<std::pair<std::string, std::string>> stages;
  /// Recomputes every stage (byte-identical to a compile that recorded them) when `stages` holds
  /// only the first; empty when nothing can (then only the recorded stages exist). ts::jit
  /// installs it; not stored in the disk cache.
  std::function<std::vector<std::pair<std::string, std::string>>()> restage;
  /// True when `stages` holds every stage (the last one, 14-kernel.ptx, is there).
  bool hasAllStages() const {
    for (const auto &s : stages)
      if (s.first == "14-kernel.ptx")
        return true;
    return false;
  }
  /// Where the compile's time went, in order: {"schedule passes", ms}, ..., {"ptxas", ms}
  /// (compileModule), and {"disk cache", ms} (the lookup, and the store after a miss). Not
  /// stored in the disk cache: a kernel read from it has only the lookup. Printed by the JIT
  /// latency benchmark (tools/tessel-latency) and under TESSEL_VERBOSE.
  std::vector<std::pair<std::string, double>> timings;
};

}  // namespace tessel
