// tessel/ops/math.hpp - elementwise math functions, ts::where and ts::cast.
//
// Like the operators they build expression nodes; unlike the operators they take a
// std::source_location, so their ops carry the position of the call.
#pragma once

#include <source_location>
#include <type_traits>

#include "tessel/core/dtype.hpp"
#include "tessel/expr/node.hpp"

namespace tessel {

namespace detail {
template <trace::unary_op Op, class E>
auto make_unary(const E& e, std::source_location loc) {
  return expr::unary<Op, node_t<E>>(to_node(e), to_loc(loc));
}
}  // namespace detail

// Math on floating-point tiles (f16, bf16, f32): math.exp, math.exp2, math.log, math.sqrt,
// math.rsqrt, math.tanh, math.erf; sigmoid = 1 / (1 + exp(-x)), silu = x * sigmoid(x),
// gelu = the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (what
// cuBLASLt's GELU epilogue computes), gelu_erf = the exact form 0.5 x (1 + erf(x / sqrt(2))).
// On the GPU they use the sm_90 fast paths (ex2.approx, lg2.approx, tanh.approx); docs/math.md
// states each one's accuracy.
// Math functions on a ts::scalar are not built: a static_assert that says what to write instead
// (returning the scalar, so that the expression it is used in reports nothing else).
#define TESSEL_NO_SCALAR_MATH(NAME, HINT)                                                       \
  template <class T>                                                                           \
  scalar<T> NAME(const scalar<T>& s, std::source_location = std::source_location::current()) { \
    static_assert(detail::dependent_false_v<T>,                                                \
                  #NAME ": math functions on a ts::scalar are not built (docs/scalars.md); " HINT); \
    return s;                                                                                  \
  }
#define TESSEL_FLOAT_UNARY(NAME, OP)                                                           \
  template <class E>                                                                           \
    requires detail::expr_like<E>                                                              \
  auto NAME(const E& e, std::source_location loc = std::source_location::current()) {          \
    using N = detail::node_t<E>;                                                               \
    static_assert(N::is_shaped, #NAME ": apply it to the 1-d tile before .row()/.col()");      \
    static_assert(is_floating_v<typename N::dtype_type>,                                       \
                  #NAME ": needs a floating-point tile (f16, bf16 or f32); use "               \
                        "ts::cast<ts::f32>(x)");                                               \
    return detail::make_unary<trace::unary_op::OP>(e, loc);                                    \
  }                                                                                            \
  TESSEL_NO_SCALAR_MATH(NAME, "apply it to the tile expression the scalar meets, or compute the " \
                              "value on the host and pass that")
TESSEL_FLOAT_UNARY(exp, exp)
TESSEL_FLOAT_UNARY(exp2, exp2)
TESSEL_FLOAT_UNARY(log, log)
TESSEL_FLOAT_UNARY(sqrt, sqrt)
TESSEL_FLOAT_UNARY(rsqrt, rsqrt)
TESSEL_FLOAT_UNARY(tanh, tanh)
TESSEL_FLOAT_UNARY(sigmoid, sigmoid)
TESSEL_FLOAT_UNARY(silu, silu)
TESSEL_FLOAT_UNARY(gelu, gelu_tanh)
TESSEL_FLOAT_UNARY(erf, erf)
TESSEL_FLOAT_UNARY(gelu_erf, gelu_erf)
#undef TESSEL_FLOAT_UNARY

// Math on any numeric tile (float or i32): |x| and max(x, 0).
#define TESSEL_NUMERIC_UNARY(NAME, OP)                                                         \
  template <class E>                                                                           \
    requires detail::expr_like<E>                                                              \
  auto NAME(const E& e, std::source_location loc = std::source_location::current()) {          \
    using N = detail::node_t<E>;                                                               \
    static_assert(N::is_shaped, #NAME ": apply it to the 1-d tile before .row()/.col()");      \
    static_assert(!std::is_same_v<typename N::dtype_type, i1>, #NAME ": not defined on masks"); \
    return detail::make_unary<trace::unary_op::OP>(e, loc);                                    \
  }                                                                                            \
  TESSEL_NO_SCALAR_MATH(NAME, "ts::max(alpha, 0.0f) is relu of a scalar, ts::max(alpha, -alpha) " \
                              "its absolute value")
TESSEL_NUMERIC_UNARY(abs, abs)
TESSEL_NUMERIC_UNARY(relu, relu)
#undef TESSEL_NUMERIC_UNARY
#undef TESSEL_NO_SCALAR_MATH

/// Elementwise maximum / minimum of two tiles, or of a tile and a scalar (`ts::max(x, 0.0f)`).
/// On floats NaN propagates (arith.maximumf / arith.minimumf). (On two indices: core/index.hpp.)
/// `ts::max(x, 1)` with an integer constant would read like a reduction along axis 1: it is a
/// static_assert (write ts::max(x, 1.0f), or ts::max(x, ts::axis<1>) for the reduction:
/// ops/reduce.hpp).
template <class A, class B>
  requires detail::elementwise_operands<A, B>
auto max(const A& a, const B& b, std::source_location loc = std::source_location::current()) {
  static_assert(!(detail::expr_like<A> && (detail::host_int<B> || detail::static_int<B>)),
                "max: ts::max(x, <integer constant>) is ambiguous; write ts::max(x, ts::axis<1>) "
                "for a reduction along an axis, ts::max(x, 1.0f) for the elementwise maximum with "
                "a constant");
  return detail::make_binary<trace::binary_op::max>(detail::to_node(a), detail::to_node(b),
                                                    detail::to_loc(loc));
}
template <class A, class B>
  requires detail::elementwise_operands<A, B>
auto min(const A& a, const B& b, std::source_location loc = std::source_location::current()) {
  return detail::make_binary<trace::binary_op::min>(detail::to_node(a), detail::to_node(b),
                                                    detail::to_loc(loc));
}

/// `mask ? a : b` elementwise (arith.select). `mask` is a comparison result; `a` and `b` are
/// tiles of the mask's shape, scalars or .row()/.col() vectors; their dtypes promote.
template <class C, class A, class B>
  requires(detail::expr_like<C> && detail::operand<A> && detail::operand<B>)
auto where(const C& mask, const A& a, const B& b,
           std::source_location loc = std::source_location::current()) {
  using NC = detail::node_t<C>;
  using NA = detail::node_t<A>;
  using NB = detail::node_t<B>;
  static_assert(NC::is_shaped && std::is_same_v<typename NC::dtype_type, i1>,
                "where: the condition must be a mask tile (a comparison such as x > 0.0f)");
  using S = detail::shape_of_node<NC>;
  if constexpr (NA::is_shaped)
    static_assert(std::is_same_v<detail::shape_of_node<NA>, S>,
                  "where: the shape of `a` differs from the mask's shape");
  else
    detail::check_broadcast<NA, S>();
  if constexpr (NB::is_shaped)
    static_assert(std::is_same_v<detail::shape_of_node<NB>, S>,
                  "where: the shape of `b` differs from the mask's shape");
  else
    detail::check_broadcast<NB, S>();
  static_assert(!std::is_same_v<typename NA::dtype_type, i1> &&
                    !std::is_same_v<typename NB::dtype_type, i1>,
                "where: selecting between masks is not supported");
  static_assert(!std::is_same_v<detail::promote_t<typename NA::dtype_type, typename NB::dtype_type>,
                                detail::no_dtype>,
                "where: `a` and `b` have no common dtype");
  return expr::select<NC, NA, NB>(detail::to_node(mask), detail::to_node(a), detail::to_node(b),
                                  detail::to_loc(loc));
}

/// Converts the element type (tessel.cast; float narrowing rounds to nearest even). A mask
/// converts to 0 / 1.
template <class T, class E>
  requires detail::expr_like<E>
auto cast(const E& e, std::source_location loc = std::source_location::current()) {
  using N = detail::node_t<E>;
  static_assert(is_storage_dtype_v<T>,
                "cast: the target dtype must be ts::f16, ts::bf16, ts::f32, ts::i32, ts::f8e4m3 or "
                "ts::f8e5m2");
  static_assert(!(is_fp8_v<T> || is_fp8_v<typename N::dtype_type>) ||
                    ((is_floating_v<T> || is_fp8_v<T>) &&
                     (is_floating_v<typename N::dtype_type> || is_fp8_v<typename N::dtype_type>)),
                "cast: an fp8 tile converts to and from f16, bf16 or f32 only");
  static_assert(N::is_shaped, "cast: cast the 1-d tile before .row()/.col()");
  return expr::cast_node<T, N>(detail::to_node(e), detail::to_loc(loc));
}

}  // namespace tessel
