// tessel/core/dtype.hpp - element-type tags and the promotion rules of elementwise math.
//
// A dtype tag is an empty struct with a constexpr `tessel::dtype value`. Tiles and tensors carry
// their tag in the type (`ts::tile<ts::f32, 128, 256>`, `ts::tensor<ts::bf16, 2>`), so dtype
// mistakes are compile errors.
#pragma once

#include <concepts>
#include <type_traits>

#include "tessel/core/trace.hpp"

namespace tessel {

/// IEEE half precision.
struct f16 {
  static constexpr dtype value = dtype::f16;
  static constexpr const char* name = "f16";
};
/// bfloat16 (8-bit exponent, 7-bit mantissa).
struct bf16 {
  static constexpr dtype value = dtype::bf16;
  static constexpr const char* name = "bf16";
};
/// IEEE single precision; the accumulator type of `dot`.
struct f32 {
  static constexpr dtype value = dtype::f32;
  static constexpr const char* name = "f32";
};
/// 8-bit float, 4-bit exponent, 3-bit mantissa (OCP "E4M3FN", PyTorch float8_e4m3fn): finite
/// values up to 448, no infinities, NaN = 0x7F / 0xFF. An input of `dot` (wgmma's e4m3) and a
/// storage type: convert with ts::cast (saturating to +-448). docs/fp8.md.
struct f8e4m3 {
  static constexpr dtype value = dtype::f8e4m3;
  static constexpr const char* name = "f8e4m3";
};
/// 8-bit float, 5-bit exponent, 2-bit mantissa (OCP "E5M2", PyTorch float8_e5m2): IEEE-like,
/// finite values up to 57344, with infinities and NaNs. An input of `dot` and a storage type.
struct f8e5m2 {
  static constexpr dtype value = dtype::f8e5m2;
  static constexpr const char* name = "f8e5m2";
};
/// 32-bit signed integer.
struct i32 {
  static constexpr dtype value = dtype::i32;
  static constexpr const char* name = "i32";
};
/// Boolean: the element type of masks (comparison results), consumed by ts::where.
struct i1 {
  static constexpr dtype value = dtype::i1;
  static constexpr const char* name = "i1";
};

/// f8e4m3 or f8e5m2: storage and `dot` inputs only; elementwise math needs ts::cast first.
template <class T>
inline constexpr bool is_fp8_v = std::is_same_v<T, f8e4m3> || std::is_same_v<T, f8e5m2>;
/// True for the tags a tile may have (f16, bf16, f32, i32, i1, f8e4m3, f8e5m2).
template <class T>
inline constexpr bool is_dtype_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16> ||
                                   std::is_same_v<T, f32> || std::is_same_v<T, i32> ||
                                   std::is_same_v<T, i1> || is_fp8_v<T>;
/// True for the tags a global tensor may have (a mask cannot live in memory).
template <class T>
inline constexpr bool is_storage_dtype_v = is_dtype_v<T> && !std::is_same_v<T, i1>;
template <class T>
inline constexpr bool is_floating_v =
    std::is_same_v<T, f16> || std::is_same_v<T, bf16> || std::is_same_v<T, f32>;
/// f16 or bf16: the 16-bit input types of `dot`.
template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
/// The input types of `dot`: f16, bf16, f8e4m3, f8e5m2.
template <class T>
inline constexpr bool is_dot_input_v = is_half_v<T> || is_fp8_v<T>;

namespace detail {

/// Type of a scalar literal in a tile expression before it meets a tile: it takes the tile's
/// dtype (`acc * 2.0f` stays f32, `x_bf16 + 1` stays bf16).
struct untyped_float {};
struct untyped_int {};
/// Result of an invalid promotion; the op that asked static_asserts on it.
struct no_dtype {};

template <class T>
inline constexpr bool is_untyped_v =
    std::is_same_v<T, untyped_float> || std::is_same_v<T, untyped_int>;

/// Untyped scalars that meet no tile (e.g. both branches of ts::where are literals).
template <class T>
using concrete_t = std::conditional_t<std::is_same_v<T, untyped_float>, f32,
                                      std::conditional_t<std::is_same_v<T, untyped_int>, i32, T>>;

// The promotion table of binary elementwise ops (as in PyTorch):
//   same dtype                     -> that dtype
//   f16 + bf16, half + f32         -> f32
//   i32 + float dtype F            -> F
//   T + untyped int                -> T
//   float T + untyped float        -> T;   i32 + untyped float -> f32
//   masks (i1) combine with nothing (they only feed ts::where);
//   fp8 combines with nothing (storage and dot inputs: ts::cast<ts::f32> first).
template <class A, class B>
struct promote {
  using type = no_dtype;
};
template <class A>
struct promote<A, A> {
  using type = std::conditional_t<std::is_same_v<A, i1> || is_fp8_v<A>, no_dtype,
                                  std::conditional_t<std::is_same_v<A, untyped_int>, untyped_int, A>>;
};
template <>
struct promote<f16, bf16> { using type = f32; };
template <>
struct promote<bf16, f16> { using type = f32; };
template <>
struct promote<f16, f32> { using type = f32; };
template <>
struct promote<f32, f16> { using type = f32; };
template <>
struct promote<bf16, f32> { using type = f32; };
template <>
struct promote<f32, bf16> { using type = f32; };
template <>
struct promote<i32, f16> { using type = f16; };
template <>
struct promote<f16, i32> { using type = f16; };
template <>
struct promote<i32, bf16> { using type = bf16; };
template <>
struct promote<bf16, i32> { using type = bf16; };
template <>
struct promote<i32, f32> { using type = f32; };
template <>
struct promote<f32, i32> { using type = f32; };
template <class A>
  requires(!std::is_same_v<A, untyped_int> && !std::is_same_v<A, i1> && !is_fp8_v<A>)
struct promote<A, untyped_int> {
  using type = A;
};
template <class B>
  requires(!std::is_same_v<B, untyped_int> && !std::is_same_v<B, i1> && !is_fp8_v<B>)
struct promote<untyped_int, B> {
  using type = B;
};
template <class A>
  requires(!std::is_same_v<A, untyped_float> && !std::is_same_v<A, untyped_int> &&
           !std::is_same_v<A, i1> && !is_fp8_v<A>)
struct promote<A, untyped_float> {
  using type = std::conditional_t<std::is_same_v<A, i32>, f32, A>;
};
template <class B>
  requires(!std::is_same_v<B, untyped_float> && !std::is_same_v<B, untyped_int> &&
           !std::is_same_v<B, i1> && !is_fp8_v<B>)
struct promote<untyped_float, B> {
  using type = std::conditional_t<std::is_same_v<B, i32>, f32, B>;
};
template <>
struct promote<untyped_float, untyped_int> { using type = untyped_float; };
template <>
struct promote<untyped_int, untyped_float> { using type = untyped_float; };

template <class A, class B>
using promote_t = typename promote<A, B>::type;

}  // namespace detail
}  // namespace tessel
