// tessel/expr/node.hpp - the expression-template nodes of elementwise tile math.
//
// `ts::relu(acc + bias.load({n}, BN).row())` does not trace anything by itself: it builds a
// value of type
//
//     unary<relu, binary<add, leaf<f32, shape<128, 256>>, bcast<1, leaf<bf16, shape<256>>>>>
//
// whose static dtype and shape the C++ compiler checks, and which is *materialised* into IR once,
// where it is consumed: assigned to a tile variable, stored, cast, or fed to `dot`. The node kinds:
//
//   shaped nodes (have a static dtype and shape; `emit(at)` traces them and returns the value)
//     leaf<T, S>          a value already traced (a tile variable's value when the node was made)
//     unary<op, E>        -x, exp, log, relu, ...               (dtype and shape of E)
//     binary<op, A, B>    + - * / % min max                     (promoted dtype, common shape)
//     compare<op, A, B>   < <= > >= == !=                       (i1 mask)
//     select<C, A, B>     ts::where(mask, a, b)
//     trans<E>            e.T()                                 (2-d, dims swapped)
//     cast_node<T, E>     ts::cast<T>(e)
//     dot_node<A, B>      ts::dot(a, b): f32 MxN; `acc += dot` and `acc + dot` trace one
//                         tessel.dot with the accumulator operand
//   broadcast nodes (take dtype and shape from the other operand; `emit_as<T, S>(at)`)
//     float_scalar, int_scalar, index_scalar   2.0f, 3, an index: arith.constant / tessel.splat
//     scalar_value<T>     a ts::scalar<T> kernel parameter (or scalar arithmetic on one): its
//                         dtype T promotes like a tile's; tessel.splat
//     bcast<axis, E>      e.row() (axis 1) / e.col() (axis 0): tessel.broadcast of a 1-d tile
//
// Operands are held by value (a node owns copies of its children and tiles enter as leaves), so
// an expression kept in an `auto` variable never dangles; it sees the tile values of the moment
// it was built.
#pragma once

#include <array>
#include <cstdint>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/hana/tuple.hpp>

#include "tessel/core/dtype.hpp"
#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/scalar.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

template <class T, long long... D>
class tile;

namespace detail {
/// false, for a static_assert that fires only when its template is instantiated.
template <class>
inline constexpr bool dependent_false_v = false;
}  // namespace detail

namespace expr {

/// Base of every expression node (tiles are not nodes: they enter expressions as leaves).
struct node_tag {};

/// `.T()`, `.row()` and `.col()` on tiles and on shaped expressions.
template <class Derived>
struct methods {
  /// Transpose of a 2-d tile (tessel.trans); a view change the backend folds into the load.
  auto T(std::source_location loc = std::source_location::current()) const;
  /// A 1-d tile of N as a row vector: broadcast over the rows of the M x N tile it meets.
  auto row(std::source_location loc = std::source_location::current()) const;
  /// A 1-d tile of M as a column vector: broadcast over the columns of the M x N tile it meets.
  auto col(std::source_location loc = std::source_location::current()) const;
};

template <class T, class S>
struct leaf;
struct float_scalar;
struct int_scalar;
struct index_scalar;
template <class T>
struct scalar_value;

}  // namespace expr

namespace detail {

template <class E>
struct is_tile : std::false_type {};
template <class T, long long... D>
struct is_tile<tile<T, D...>> : std::true_type {};

template <class E>
concept tile_like = is_tile<std::remove_cvref_t<E>>::value;
template <class E>
concept node_like = std::is_base_of_v<expr::node_tag, std::remove_cvref_t<E>> && !tile_like<E>;
/// A tile variable or a tile expression.
template <class E>
concept expr_like = tile_like<E> || node_like<E>;
/// A scalar that broadcasts inside tile expressions: a float or integer literal, a ts::index,
/// a ts::scalar<T>.
template <class E>
concept scalar_like = (std::is_arithmetic_v<std::remove_cvref_t<E>> &&
                       !std::is_same_v<std::remove_cvref_t<E>, bool> &&
                       !std::is_same_v<std::remove_cvref_t<E>, char>) ||
                      is_index_v<E> || static_int<E> || runtime_scalar<E>;
template <class E>
concept operand = expr_like<E> || scalar_like<E>;
/// Operands of a binary elementwise op: at least one is a tile or an expression.
template <class A, class B>
concept elementwise_operands = operand<A> && operand<B> && (expr_like<A> || expr_like<B>);

// ---- to_node: every operand as a node --------------------------------------------------
template <class T, long long... D>
expr::leaf<T, shape<D...>> to_node(const tile<T, D...>& t);
template <class E>
  requires node_like<E>
E to_node(const E& e) {
  return e;
}
template <class E>
  requires std::is_floating_point_v<E>
expr::float_scalar to_node(E v);
template <class E>
  requires host_int<E>
expr::int_scalar to_node(E v);
template <class E>
  requires static_int<E>
expr::int_scalar to_node(E v);
inline expr::index_scalar to_node(const index& v);
template <class T>
expr::scalar_value<T> to_node(const scalar<T>& v);

template <class E>
using node_t = decltype(to_node(std::declval<const std::remove_cvref_t<E>&>()));

template <class N>
using dtype_of_node = typename N::dtype_type;
template <class N>
struct shape_of_node_impl {
  using type = shape<>;
};
template <class N>
  requires N::is_shaped
struct shape_of_node_impl<N> {
  using type = typename N::shape_type;
};
template <class N>
using shape_of_node = typename shape_of_node_impl<N>::type;

template <class N>
inline constexpr bool is_dot_v = false;

/// Traces `e` as a value of dtype `T` and shape `S` (a shaped node is cast when its dtype
/// differs; a broadcast node is splat / broadcast to `S`).
template <class T, class S, class N>
trace::value materialize_as(const N& e, trace::loc at) {
  if constexpr (N::is_shaped) {
    trace::value v = e.emit(at);
    if constexpr (!std::is_same_v<typename N::dtype_type, T>) v = trace::cast(v, T::value, at);
    return v;
  } else {
    return e.template emit_as<T, S>(at);
  }
}

/// Traces a shaped node with its own dtype and shape.
template <class N>
trace::value materialize(const N& e, trace::loc at) {
  static_assert(N::is_shaped, "tessel: a broadcast operand (.row()/.col() or a scalar) needs a tile to meet");
  return e.emit(at);
}

template <class S>
constexpr std::span<const std::int64_t> extents_of() {
  return std::span<const std::int64_t>(shape_traits<S>::extents.data(), shape_traits<S>::rank);
}

template <class T>
std::string dtype_name() {
  if constexpr (std::is_same_v<T, untyped_float>)
    return "float";
  else if constexpr (std::is_same_v<T, untyped_int>)
    return "int";
  else
    return T::name;
}
template <class S>
std::string shape_name() {
  std::string s;
  for (std::int64_t e : shape_traits<S>::extents) s += (s.empty() ? "" : "x") + std::to_string(e);
  return s;
}

}  // namespace detail

namespace expr {

// ---- leaves and scalars ------------------------------------------------------------------

template <class T, class S>
struct leaf : node_tag, methods<leaf<T, S>> {
  static constexpr bool is_shaped = true;
  using dtype_type = T;
  using shape_type = S;
  trace::value v;
  explicit leaf(trace::value value) : v(value) {}
  trace::value emit(trace::loc) const { return v; }
  static std::string describe() {
    return "tile<" + detail::dtype_name<T>() + "," + detail::shape_name<S>() + ">";
  }
};

struct float_scalar : node_tag {
  static constexpr bool is_shaped = false;
  using dtype_type = detail::untyped_float;
  double v;
  explicit float_scalar(double value) : v(value) {}
  template <class T, class S>
  trace::value emit_as(trace::loc at) const {
    return trace::full(T::value, detail::extents_of<S>(), v, at);
  }
  static std::string describe() { return "float"; }
};

struct int_scalar : node_tag {
  static constexpr bool is_shaped = false;
  using dtype_type = detail::untyped_int;
  std::int64_t v;
  explicit int_scalar(std::int64_t value) : v(value) {}
  template <class T, class S>
  trace::value emit_as(trace::loc at) const {
    return trace::full(T::value, detail::extents_of<S>(), static_cast<double>(v), at);
  }
  static std::string describe() { return "int"; }
};

struct index_scalar : node_tag {
  static constexpr bool is_shaped = false;
  using dtype_type = detail::untyped_int;
  trace::value v;
  explicit index_scalar(trace::value value) : v(value) {}
  template <class T, class S>
  trace::value emit_as(trace::loc at) const {
    return trace::splat(trace::cast(v, T::value, at), detail::extents_of<S>(), at);
  }
  static std::string describe() { return "index"; }
};

/// A ts::scalar<T>: broadcast with its own dtype T (it promotes like a tile of T).
template <class T>
struct scalar_value : node_tag {
  static constexpr bool is_shaped = false;
  using dtype_type = T;
  trace::value v;
  explicit scalar_value(trace::value value) : v(value) {}
  template <class U, class S>
  trace::value emit_as(trace::loc at) const {
    return trace::splat(trace::cast(v, U::value, at), detail::extents_of<S>(), at);
  }
  static std::string describe() { return std::string("scalar<") + T::name + ">"; }
};

/// `e.row()` (Axis = 1) or `e.col()` (Axis = 0) of a 1-d shaped node `E`.
template <int Axis, class E>
struct bcast : node_tag {
  static constexpr bool is_shaped = false;
  static constexpr int axis = Axis;
  using dtype_type = typename E::dtype_type;
  using source_shape = detail::shape_of_node<E>;
  E e;
  trace::loc l;
  bcast(E source, trace::loc where) : e(std::move(source)), l(where) {}
  template <class T, class S>
  trace::value emit_as(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    // Cast the 1-d source before broadcasting it: N conversions instead of M x N.
    trace::value v = detail::materialize_as<T, source_shape>(e, here);
    static constexpr std::int64_t dims[] = {Axis};
    return trace::broadcast(v, dims, detail::extents_of<S>(), here);
  }
  static std::string describe() { return (Axis == 1 ? "row(" : "col(") + E::describe() + ")"; }
};

// ---- shaped nodes --------------------------------------------------------------------------

template <class A, class B>
struct elementwise_traits {
  using shape_type =
      std::conditional_t<A::is_shaped, detail::shape_of_node<A>, detail::shape_of_node<B>>;
  using operand_dtype = detail::concrete_t<
      detail::promote_t<typename A::dtype_type, typename B::dtype_type>>;
};

inline const char* op_name(trace::unary_op op) {
  constexpr const char* names[] = {"neg",  "exp",  "exp2",    "log",  "sqrt", "rsqrt",
                                   "abs",  "tanh", "sigmoid", "relu", "silu", "gelu_tanh",
                                   "erf",  "gelu_erf"};
  return names[static_cast<int>(op)];
}
inline const char* op_name(trace::binary_op op) {
  constexpr const char* names[] = {"add", "sub", "mul", "div", "rem", "min", "max"};
  return names[static_cast<int>(op)];
}
inline const char* op_name(trace::compare_op op) {
  constexpr const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(op)];
}

template <trace::unary_op Op, class E>
struct unary : node_tag, methods<unary<Op, E>> {
  static constexpr bool is_shaped = true;
  using dtype_type = typename E::dtype_type;
  using shape_type = detail::shape_of_node<E>;
  E e;
  trace::loc l;
  unary(E operand, trace::loc where) : e(std::move(operand)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    return trace::unary(Op, e.emit(here), here);
  }
  static std::string describe() { return std::string(op_name(Op)) + "(" + E::describe() + ")"; }
};

template <trace::binary_op Op, class A, class B>
struct binary : node_tag, methods<binary<Op, A, B>> {
  static constexpr bool is_shaped = true;
  using dtype_type = typename elementwise_traits<A, B>::operand_dtype;
  using shape_type = typename elementwise_traits<A, B>::shape_type;
  hana::tuple<A, B> operands;
  trace::loc l;
  binary(A a, B b, trace::loc where) : operands(std::move(a), std::move(b)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    const A& a = hana::at_c<0>(operands);
    const B& b = hana::at_c<1>(operands);
    using T = dtype_type;
    using S = shape_type;
    constexpr bool accumulate = Op == trace::binary_op::add && std::is_same_v<T, f32>;
    if constexpr (accumulate && detail::is_dot_v<B>) {
      // acc + dot(a, b): one tessel.dot with `acc` as its accumulator.
      return b.emit_acc(detail::materialize_as<T, S>(a, here), here);
    } else if constexpr (accumulate && detail::is_dot_v<A>) {
      return a.emit_acc(detail::materialize_as<T, S>(b, here), here);
    } else {
      trace::value x = detail::materialize_as<T, S>(a, here);
      trace::value y = detail::materialize_as<T, S>(b, here);
      return trace::binary(Op, x, y, here);
    }
  }
  static std::string describe() {
    return std::string(op_name(Op)) + "(" + A::describe() + ", " + B::describe() + ")";
  }
};

template <trace::compare_op Op, class A, class B>
struct compare : node_tag, methods<compare<Op, A, B>> {
  static constexpr bool is_shaped = true;
  using dtype_type = i1;
  using operand_dtype = typename elementwise_traits<A, B>::operand_dtype;
  using shape_type = typename elementwise_traits<A, B>::shape_type;
  hana::tuple<A, B> operands;
  trace::loc l;
  compare(A a, B b, trace::loc where) : operands(std::move(a), std::move(b)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    trace::value x = detail::materialize_as<operand_dtype, shape_type>(hana::at_c<0>(operands), here);
    trace::value y = detail::materialize_as<operand_dtype, shape_type>(hana::at_c<1>(operands), here);
    return trace::compare(Op, x, y, here);
  }
  static std::string describe() {
    return std::string(op_name(Op)) + "(" + A::describe() + ", " + B::describe() + ")";
  }
};

template <class C, class A, class B>
struct select : node_tag, methods<select<C, A, B>> {
  static constexpr bool is_shaped = true;
  using dtype_type =
      detail::concrete_t<detail::promote_t<typename A::dtype_type, typename B::dtype_type>>;
  using shape_type = detail::shape_of_node<C>;
  hana::tuple<C, A, B> operands;
  trace::loc l;
  select(C c, A a, B b, trace::loc where)
      : operands(std::move(c), std::move(a), std::move(b)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    trace::value c = hana::at_c<0>(operands).emit(here);
    trace::value x = detail::materialize_as<dtype_type, shape_type>(hana::at_c<1>(operands), here);
    trace::value y = detail::materialize_as<dtype_type, shape_type>(hana::at_c<2>(operands), here);
    return trace::select(c, x, y, here);
  }
  static std::string describe() {
    return "where(" + C::describe() + ", " + A::describe() + ", " + B::describe() + ")";
  }
};

template <class E>
struct trans : node_tag, methods<trans<E>> {
  static constexpr bool is_shaped = true;
  using dtype_type = typename E::dtype_type;
  using shape_type = detail::transposed_t<detail::shape_of_node<E>>;
  E e;
  trace::loc l;
  trans(E operand, trace::loc where) : e(std::move(operand)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    return trace::trans(e.emit(here), here);
  }
  static std::string describe() { return "trans(" + E::describe() + ")"; }
};

template <class T, class E>
struct cast_node : node_tag, methods<cast_node<T, E>> {
  static constexpr bool is_shaped = true;
  using dtype_type = T;
  using shape_type = detail::shape_of_node<E>;
  E e;
  trace::loc l;
  cast_node(E operand, trace::loc where) : e(std::move(operand)), l(where) {}
  trace::value emit(trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    return detail::materialize_as<T, shape_type>(e, here);
  }
  static std::string describe() {
    return "cast<" + detail::dtype_name<T>() + ">(" + E::describe() + ")";
  }
};

template <class A, class B>
struct dot_node : node_tag, methods<dot_node<A, B>> {
  static constexpr bool is_shaped = true;
  using dtype_type = f32;
  using shape_type = shape<detail::extent_v<detail::shape_of_node<A>, 0>,
                           detail::extent_v<detail::shape_of_node<B>, 1>>;
  hana::tuple<A, B> operands;
  trace::loc l;
  dot_node(A a, B b, trace::loc where) : operands(std::move(a), std::move(b)), l(where) {}
  /// a * b + acc as one tessel.dot (`acc` = trace::no_value: a zero accumulator).
  trace::value emit_acc(trace::value acc, trace::loc at) const {
    trace::loc here = detail::or_else(l, at);
    trace::value a = hana::at_c<0>(operands).emit(here);
    trace::value b = hana::at_c<1>(operands).emit(here);
    return trace::dot(a, b, acc, here);
  }
  trace::value emit(trace::loc at) const { return emit_acc(trace::no_value, at); }
  static std::string describe() {
    return "dot(" + A::describe() + ", " + B::describe() + ")";
  }
};

}  // namespace expr

namespace detail {

template <class A, class B>
inline constexpr bool is_dot_v<expr::dot_node<A, B>> = true;

template <class E>
  requires std::is_floating_point_v<E>
expr::float_scalar to_node(E v) {
  return expr::float_scalar(static_cast<double>(v));
}
template <class E>
  requires host_int<E>
expr::int_scalar to_node(E v) {
  return expr::int_scalar(static_cast<std::int64_t>(v));
}
template <class E>
  requires static_int<E>
expr::int_scalar to_node(E) {
  return expr::int_scalar(static_cast<std::int64_t>(E::value));
}
inline expr::index_scalar to_node(const index& v) { return expr::index_scalar(v.value()); }
template <class T>
expr::scalar_value<T> to_node(const scalar<T>& v) {
  return expr::scalar_value<T>(v.value());
}

/// Checks that broadcast node `B` can meet a shaped operand of shape `S`.
template <class B, class S>
constexpr void check_broadcast() {
  if constexpr (requires { B::axis; }) {
    static_assert(rank_v<S> == 2,
                  "row()/col(): a broadcast 1-d tile can only meet a 2-d tile");
    if constexpr (B::axis == 1)
      static_assert(extent_v<typename B::source_shape, 0> == extent_v<S, 1>,
                    "row(): the length of the 1-d tile must equal the number of columns (N) of "
                    "the M x N tile it meets");
    else
      static_assert(extent_v<typename B::source_shape, 0> == extent_v<S, 0>,
                    "col(): the length of the 1-d tile must equal the number of rows (M) of the "
                    "M x N tile it meets");
  }
}

/// The static checks of a binary elementwise op (arithmetic or comparison) on nodes A and B.
template <class A, class B>
constexpr void check_elementwise() {
  static_assert(A::is_shaped || B::is_shaped,
                "elementwise op: at least one operand must be a tile; scalars and .row()/.col() "
                "vectors broadcast against a tile");
  if constexpr (A::is_shaped && B::is_shaped) {
    static_assert(std::is_same_v<shape_of_node<A>, shape_of_node<B>>,
                  "elementwise op: operand shapes differ; tessel does not broadcast implicitly "
                  "(use .row()/.col() on a 1-d tile, or a scalar)");
  } else if constexpr (A::is_shaped) {
    check_broadcast<B, shape_of_node<A>>();
  } else if constexpr (B::is_shaped) {
    check_broadcast<A, shape_of_node<B>>();
  }
  static_assert(!std::is_same_v<typename A::dtype_type, i1> &&
                    !std::is_same_v<typename B::dtype_type, i1>,
                "elementwise op: masks (comparison results) cannot be used in arithmetic or "
                "compared again; use ts::where(mask, a, b)");
  static_assert(!is_fp8_v<typename A::dtype_type> && !is_fp8_v<typename B::dtype_type>,
                "elementwise op: fp8 tiles are storage and dot inputs; convert with "
                "ts::cast<ts::f32>(x) first");
  static_assert(!std::is_same_v<promote_t<typename A::dtype_type, typename B::dtype_type>, no_dtype>,
                "elementwise op: the operand dtypes have no common dtype");
}

template <trace::binary_op Op, class A, class B>
auto make_binary(A a, B b, trace::loc l) {
  check_elementwise<A, B>();
  return expr::binary<Op, A, B>(std::move(a), std::move(b), l);
}

template <trace::compare_op Op, class A, class B>
auto make_compare(A a, B b, trace::loc l) {
  check_elementwise<A, B>();
  return expr::compare<Op, A, B>(std::move(a), std::move(b), l);
}

}  // namespace detail

namespace expr {

template <class Derived>
auto methods<Derived>::T(std::source_location loc) const {
  using N = detail::node_t<Derived>;
  static_assert(N::is_shaped && detail::rank_v<detail::shape_of_node<N>> == 2,
                "T(): only 2-d tiles can be transposed");
  return trans<N>(detail::to_node(static_cast<const Derived&>(*this)), detail::to_loc(loc));
}

template <class Derived>
auto methods<Derived>::row(std::source_location loc) const {
  using N = detail::node_t<Derived>;
  static_assert(N::is_shaped && detail::rank_v<detail::shape_of_node<N>> == 1,
                "row(): needs a 1-d tile (a row vector of N, broadcast over the M rows of an "
                "M x N tile)");
  return bcast<1, N>(detail::to_node(static_cast<const Derived&>(*this)), detail::to_loc(loc));
}

template <class Derived>
auto methods<Derived>::col(std::source_location loc) const {
  using N = detail::node_t<Derived>;
  static_assert(N::is_shaped && detail::rank_v<detail::shape_of_node<N>> == 1,
                "col(): needs a 1-d tile (a column vector of M, broadcast over the N columns of "
                "an M x N tile)");
  return bcast<0, N>(detail::to_node(static_cast<const Derived&>(*this)), detail::to_loc(loc));
}

}  // namespace expr

/// The element type tag of a tile or tile expression (`ts::dtype_of<decltype(a * b)>`).
template <class E>
  requires detail::expr_like<E>
using dtype_of = typename detail::node_t<E>::dtype_type;
/// The static shape of a tile or tile expression, a `ts::shape<...>`.
template <class E>
  requires detail::expr_like<E>
using shape_of = detail::shape_of_node<detail::node_t<E>>;

/// The expression tree of `e` as text, e.g. "relu(add(tile<f32,128x256>, row(tile<bf16,256>)))".
template <class E>
  requires detail::expr_like<E>
std::string describe(const E&) {
  return detail::node_t<E>::describe();
}

}  // namespace tessel
