// tessel/kernel/jit.hpp - tracing a functor into a kernel, launching it.
//
//     ts::kernel k = ts::jit(gemm<128, 256>{}, {.schedule = ts::schedule::tma, .stages = 4});
//     k.launch(stream, ts::grid{gx, gy}, ts::view<ts::bf16>(dA, {M, K}), ...);
//
// `jit` reads the functor's parameter types from `&F::operator()` (each a ts::tensor<T, Rank>),
// starts a trace named after the functor's type, calls the functor once with one symbolic
// argument per parameter, and hands the trace to the compiler (detail::finish_and_compile).
#pragma once

#include <typeinfo>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tessel/core/dtype.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/scalar.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/kernel/name.hpp"
#include "tessel/kernel/runtime_api.hpp"
#include "tessel/ops/tensor.hpp"

namespace tessel {

namespace detail {

template <class T>
struct is_tensor : std::false_type {};
template <class T, int R>
struct is_tensor<tensor<T, R>> : std::true_type {};

/// Declares the kernel argument of parameter type P (a tensor or a scalar) and returns it.
template <class P>
P make_symbolic_arg(trace::loc l) {
  if constexpr (is_tensor<P>::value)
    return access::make_tensor<P>(trace::arg_tensor(P::dtype_type::value, P::rank, l));
  else
    return access::make_scalar<typename P::dtype_type>(trace::arg_scalar(P::dtype_type::value, l), l);
}

/// A launch argument from a kernel_arg (ts::view, ts::value) or a C++ number.
template <class A>
concept launch_arg = std::is_convertible_v<A, kernel_arg> ||
                     (std::is_arithmetic_v<A> && !std::is_same_v<A, bool> && !std::is_same_v<A, char>);

/// Parameter types of a functor's call operator.
template <class M>
struct call_signature {
  static constexpr bool ok = false;
};
#define TESSEL_CALL_SIGNATURE(QUALS)                                                           \
  template <class R, class C, class... A>                                                      \
  struct call_signature<R (C::*)(A...) QUALS> {                                                \
    static constexpr bool ok = true;                                                           \
    using result = R;                                                                          \
    using args = std::tuple<std::remove_cvref_t<A>...>;                                        \
  };
TESSEL_CALL_SIGNATURE()
TESSEL_CALL_SIGNATURE(const)
TESSEL_CALL_SIGNATURE(noexcept)
TESSEL_CALL_SIGNATURE(const noexcept)
#undef TESSEL_CALL_SIGNATURE

template <class F>
constexpr auto signature_of() {
  static_assert(requires { &F::operator(); },
                "jit: the kernel must be a functor (or lambda) with one non-template operator(); "
                "generic lambdas (auto parameters) cannot be traced");
  return call_signature<decltype(&F::operator())>{};
}

template <class F>
using signature_t = decltype(signature_of<F>());

/// Declares one kernel argument per parameter and calls the functor.
template <class F>
void call_with_symbolic_args(const F& f, trace::loc l) {
  using sig = signature_t<F>;
  static_assert(std::is_void_v<typename sig::result>, "jit: the kernel functor must return void");
  using args = typename sig::args;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    static_assert(((is_tensor<std::tuple_element_t<I, args>>::value ||
                    runtime_scalar<std::tuple_element_t<I, args>>) && ...),
                  "jit: every parameter of the kernel functor must be a ts::tensor<T, Rank> or a "
                  "ts::scalar<T> (a runtime value: ts::scalar<ts::f32>, ts::scalar<ts::i32>)");
    // Braced initialisation: arguments are declared in parameter order.
    std::tuple<std::tuple_element_t<I, args>...> symbolic{
        make_symbolic_arg<std::tuple_element_t<I, args>>(l)...};
    std::apply(f, symbolic);
  }(std::make_index_sequence<std::tuple_size_v<args>>{});
}

/// Traces `f` into the current thread's tracer without compiling it: the test and tool entry
/// point (the caller then takes the module with tessel::frontend::finishTrace()). On an
/// exception the trace is abandoned and the exception propagates.
template <class F>
void trace_only(const F& f, std::source_location loc = std::source_location::current()) {
  trace::begin(kernel_name<F>().c_str());
  try {
    call_with_symbolic_args(f, to_loc(loc));
  } catch (...) {
    trace::abandon();
    throw;
  }
}

}  // namespace detail

/// A launch argument for a ts::scalar parameter: a floating-point value (float, double) for
/// ts::scalar<ts::f32>, an integer for ts::scalar<ts::i32> (checked at launch; docs/scalars.md).
/// kernel::launch also takes plain C++ numbers: `k.launch(s, g, A, B, 1.5f, C)`.
template <class V>
kernel_arg value(V v) {
  static_assert(std::is_arithmetic_v<V> && !std::is_same_v<V, bool> && !std::is_same_v<V, char>,
                "value: a scalar launch argument is a C++ floating-point or integer number");
  kernel_arg a;
  if constexpr (std::is_floating_point_v<V>) {
    a.kind = arg_kind::floating;
    a.type = dtype::f32;
    a.floating = static_cast<double>(v);
  } else {
    static_assert(sizeof(V) <= 8, "value: integers of at most 64 bits");
    a.kind = arg_kind::integer;
    a.type = dtype::i32;
    if constexpr (std::is_unsigned_v<V> && sizeof(V) == 8)
      // Above INT64_MAX: saturate (the launch then reports it out of the i32 range).
      a.integer = v > static_cast<V>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v);
    else
      a.integer = static_cast<std::int64_t>(v);
  }
  return a;
}

namespace detail {
template <class A>
kernel_arg to_kernel_arg(const A& a) {
  if constexpr (std::is_convertible_v<A, kernel_arg>)
    return kernel_arg(a);
  else
    return tessel::value(a);
}
}  // namespace detail

/// A compiled kernel. Cheap to copy (shared ownership of the compiled module).
class kernel {
public:
  kernel() = default;
  kernel(std::shared_ptr<detail::kernel_impl> impl, std::string name)
      : impl_(std::move(impl)), name_(std::move(name)) {}

  /// Launches on `stream` (a CUstream; nullptr = the default stream) over `g` program
  /// instances, with one argument per kernel parameter: a ts::view for a tensor, a value
  /// (`1.5f`, `2`, `ts::value(x)`) for a ts::scalar. Throws tessel::error.
  /// Views whose unit-stride dimension is not the last one, or that break TMA's rules for a
  /// TMA-based schedule, make the first such launch compile a variant of the kernel (a layout
  /// variant, or the schedule `multistage` fallback, announced once on stderr; see the README
  /// and TESSEL_FALLBACK); later launches reuse it.
  template <class... Args>
    requires(detail::launch_arg<Args> && ...)
  void launch(void* stream, grid g, const Args&... args) const {
    std::array<kernel_arg, sizeof...(Args)> list{detail::to_kernel_arg(args)...};
    detail::launch(impl(), stream, g, std::span<const tensor_arg>(list.data(), list.size()));
  }
  void launch(void* stream, grid g, std::span<const tensor_arg> args) const {
    detail::launch(impl(), stream, g, args);
  }

  /// What launch(stream, g, args...) would run, without launching; needs no GPU. Checks the
  /// arguments as launch does (the same errors, except those only a GPU can raise: no GPU, host
  /// memory, a stream of another context, a faulted context), compiles once the variant they
  /// need, if any, and says which kernel that is. A later launch whose arguments have the same
  /// layout and alignment (and, under schedule::automatic, the same K and grid) reuses it. On a
  /// thread with a current CUDA context it also loads that kernel's module there (and may then
  /// throw what loading throws: architecture, shared memory). For moving a variant's compile out
  /// of the first launch (before a timed region or a CUDA graph capture: see the README for what
  /// stream-K still needs), and for seeing whether arguments take a layout variant or the
  /// multistage fallback.
  template <class... Args>
    requires(detail::launch_arg<Args> && ...)
  launch_choice prepare(grid g, const Args&... args) const {
    std::array<kernel_arg, sizeof...(Args)> list{detail::to_kernel_arg(args)...};
    return detail::prepare(impl(), g, std::span<const tensor_arg>(list.data(), list.size()));
  }
  launch_choice prepare(grid g, std::span<const tensor_arg> args) const { return detail::prepare(impl(), g, args); }

  /// prepare for a launch on `stream`: all that launch(stream, g, args...) would do but the launch
  /// itself, so that this launch, next, enqueues the kernel and nothing else: no compile, no module
  /// load, no allocation, no synchronization. Needs the GPU and throws what launch throws. Before
  /// capturing launches into a CUDA graph, call it for each launch of the capture with the
  /// capturing stream and the same arguments (a stream-K kernel's first launch on a stream
  /// allocates the stream's workspace, which a capture cannot contain). A launch with other
  /// arguments, or after a launch of the same kernel with other arguments, takes the full path
  /// again, which still needs no allocation on this stream. See the README (CUDA graphs).
  template <class... Args>
    requires(detail::launch_arg<Args> && ...)
  launch_choice prepare(void* stream, grid g, const Args&... args) const {
    std::array<kernel_arg, sizeof...(Args)> list{detail::to_kernel_arg(args)...};
    return detail::prepare(impl(), stream, g, std::span<const tensor_arg>(list.data(), list.size()));
  }
  launch_choice prepare(void* stream, grid g, std::span<const tensor_arg> args) const {
    return detail::prepare(impl(), stream, g, args);
  }

  /// Text of a compiled stage, as dumped (docs/pipeline.md): "tessel", then the IR after each pass,
  /// named after it: "select-schedule", "materialize-tile-scheduler", "insert-async-copies",
  /// "warp-specialize", "schedule-mma", "lower-epilogue", "allocate-resources", "lower-to-nvvm",
  /// "convert-hopper-to-nvvm", "convert-to-llvm"; then "ll", "opt.ll", "ptx", "ptxas.log", "cubin"
  /// (binary), "sass" (cuobjdump -sass of the cubin; needs the CUDA toolkit), or a dump file's name
  /// ("10-convert-hopper-to-nvvm.mlir"). Throws tessel::error naming the valid ones for any other name.
  /// Without a dump directory or TESSEL_VERBOSE, ts::jit records only "tessel": the first call for
  /// a later stage compiles the traced program again (without ptxas) to the same bytes, once.
  std::string stage(const std::string& name) const { return detail::stage_text(impl(), name); }

  /// Where this kernel's compile time went: {step, milliseconds} in order ("passes ->
  /// 02-select-schedule.mlir", ..., "llvm O3", "llvm codegen", "ptxas", "disk cache ..."); a kernel
  /// read from the disk cache has only the lookup. tools/tessel-latency prints them.
  std::vector<std::pair<std::string, double>> compile_timings() const {
    return detail::compile_timings(impl());
  }

  /// Registers, spills and stack per thread (ptxas -v), threads, dynamic shared memory, cluster
  /// and schedule of the kernel ts::jit compiled (a launch-time variant, compiled for views that
  /// need one, has its own: its dump's ptxas.log). No GPU needed.
  kernel_resources resources() const { return detail::resources(impl()); }

  /// The kernel's symbol name (from the functor's type).
  const std::string& name() const { return name_; }
  explicit operator bool() const { return impl_ != nullptr; }

private:
  detail::kernel_impl& impl() const {
    if (!impl_) throw error("tessel: this ts::kernel is empty (make kernels with ts::jit)");
    return *impl_;
  }
  std::shared_ptr<detail::kernel_impl> impl_;
  std::string name_;
};

namespace detail {
/// ts::jit without the kernel wrapper (ts::candidate compiles through it).
template <class F>
std::shared_ptr<kernel_impl> jit_impl(const F& f, const options& opts, std::source_location loc) {
  // A functor without data members traces to the same program every time: its kernel is
  // found by type and options without tracing again (an in-memory hit in microseconds).
  if constexpr (std::is_empty_v<F>)
    if (auto hit = find_kernel(typeid(F).name(), opts)) return hit;
  const std::string name = kernel_name<F>();
  trace::begin(name.c_str());
  try {
    call_with_symbolic_args(f, to_loc(loc));
  } catch (...) {
    abandon_trace();
    throw;
  }
  auto impl = finish_and_compile(opts);
  if constexpr (std::is_empty_v<F>) remember_kernel(typeid(F).name(), opts, impl);
  return impl;
}
}  // namespace detail

/// Traces functor `f` and compiles it (no GPU needed). Throws tessel::error with the user's
/// file:line when the traced program is invalid.
template <class F>
kernel jit(const F& f, const options& opts = {},
           std::source_location loc = std::source_location::current()) {
  return kernel(detail::jit_impl(f, opts, loc), detail::kernel_name<F>());
}

/// A pointer to a dtype tag (`ts::bf16* p`): ts::bf16 and the others name a dtype and are not
/// the element's storage (sizeof 1), so `p + 1` would move one byte. Refused at compile time.
template <class T, class P>
  requires is_dtype_v<P>
tensor_arg view(const P* data, std::initializer_list<std::int64_t> sizes,
                std::initializer_list<std::int64_t> strides = {}) {
  static_assert(!is_dtype_v<P>,
                "view: the pointer points to a dtype tag (ts::bf16, ts::f32, ...), which is not the "
                "element's storage type; pass the device memory as your element type (__nv_bfloat16*, "
                "std::uint16_t*, float*, ...) or as void*");
  (void)data, (void)sizes, (void)strides;
  return {};
}

/// A kernel argument: `rank = sizes.size()` dims of element type T at `data` (device memory),
/// sizes and strides in elements, outermost first; strides default to row-major. T is the dtype
/// tag (ts::bf16, ...); `data` any pointer to the memory (the tags are not storage types).
template <class T>
tensor_arg view(const void* data, std::initializer_list<std::int64_t> sizes,
                std::initializer_list<std::int64_t> strides = {}) {
  static_assert(is_storage_dtype_v<T>,
                "view: the dtype must be ts::f16, ts::bf16, ts::f32, ts::i32, ts::f8e4m3 or ts::f8e5m2");
  if (sizes.size() < 1 || sizes.size() > 3)
    throw error("ts::view: a tensor has 1, 2 or 3 dimensions, got " + std::to_string(sizes.size()));
  if (strides.size() != 0 && strides.size() != sizes.size())
    throw error("ts::view: " + std::to_string(sizes.size()) + " sizes but " +
                std::to_string(strides.size()) + " strides");
  tensor_arg a;
  a.data = data;
  a.type = T::value;
  a.rank = static_cast<int>(sizes.size());
  int i = 0;
  for (std::int64_t s : sizes) {
    if (s < 0) throw error("ts::view: negative size " + std::to_string(s));
    a.sizes[i++] = s;
  }
  if (strides.size() == 0) {
    std::int64_t stride = 1;
    for (int d = a.rank - 1; d >= 0; --d) {
      a.strides[d] = stride;
      stride *= a.sizes[d] > 1 ? a.sizes[d] : 1;  // an empty tensor still gets strides >= 1
    }
  } else {
    i = 0;
    for (std::int64_t s : strides) a.strides[i++] = s;
  }
  return a;
}

/// True when a CUDA device is usable; otherwise false and `why` says what is missing.
inline bool gpu_available(std::string* why = nullptr) { return detail::gpu_available(why); }

}  // namespace tessel
