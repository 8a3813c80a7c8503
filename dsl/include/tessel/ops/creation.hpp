// tessel/ops/creation.hpp - constant tiles: ts::zeros, ts::full.
#pragma once

#include <source_location>

#include "tessel/core/dtype.hpp"
#include "tessel/core/shape.hpp"
#include "tessel/expr/tile.hpp"

namespace tessel {

namespace detail {
template <class... E>
constexpr void check_extents() {
  static_assert((static_int<E> && ...),
                "tile extents must be compile-time integers: 128_c or ts::c<128>");
}
template <class T>
constexpr void check_fill_dtype() {
  static_assert(is_storage_dtype_v<T> && !is_fp8_v<T>,
                "zeros/full: the dtype must be ts::f16, ts::bf16, ts::f32 or ts::i32 (an fp8 "
                "tile comes from a load or a ts::cast)");
}
template <class T, class... E>
auto make_full(double v, std::source_location loc) {
  check_fill_dtype<T>();
  check_extents<E...>();
  static constexpr std::int64_t extents[] = {static_value_v<E>...};
  return access::make_tile<T, static_value_v<E>...>(trace::full(T::value, extents, v, to_loc(loc)),
                                                    to_loc(loc));
}
}  // namespace detail

/// A tile of dtype T filled with zeros (an arith.constant): `ts::zeros<ts::f32>(BM, BN)`.
template <class T, class E0>
auto zeros(E0, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0>(0.0, loc);
}
template <class T, class E0, class E1>
auto zeros(E0, E1, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0, E1>(0.0, loc);
}
template <class T, class E0, class E1, class E2>
auto zeros(E0, E1, E2, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0, E1, E2>(0.0, loc);
}

/// A tile of dtype T filled with `v`: `ts::full<ts::f32>(-INFINITY, BM)`.
template <class T, class E0>
auto full(double v, E0, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0>(v, loc);
}
template <class T, class E0, class E1>
auto full(double v, E0, E1, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0, E1>(v, loc);
}
template <class T, class E0, class E1, class E2>
auto full(double v, E0, E1, E2, std::source_location loc = std::source_location::current()) {
  return detail::make_full<T, E0, E1, E2>(v, loc);
}

}  // namespace tessel
