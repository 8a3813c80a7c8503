// grouped_gemm.hpp - the tile program of example 09: a grouped GEMM, as a mixture-of-experts layer
// computes it (docs/grouped.md). G groups (experts), each with its own rows of A (the tokens routed
// to it) and its own weights W[g] (N x K):
//
//   C[rows of g] = A[rows of g] @ W[g]^T          for g = 0 .. G-1, in one launch
//
// in the "contiguous" layout (DeepGEMM's m-grouped contiguous GEMM): the rows of every group are
// stacked in one A (rows x K) and one C (rows x N), each group's first row a multiple of BM, so that
// every BM-row tile belongs to one group; `tile_group[t]` (i32) names the group of rows t*BM ..
// t*BM + BM - 1. The tile reads its group once per tile (ts::tensor::at) and loads its B tile from
// that group's weights: W is one rank-3 tensor (G x N x K), its group the leading offset.
//
// A tile whose group is outside 0 .. G-1 (-1: a tile of no group, e.g. the unused tail of a launch
// sized for the largest routing, as a CUDA graph needs) multiplies by zeros (TMA and multistage's
// copies fill reads outside W with zeros) and writes zero rows; it still runs its mainloop. The
// padding rows of a group's last tile are computed from A's padding rows like any other row.
#pragma once

#include <tessel/tessel.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct grouped_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 3> W, ts::tensor<ts::i32, 1> tile_group,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto g = tile_group.at({ts::program_id(0)});  // this row of tiles' group
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), W.load({g, n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

/// The masked layout (DeepGEMM's m-grouped masked GEMM, for decode): A is G x M_max x K and C
/// G x M_max x N, one fixed-capacity block of rows per group, and `group_rows[g]` (i32, on the
/// device: an earlier kernel wrote it, so a CUDA graph can replay the launch) says how many of group
/// g's rows hold tokens. The grid covers every group's capacity, (cdiv(M_max, BM), cdiv(N, BN), G);
/// a tile past its group's rows ("dead") has no k-steps, so it reads no weights, and stores past
/// C's rows, so it writes nothing (out-of-bounds elements are not written). A live tile computes
/// and writes all BM of its rows, the padding rows past group_rows[g] from A's padding rows.
template <int BM_, int BN_, int BK_ = 64>
struct grouped_gemm_masked {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> W, ts::tensor<ts::i32, 1> group_rows,
                  ts::tensor<ts::bf16, 3> C) const {
    auto g = ts::program_id(2);
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    ts::index rows = group_rows.at({g});           // group g's rows that hold tokens
    auto live = ts::min(ts::max(rows - m, 0), 1);  // 1 if this tile holds one of them, else 0
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, live * A.size(2), BK))  // a dead tile: no k-steps, no weights read
      acc += ts::dot(A.load({g, m, k}, BM, BK), W.load({g, n, k}, BN, BK).T());
    C.store({g, m + (1 - live) * C.size(1), n}, ts::cast<ts::bf16>(acc));  // a dead tile: past C's rows
  }
};

/// The experts of a SwiGLU MLP: H = silu(A W1[g]^T) * (A W3[g]^T) for the rows of group g, one dual
/// GEMM (docs/dual-gemm.md: both dots share the A tile; cooperative, or pingpong with BM = 64).
template <int BM_, int BN_, int BK_ = 64>
struct grouped_swiglu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 3> W1, ts::tensor<ts::bf16, 3> W3,
                  ts::tensor<ts::i32, 1> tile_group, ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto g = tile_group.at({ts::program_id(0)});
    auto gate = ts::zeros<ts::f32>(BM, BN), up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({g, n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({g, n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate) * up));
  }
};

/// DeepSeek-V3's fp8 experts (DeepGEMM's m-grouped contiguous GEMM): e4m3 A and W, one f32 scale
/// per row of A and 128-wide block of K (SA: ceil(K/128) x rows, rows contiguous), one per
/// 128 x 128 block of each group's weights (SW: G x ceil(N/128) x ceil(K/128)), each k-step's
/// product scaled before it is added (docs/fp8.md); bf16 out. BN divides 128.
template <int BM_, int BN_>
struct grouped_fp8_blockwise {
  static_assert(128 % BN_ == 0, "grouped_fp8_blockwise: BN must divide 128 (one block of W per tile)");
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e4m3, 3> W, ts::tensor<ts::f32, 2> SA,
                  ts::tensor<ts::f32, 3> SW, ts::tensor<ts::i32, 1> tile_group, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto g = tile_group.at({ts::program_id(0)});
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto kb = k / BK;
      auto d = ts::dot(A.load({m, k}, BM, BK), W.load({g, n, k}, BN, BK).T());
      acc += d * (SA.load({kb, m}, BM) * SW.at({g, n / 128, kb})).col();
    }
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

/// The SwiGLU experts in the masked layout (decode): grouped_swiglu's dual GEMM, grouped_gemm_masked's
/// rows (H is G x M_max x N).
template <int BM_, int BN_, int BK_ = 64>
struct grouped_swiglu_masked {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> W1, ts::tensor<ts::bf16, 3> W3,
                  ts::tensor<ts::i32, 1> group_rows, ts::tensor<ts::bf16, 3> H) const {
    auto g = ts::program_id(2);
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    ts::index rows = group_rows.at({g});
    auto live = ts::min(ts::max(rows - m, 0), 1);
    auto gate = ts::zeros<ts::f32>(BM, BN), up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, live * A.size(2), BK)) {
      auto a = A.load({g, m, k}, BM, BK);
      gate += ts::dot(a, W1.load({g, n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({g, n, k}, BN, BK).T());
    }
    H.store({g, m + (1 - live) * H.size(1), n}, ts::cast<ts::bf16>(ts::silu(gate) * up));
  }
};

/// The fp8 experts in the masked layout (DeepGEMM's m-grouped masked fp8 GEMM, DeepSeek-V3's decode):
/// grouped_fp8_blockwise's scaling, grouped_gemm_masked's rows. SA is G x ceil(K/128) x M_max (each
/// group's scales of A, rows contiguous), SW G x ceil(N/128) x ceil(K/128).
template <int BM_, int BN_>
struct grouped_fp8_blockwise_masked {
  static_assert(128 % BN_ == 0, "grouped_fp8_blockwise_masked: BN must divide 128 (one block of W per tile)");
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<ts::f8e4m3, 3> A, ts::tensor<ts::f8e4m3, 3> W, ts::tensor<ts::f32, 3> SA,
                  ts::tensor<ts::f32, 3> SW, ts::tensor<ts::i32, 1> group_rows, ts::tensor<ts::bf16, 3> C) const {
    auto g = ts::program_id(2);
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    ts::index rows = group_rows.at({g});
    auto live = ts::min(ts::max(rows - m, 0), 1);
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, live * A.size(2), BK)) {
      auto kb = k / BK;
      auto d = ts::dot(A.load({g, m, k}, BM, BK), W.load({g, n, k}, BN, BK).T());
      acc += d * (SA.load({g, kb, m}, BM) * SW.at({g, n / 128, kb})).col();
    }
    C.store({g, m + (1 - live) * C.size(1), n}, ts::cast<ts::bf16>(acc));
  }
};

/// Where the groups' rows lie in the stacked A and C (host side of the contiguous layout).
struct contiguous_groups {
  std::vector<std::int64_t> first_row;   ///< group g's first row (a multiple of BM)
  std::vector<std::int64_t> rows;        ///< group g's rows (0 allowed: the group takes no tile)
  std::vector<std::int32_t> tile_group;  ///< the group of each BM-row tile; -1 past the last group
  std::int64_t total_rows = 0;           ///< rows of A and C: tile_group.size() * BM
};

/// Lays out groups of `rows[g]` rows, each starting at a multiple of `bm`, in `min_tiles` tiles or
/// as many as they need (the tiles past the last group get -1).
inline contiguous_groups layout_groups(const std::vector<std::int64_t>& rows, std::int64_t bm,
                                       std::int64_t min_tiles = 0) {
  if (bm <= 0) throw std::invalid_argument("layout_groups: bm must be positive, got " + std::to_string(bm));
  contiguous_groups l;
  l.rows = rows;
  for (std::size_t g = 0; g < rows.size(); ++g) {
    if (rows[g] < 0)
      throw std::invalid_argument("layout_groups: rows[" + std::to_string(g) + "] must be >= 0, got " +
                                  std::to_string(rows[g]));
    l.first_row.push_back(std::int64_t(l.tile_group.size()) * bm);
    for (std::int64_t t = 0; t < (rows[g] + bm - 1) / bm; ++t) l.tile_group.push_back(std::int32_t(g));
  }
  while (std::int64_t(l.tile_group.size()) < min_tiles) l.tile_group.push_back(-1);
  l.total_rows = std::int64_t(l.tile_group.size()) * bm;
  return l;
}

}  // namespace examples
