// tessel/kernel/runtime_api.hpp - the interface between the DSL's jit()/launch() and the
// compiler + runtime in libtessel.so. No MLIR or CUDA types appear here.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tessel/core/export.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

/// Every tessel failure the user can cause (bad arguments, no GPU, a kernel that cannot be
/// built) is reported as a tessel::error; the process survives.
class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The five CUTLASS 3.x Hopper GEMM schedules (DESIGN.md §5).
enum class schedule : std::uint8_t { automatic, tma, multistage, warp_specialized, cooperative, pingpong };

/// The schedule's name as the options, tools and messages spell it ("auto", "tma", ...).
inline const char* to_string(schedule s) {
  switch (s) {
  case schedule::automatic: return "auto";
  case schedule::tma: return "tma";
  case schedule::multistage: return "multistage";
  case schedule::warp_specialized: return "warp_specialized";
  case schedule::cooperative: return "cooperative";
  case schedule::pingpong: return "pingpong";
  }
  return "?";
}

/// How the persistent schedules split the GEMM's tiles among their CTAs (about one per SM):
///   automatic      `cooperative` and `pingpong` with a 1x1 cluster: stream_k; every other
///                  schedule (and clusters): data_parallel (asking for stream_k there is an
///                  error);
///   data_parallel  whole tiles: tile i is computed by CTA i % CTAs, and the tiles of a last,
///                  partial wave leave the other SMs idle;
///   stream_k       `cooperative` or `pingpong` with a 1x1 cluster: the k-iterations of the
///                  last wave plus one full wave (or of every tile, when there are fewer tiles
///                  than SMs) are split evenly among the CTAs, where the kernel computes that
///                  this shortens the longest CTA by more than the partial sums cost and by at
///                  least 2% (docs/benchmarks.md runs 15, 18, 19: +1-5% on most large shapes,
///                  1.6x on 128x8192x8192).
/// Split tiles are summed through a workspace the runtime keeps per CUDA stream.
enum class decomposition : std::uint8_t { automatic, data_parallel, stream_k };

/// options::swizzle value that asks for no swizzle (0 means automatic).
inline constexpr int swizzle_none = -1;
/// options::stages value that asks for the deepest ring that fits in shared memory (0, the
/// heuristic, takes as many as fit but at most 4). Memory-bound GEMMs (a few rows of A against a
/// streamed weight matrix) run faster with it: docs/small-m.md.
inline constexpr int stages_max = -1;

/// Compile options. Defaults are what a demanding user would pick for bf16 GEMM on H100/H200.
struct options {
  tessel::schedule schedule = tessel::schedule::automatic;
  int stages = 0;                        ///< shared-memory ring depth, at least 2; 0 = heuristic; stages_max
  std::array<int, 2> cluster = {1, 1};   ///< CTAs per cluster along program_id 0 x 1: {1,1}, {2,1}, {1,2}
  /// Shared-memory swizzle of the TMA-loaded GEMM operands (and of their wgmma descriptors),
  /// one mode for A and B:
  ///   0                  automatic: the largest of 128, 64, 32 bytes that divides the
  ///                      contiguous extent (bytes) of both operand tiles, else none;
  ///   128, 64, 32        that swizzle (an error if a tile's contiguous extent is not a
  ///                      multiple of it);
  ///   swizzle_none (-1)  no swizzle (16-byte core-matrix rows).
  /// A swizzle narrower than a tile's contiguous extent loads it as several TMA boxes.
  int swizzle = 0;
  /// Grouped raster order of the tile scheduler (persistent schedules and multistage): CTAs
  /// walk groups of this many rows of tiles (along program_id 0) column by column, so that
  /// the CTAs running at the same time share A and B tiles in L2. 0 = tessel's default (8, or
  /// 16 for tiles of at most 64 rows: 1024 rows of A per group either way);
  /// at most 1024.
  int raster_group = 0;
  tessel::decomposition decomposition = tessel::decomposition::automatic;
  std::string dump_dir = {};             ///< write every stage here (also $TESSEL_DUMP_DIR)
  bool verbose = false;                  ///< print compile steps and the ptxas log to stderr
  bool debug = false;                    ///< bounded barrier waits that report and trap (also TESSEL_DEBUG)
  /// Let the code generator fuse a floating-point multiply and a dependent add into one fma
  /// (one rounding instead of two), as nvcc does by default (--fmad=true) and Triton's
  /// enable_fp_fusion. false: every f32 mul and add is rounded on its own (`mul.rn` /
  /// `add.rn`, which ptxas does not fuse either), for bitwise agreement with a reference
  /// that does not fuse (docs/math.md).
  bool fp_contract = true;
};

/// What a launch argument is: a tensor (ts::view), or a scalar value (ts::value, or a plain
/// C++ number) for a ts::scalar<T> parameter, floating-point or integer as written in C++.
enum class arg_kind : std::uint8_t { tensor, floating, integer };

/// A runtime argument. A tensor (`kind == tensor`, made by ts::view): a global tensor in device
/// memory; sizes and strides are in elements, outermost first (strides[rank-1] is the innermost
/// stride). A scalar (made by ts::value, or from a C++ number by kernel::launch): `rank` 0, the
/// value in `floating` or `integer`; it is converted to the parameter's dtype at launch
/// (docs/scalars.md: a floating value for ts::scalar<ts::f32>, an integer for ts::scalar<ts::i32>).
struct kernel_arg {
  const void* data = nullptr;
  dtype type = dtype::f32;
  int rank = 0;
  std::array<std::int64_t, 3> sizes{};
  std::array<std::int64_t, 3> strides{};
  arg_kind kind = arg_kind::tensor;
  double floating = 0;       ///< kind == floating: the value as given (float or double)
  std::int64_t integer = 0;  ///< kind == integer: the value as given
};
/// The name of kernel arguments from before scalars: every kernel_arg made by ts::view.
using tensor_arg = kernel_arg;

/// What a compiled kernel uses (kernel::resources): ptxas's figures for it and its launch
/// configuration. Registers and spills are per thread, as `ptxas -v` reports them for the entry
/// function: for the warp-specialized schedules that is the launch's budget (168 with 384
/// threads), from which setmaxnreg moves registers to the consumer warpgroups (232 each).
struct kernel_resources {
  std::string schedule;       ///< "tma", "multistage", ...; "" for a kernel without a dot
  int registers = -1;         ///< -1: no ptxas ran (the driver will JIT the PTX)
  int spill_stores = 0;       ///< bytes
  int spill_loads = 0;        ///< bytes
  int stack_frame = 0;        ///< bytes
  unsigned threads = 0;       ///< per CTA
  unsigned shared_bytes = 0;  ///< dynamic shared memory per CTA
  std::array<unsigned, 3> cluster{1, 1, 1};
  bool persistent = false;    ///< min(tiles, SMs) CTAs walk the grid's tiles
};

/// Which kernel a launch with given arguments runs (kernel::prepare).
struct launch_choice {
  /// "" for the kernel ts::jit compiled; otherwise the launch-time variant's name, as
  /// TESSEL_VERBOSE prints it: a layout variant ("pingpong-L01_"), schedule::automatic's choice
  /// for the launch's shape, or the multistage fallback ("multistage", "multistage-L0__").
  std::string variant;
  /// The schedule `multistage` fallback: an argument breaks TMA's rules (TESSEL_FALLBACK).
  bool fallback = false;
  kernel_resources resources;  ///< of the kernel that runs
};

/// Launch grid (number of program instances per axis).
struct grid {
  unsigned x = 1, y = 1, z = 1;
};

namespace detail {
struct kernel_impl;  // defined in libtessel (backend/lib/Runtime)

/// Ends the current trace and compiles it (to cubin; no GPU needed). Throws tessel::error.
TESSEL_API std::shared_ptr<kernel_impl> finish_and_compile(const options& o);
/// Abandons the current trace (after an exception in the user's functor).
TESSEL_API void abandon_trace() noexcept;
/// Validates `args` against the kernel's signature and launches it on `stream`
/// (a CUstream, nullptr = default stream), first compiling (once) the variant the
/// arguments' layouts and alignment need, if any. Throws tessel::error.
TESSEL_API void launch(kernel_impl& k, void* stream, grid g, std::span<const tensor_arg> args);
/// launch's steps 0 and 1 (select, validateArgs), which need no GPU: the variant a launch with
/// `args` runs, compiled (and loaded into the current CUDA context, if there is one). Throws the
/// tessel::error launch would throw for them there.
TESSEL_API launch_choice prepare(kernel_impl& k, grid g, std::span<const tensor_arg> args);
/// launch without the launch call: everything launch does for `stream` (checks that need the GPU,
/// the module loaded, TMA descriptors encoded, the stream-K workspace allocated, co-resident
/// clusters counted), recorded so that launch(k, stream, g, args) next is a cached launch.
TESSEL_API launch_choice prepare(kernel_impl& k, void* stream, grid g, std::span<const tensor_arg> args);
/// Text of a compiled stage: the names kernel::stage (jit.hpp) lists ("tessel", a pass's name,
/// "ll", "opt.ll", "ptx", "ptxas.log", "cubin", "sass") or a dump file's name.
TESSEL_API std::string stage_text(const kernel_impl& k, const std::string& stage);
/// How many kernels this process has built so far: each ts::jit that missed the in-memory cache
/// and each launch-time variant (compiled, or read from the on-disk cache). Launching a kernel
/// with new scalar values builds nothing (tests assert it).
TESSEL_API std::uint64_t kernels_built() noexcept;
/// True when a CUDA device is usable (libcuda loads, cuInit succeeds, one device exists);
/// otherwise false and `why` says what is missing.
TESSEL_API bool gpu_available(std::string* why = nullptr);
/// The in-memory hit without tracing (jit.hpp, for functors without data members): the kernel
/// remembered for functor type `type` (typeid name) and `o`, or null. Null too whenever a hit
/// must go through finish_and_compile: a dump directory, verbose, or TESSEL_DISABLE_CACHE.
TESSEL_API std::shared_ptr<kernel_impl> find_kernel(const char* type, const options& o);
TESSEL_API void remember_kernel(const char* type, const options& o, const std::shared_ptr<kernel_impl>& k);
/// Where the kernel's compile time went: {step, milliseconds}, in order (CompiledKernel::timings).
TESSEL_API std::vector<std::pair<std::string, double>> compile_timings(const kernel_impl& k);
/// kernel::resources: the eagerly compiled kernel's (not a launch-time variant's).
TESSEL_API kernel_resources resources(const kernel_impl& k);
}  // namespace detail
}  // namespace tessel
