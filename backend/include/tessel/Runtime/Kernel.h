//===- Kernel.h - a compiled kernel, its validation and launch -----*- C++ -*-===//
//
// detail::kernel_impl is what tessel::jit hands back to the user (behind a
// shared_ptr): the CompiledKernel compiled eagerly, launch-time variants of it
// (argument layouts, the multistage fallback: kernel_impl::select), each with
// the CUDA modules it has been loaded into, one per context, loaded on first
// launch there.
//
// Launch contract (detail::launch), in order (a launch with the arguments, grid,
// stream and context of the kernel's previous one skips to the cuLaunchKernelEx of
// step 4 with that launch's parameters: kernel_impl::LaunchRecord):
//  0. kernel_impl::select picks (compiling on first use) the variant for the
//     arguments' layouts, falling back to schedule multistage where TMA's
//     rules fail (TESSEL_FALLBACK).
//  1. validateArgs on that variant: every rule that needs no GPU (count, rank,
//     dtype, sizes, strides, null pointers, TMA alignment and limits, grid).
//     Each failure is a tessel::error "tessel: kernel 'K' argument I: <rule>".
//  2. The GPU: a context is made current (ensureContext), every non-empty
//     argument must be device memory usable from that context (host memory,
//     pinned or pageable, is rejected), and a user stream must belong to it.
//  3. Empty problems (docs/errors.md): when the grid has a zero extent or
//     every output has zero elements (M == 0 or N == 0), nothing is launched
//     and the call returns. Otherwise the kernel runs: an empty input (a GEMM
//     with K == 0) makes a mainloop of no iteration, so the outputs get the
//     epilogue of a zero accumulator; where the kernel would load the empty
//     input with TMA, which cannot describe it, select() launches the
//     multistage variant (no note: it is not a fallback for a broken rule).
//     A zero-element argument may have a null data pointer.
//  4. The kernel's module is loaded into the context if needed (architecture
//     and shared-memory limits are checked then), the parameters are built in
//     CompiledKernel::params order (TMA descriptors encoded on the host) and
//     the kernel is launched with cuLaunchKernelEx on the stream, with the
//     cluster shape as a launch attribute. With TESSEL_DEBUG the stream is
//     then synchronised, so that a fault names this kernel.
//
// Nothing here includes cuda.h: code that only compiles kernels can use this
// header without the CUDA toolkit's headers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tessel/Runtime/AutoSchedule.h"
#include "tessel/Runtime/CompiledKernel.h"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel::detail {

/// What a launch-time variant of a kernel is compiled for.
struct VariantRequest {
  /// Per argument, the `tessel.contiguous_dim` its func argument carries; -1 = none (the last
  /// dimension is the contiguous one). runtime::layoutKey computes it from the launch arguments.
  std::vector<int> contiguousDims;
  /// Compile with schedule `multistage` (the fallback when TMA's rules fail) instead of the
  /// kernel's own schedule.
  bool multistage = false;
  /// runtime::variantTag(schedule, contiguousDims): names the variant in logs and dumps.
  std::string tag;
  /// schedule::automatic: compile with this schedule and decomposition instead of the eager
  /// kernel's (the rule's choice for the launch's shape, tessel/Runtime/AutoSchedule.h).
  std::optional<tessel::schedule> schedule;
  std::optional<tessel::decomposition> decomposition;
  /// schedule::automatic's ring depth for the launch (tessel::stages_max for a memory-bound one).
  std::optional<int> stages;
};

/// Compiles the kernel's traced program again for a request. ts::jit installs one (it owns the
/// traced module's text and the options; MLIR stays behind it). Throws tessel::error.
using VariantCompiler = std::function<CompiledKernel(const VariantRequest&)>;

/// One compiled kernel and its per-context CUDA modules, loaded on first use
/// in a context. Thread-safe.
class LoadedKernel {
public:
  /// Checks `k` with runtime::validateCompiledKernel (throws tessel::error).
  explicit LoadedKernel(CompiledKernel k);
  /// Unloads the modules (errors ignored: at process exit the driver may
  /// already be shutting down).
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  const CompiledKernel& compiled() const { return compiled_; }
  /// Every stage of the kernel: compiled().stages, or, when only the first was recorded, what
  /// compiled().restage makes (once, on first use; thread-safe; throws tessel::error).
  const std::vector<std::pair<std::string, std::string>>& stages() const;
  /// The kernel's function in context `context` (a CUcontext), loading the
  /// module there on first use. Returns a CUfunction. Throws tessel::error.
  void* functionFor(void* context);

private:
  struct Loaded {
    void* context;   ///< CUcontext
    void* module;    ///< CUmodule
    void* function;  ///< CUfunction
  };
  const CompiledKernel compiled_;
  mutable std::once_flag stagesOnce_;
  mutable std::vector<std::pair<std::string, std::string>> stages_;
  std::mutex mutex_;
  std::vector<Loaded> loaded_;
};

/// kernel::resources of one compiled kernel: ptxas's figures (its log) and the launch configuration.
kernel_resources resourcesOf(const CompiledKernel& k);

/// A kernel as ts::jit returns it (behind a shared_ptr): the variant compiled
/// eagerly (the primary: default layouts, the requested schedule) and the
/// variants compiled at launch time, once each, for argument layouts and TMA
/// fallbacks (see select). Thread-safe: launches from several threads may
/// share one kernel_impl.
struct kernel_impl {
  /// `compiler` may be empty (then no variant can be built: launches use the
  /// primary, and arguments it cannot take are errors). `verbose` adds the
  /// TESSEL_VERBOSE log lines of select() for this kernel (options::verbose).
  explicit kernel_impl(CompiledKernel k, VariantCompiler compiler = {}, bool verbose = false);
  kernel_impl(const kernel_impl&) = delete;
  kernel_impl& operator=(const kernel_impl&) = delete;

  const CompiledKernel& compiled() const { return primary_.compiled(); }
  /// Every stage of the eagerly compiled kernel (LoadedKernel::stages).
  const std::vector<std::pair<std::string, std::string>>& stages() const { return primary_.stages(); }
  void* functionFor(void* context) { return primary_.functionFor(context); }

  /// The variant to launch `args` with, compiling it on first use:
  ///  1. the rules every variant shares are checked (validateCommonArgs);
  ///  2. layout: when an argument's unit-stride dimension is not its last
  ///     (runtime::layoutKey), the variant whose func arguments carry
  ///     `tessel.contiguous_dim` for it; otherwise the primary;
  ///  3. fallback: when that variant loads an argument with TMA that breaks
  ///     TMA's rules (runtime::findTmaViolation), or could not be compiled for
  ///     the layout, the schedule `multistage` variant (pointer loads with the
  ///     real strides: any alignment and strides) is compiled and chosen,
  ///     as TESSEL_FALLBACK says: `warn` (default) prints a one-line
  ///     "tessel: note: ..." to stderr once per kernel and reason, `quiet`
  ///     does not, `error` throws a tessel::error naming the argument and the
  ///     rule instead.
  /// Throws tessel::error; the caller still runs validateArgs on the result.
  /// `fellBack`, when given, says whether step 3 chose the fallback.
  LoadedKernel& select(std::span<const tensor_arg> args, grid g, bool* fellBack = nullptr);

  /// The cached launch (detail::launch, Kernel.cpp): what the last launch that went through
  /// every check launched, ready to launch again: its arguments, grid, stream, context, the
  /// kernel function and the built parameters (TMA descriptors encoded). A launch with the very
  /// same arguments (pointers, sizes, strides, dtypes, scalar values), grid, stream and current
  /// context launches it directly. Defined in Kernel.cpp (CUDA types).
  struct LaunchRecord;
  std::shared_ptr<const LaunchRecord> lastLaunch() const;
  void rememberLaunch(std::shared_ptr<const LaunchRecord> r);
  /// options::verbose or TESSEL_VERBOSE (select()'s log lines).
  bool verbose() const;
  /// How many launches of this kernel took the full path (select, validateArgs, the pointer
  /// queries, the parameters built), counted before its first check, so that one rejected by a
  /// check counts too. A cached launch does not count: tests observe with it that a repeated
  /// launch is not checked again and that a changed argument is.
  std::uint64_t checkedLaunches() const { return checkedLaunches_.load(std::memory_order_relaxed); }
  void countCheckedLaunch() { checkedLaunches_.fetch_add(1, std::memory_order_relaxed); }

  /// Tags of the variants compiled (or attempted) so far, in order (tests, logs).
  std::vector<std::string> variantTags() const;

  /// schedule::automatic (ts::jit calls this before the kernel is shared): every launch
  /// evaluates runtime::chooseAutomatic(info, the launch's K); when the choice differs from
  /// `eager` (what the primary was compiled as), select() launches the variant of that choice,
  /// compiled once (tag runtime::autoChoiceName, then the layout as usual).
  void setAutomatic(runtime::AutoGemmInfo info, runtime::AutoChoice eager);
  /// The rule's choice for `args` (the eager one when not automatic or not a GEMM).
  std::optional<runtime::AutoChoice> automaticChoice(std::span<const tensor_arg> args, grid g) const;

private:
  struct Slot {
    std::once_flag once;
    std::unique_ptr<LoadedKernel> kernel;
    std::string error;  ///< the compile failure, remembered (no retry per launch)
  };
  /// The variant for `r`, compiled on first use (concurrent callers wait).
  LoadedKernel& variant(const VariantRequest& r);
  /// Prints `line` to stderr unless `key` was printed already for this kernel.
  void noteOnce(const std::string& key, const std::string& line);

  LoadedKernel primary_;
  std::optional<runtime::AutoGemmInfo> auto_;
  runtime::AutoChoice autoEager_;
  VariantCompiler compiler_;
  bool verbose_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Slot>> variants_;
  std::vector<std::string> order_;
  std::set<std::string> noted_;
  mutable std::mutex launchMutex_;
  std::shared_ptr<const LaunchRecord> lastLaunch_;
  std::atomic<std::uint64_t> checkedLaunches_{0};
};

}  // namespace tessel::detail

namespace tessel::runtime {

/// Wraps a compiled kernel for the DSL (validates it first; no GPU needed).
/// `compiler` builds launch-time variants (see kernel_impl::select).
std::shared_ptr<detail::kernel_impl> makeKernel(CompiledKernel k, detail::VariantCompiler compiler = {},
                                                bool verbose = false);

/// Size in bytes of one element of `t` (i1: 1, index: 8).
std::size_t elementSize(dtype t);
/// "f16", "bf16", "f32", "i32", "i1", "index".
const char* dtypeName(dtype t);

/// Checks that a CompiledKernel is self-consistent before it is ever
/// launched: argument ranks 1..3, every parameter refers to an existing
/// argument and dimension, TMA descriptors only for f16/bf16/f32/i32
/// arguments marked loadedByTma, TMA boxes within the hardware rules (each
/// extent 1..256, inner extent × element size a multiple of 16 bytes and, with
/// a swizzle, at most the swizzle span), swizzle 0/32/64/128, blockThreads
/// 1..1024, cluster extents >= 1. Violations are compiler bugs; they throw
/// tessel::error "tessel: internal error: kernel 'K' ...".
void validateCompiledKernel(const CompiledKernel& k);

/// Every argument rule that needs no GPU (see the file comment); throws
/// tessel::error "tessel: kernel 'K' argument I: <rule>" or
/// "tessel: kernel 'K': <grid rule>". Rules, per argument:
///  - the argument count matches; rank and dtype match the signature;
///  - sizes 0..2^31-1 (the kernels index each dimension in 32 bits);
///  - strides >= 1, except for dimensions of size 1, whose stride is never
///    used (so any value is accepted there);
///  - the innermost stride is 1 when the argument is TMA-loaded or when the
///    kernel receives no Stride parameter for its innermost dimension (it then
///    assumes contiguity);
///  - the data pointer is non-null unless the argument has zero elements;
///  - TMA-loaded: base address 16-byte aligned; every outer stride (of a
///    dimension of size > 1) × element size a multiple of 16 bytes and below
///    2^40;
///  - the largest element offset fits in 63 bits.
/// And for the grid: x <= 2^31-1, y and z <= 65535, and each extent a multiple
/// of the kernel's cluster extent (an extent of 0 is an empty problem: nothing is
/// launched, launch contract 3).
void validateArgs(const CompiledKernel& k, std::span<const tensor_arg> args, grid g);
/// validateArgs without the TMA rules (what every variant of a kernel shares).
void validateCommonArgs(const CompiledKernel& k, std::span<const tensor_arg> args, grid g);

/// The dimension of argument `arg` of `k` that its TMA load (or, with `store`, store)
/// descriptors take as innermost: their ParamSpec::contiguousDim, else the last one.
int tmaInnerDim(const CompiledKernel& k, int arg, bool store);

/// A TMA rule that an argument loaded with TMA breaks.
struct TmaViolation {
  int arg = -1;
  /// Stable name of the rule: "base-alignment", "unit-stride", "stride-multiple",
  /// "stride-limit", "size-limit", "dtype".
  std::string rule;
  /// What validateArgs says after "argument I: ", e.g. "data address 0x... is not
  /// 16-byte aligned (TMA requires a 16-byte aligned base address)".
  std::string message;
};
/// The first TMA rule broken by a non-empty argument that `k` loads with TMA
/// (with its tmaInnerDim contiguous); nullopt when there is none.
std::optional<TmaViolation> findTmaViolation(const CompiledKernel& k, std::span<const tensor_arg> args);

/// The unit-stride dimension of `a`, for layout specialisation. Dimensions of
/// size 1 are never stepped along, so they do not count: rank-1 when the last
/// dimension has size > 1 and stride 1; else the highest dimension of size > 1
/// with stride 1 (a column-major M x 1 operand is contiguous along M); else
/// rank-1 when the last dimension has size <= 1 (the default layout, also for
/// a tensor of size-1 dimensions); -1 when no dimension of size > 1 has stride
/// 1 (only pointer paths with the real strides, e.g. schedule multistage, can
/// address it).
int contiguousDimOf(const tensor_arg& a);
/// The layout key of a launch: per argument, contiguousDimOf(a) when that is
/// not the last dimension, else -1 (the default, also for "no unit-stride
/// dimension"). It is what a variant's `tessel.contiguous_dim` attributes say.
std::vector<int> layoutKey(std::span<const tensor_arg> args);
/// True when every entry of `key` is -1 (the eagerly compiled layout).
bool isDefaultLayout(const std::vector<int>& key);
/// A variant's name: the schedule, then "-L" and one character per argument
/// (its contiguous dim, '_' for the default) unless the layout is the default:
/// "multistage", "tma-L0__", "multistage-L_0_".
std::string variantTag(const std::string& schedule, const std::vector<int>& key);

/// True when some argument has zero elements.
bool hasEmptyArg(std::span<const tensor_arg> args);

/// True when a launch has nothing to write: the grid has a zero extent, or
/// every argument the program stores into has zero elements (then launch
/// validates and returns). A GEMM with K == 0 is not nothing: its outputs get
/// the epilogue of a zero accumulator.
bool nothingToDo(const CompiledKernel& k, std::span<const tensor_arg> args, grid g);

/// True when the kernel loads with TMA an argument that has zero elements
/// (K == 0): TMA cannot describe it, so kernel_impl::select launches the
/// schedule multistage variant, whose bounds-checked pointer loads need no
/// descriptor and whose mainloop then has no iteration.
bool tmaLoadsAnEmptyArg(const CompiledKernel& k, std::span<const tensor_arg> args);

/// What cuTensorMapEncodeTiled is called with for one TMA parameter, kept
/// free of CUDA types so that it can be tested without a GPU.
struct TmaEncoding {
  dtype type = dtype::f32;
  std::uint32_t rank = 0;
  const void* globalAddress = nullptr;
  std::uint64_t globalDim[3] = {};      ///< innermost first
  std::uint64_t globalStrides[2] = {};  ///< bytes, for dims 1..rank-1
  std::uint32_t boxDim[3] = {};         ///< innermost first
  std::uint32_t elementStrides[3] = {};
  int swizzleBytes = 0;
  /// A store descriptor of an argument that breaks TMA's rules: not encoded,
  /// passed as zeros (the kernel's TmaUsable parameter is 0).
  bool zeroed = false;
};

/// One kernel parameter's value: a 64-bit scalar (Pointer, Size, Stride) or
/// a tensor map to encode.
struct ParamValue {
  ParamSpec::Kind kind = ParamSpec::Kind::Pointer;
  std::uint64_t scalar = 0;
  TmaEncoding tma;
};

/// The parameter values, in CompiledKernel::params order, for validated args.
/// `g` is the user's grid (GridDim parameters of persistent kernels).
std::vector<ParamValue> planParams(const CompiledKernel& k, std::span<const tensor_arg> args, grid g = {});

/// A human-readable description of a TMA encoding (for error messages).
std::string describeTma(const TmaEncoding& e);

}  // namespace tessel::runtime
