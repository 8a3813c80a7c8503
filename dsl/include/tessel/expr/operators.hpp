// tessel/expr/operators.hpp - the operators that build expression nodes.
//
// `a + b`, `a * 2.0f`, `-a`, `a < b` on tiles and tile expressions build nodes (expr/node.hpp);
// nothing is traced until the result is consumed. Operands: tiles, expressions, float and
// integer literals, ts::index values and compile-time integers (`2_c`); at least one operand
// is a tile or an expression (index arithmetic lives in core/index.hpp).
//
// Operators cannot take a std::source_location parameter: the ops they build carry the position
// of the call that materialises them (store, assignment, dot, cast, a math function).
#pragma once

#include <boost/hana/integral_constant.hpp>

#include "tessel/expr/node.hpp"

namespace tessel::expr {

// Each operator has a generic overload and two for Hana integral constants (`tile * 2_c`):
// those take their operands by value so that partial ordering prefers them to Hana's own
// forwarding-reference operators, which would otherwise win and fail inside Hana.
#define TESSEL_EXPR_OPERATOR(OP, MAKE, KIND)                                                   \
  template <class A, class B>                                                                  \
    requires ::tessel::detail::elementwise_operands<A, B>                                      \
  auto operator OP(const A& a, const B& b) {                                                   \
    return ::tessel::detail::MAKE<KIND>(::tessel::detail::to_node(a),                          \
                                        ::tessel::detail::to_node(b), trace::loc{});           \
  }                                                                                            \
  template <class A, class U, U N>                                                             \
    requires ::tessel::detail::expr_like<A>                                                    \
  auto operator OP(A a, hana::integral_constant<U, N> b) {                                     \
    return ::tessel::detail::MAKE<KIND>(::tessel::detail::to_node(a),                          \
                                        ::tessel::detail::to_node(b), trace::loc{});           \
  }                                                                                            \
  template <class B, class U, U N>                                                             \
    requires ::tessel::detail::expr_like<B>                                                    \
  auto operator OP(hana::integral_constant<U, N> a, B b) {                                     \
    return ::tessel::detail::MAKE<KIND>(::tessel::detail::to_node(a),                          \
                                        ::tessel::detail::to_node(b), trace::loc{});           \
  }

TESSEL_EXPR_OPERATOR(+, make_binary, trace::binary_op::add)
TESSEL_EXPR_OPERATOR(-, make_binary, trace::binary_op::sub)
TESSEL_EXPR_OPERATOR(*, make_binary, trace::binary_op::mul)
TESSEL_EXPR_OPERATOR(/, make_binary, trace::binary_op::div)
TESSEL_EXPR_OPERATOR(%, make_binary, trace::binary_op::rem)
TESSEL_EXPR_OPERATOR(==, make_compare, trace::compare_op::eq)
TESSEL_EXPR_OPERATOR(!=, make_compare, trace::compare_op::ne)
TESSEL_EXPR_OPERATOR(<, make_compare, trace::compare_op::lt)
TESSEL_EXPR_OPERATOR(<=, make_compare, trace::compare_op::le)
TESSEL_EXPR_OPERATOR(>, make_compare, trace::compare_op::gt)
TESSEL_EXPR_OPERATOR(>=, make_compare, trace::compare_op::ge)
#undef TESSEL_EXPR_OPERATOR

/// -x (arith.negf; 0 - x on i32).
template <class E>
  requires ::tessel::detail::expr_like<E>
auto operator-(const E& e) {
  using N = ::tessel::detail::node_t<E>;
  static_assert(N::is_shaped, "unary -: negate the 1-d tile before .row()/.col()");
  static_assert(!std::is_same_v<typename N::dtype_type, i1>, "unary -: not defined on masks");
  static_assert(!is_fp8_v<typename N::dtype_type>,
                "unary -: fp8 tiles are storage and dot inputs; ts::cast<ts::f32>(x) first");
  return unary<trace::unary_op::neg, N>(::tessel::detail::to_node(e), trace::loc{});
}

}  // namespace tessel::expr
