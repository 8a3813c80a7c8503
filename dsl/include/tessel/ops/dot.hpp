// tessel/ops/dot.hpp - the tile matrix product.
#pragma once

#include <source_location>
#include <type_traits>

#include "tessel/core/dtype.hpp"
#include "tessel/expr/node.hpp"

namespace tessel {

/// `a` (M x K) times `b` (K x N), accumulated in f32: an M x N f32 expression. `acc += dot(a, b)`
/// and `acc + dot(a, b)` trace one tessel.dot with `acc` as its accumulator; used alone it
/// accumulates into zero. Both operands are f16, or both bf16, or both fp8 (f8e4m3 and f8e5m2 in
/// any pairing, wgmma's four kinds); a K-major B is written `B.load({n, k}, BN, BK).T()`. fp8
/// operands must be K-major in memory (wgmma reads fp8 only K-major) and BK = 128 (docs/fp8.md).
template <class A, class B>
  requires(detail::expr_like<A> && detail::expr_like<B>)
auto dot(const A& a, const B& b, std::source_location loc = std::source_location::current()) {
  using NA = detail::node_t<A>;
  using NB = detail::node_t<B>;
  using SA = detail::shape_of_node<NA>;
  using SB = detail::shape_of_node<NB>;
  static_assert(NA::is_shaped && NB::is_shaped && detail::rank_v<SA> == 2 &&
                    detail::rank_v<SB> == 2,
                "dot: both operands must be 2-d tiles");
  static_assert(is_dot_input_v<typename NA::dtype_type> && is_dot_input_v<typename NB::dtype_type>,
                "dot: the operands must be f16, bf16, f8e4m3 or f8e5m2 tiles; use "
                "ts::cast<ts::bf16>(...)");
  static_assert(std::is_same_v<typename NA::dtype_type, typename NB::dtype_type> ||
                    (is_fp8_v<typename NA::dtype_type> && is_fp8_v<typename NB::dtype_type>),
                "dot: both operands must have the same dtype (both f16 or both bf16), or both be "
                "fp8 (f8e4m3 / f8e5m2 in any pairing)");
  static_assert(detail::extent_v<SA, 1> == detail::extent_v<SB, 0>,
                "dot: inner dimensions differ: a is MxK, b must be KxN");
  return expr::dot_node<NA, NB>(detail::to_node(a), detail::to_node(b), detail::to_loc(loc));
}

}  // namespace tessel
