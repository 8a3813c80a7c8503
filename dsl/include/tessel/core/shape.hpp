// tessel/core/shape.hpp - compile-time integers and static tile shapes.
//
// Tile extents are Boost.Hana integral constants: `ts::c<128>` or, with
// `using namespace ts::literals`, `128_c` (both are `boost::hana::llong<128>`). A tile's shape
// is the type `ts::shape<128, 256>` = `hana::tuple<hana::llong<128>, hana::llong<256>>`, so
// shape arithmetic is ordinary Hana code and shape equality is type identity.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include <boost/hana.hpp>  // all of Hana: users do arithmetic on extents (BM / 2_c)

namespace tessel {

namespace hana = boost::hana;

/// A compile-time integer, e.g. a tile extent: `ts::c<128>`.
template <long long N>
inline constexpr hana::llong<N> c{};

/// `using namespace ts::literals;` brings in `128_c` (Hana's literal: a `hana::llong<128>`).
namespace literals {
using namespace boost::hana::literals;
}  // namespace literals

/// The static shape of a tile, outermost extent first.
template <long long... D>
using shape = hana::tuple<hana::llong<D>...>;

namespace detail {

template <class T>
struct is_static_int : std::false_type {};
template <class U, U N>
  requires(!std::is_same_v<U, bool>)
struct is_static_int<hana::integral_constant<U, N>> : std::true_type {};
template <class U, U N>
  requires(!std::is_same_v<U, bool>)
struct is_static_int<std::integral_constant<U, N>> : std::true_type {};

/// A compile-time integer: `hana::llong<N>`, `hana::int_<N>`, `std::integral_constant<int, N>`.
template <class T>
concept static_int = is_static_int<std::remove_cvref_t<T>>::value;

/// A run-time integer of the host language (not bool, not char).
template <class T>
concept host_int = std::integral<std::remove_cvref_t<T>> &&
                   !std::is_same_v<std::remove_cvref_t<T>, bool> &&
                   !std::is_same_v<std::remove_cvref_t<T>, char>;

/// Extent of a static int as long long; 1 for anything else (so that a misuse reports one
/// static_assert, not a cascade).
template <class T>
inline constexpr long long static_value_v = 1;
template <class T>
  requires static_int<T>
inline constexpr long long static_value_v<T> =
    static_cast<long long>(std::remove_cvref_t<T>::value);

/// Unpacks a shape type.
template <class S>
struct shape_traits {
  static constexpr bool is_shape = false;
  static constexpr int rank = 0;
  static constexpr std::array<std::int64_t, 0> extents{};
};
template <long long... D>
struct shape_traits<hana::tuple<hana::integral_constant<long long, D>...>> {
  static constexpr bool is_shape = true;
  static constexpr int rank = static_cast<int>(sizeof...(D));
  static constexpr std::array<std::int64_t, sizeof...(D)> extents{D...};
};

template <class S>
inline constexpr int rank_v = shape_traits<S>::rank;

/// Extent `i` of shape `S`, or 0 if `S` has no dimension `i`.
template <class S, int I>
inline constexpr long long extent_v = [] {
  if constexpr (I >= 0 && I < shape_traits<S>::rank)
    return static_cast<long long>(shape_traits<S>::extents[I]);
  else
    return 0LL;
}();

/// The shape of the transpose of a 2-d shape (other ranks map to themselves).
template <class S>
struct transposed {
  using type = S;
};
template <long long M, long long N>
struct transposed<shape<M, N>> {
  using type = shape<N, M>;
};
template <class S>
using transposed_t = typename transposed<S>::type;

}  // namespace detail
}  // namespace tessel
