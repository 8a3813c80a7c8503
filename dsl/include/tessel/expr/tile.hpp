// tessel/expr/tile.hpp - tile variables.
//
// `ts::tile<T, D...>` is a register tile of static shape D... and dtype T, held in a variable of
// the kernel. `ts::zeros`, `ts::full`, `tensor.load` and `ts::eval` make one; so does
// initialising one from an expression. A tile *variable* owns a tracer slot: reading it reads
// the slot, assigning writes it, and a tile declared before a `ts::range` loop that the body
// reassigns becomes a loop-carried value of the scf.for (the accumulator of a GEMM mainloop).
//
//     auto acc = ts::zeros<ts::f32>(128_c, 256_c);              // tile<f32, 128, 256>
//     for (auto k : ts::range(0, K, 64_c))
//       acc += ts::dot(a_tile, b_tile);                        // one tessel.dot, acc carried
//     acc = acc * 0.5f;                                        // reassign: same dtype and shape
#pragma once

#include <source_location>
#include <type_traits>

#include "tessel/core/dtype.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/expr/node.hpp"
#include "tessel/expr/operators.hpp"

namespace tessel {

namespace detail {

/// Static checks of `tile<T, S> = e` (initialisation or assignment) for a node `N`.
template <class T, class S, class N>
constexpr void check_assign() {
  if constexpr (N::is_shaped) {
    static_assert(std::is_same_v<shape_of_node<N>, S>,
                  "tile assignment: the expression's shape differs from the tile's shape");
    static_assert(std::is_same_v<typename N::dtype_type, T>,
                  "tile assignment: the expression's dtype differs from the tile's dtype; use "
                  "ts::cast<T>(...)");
  } else {
    check_broadcast<N, S>();
    static_assert(std::is_same_v<promote_t<T, typename N::dtype_type>, T>,
                  "tile assignment: the scalar or vector cannot take the tile's dtype");
  }
}

/// Static checks of `tile<T, S> op= e`.
template <class T, class S, class N>
constexpr void check_compound() {
  static_assert(!std::is_same_v<T, i1>, "compound assignment: not defined on masks");
  if constexpr (N::is_shaped)
    static_assert(std::is_same_v<shape_of_node<N>, S>,
                  "compound assignment: operand shapes differ; tessel does not broadcast "
                  "implicitly (use .row()/.col() on a 1-d tile, or a scalar)");
  else
    check_broadcast<N, S>();
  static_assert(std::is_same_v<promote_t<T, typename N::dtype_type>, T>,
                "compound assignment: the result dtype differs from the tile's dtype; write "
                "x = ts::cast<T>(x + y)");
}

struct adopt_t {};

}  // namespace detail

template <class T, long long... D>
class tile : public expr::methods<tile<T, D...>> {
  static_assert(is_dtype_v<T>,
                "tile: the element type must be ts::f16, ts::bf16, ts::f32, ts::i32, ts::i1, ts::f8e4m3 "
                "or ts::f8e5m2");
  static_assert(sizeof...(D) >= 1 && sizeof...(D) <= 3, "tile: the rank must be 1, 2 or 3");
  static_assert(((D > 0) && ...), "tile: every extent must be positive");

public:
  using dtype_type = T;
  using shape_type = tessel::shape<D...>;
  static constexpr bool is_shaped = true;
  static constexpr int rank = static_cast<int>(sizeof...(D));
  /// The static shape as a Hana tuple of integral constants.
  static constexpr shape_type shape{};

  /// Materialises an expression (or broadcasts a scalar) into a new tile variable.
  template <class E>
    requires(detail::operand<E> && !std::is_same_v<std::remove_cvref_t<E>, tile>)
  tile(const E& e, std::source_location loc = std::source_location::current())
      : loc_(detail::to_loc(loc)) {
    using N = detail::node_t<E>;
    detail::check_assign<T, shape_type, N>();
    slot_ = trace::var_new(detail::materialize_as<T, shape_type>(detail::to_node(e), loc_));
  }

  tile(const tile& other) : slot_(trace::var_new(other.value())), loc_(other.loc_) {}

  tile& operator=(const tile& other) {
    trace::var_set(slot_, other.value());
    return *this;
  }

  /// Re-binds the variable to the value of an expression of the same dtype and shape. (C++ gives
  /// operator= no room for a source_location; the ops take the tile's own position.)
  template <class E>
    requires(detail::operand<E> && !std::is_same_v<std::remove_cvref_t<E>, tile>)
  tile& operator=(const E& e) {
    using N = detail::node_t<E>;
    detail::check_assign<T, shape_type, N>();
    trace::var_set(slot_, detail::materialize_as<T, shape_type>(detail::to_node(e), loc_));
    return *this;
  }

  /// The right-hand side of `x op= e`, captured with the position of the statement.
  class compound_source {
  public:
    template <class E>
      requires detail::operand<E>
    compound_source(const E& e, std::source_location loc = std::source_location::current())
        : expr_(&e), apply_(&apply<E>), loc_(detail::to_loc(loc)) {
      detail::check_compound<T, shape_type, detail::node_t<E>>();
    }

  private:
    friend class tile;
    template <class E>
    static trace::value apply(const void* p, trace::binary_op op, trace::value current,
                              trace::loc l) {
      auto n = detail::to_node(*static_cast<const E*>(p));
      if constexpr (detail::is_dot_v<decltype(n)> && std::is_same_v<T, f32>) {
        // acc += dot(a, b): the accumulator form of tessel.dot.
        if (op == trace::binary_op::add) return n.emit_acc(current, l);
      }
      return trace::binary(op, current, detail::materialize_as<T, shape_type>(n, l), l);
    }
    const void* expr_;
    trace::value (*apply_)(const void*, trace::binary_op, trace::value, trace::loc);
    trace::loc loc_;
  };

  tile& operator+=(compound_source s) { return update(trace::binary_op::add, s); }
  tile& operator-=(compound_source s) { return update(trace::binary_op::sub, s); }
  tile& operator*=(compound_source s) { return update(trace::binary_op::mul, s); }
  tile& operator/=(compound_source s) { return update(trace::binary_op::div, s); }

  /// The traced value that the variable holds now.
  trace::value value() const { return trace::var_get(slot_); }

private:
  friend struct detail::access;
  tile(detail::adopt_t, trace::value v, trace::loc l) : slot_(trace::var_new(v)), loc_(l) {}

  tile& update(trace::binary_op op, const compound_source& s) {
    trace::value current = value();
    trace::var_set(slot_, s.apply_(s.expr_, op, current, s.loc_));
    return *this;
  }

  trace::var slot_ = -1;
  trace::loc loc_;
};

namespace detail {

struct access {
  template <class T, long long... D>
  static tile<T, D...> make_tile(trace::value v, trace::loc l) {
    return tile<T, D...>(adopt_t{}, v, l);
  }
  static index make_index(trace::value v, trace::loc l) { return index(v, l); }
  template <class T>
  static scalar<T> make_scalar(trace::value v, trace::loc l) {
    return scalar<T>(v, l);
  }
  template <class Tensor>
  static Tensor make_tensor(trace::value v) {
    return Tensor(v);
  }
};

template <class T, long long... D>
expr::leaf<T, shape<D...>> to_node(const tile<T, D...>& t) {
  return expr::leaf<T, shape<D...>>(t.value());
}

/// The tile type of dtype T and shape S.
template <class T, class S>
struct tile_for;
template <class T, long long... D>
struct tile_for<T, hana::tuple<hana::integral_constant<long long, D>...>> {
  using type = tile<T, D...>;
};
template <class T, class S>
using tile_for_t = typename tile_for<T, S>::type;

}  // namespace detail

/// The tile variable type that holds expression `E` (`ts::tile_of<decltype(a * b)>`).
template <class E>
  requires detail::expr_like<E>
using tile_of = detail::tile_for_t<dtype_of<E>, shape_of<E>>;

/// Materialises an expression into a tile variable now: `auto y = ts::eval(x * 2.0f);`.
template <class E>
  requires detail::expr_like<E>
tile_of<E> eval(const E& e, std::source_location loc = std::source_location::current()) {
  static_assert(detail::node_t<E>::is_shaped,
                "eval: a .row()/.col() vector needs a tile to meet; evaluate the 1-d tile itself");
  if constexpr (detail::tile_like<E>)
    return e;
  else
    return tile_of<E>(e, loc);
}

}  // namespace tessel
