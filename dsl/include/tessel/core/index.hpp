// tessel/core/index.hpp - traced index scalars (offsets, program ids, loop bounds).
//
// `ts::index` is a run-time integer of the kernel (MLIR `index`): `ts::program_id(0) * BM`,
// `A.size(1)`, a loop variable. Arithmetic on indices is traced immediately
// (arith.addi/subi/muli/divsi/remsi/minsi/maxsi). Like a tile, an index is a *variable*: it owns
// a tracer slot, and an index declared before a `ts::range` loop and reassigned in its body
// becomes a loop-carried value of the scf.for.
#pragma once

#include <concepts>
#include <cstdint>
#include <source_location>
#include <type_traits>

#include "tessel/core/location.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

class index;

namespace detail {
template <class T>
inline constexpr bool is_index_v = std::is_same_v<std::remove_cvref_t<T>, tessel::index>;

/// Anything usable where the kernel needs an index: ts::index, a static int, a host integer.
template <class T>
concept index_like = is_index_v<T> || static_int<T> || host_int<T>;
}  // namespace detail

class index {
public:
  index(const index& other) : slot_(trace::var_new(other.value())), loc_(other.loc_) {}
  index& operator=(const index& other) {
    trace::var_set(slot_, other.value());
    return *this;
  }
  /// Assigns a constant (traced as arith.constant at the position where the index was made).
  template <class I>
    requires detail::host_int<I> || detail::static_int<I>
  index& operator=(I v) {
    trace::var_set(slot_, trace::const_index(static_cast<std::int64_t>(v), loc_));
    return *this;
  }

  /// The traced value that the variable holds now.
  trace::value value() const { return trace::var_get(slot_); }
  /// Where the index was made (used for the position of index arithmetic).
  trace::loc where() const { return loc_; }

  index& operator+=(const index& o) { return *this = *this + o; }
  index& operator-=(const index& o) { return *this = *this - o; }
  index& operator*=(const index& o) { return *this = *this * o; }
  index& operator/=(const index& o) { return *this = *this / o; }
  template <detail::index_like I>
    requires(!detail::is_index_v<I>)
  index& operator+=(I o) { return *this = *this + o; }
  template <detail::index_like I>
    requires(!detail::is_index_v<I>)
  index& operator-=(I o) { return *this = *this - o; }
  template <detail::index_like I>
    requires(!detail::is_index_v<I>)
  index& operator*=(I o) { return *this = *this * o; }
  template <detail::index_like I>
    requires(!detail::is_index_v<I>)
  index& operator/=(I o) { return *this = *this / o; }

  friend index operator-(const index& a) { return index::binary(trace::binary_op::sub, 0, a); }

  // index (op) index, index (op) host int, host int (op) index. The overloads for Hana
  // constants are separate (below) so that they beat Hana's own generic operators.
#define TESSEL_INDEX_OPERATOR(OP, KIND)                                                        \
  friend index operator OP(const index& a, const index& b) {                                   \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <detail::host_int I>                                                                \
  friend index operator OP(const index& a, I b) {                                              \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <detail::host_int I>                                                                \
  friend index operator OP(I a, const index& b) {                                              \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <class X, class U, U N>                                                             \
    requires detail::is_index_v<X>                                                             \
  friend index operator OP(X&& a, hana::integral_constant<U, N> b) {                           \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <class X, class U, U N>                                                             \
    requires detail::is_index_v<X>                                                             \
  friend index operator OP(hana::integral_constant<U, N> a, X&& b) {                           \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <class U, U N>                                                                      \
  friend index operator OP(const index& a, std::integral_constant<U, N> b) {                   \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }                                                                                            \
  template <class U, U N>                                                                      \
  friend index operator OP(std::integral_constant<U, N> a, const index& b) {                   \
    return index::binary(trace::binary_op::KIND, a, b);                                        \
  }
  TESSEL_INDEX_OPERATOR(+, add)
  TESSEL_INDEX_OPERATOR(-, sub)
  TESSEL_INDEX_OPERATOR(*, mul)
  TESSEL_INDEX_OPERATOR(/, div)
  TESSEL_INDEX_OPERATOR(%, rem)
#undef TESSEL_INDEX_OPERATOR

  /// Traces `a (op) b` where either side may be an index, static int or host int.
  template <class A, class B>
  static index binary(trace::binary_op op, const A& a, const B& b) {
    trace::loc l = where_of(a, where_of(b, trace::loc{}));
    trace::value x = value_of(a, l);
    trace::value y = value_of(b, l);
    return index(trace::binary(op, x, y, l), l);
  }

  /// The traced value of an index-like operand (constants become arith.constant at `l`).
  template <class A>
  static trace::value value_of(const A& a, trace::loc l) {
    if constexpr (detail::is_index_v<A>)
      return a.value();
    else
      return trace::const_index(static_cast<std::int64_t>(a), l);
  }

private:
  friend struct detail::access;
  index(trace::value v, trace::loc l) : slot_(trace::var_new(v)), loc_(l) {}

  template <class A>
  static trace::loc where_of(const A& a, trace::loc fallback) {
    if constexpr (detail::is_index_v<A>)
      return detail::or_else(a.loc_, fallback);
    else
      return fallback;
  }

  trace::var slot_;
  trace::loc loc_;
};

/// Smaller / larger of two indices (arith.minsi / arith.maxsi).
template <class A, class B>
  requires(detail::index_like<A> && detail::index_like<B> &&
           (detail::is_index_v<A> || detail::is_index_v<B>))
index min(const A& a, const B& b) {
  return index::binary(trace::binary_op::min, a, b);
}
template <class A, class B>
  requires(detail::index_like<A> && detail::index_like<B> &&
           (detail::is_index_v<A> || detail::is_index_v<B>))
index max(const A& a, const B& b) {
  return index::binary(trace::binary_op::max, a, b);
}

/// Ceiling division. On host integers (and static ints) it is plain arithmetic, e.g. for the
/// launch grid: `ts::grid{unsigned(ts::cdiv(M, 128)), unsigned(ts::cdiv(N, 256))}` (grid's
/// fields are unsigned); on a traced index it traces
/// `(a + b - 1) / b`.
template <class A, class B>
  requires((detail::host_int<A> || detail::static_int<A>) &&
           (detail::host_int<B> || detail::static_int<B>))
constexpr auto cdiv(A a, B b) {
  using R = std::common_type_t<
      std::conditional_t<detail::static_int<A>, long long, std::remove_cvref_t<A>>,
      std::conditional_t<detail::static_int<B>, long long, std::remove_cvref_t<B>>>;
  R x = static_cast<R>(a), y = static_cast<R>(b);
  return static_cast<R>((x + y - 1) / y);
}
template <class A, class B>
  requires(detail::index_like<A> && detail::index_like<B> &&
           (detail::is_index_v<A> || detail::is_index_v<B>))
index cdiv(const A& a, const B& b) {
  return index::binary(trace::binary_op::div,
                       index::binary(trace::binary_op::sub, index::binary(trace::binary_op::add, a, b), 1),
                       b);
}

}  // namespace tessel
