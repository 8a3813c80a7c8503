// tessel/core/scalar.hpp - runtime scalar kernel parameters (`alpha`, `beta`, `eps`, a scale).
//
// `ts::scalar<ts::f32>` and `ts::scalar<ts::i32>` are kernel parameters whose value is given at
// launch, so one compiled kernel serves every value (a functor member would be baked into the
// program and compile a kernel per value):
//
//     void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B,
//                     ts::scalar<ts::f32> alpha, ts::scalar<ts::f32> beta,
//                     ts::tensor<ts::bf16, 2> C) const {
//       ...
//       C.store({m, n}, ts::cast<ts::bf16>(acc * alpha + beta));   // broadcast over the tile
//     }
//     k.launch(stream, grid, ts::view<ts::bf16>(dA, {M, K}), ts::view<ts::bf16>(dB, {N, K}),
//              1.5f, ts::value(-0.25f), ts::view<ts::bf16>(dC, {M, N}));
//
// In tile expressions a scalar broadcasts like a literal, but keeps its dtype: it promotes like
// a tile of that dtype (`acc_f32 * alpha` is f32, `x_bf16 * alpha` is f32, `x_bf16 + n_i32` is
// bf16), so an f32 alpha is never rounded to bf16 before it is applied. Between scalars and host
// numbers (`alpha + 1.0f`, `beta * 2`, `ts::max(alpha, 0.0f)`, `ts::cast<ts::f32>(n)`) the
// arithmetic is traced at once and gives a scalar of the same dtype. An i32 scalar converts to a
// ts::index for offsets and index math (`ts::index row = n;`, `A.load({n, k}, ...)`).
//
// Like tiles and indices, a scalar is a variable: reassigning it in a `ts::range` loop makes it
// loop-carried. Traced as a plain f32 / i32 argument of the kernel function.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>

#include "tessel/core/dtype.hpp"
#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/core/trace.hpp"

namespace tessel {

template <class T>
class scalar;

namespace detail {
template <class T>
struct is_runtime_scalar : std::false_type {};
template <class T>
struct is_runtime_scalar<scalar<T>> : std::true_type {};
/// A ts::scalar<T> (of any dtype).
template <class T>
concept runtime_scalar = is_runtime_scalar<std::remove_cvref_t<T>>::value;

/// A number of the host language that scalar arithmetic takes (not bool, not char), or a static int.
template <class T>
concept host_number = (std::is_arithmetic_v<std::remove_cvref_t<T>> &&
                       !std::is_same_v<std::remove_cvref_t<T>, bool> &&
                       !std::is_same_v<std::remove_cvref_t<T>, char>) ||
                      static_int<T>;

template <class T>
inline constexpr bool is_scalar_dtype_v = std::is_same_v<T, f32> || std::is_same_v<T, i32>;

/// The value of host number `v` as a double (static ints included).
template <class V>
constexpr double host_value(const V& v) {
  if constexpr (static_int<V>)
    return static_cast<double>(std::remove_cvref_t<V>::value);
  else
    return static_cast<double>(v);
}
/// `access` as a type that depends on T: access is defined later (expr/tile.hpp), and the
/// templates below use it only when instantiated.
template <class T>
struct access_for {
  using type = access;
};
template <class V>
inline constexpr bool is_host_floating_v = std::is_floating_point_v<std::remove_cvref_t<V>>;
}  // namespace detail

template <class T>
class scalar {
  static_assert(detail::is_scalar_dtype_v<T>,
                "scalar: a runtime scalar is ts::scalar<ts::f32> or ts::scalar<ts::i32>; for an "
                "f16/bf16 factor take an f32 scalar (it promotes the tile expression to f32) and "
                "ts::cast the result");

public:
  using dtype_type = T;

  scalar(const scalar& other) : slot_(trace::var_new(other.value())), loc_(other.loc_) {}
  scalar& operator=(const scalar& other) {
    trace::var_set(slot_, other.value());
    return *this;
  }
  /// Assigns a host number (traced as arith.constant where the scalar was made).
  template <detail::host_number V>
  scalar& operator=(const V& v) {
    check_host<V>();
    trace::var_set(slot_, trace::const_scalar(T::value, detail::host_value(v), loc_));
    return *this;
  }

  /// The traced value that the variable holds now.
  trace::value value() const { return trace::var_get(slot_); }
  /// Where the scalar was made (the position of its arithmetic).
  trace::loc where() const { return loc_; }

  /// An i32 scalar as a ts::index (arith.index_cast), for offsets and index arithmetic.
  operator index() const
    requires std::is_same_v<T, i32>
  {
    using A = typename detail::access_for<T>::type;
    return A::make_index(trace::cast(value(), dtype::index, loc_), loc_);
  }

  template <class B>
    requires(detail::host_number<B> || std::is_same_v<std::remove_cvref_t<B>, scalar>)
  scalar& operator+=(const B& o) { return *this = *this + o; }
  template <class B>
    requires(detail::host_number<B> || std::is_same_v<std::remove_cvref_t<B>, scalar>)
  scalar& operator-=(const B& o) { return *this = *this - o; }
  template <class B>
    requires(detail::host_number<B> || std::is_same_v<std::remove_cvref_t<B>, scalar>)
  scalar& operator*=(const B& o) { return *this = *this * o; }
  template <class B>
    requires(detail::host_number<B> || std::is_same_v<std::remove_cvref_t<B>, scalar>)
  scalar& operator/=(const B& o) { return *this = *this / o; }

  /// -s (arith.negf: -0.0 for 0.0; 0 - s on i32).
  friend scalar operator-(const scalar& a) {
    return scalar(trace::unary(trace::unary_op::neg, a.value(), a.loc_), a.loc_);
  }

  // scalar (op) scalar of the same dtype, scalar (op) host number, host number (op) scalar.
  // The by-value overloads for Hana constants beat Hana's own generic operators.
#define TESSEL_SCALAR_OPERATOR(OP, KIND)                                                       \
  friend scalar operator OP(const scalar& a, const scalar& b) { return binary(KIND, a, b); }   \
  template <class V>                                                                           \
    requires(detail::host_number<V> && !detail::static_int<V>)                                \
  friend scalar operator OP(const scalar& a, const V& b) {                                     \
    return binary(KIND, a, b);                                                                 \
  }                                                                                            \
  template <class V>                                                                           \
    requires(detail::host_number<V> && !detail::static_int<V>)                                \
  friend scalar operator OP(const V& a, const scalar& b) {                                     \
    return binary(KIND, a, b);                                                                 \
  }                                                                                            \
  template <class X, class U, U N>                                                             \
    requires std::is_same_v<std::remove_cvref_t<X>, scalar>                                    \
  friend scalar operator OP(X&& a, hana::integral_constant<U, N> b) {                          \
    return binary(KIND, a, b);                                                                 \
  }                                                                                            \
  template <class X, class U, U N>                                                             \
    requires std::is_same_v<std::remove_cvref_t<X>, scalar>                                    \
  friend scalar operator OP(hana::integral_constant<U, N> a, X&& b) {                          \
    return binary(KIND, a, b);                                                                 \
  }
  TESSEL_SCALAR_OPERATOR(+, trace::binary_op::add)
  TESSEL_SCALAR_OPERATOR(-, trace::binary_op::sub)
  TESSEL_SCALAR_OPERATOR(*, trace::binary_op::mul)
  TESSEL_SCALAR_OPERATOR(/, trace::binary_op::div)
#undef TESSEL_SCALAR_OPERATOR

  /// Remainder (i32 scalars: arith.remsi).
  template <class B>
    requires(detail::host_number<B> || std::is_same_v<std::remove_cvref_t<B>, scalar>)
  friend scalar operator%(const scalar& a, const B& b) {
    static_assert(std::is_same_v<T, i32>, "scalar %: defined on ts::scalar<ts::i32> only");
    return binary(trace::binary_op::rem, a, b);
  }

  /// Traces `a (op) b` where one side is this scalar type and the other a scalar or host number.
  template <class A, class B>
  static scalar binary(trace::binary_op op, const A& a, const B& b) {
    trace::loc l = where_of(a, where_of(b, trace::loc{}));
    return scalar(trace::binary(op, value_of(a, l), value_of(b, l), l), l);
  }

private:
  friend struct detail::access;
  scalar(trace::value v, trace::loc l) : slot_(trace::var_new(v)), loc_(l) {}

  template <class V>
  static constexpr void check_host() {
    static_assert(!(std::is_same_v<T, i32> && detail::is_host_floating_v<V>),
                  "scalar: a ts::scalar<ts::i32> meets a floating-point number; convert it first "
                  "with ts::cast<ts::f32>(s)");
  }
  template <class A>
  static trace::value value_of(const A& a, trace::loc l) {
    if constexpr (std::is_same_v<std::remove_cvref_t<A>, scalar>) {
      return a.value();
    } else {
      check_host<A>();
      return trace::const_scalar(T::value, detail::host_value(a), l);
    }
  }
  template <class A>
  static trace::loc where_of(const A& a, trace::loc fallback) {
    if constexpr (std::is_same_v<std::remove_cvref_t<A>, scalar>)
      return detail::or_else(a.loc_, fallback);
    else
      return fallback;
  }

  trace::var slot_;
  trace::loc loc_;
};

/// The larger / smaller of two scalars, or of a scalar and a host number (arith.maximumf /
/// minimumf: NaN propagates; arith.maxsi / minsi on i32). Tile operands: ops/math.hpp.
template <class A, class B>
  requires((detail::runtime_scalar<A> && (detail::runtime_scalar<B> || detail::host_number<B>)) ||
           (detail::host_number<A> && detail::runtime_scalar<B>))
auto max(const A& a, const B& b) {
  using S = std::conditional_t<detail::runtime_scalar<A>, std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
  static_assert(!(detail::runtime_scalar<A> && detail::runtime_scalar<B>) ||
                    std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>,
                "max: the two scalars have different dtypes; use ts::cast<ts::f32>(s)");
  return S::binary(trace::binary_op::max, a, b);
}
template <class A, class B>
  requires((detail::runtime_scalar<A> && (detail::runtime_scalar<B> || detail::host_number<B>)) ||
           (detail::host_number<A> && detail::runtime_scalar<B>))
auto min(const A& a, const B& b) {
  using S = std::conditional_t<detail::runtime_scalar<A>, std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
  static_assert(!(detail::runtime_scalar<A> && detail::runtime_scalar<B>) ||
                    std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>,
                "min: the two scalars have different dtypes; use ts::cast<ts::f32>(s)");
  return S::binary(trace::binary_op::min, a, b);
}

/// Converts a scalar to another scalar dtype (f32 <-> i32; f32 -> i32 truncates toward zero).
template <class T, class S>
  requires detail::runtime_scalar<S>
scalar<T> cast(const S& s, std::source_location loc = std::source_location::current()) {
  static_assert(detail::is_scalar_dtype_v<T>, "cast: a scalar converts to ts::f32 or ts::i32");
  trace::loc l = detail::to_loc(loc);
  using A = typename detail::access_for<S>::type;
  return A::template make_scalar<T>(trace::cast(s.value(), T::value, l), l);
}

}  // namespace tessel
