// tessel/ops/reduce.hpp - reductions of a 2-d tile along one axis, stored with reduce_into.
//
//     auto y = ts::eval(acc + bias.load({n}, BN).row());
//     rowmax.reduce_into({m}, ts::amax(y, ts::axis<1>));   // rowmax[i] = max_j |y[i, j]|
//     colsum.reduce_into({n}, ts::sum(y, ts::axis<0>));    // colsum[j] = sum_i y[i, j]
//
// The axis is the dimension that disappears (as in NumPy): ts::axis<1> gives one value per row,
// ts::axis<0> one per column. It is a type, so that `ts::max(x, ts::axis<1>)` (a reduction) and
// `ts::max(x, 1.0f)` (an elementwise maximum) cannot be confused; `ts::max(x, 1)` with an
// integer constant is a static_assert. The result of ts::sum / ts::max / ts::amax is one program
// instance's partial (f32, whatever the tile's float dtype): it can only be stored, with
// `tensor::reduce_into`, which combines the partials of every program instance that covers the
// same rows or columns (sum: added, max and amax: the larger kept) into the vector's current
// contents. docs/reductions.md: semantics, determinism, what the output must hold before launch.
#pragma once

#include <source_location>
#include <type_traits>

#include <boost/hana/integral_constant.hpp>

#include "tessel/core/dtype.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/expr/node.hpp"

namespace tessel {

/// The axis of a reduction, as a type: `ts::axis<1>` (reduce each row), `ts::axis<0>` (each
/// column).
template <int A>
struct axis_t {
  static constexpr int value = A;
};
template <int A>
inline constexpr axis_t<A> axis{};

/// The partial result of `ts::sum` / `ts::max` / `ts::amax` of a 2-d tile expression `E` along
/// `Axis`: a 1-d f32 vector of the kept dimension's length. Not a tile expression: store it
/// with `tensor::reduce_into`.
template <trace::reduce_op Op, int Axis, class E>
class reduction {
public:
  using source_type = E;
  using dtype_type = f32;
  static constexpr int axis = Axis;
  static constexpr trace::reduce_op op = Op;
  /// The length of the result: M for ts::axis<1> of an M x N tile, N for ts::axis<0>.
  static constexpr long long length = detail::extent_v<detail::shape_of_node<E>, 1 - Axis>;

  reduction(E source, trace::loc where) : e_(std::move(source)), l_(where) {}

  /// Traces the tile expression and the tessel.reduce of it.
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l_, at);
    return trace::reduce(Op, e_.emit(here), Axis, here);
  }

private:
  E e_;
  trace::loc l_;
};

namespace detail {

template <class R>
inline constexpr bool is_reduction_v = false;
template <trace::reduce_op Op, int Axis, class E>
inline constexpr bool is_reduction_v<reduction<Op, Axis, E>> = true;

template <trace::reduce_op Op, int A, class E>
auto make_reduction(const E& e, std::source_location loc) {
  using N = node_t<E>;
  static_assert(N::is_shaped,
                "reduction: needs a tile or a tile expression (a scalar or a .row()/.col() vector "
                "has no shape of its own)");
  static_assert(rank_v<shape_of_node<N>> == 2,
                "reduction: ts::sum / ts::max / ts::amax reduce a 2-d tile (to one value per row "
                "with ts::axis<1>, per column with ts::axis<0>)");
  static_assert(A == 0 || A == 1,
                "reduction: the axis is out of range for a 2-d tile; ts::axis<1> reduces each "
                "row (one value per row), ts::axis<0> each column (one value per column)");
  static_assert(is_floating_v<typename N::dtype_type>,
                "reduction: needs a floating-point tile (f16, bf16 or f32); use "
                "ts::cast<ts::f32>(x)");
  return reduction<Op, A, N>(to_node(e), to_loc(loc));
}

}  // namespace detail

/// Sum along `ts::axis<A>` (f32). Combined across program instances by atomic adds, whose order
/// is not fixed: the result may differ between runs in the last bits (docs/reductions.md).
template <class E, int A>
  requires detail::expr_like<E>
auto sum(const E& e, axis_t<A>, std::source_location loc = std::source_location::current()) {
  return detail::make_reduction<trace::reduce_op::sum, A>(e, loc);
}

/// Maximum along `ts::axis<A>` (f32; NaN propagates). Deterministic. (`ts::max(x, y)` of two
/// tiles, or of a tile and a float, is the elementwise maximum: ops/math.hpp.)
template <class E, int A>
  requires detail::expr_like<E>
auto max(const E& e, axis_t<A>, std::source_location loc = std::source_location::current()) {
  return detail::make_reduction<trace::reduce_op::max, A>(e, loc);
}

/// Maximum of |x| along `ts::axis<A>` (f32; NaN propagates; never negative). Deterministic.
template <class E, int A>
  requires detail::expr_like<E>
auto amax(const E& e, axis_t<A>, std::source_location loc = std::source_location::current()) {
  return detail::make_reduction<trace::reduce_op::amax, A>(e, loc);
}

/// There is no minimum along an axis: a static_assert that says how to get one.
template <class E, int A>
  requires detail::expr_like<E>
auto min(const E& e, axis_t<A>, std::source_location loc = std::source_location::current()) {
  static_assert(detail::dependent_false_v<E>,
                "min: there is no min reduction (ts::sum, ts::max and ts::amax reduce along an "
                "axis); the minimum is -max(-x): reduce ts::max(-x, ts::axis<A>) and negate what "
                "was stored");
  return detail::make_reduction<trace::reduce_op::max, A>(e, loc);  // (no second error where it is used)
}

namespace detail {
template <class A, class B>
concept reduction_operand = is_reduction_v<std::remove_cvref_t<A>> || is_reduction_v<std::remove_cvref_t<B>>;
}  // namespace detail

// Arithmetic on a reduction's result: a static_assert (it is one program instance's partial,
// which only reduce_into can combine), not a page of unmatched operator overloads.
#define TESSEL_REDUCTION_ARITHMETIC(OP)                                                         \
  template <class A, class B>                                                                 \
    requires detail::reduction_operand<A, B>                                                  \
  auto operator OP(const A& a, const B& b) {                                                  \
    static_assert(detail::dependent_false_v<A>,                                               \
                  "reduction: the result of ts::sum / ts::max / ts::amax can only be stored "  \
                  "with reduce_into; apply the arithmetic to the tile before reducing "        \
                  "(ts::amax(x * 2.0f, ts::axis<1>)) or to the vector in a later kernel");     \
    if constexpr (detail::is_reduction_v<std::remove_cvref_t<A>>) /* (no second error) */     \
      return a;                                                                               \
    else                                                                                      \
      return b;                                                                               \
  }                                                                                           \
  /* By value against a Hana constant (`r * 2_c`), so that partial ordering prefers these to */ \
  /* Hana's forwarding-reference operators (as expr/operators.hpp does for tiles). */          \
  template <class R, class U, U N>                                                            \
    requires detail::is_reduction_v<R>                                                        \
  R operator OP(R r, boost::hana::integral_constant<U, N> b) {                                \
    return r OP static_cast<U>(b); /* the overload above: its static_assert */               \
  }                                                                                           \
  template <class R, class U, U N>                                                            \
    requires detail::is_reduction_v<R>                                                        \
  R operator OP(boost::hana::integral_constant<U, N> a, R r) {                                \
    return static_cast<U>(a) OP r;                                                            \
  }
TESSEL_REDUCTION_ARITHMETIC(+)
TESSEL_REDUCTION_ARITHMETIC(-)
TESSEL_REDUCTION_ARITHMETIC(*)
TESSEL_REDUCTION_ARITHMETIC(/)
#undef TESSEL_REDUCTION_ARITHMETIC
// Math functions and max / min of a reduction's result: the same static_assert.
#define TESSEL_REDUCTION_MATH(NAME)                                                             \
  template <class R>                                                                          \
    requires detail::is_reduction_v<std::remove_cvref_t<R>>                                   \
  R NAME(const R& r, std::source_location = std::source_location::current()) {                \
    static_assert(detail::dependent_false_v<R>,                                               \
                  "reduction: the result of ts::sum / ts::max / ts::amax can only be stored "  \
                  "with reduce_into; apply ts::" #NAME " to the tile before reducing, or to "  \
                  "the vector in a later kernel");                                             \
    return r;                                                                                 \
  }
TESSEL_REDUCTION_MATH(exp)
TESSEL_REDUCTION_MATH(exp2)
TESSEL_REDUCTION_MATH(log)
TESSEL_REDUCTION_MATH(sqrt)
TESSEL_REDUCTION_MATH(rsqrt)
TESSEL_REDUCTION_MATH(tanh)
TESSEL_REDUCTION_MATH(sigmoid)
TESSEL_REDUCTION_MATH(silu)
TESSEL_REDUCTION_MATH(gelu)
TESSEL_REDUCTION_MATH(erf)
TESSEL_REDUCTION_MATH(gelu_erf)
TESSEL_REDUCTION_MATH(abs)
TESSEL_REDUCTION_MATH(relu)
#undef TESSEL_REDUCTION_MATH
#define TESSEL_REDUCTION_BINARY_MATH(NAME)                                                      \
  template <class A, class B>                                                                 \
    requires detail::reduction_operand<A, B>                                                  \
  auto NAME(const A& a, const B& b, std::source_location = std::source_location::current()) { \
    static_assert(detail::dependent_false_v<A>,                                               \
                  "reduction: the result of ts::sum / ts::max / ts::amax can only be stored "  \
                  "with reduce_into; take ts::" #NAME " of the tile before reducing");         \
    if constexpr (detail::is_reduction_v<std::remove_cvref_t<A>>)                             \
      return a;                                                                               \
    else                                                                                      \
      return b;                                                                               \
  }
TESSEL_REDUCTION_BINARY_MATH(max)
TESSEL_REDUCTION_BINARY_MATH(min)
#undef TESSEL_REDUCTION_BINARY_MATH

template <class R>
  requires detail::is_reduction_v<std::remove_cvref_t<R>>
auto operator-(const R& r) {
  static_assert(detail::dependent_false_v<R>,
                "reduction: the result of ts::sum / ts::max / ts::amax can only be stored with "
                "reduce_into; negate the tile before reducing (ts::max(-x, ts::axis<1>))");
  return r;
}

}  // namespace tessel
