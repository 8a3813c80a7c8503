// tessel/kernel/autotune.hpp - time several configurations of a kernel on the user's problem and
// launch the fastest (docs/autotune.md).
//
//     ts::autotuner gemm = ts::autotune("gemm_bf16", {
//         ts::candidate(gemm<128, 128>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128)),
//         ts::candidate(gemm<128, 256>{}, {.schedule = ts::schedule::cooperative}, ts::tile_grid(2, 128, 256)),
//         ts::candidate(gemm<128, 256>{}, {.schedule = ts::schedule::tma}, ts::tile_grid(2, 128, 256)),
//     });
//     gemm.launch(stream, ts::view<ts::bf16>(dA, {M, K}), ts::view<ts::bf16>(dB, {N, K}),
//                 ts::view<ts::bf16>(dC, {M, N}));
//     gemm.last_decision().source;   // ts::tune_source::timed (this process timed), cached (read
//                                    // from the disk cache, nothing timed), disabled (TESSEL_AUTOTUNE=0)
//
// A candidate is a functor instance (its tile sizes are template parameters), the options to
// compile it with, and the grid of program instances it needs for the launch's arguments.
// Candidates compile lazily. The first launch of a *shape bucket* (every dimension of every
// argument rounded up to a power of two; dtypes; unit-stride dimensions; 16-byte alignment)
// either finds the choice saved by an earlier process in the disk cache (TESSEL_CACHE_DIR),
// keyed by the candidates' programs and options, the bucket, the device and tessel's build, and
// compiles only the winner; or it tunes:
//   1. compiles every candidate, several at once (tune_options::compile_threads; one that does
//      not compile is dropped, with a one-line reason);
//   2. saves the outputs (the arguments the programs store into) and runs each candidate once
//      from that saved state, copying its outputs back; the candidates must agree with a
//      reference candidate within tune_options::rtol (relative Frobenius error per output, and
//      NaN / Inf at the same places), else they are dropped;
//   3. times the survivors on the user's stream with the user's arguments, the way tessel-bench
//      does (warm-up, interleaved batches between CUDA events, median);
//   4. restores the saved outputs, launches the fastest once (so the outputs are those of one
//      launch of the winner, also for in-place outputs such as reduce_into vectors), and saves
//      the choice.
// A tune that takes longer than a second prints progress on stderr ("tessel autotune: ...").
// Later launches of the bucket launch the winner directly.
#pragma once

#include <array>
#include <cstddef>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessel/core/export.hpp"
#include "tessel/kernel/jit.hpp"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel {

/// The arguments of a launch, as a grid function sees them (sizes and strides in elements).
using launch_args = std::span<const kernel_arg>;

/// The grid of program instances a candidate needs for a launch's arguments.
using grid_function = std::function<grid(launch_args)>;

/// A grid function for GEMM-like programs: one program instance per bm x bn tile of argument
/// `arg` (its last two dimensions; a rank-3 argument's first dimension is the grid's z).
inline grid_function tile_grid(int arg, std::int64_t bm, std::int64_t bn) {
  if (arg < 0 || bm < 1 || bn < 1)
    throw error("ts::tile_grid: the argument index must be >= 0 and the tile extents >= 1, got arg " +
                std::to_string(arg) + ", tile " + std::to_string(bm) + "x" + std::to_string(bn));
  return [arg, bm, bn](launch_args a) {
    if (static_cast<std::size_t>(arg) >= a.size() || a[arg].rank < 2)
      throw error("ts::tile_grid: argument " + std::to_string(arg) + " of the launch must be a tensor of rank 2 or 3 (" +
                  std::to_string(a.size()) + " arguments given)");
    const kernel_arg& t = a[arg];
    return grid{static_cast<unsigned>(cdiv(t.sizes[t.rank - 2], bm)), static_cast<unsigned>(cdiv(t.sizes[t.rank - 1], bn)),
                t.rank == 3 ? static_cast<unsigned>(t.sizes[0]) : 1u};
  };
}

/// How the tuner times candidates: the method of tessel-bench (tools/tessel-bench/bench_util.h,
/// time_interleaved) with smaller budgets (the bench: 500 ms warm-up, 7 repeats, 400 ms).
struct tune_timing {
  double warmup_ms = 200;    ///< wall time of untimed round-robin launches of every candidate
  int batch = 10;            ///< launches per timed batch (at least; raised to last >= min_batch_ms)
  double min_batch_ms = 1.0;
  int max_batch = 256;       ///< at most 1000 (the launches of a batch are queued behind a gate)
  int repeats = 5;           ///< timed batches per candidate (at least); the median is kept
  double min_total_ms = 100; ///< raise repeats until the slowest candidate is timed this long
  int max_repeats = 30;
};

/// When the tuner prints progress lines on stderr.
enum class tune_progress : std::uint8_t {
  automatic,  ///< once the tune has taken a second (and always with TESSEL_VERBOSE)
  always,
  never,      ///< only the lines of dropped candidates (those are always printed)
};

struct tune_options {
  /// Numerical check: a candidate agrees with the reference when, for every output tensor,
  /// ||out - ref||_F / ||ref||_F <= rtol over the elements finite in both, and the non-finite
  /// elements (NaN, +-Inf) are the same. Part of the saved choice's key.
  double rtol = 1e-2;
  tune_timing timing{};
  tune_progress progress = tune_progress::automatic;
  /// Outputs: by default the tuner copies every output tensor (the arguments the programs store
  /// into) aside on the device before tuning and copies it back before each checked launch and
  /// before the winner's final launch. When `reset` is set, it is called instead (with the
  /// launch's stream), e.g. to zero reduce_into vectors, and nothing is copied (no extra memory).
  std::function<void(void* stream)> reset;
  /// How many candidates compile at once, each on its own thread (each compile has its own MLIR
  /// context and its own ptxas process, about 110 MB at its peak): 0, the default, one per
  /// hardware thread up to 16, at most one per candidate; 1 compiles them one after another.
  /// Not part of the saved choice's key.
  int compile_threads = 0;
};

/// Where a decision came from.
enum class tune_source : std::uint8_t {
  none,      ///< no launch yet
  timed,     ///< this process tuned (compiled, checked and timed the candidates)
  cached,    ///< read from the disk cache: nothing was timed, only the winner compiled
  disabled,  ///< TESSEL_AUTOTUNE=0: the first candidate that compiles, untimed and unchecked
};
inline const char* to_string(tune_source s) {
  switch (s) {
  case tune_source::none: return "none";
  case tune_source::timed: return "timed";
  case tune_source::cached: return "cached";
  case tune_source::disabled: return "disabled";
  }
  return "?";
}

/// One candidate's outcome in a tune.
struct tune_result {
  std::string label;
  bool ok = false;      ///< compiled, ran, agreed with the reference and was timed
  std::string dropped;  ///< why not (one line); "" when ok
  double median_ms = 0, min_ms = 0, max_ms = 0;  ///< per launch
  int batch = 0;        ///< launches per timed batch
  int samples = 0;      ///< timed batches
};

/// What a tuner launched for a shape bucket, and why.
struct tune_decision {
  tune_source source = tune_source::none;
  std::size_t winner = 0;     ///< index into the candidate list
  std::string label;          ///< the winner's label
  std::size_t reference = 0;  ///< the candidate the others were checked against
  std::string bucket;         ///< the shape bucket, e.g. "bf16[1024,512] bf16[1024,512] bf16[1024,1024]"
  std::string entry;          ///< the saved choice's file ("" when the disk cache is off)
  std::vector<tune_result> candidates;  ///< as timed (a cached decision: as the tuning process saved them)
  double tune_ms = 0;         ///< wall time of the tune in this process (0 unless timed)
};

namespace detail {

struct tuner_impl;  // defined in libtessel (backend/lib/Runtime/Tuner.cpp)

/// A candidate, type-erased.
struct candidate_spec {
  std::string label;      ///< "<kernel> <schedule>[ s<stages>][ c<X>x<Y>][ sw<swizzle>][ r<raster>][ dp|sk]"
  std::string signature;  ///< the functor's parameter list, "bf16[2] bf16[2] f32 ..."
  std::string kernel;     ///< the kernel's symbol name (detail::kernel_name)
  options opts;
  std::function<std::shared_ptr<kernel_impl>()> compile;  ///< ts::jit, on demand
  std::function<std::string()> identity;                   ///< hash of the traced program (no locations)
  grid_function grid_of;
};

/// Ends the current trace and returns a hash of the traced program printed without locations:
/// what identifies a candidate's program in the saved choice's key. Throws tessel::error.
TESSEL_API std::string finish_trace_identity();

/// Builds a tuner (checks the candidate list: throws tessel::error).
TESSEL_API std::shared_ptr<tuner_impl> make_tuner(std::string name, std::vector<candidate_spec> candidates,
                                                  tune_options opts);
/// The tuner's launch (tunes or reads the saved choice on the first launch of a shape bucket).
TESSEL_API void tuner_launch(tuner_impl& t, void* stream, std::span<const kernel_arg> args);
TESSEL_API tune_decision tuner_last_decision(const tuner_impl& t);
/// The kernel the last launch ran (the winner of its bucket) and its symbol name in `*name`;
/// null before the first launch.
TESSEL_API std::shared_ptr<kernel_impl> tuner_last_kernel(const tuner_impl& t, std::string* name);

/// "bf16[2]", "f32" (a scalar): a functor parameter as the candidate signature spells it.
template <class P>
std::string parameter_text() {
  if constexpr (is_tensor<P>::value)
    return std::string(P::dtype_type::name) + "[" + std::to_string(P::rank) + "]";
  else
    return P::dtype_type::name;
}

template <class F>
std::string signature_text() {
  using args = typename signature_t<F>::args;
  std::string s;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((s += (I ? " " : "") + parameter_text<std::tuple_element_t<I, args>>()), ...);
  }(std::make_index_sequence<std::tuple_size_v<args>>{});
  return s;
}

/// The default label of a candidate: the kernel's name, the schedule, then each option that
/// differs from its default.
template <class F>
std::string candidate_label(const options& o) {
  std::string s = kernel_name<F>() + " " + to_string(o.schedule);
  if (o.stages) s += o.stages == stages_max ? std::string(" smax") : " s" + std::to_string(o.stages);
  if (o.cluster[0] != 1 || o.cluster[1] != 1)
    s += " c" + std::to_string(o.cluster[0]) + "x" + std::to_string(o.cluster[1]);
  if (o.swizzle) s += o.swizzle == swizzle_none ? std::string(" swnone") : " sw" + std::to_string(o.swizzle);
  if (o.raster_group) s += " r" + std::to_string(o.raster_group);
  if (o.decomposition == decomposition::data_parallel) s += " dp";
  if (o.decomposition == decomposition::stream_k) s += " sk";
  if (o.debug) s += " debug";
  if (!o.fp_contract) s += " nocontract";
  return s;
}

}  // namespace detail

namespace detail {
/// A grid function: callable with the launch's arguments, returning something a ts::grid is made of.
template <class G>
concept grid_callable = requires(const G& g, launch_args a) {
  { g(a) } -> std::convertible_to<grid>;
};
}  // namespace detail

/// One configuration for ts::autotune. Make it with ts::candidate.
class tune_candidate {
public:
  explicit tune_candidate(detail::candidate_spec s) : spec_(std::move(s)) {}
  /// Another label (reports, progress lines; part of the saved choice's key). Labels are unique
  /// within a tuner.
  tune_candidate&& named(std::string label) && {
    spec_.label = std::move(label);
    return std::move(*this);
  }
  const std::string& label() const { return spec_.label; }
  const options& opts() const { return spec_.opts; }
  const detail::candidate_spec& spec() const { return spec_; }

private:
  detail::candidate_spec spec_;
};

namespace detail {
template <class F, class G>
tune_candidate make_candidate(const F& f, const options& o, G g, std::source_location loc);
}  // namespace detail

/// A candidate: functor `f` (a tile program, as for ts::jit) compiled with `o` on first need,
/// launched over the grid `g` returns for the launch's arguments (a callable taking
/// ts::launch_args and returning a ts::grid, e.g. ts::tile_grid(2, 128, 256)).
template <class F, class G>
tune_candidate candidate(const F& f, const options& o, G g,
                         std::source_location loc = std::source_location::current()) {
  static_assert(detail::grid_callable<G>,
                "candidate: the grid function must take the launch's arguments (ts::launch_args) and "
                "return a ts::grid, e.g. [](ts::launch_args a) { return ts::grid{...}; } or "
                "ts::tile_grid(2, 128, 256)");
  static_assert(std::is_copy_constructible_v<F>, "candidate: the kernel functor must be copyable");
  if constexpr (!detail::grid_callable<G> || !std::is_copy_constructible_v<F>)
    return tune_candidate(detail::candidate_spec{});  // only the static_assert above is reported
  else
    return detail::make_candidate(f, o, std::move(g), loc);
}

namespace detail {
template <class F, class G>
tune_candidate make_candidate(const F& f, const options& o, G g, std::source_location loc) {
  detail::candidate_spec s;
  s.label = detail::candidate_label<F>(o);
  s.signature = detail::signature_text<F>();
  s.kernel = detail::kernel_name<F>();
  s.opts = o;
  s.compile = [f, o, loc] { return detail::jit_impl(f, o, loc); };
  s.identity = [f, loc] {
    detail::trace_only(f, loc);
    return detail::finish_trace_identity();
  };
  s.grid_of = [g](launch_args a) -> grid { return g(a); };
  return tune_candidate(std::move(s));
}
}  // namespace detail

/// A set of candidates and the choices made among them, per shape bucket. Cheap to copy
/// (shared state); thread-safe (a launch that tunes holds the tuner's lock).
class autotuner {
public:
  autotuner() = default;
  explicit autotuner(std::shared_ptr<detail::tuner_impl> impl) : impl_(std::move(impl)) {}

  /// Launches the winner of the arguments' shape bucket on `stream` (a CUstream; nullptr = the
  /// default stream), tuning first (or reading the saved choice) on the bucket's first launch.
  /// Arguments as for kernel::launch. Throws tessel::error.
  template <class... Args>
    requires(detail::launch_arg<Args> && ...)
  void launch(void* stream, const Args&... args) const {
    std::array<kernel_arg, sizeof...(Args)> list{detail::to_kernel_arg(args)...};
    detail::tuner_launch(impl(), stream, std::span<const kernel_arg>(list.data(), list.size()));
  }
  void launch(void* stream, launch_args args) const { detail::tuner_launch(impl(), stream, args); }

  /// The decision behind the last launch (tune_source::none before the first).
  tune_decision last_decision() const { return detail::tuner_last_decision(impl()); }
  /// The kernel the last launch ran: kernel::stage, compile_timings of the winner.
  kernel last_kernel() const {
    std::string name;
    std::shared_ptr<detail::kernel_impl> k = detail::tuner_last_kernel(impl(), &name);
    if (!k) throw error("tessel: autotuner: no launch yet, so no kernel");
    return kernel(std::move(k), std::move(name));
  }
  explicit operator bool() const { return impl_ != nullptr; }

private:
  detail::tuner_impl& impl() const {
    if (!impl_) throw error("tessel: this ts::autotuner is empty (make tuners with ts::autotune)");
    return *impl_;
  }
  std::shared_ptr<detail::tuner_impl> impl_;
};

/// A tuner named `name` (part of the saved choice's key: give different tuners different names)
/// over `candidates` (at least one; unique labels; every functor with the same parameter list).
/// Nothing is compiled until the first launch. Throws tessel::error naming the rule broken.
inline autotuner autotune(std::string name, std::vector<tune_candidate> candidates, tune_options o = {}) {
  std::vector<detail::candidate_spec> specs;
  specs.reserve(candidates.size());
  for (tune_candidate& c : candidates) specs.push_back(c.spec());
  return autotuner(detail::make_tuner(std::move(name), std::move(specs), std::move(o)));
}

}  // namespace tessel
