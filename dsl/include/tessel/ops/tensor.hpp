// tessel/ops/tensor.hpp - global tensors: the kernel's arguments.
//
// `ts::tensor<T, Rank>` names a tensor in global memory (pointer, runtime sizes and strides;
// static dtype and rank). The kernel moves tiles between it and registers:
//
//     auto a = A.load({m, k}, BM, BK);      // tile<bf16, BM, BK> at rows m.., columns k..
//     C.store({m, n}, ts::cast<ts::bf16>(acc));
//
// Offsets are ts::index values, ts::scalar<ts::i32> values, host integers or compile-time
// integers, one per dimension;
// extents are compile-time integers, one per dimension or fewer: a tile of lower rank covers the
// innermost dimensions, and the leading offsets pick one index each (a batch of matrices):
//
//     auto a = X.load({ts::program_id(2), m, k}, BM, BK);   // rank-3 X: tile of matrix pid(2)
//
// Out-of-bounds elements read as zero and are not written, so edge tiles need no code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

#include "tessel/core/dtype.hpp"
#include "tessel/core/index.hpp"
#include "tessel/core/location.hpp"
#include "tessel/core/scalar.hpp"
#include "tessel/expr/tile.hpp"
#include "tessel/ops/creation.hpp"
#include "tessel/ops/reduce.hpp"

namespace tessel {

/// One element offset of a load or store: a ts::index, a host integer or a static int.
class offset {
public:
  offset(const index& i) : value_(i.value()) {}
  template <detail::host_int I>
  offset(I v) : constant_(static_cast<std::int64_t>(v)) {}
  template <detail::static_int S>
  offset(S) : constant_(static_cast<std::int64_t>(S::value)) {}
  /// A ts::scalar<ts::i32> kernel parameter (or scalar arithmetic on one).
  offset(const scalar<i32>& s) : value_(static_cast<index>(s).value()) {}

  /// The traced index (constants become arith.constant at `l`).
  trace::value materialize(trace::loc l) const {
    return value_ != trace::no_value ? value_ : trace::const_index(constant_, l);
  }

private:
  trace::value value_ = trace::no_value;
  std::int64_t constant_ = 0;
};

template <class T, int Rank>
class tensor {
  static_assert(is_storage_dtype_v<T>,
                "tensor: the element type must be ts::f16, ts::bf16, ts::f32, ts::i32, ts::f8e4m3 or "
                "ts::f8e5m2");
  static_assert(Rank >= 1 && Rank <= 3, "tensor: the rank must be 1, 2 or 3");

public:
  using dtype_type = T;
  static constexpr int rank = Rank;

  /// Runtime size along `axis` (tessel.dim).
  index size(int axis, std::source_location loc = std::source_location::current()) const {
    trace::loc l = detail::to_loc(loc);
    if (axis < 0 || axis >= Rank) trace::fail("tensor::size: axis out of range", l);
    return detail::access::make_index(trace::dim(ref_, axis, l), l);
  }

  /// Loads the tile of the given static extents whose first element is at `offsets`.
  template <std::size_t N, class E0>
  auto load(const offset (&offsets)[N], E0,
            std::source_location loc = std::source_location::current()) const {
    return load_impl<N, E0>(offsets, loc);
  }
  template <std::size_t N, class E0, class E1>
  auto load(const offset (&offsets)[N], E0, E1,
            std::source_location loc = std::source_location::current()) const {
    return load_impl<N, E0, E1>(offsets, loc);
  }
  template <std::size_t N, class E0, class E1, class E2>
  auto load(const offset (&offsets)[N], E0, E1, E2,
            std::source_location loc = std::source_location::current()) const {
    return load_impl<N, E0, E1, E2>(offsets, loc);
  }

  /// The element at `offsets` (one per dimension) as a runtime scalar, read from device memory
  /// by the kernel (0 outside the tensor): a scale that an earlier kernel wrote, or the scale of
  /// one 128 x 128 block of B in a block-scaled fp8 GEMM, whose offsets may depend on the
  /// mainloop's k (docs/fp8.md):
  ///
  ///     acc += ts::dot(a, b) * SA.load({k / BK, m}, BM).col() * SB.at({n / 128, k / BK});
  template <std::size_t N>
  auto at(const offset (&offsets)[N],
          std::source_location loc = std::source_location::current()) const {
    static_assert(N == Rank, "at: the number of offsets must equal the tensor rank");
    static_assert(detail::is_scalar_dtype_v<T>,
                  "at: only elements of ts::f32 and ts::i32 tensors can be read as scalars "
                  "(ts::scalar's dtypes); load a tile and ts::cast it instead");
    if constexpr (detail::is_scalar_dtype_v<T>) {
      trace::loc l = detail::to_loc(loc);
      trace::value offs[N];
      for (std::size_t i = 0; i < N; ++i) offs[i] = offsets[i].materialize(l);
      return detail::access::make_scalar<T>(trace::load_element(ref_, offs, l), l);
    }
  }

  /// Stores a tile or tile expression (of this tensor's dtype, rank at most the tensor's) at
  /// `offsets`.
  template <std::size_t N, class E>
    requires detail::operand<E>
  void store(const offset (&offsets)[N], const E& value,
             std::source_location loc = std::source_location::current()) const {
    using V = detail::node_t<E>;
    static_assert(N == Rank, "store: the number of offsets must equal the tensor rank");
    static_assert(V::is_shaped,
                  "store: the value must be a tile or a tile expression (a scalar or a "
                  ".row()/.col() vector has no shape of its own)");
    static_assert(detail::rank_v<detail::shape_of_node<V>> <= Rank,
                  "store: the tile rank must not exceed the tensor rank (a lower-rank tile "
                  "covers the innermost dimensions: C.store({b, m, n}, tile) writes matrix b)");
    static_assert(std::is_same_v<typename V::dtype_type, T>,
                  "store: tile dtype must equal the tensor dtype; use ts::cast<T>(...)");
    trace::loc l = detail::to_loc(loc);
    trace::value offs[N];
    for (std::size_t i = 0; i < N; ++i) offs[i] = offsets[i].materialize(l);
    trace::value v = detail::materialize(detail::to_node(value), l);
    trace::store(ref_, offs, v, l);
  }

  /// A reduction is not stored with `store`: see reduce_into.
  template <std::size_t N, trace::reduce_op Op, int Axis, class E>
  void store(const offset (&)[N], const reduction<Op, Axis, E>&,
             std::source_location = std::source_location::current()) const {
    static_assert(sizeof(E) == 0,
                  "store: a reduction (ts::sum / ts::max / ts::amax) is one program instance's "
                  "partial; write V.reduce_into({m}, r), which combines the partials of every "
                  "program instance");
  }

  /// Combines the partial `r` of a reduction (ts::sum / ts::max / ts::amax) into the vector at
  /// `offsets`: element i of r is added to (sum) or max-ed into (max, amax) element
  /// offsets + i; elements outside the tensor are dropped. The tensor must be f32 and hold the
  /// reduction's identity before the launch (0 for sum and amax, -inf for max), or values to
  /// combine with (docs/reductions.md).
  template <std::size_t N, trace::reduce_op Op, int Axis, class E>
  void reduce_into(const offset (&offsets)[N], const reduction<Op, Axis, E>& r,
                   std::source_location loc = std::source_location::current()) const {
    static_assert(N == Rank, "reduce_into: the number of offsets must equal the tensor rank");
    static_assert(std::is_same_v<T, f32>,
                  "reduce_into: reductions are combined in f32; the output must be a "
                  "ts::tensor<ts::f32, ...>");
    trace::loc l = detail::to_loc(loc);
    trace::value offs[N];
    for (std::size_t i = 0; i < N; ++i) offs[i] = offsets[i].materialize(l);
    trace::store_combine(ref_, offs, r.emit(l), l);
  }

  /// The traced `!tessel.ref` argument.
  trace::value ref() const { return ref_; }

private:
  friend struct detail::access;
  explicit tensor(trace::value ref) : ref_(ref) {}

  template <std::size_t N, class... E>
  auto load_impl(const offset (&offsets)[N], std::source_location loc) const {
    static_assert(N == Rank, "load: the number of offsets must equal the tensor rank");
    static_assert(sizeof...(E) <= Rank,
                  "load: give at most one tile extent per tensor dimension (fewer extents "
                  "cover the innermost dimensions: A.load({b, m, k}, BM, BK) loads matrix b)");
    detail::check_extents<E...>();
    trace::loc l = detail::to_loc(loc);
    trace::value offs[N];
    for (std::size_t i = 0; i < N; ++i) offs[i] = offsets[i].materialize(l);
    static constexpr std::int64_t extents[] = {detail::static_value_v<E>...};
    return detail::access::make_tile<T, detail::static_value_v<E>...>(
        trace::load(ref_, offs, extents, l), l);
  }

  trace::value ref_;
};

}  // namespace tessel
