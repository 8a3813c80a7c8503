// grouped_test.cpp - the grouped GEMM of examples/09_grouped_gemm (mixture of experts, contiguous
// layout: each BM-row tile reads its group from an i32 table with ts::tensor::at and loads its B
// tile from that group's weights, W[g] of a rank-3 W), in every schedule and decomposition.
//
// Each case: random bf16 inputs in [-1, 1) (never zero; A's padding rows too), C poisoned with NaN
// inside a sentinel-filled buffer, one launch; nothing outside C may change, and every element is
// compared with a CPU reference in double: row r of C is A[r] @ W[g]^T for the group g of r's tile,
// and zero for a tile whose group is outside 0..G-1 (TMA and multistage's copies read zeros
// outside W). Groups of 0, 1 and BM + 1 rows, tail tiles of no group (-1) and a table entry past
// the last group, N not a multiple of BN. Adjacent tiles of different groups under a persistent
// schedule catch a group read once per CTA instead of once per tile.
//
// The masked layout (GroupedMasked: A G x M_max x K, group g's first rows[g] rows hold tokens, the
// counts read on the device): a tile past its group's rows has no k-steps and stores past C's rows,
// so every element of it must still hold the NaN poison; live tiles match the reference, their
// padding rows too. Groups of 0, 1, BM, BM + 1 and M_max rows, counts above M_max and below 0,
// M_max not a multiple of BM, and more tiles than SMs, so that a persistent CTA walks dead and live
// tiles in turn. GroupedMaskedSwiglu: the same with the SwiGLU dual GEMM; GroupedMaskedFp8: with
// DeepSeek-V3's block-scaled fp8 (the scaled mainloop, whose k-steps run in pairs).
//
// The contiguous layout with a SwiGLU dual GEMM per group (GroupedSwiglu: H = silu(A W1[g]^T) *
// (A W3[g]^T)) and with DeepSeek-V3's block-scaled fp8 (GroupedFp8Blockwise: per-row-and-K-block
// scales of A, per-128x128-block scales of each group's weights, read at the tile's group).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "grouped_gemm.hpp"
#include "tessel_gemm.hpp"

#include <tessel/tessel.hpp>

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

struct grouped_case {
  ts::schedule schedule;
  int bk;                           ///< 64 (wgmma schedules) or 32 (multistage's 128x128x32 tile)
  std::vector<std::int64_t> rows;   ///< rows of each group
  std::int64_t n, k;
  std::int64_t tail_tiles = 0;      ///< tiles of no group (-1) after the last group
  bool past_last = false;           ///< the last tail tile names group G instead of -1
  ts::decomposition decomposition = ts::decomposition::automatic;
  bool cluster_1x2 = false;
};

std::string case_name(const ::testing::TestParamInfo<grouped_case>& info) {
  const grouped_case& c = info.param;
  std::string s = std::string(tb::schedule_name(c.schedule)) + "_bk" + std::to_string(c.bk) + "_g";
  for (std::int64_t r : c.rows) s += std::to_string(r) + "_";
  s += "n" + std::to_string(c.n) + "_k" + std::to_string(c.k);
  if (c.tail_tiles) s += "_tail" + std::to_string(c.tail_tiles) + (c.past_last ? "past" : "");
  if (c.decomposition == ts::decomposition::stream_k) s += "_sk";
  if (c.decomposition == ts::decomposition::data_parallel) s += "_dp";
  if (c.cluster_1x2) s += "_c1x2";
  return s;
}

ts::kernel compile(const grouped_case& c) {
  ts::options o;
  o.schedule = c.schedule;
  o.decomposition = c.decomposition;
  if (c.cluster_1x2) o.cluster = {1, 2};
  if (c.bk == 32) return ts::jit(examples::grouped_gemm<128, 128, 32>{}, o);
  return ts::jit(examples::grouped_gemm<128, 128, 64>{}, o);
}

std::vector<float> to_float(const std::vector<std::uint16_t>& v) {
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = tb::bf16_to_float(v[i]);
  return f;
}

tb::device_buffer upload_i32(const std::vector<std::int32_t>& v) {
  tb::device_buffer d(v.size() * 4);
  EXPECT_EQ(cudaMemcpy(d.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

double silu(double x) { return x / (1 + std::exp(-x)); }

/// {silu(a . w1) * (a . w3), its tolerance} in double for one row of A and the weight rows w1, w3
/// (K elements each): one bf16 rounding and the f32 accumulation carried through the product (as
/// dual_test.cpp's). K = 0 gives a tile of no group's {0, 1e-6}.
std::pair<double, double> swiglu_expected(const float* a, const float* w1, const float* w3, std::int64_t K) {
  double x = 0, y = 0, ex = 0, ey = 0;
  for (std::int64_t kk = 0; kk < K; ++kk) {
    const double p = double(a[kk]) * w1[kk], q = double(a[kk]) * w3[kk];
    x += p, y += q, ex += std::fabs(p), ey += std::fabs(q);
  }
  const double want = silu(x) * y;
  return {want, std::ldexp(std::fabs(want), -8) + 1e-5 * (std::fabs(y) * ex + std::fabs(x) * ey) +
                    2e-6 * std::fabs(want) + 1e-7 * std::fabs(y) + 1e-6};
}

/// {sum over 128-wide K blocks of (a . w)_blk * scale(blk), its tolerance} in double for one e4m3
/// row of A and one of W (K elements each): 2^-10 of the scaled sum of |products| (wgmma's fp8
/// accumulation) plus bf16's rounding (fp8_test.cpp's). K = 0 gives {0, 0}.
template <class Scale>
std::pair<double, double> fp8_blockwise_expected(const std::uint8_t* a, const std::uint8_t* w, std::int64_t K,
                                                 Scale scale) {
  const auto e4 = tb::fp8_kind::e4m3;
  double want = 0, scaled_abs = 0;
  for (std::int64_t blk = 0; blk * 128 < K; ++blk) {
    double sum = 0, abs_sum = 0;
    for (std::int64_t kk = blk * 128; kk < std::min(K, blk * 128 + 128); ++kk) {
      const double p = tb::fp8_to_double(a[kk], e4) * tb::fp8_to_double(w[kk], e4);
      sum += p, abs_sum += std::fabs(p);
    }
    const double s = scale(blk);
    want += sum * s, scaled_abs += abs_sum * s;
  }
  return {want, scaled_abs * std::ldexp(1.0, -10) + std::fabs(want) * (std::ldexp(1.0, -8) + 1e-6)};
}

/// Compares every element (i, j) of `out` (after out.check()) with ref(i, j, g), {want, tol} for
/// g the group of row i's tile, or -1 where that tile has no group in 0..G-1; reports the first 8
/// misses and their count.
template <class Ref>
void expect_rows_match(const tb::guarded_output& out, const examples::contiguous_groups& l, std::int64_t bm,
                       std::int64_t G, std::int64_t N, const char* name, Ref ref) {
  int bad = 0;
  for (std::int64_t i = 0; i < l.total_rows; ++i) {
    std::int32_t grp = l.tile_group[std::size_t(i / bm)];
    if (grp >= G) grp = -1;
    for (std::int64_t j = 0; j < N; ++j) {
      const auto [want, tol] = ref(i, j, grp);
      const double got = tb::bf16_to_float(std::uint16_t(out.bits(0, i, j)));
      if (!(std::fabs(got - want) <= tol) && bad++ < 8)
        ADD_FAILURE() << name << "[" << i << "][" << j << "] (tile " << i / bm << ", group " << grp << ") = " << got
                      << ", want " << want << " (tol " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0) << bad << " elements differ from the CPU reference";
}

class GroupedGemm : public ::testing::TestWithParam<grouped_case> {};

TEST_P(GroupedGemm, EveryRowMatchesItsGroup) {
  TESSEL_REQUIRE_GPU();
  const grouped_case& c = GetParam();
  ts::kernel k;
  ASSERT_NO_THROW(k = compile(c));

  constexpr std::int64_t BM = 128;
  std::int64_t tiles = 0;
  for (std::int64_t r : c.rows) tiles += ts::cdiv(r, BM);
  examples::contiguous_groups l = examples::layout_groups(c.rows, BM, tiles + c.tail_tiles);
  const std::int64_t G = std::int64_t(c.rows.size()), M = l.total_rows;
  if (c.past_last) l.tile_group.back() = std::int32_t(G);
  const std::int64_t ldC = tb::padded_ld(c.n);
  tb::device_buffer A(M * c.k * 2), W(G * c.n * c.k * 2), T(l.tile_group.size() * 4);
  tb::guarded_output C(tb::guarded_matrix(M, c.n, ldC, 2));
  tb::fill_uniform_bf16(A.get(), M * c.k, 31 + M);
  tb::fill_uniform_bf16(W.get(), G * c.n * c.k, 47 + c.n);
  ASSERT_EQ(cudaMemcpy(T.get(), l.tile_group.data(), l.tile_group.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  C.reset();

  const ts::grid grid{unsigned(l.tile_group.size()), unsigned(ts::cdiv(c.n, std::int64_t(128)))};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {M, c.k}),
                           ts::view<ts::bf16>(W.get(), {G, c.n, c.k}),
                           ts::view<ts::i32>(T.get(), {std::int64_t(l.tile_group.size())}),
                           ts::view<ts::bf16>(C.data(), {M, c.n}, {ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());

  const std::vector<float> a = to_float(tb::to_host_bf16(A.get(), std::size_t(M * c.k))),
                           w = to_float(tb::to_host_bf16(W.get(), std::size_t(G * c.n * c.k)));
  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << "C in rows of " << ldC << ": " << g.str();
  expect_rows_match(C, l, BM, G, c.n, "C", [&](std::int64_t i, std::int64_t j, std::int32_t grp) {
    double want = 0;
    if (grp >= 0)
      for (std::int64_t kk = 0; kk < c.k; ++kk) want += double(a[i * c.k + kk]) * double(w[(grp * c.n + j) * c.k + kk]);
    return std::pair{want, tessel_gpu_test::sample_tol(want, c.k)};
  });
}

std::vector<grouped_case> cases() {
  std::vector<grouped_case> out;
  const ts::schedule wgmma[] = {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                                ts::schedule::pingpong, ts::schedule::automatic};
  // Empty and one-row groups, a group of BM + 1 rows (two tiles, the second of one row), N not a
  // multiple of BN, tail tiles.
  for (ts::schedule s : wgmma) {
    out.push_back({s, 64, {300, 0, 129, 1, 517}, 136, 520, 2});
    out.push_back({s, 64, {128, 128, 128}, 256, 64, 1, true});
  }
  out.push_back({ts::schedule::multistage, 32, {300, 0, 129, 1, 517}, 136, 520, 2});
  out.push_back({ts::schedule::multistage, 32, {128, 128, 128}, 256, 64, 1, true});
  // Stream-K splits tiles among CTAs (each part reads the tile's group), whole tiles, a 1x2 cluster
  // (A multicast along N; each CTA its own group's B).
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::pingpong}) {
    out.push_back({s, 64, {700, 50, 900}, 136, 2056, 0, false, ts::decomposition::stream_k});
    out.push_back({s, 64, {700, 50, 900}, 136, 2056, 0, false, ts::decomposition::data_parallel});
    out.push_back({s, 64, {300, 0, 129, 1, 517}, 256, 520, 2, false, ts::decomposition::automatic, true});
    // 18 x 9 = 162 tiles on 132 SMs: some CTAs walk two tiles of different groups (a group read
    // once per CTA instead of once per tile fails here).
    out.push_back({s, 64, {700, 50, 900, 130, 40}, 1152, 64, 0, false, ts::decomposition::data_parallel});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grouped, GroupedGemm, ::testing::ValuesIn(cases()), case_name);

// ---- the masked layout (decode) ---------------------------------------------------------------------

struct masked_case {
  ts::schedule schedule;
  int bm;                          ///< 64 or (cooperative) 128; BN 128
  std::vector<std::int64_t> rows;  ///< rows of each group that hold tokens (<= m_max)
  std::int64_t m_max, n, k;
};

std::string masked_name(const ::testing::TestParamInfo<masked_case>& info) {
  const masked_case& c = info.param;
  std::string s = std::string(tb::schedule_name(c.schedule)) + "_bm" + std::to_string(c.bm) + "_g";
  for (std::int64_t r : c.rows) s += (r < 0 ? "neg" + std::to_string(-r) : std::to_string(r)) + "_";
  return s + "mmax" + std::to_string(c.m_max) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k);
}

/// Checks a masked launch's C (after C.check() gave `gr`): every element of a dead tile (a tile of
/// group g starting at or past rows[g]) still holds the NaN poison, every element of a live tile
/// matches ref(g, i, j) = {want, tol}, and nothing outside C changed; reports the first 8 misses.
template <class Ref>
void expect_masked(const tb::guarded_output& C, const tb::guard_report& gr, const masked_case& c, Ref ref) {
  std::uint64_t dead = 0;
  int bad = 0;
  for (std::int64_t g = 0; g < std::int64_t(c.rows.size()); ++g)
    for (std::int64_t i = 0; i < c.m_max; ++i) {
      const bool live = c.rows[std::size_t(g)] > i / c.bm * c.bm;  // the tile of row i holds a token row
      for (std::int64_t j = 0; j < c.n; ++j) {
        const std::uint32_t bits = C.bits(g, i, j);
        if (!live) {
          ++dead;
          if (bits != 0xFFFF && bad++ < 8)
            ADD_FAILURE() << "C[" << g << "][" << i << "][" << j << "] (a dead tile) was written: bits " << std::hex
                          << bits;
          continue;
        }
        const auto [want, tol] = ref(g, i, j);
        const double got = tb::bf16_to_float(std::uint16_t(bits));
        if (!(std::fabs(got - want) <= tol) && bad++ < 8)
          ADD_FAILURE() << "C[" << g << "][" << i << "][" << j << "] = " << got << ", want " << want << " (tol " << tol
                        << ")";
      }
    }
  EXPECT_EQ(bad, 0) << bad << " elements wrong";
  EXPECT_EQ(gr.clobbered, 0u) << gr.str();
  EXPECT_EQ(gr.unwritten, dead) << "only the dead tiles' elements may keep the poison: " << gr.str();
}

class GroupedMasked : public ::testing::TestWithParam<masked_case> {};

TEST_P(GroupedMasked, LiveTilesMatchDeadTilesWriteNothing) {
  TESSEL_REQUIRE_GPU();
  const masked_case& c = GetParam();
  ts::kernel k;
  const ts::options o{.schedule = c.schedule};
  ASSERT_NO_THROW(k = c.bm == 128 ? ts::jit(examples::grouped_gemm_masked<128, 128>{}, o)
                                  : ts::jit(examples::grouped_gemm_masked<64, 128>{}, o));
  const std::int64_t G = std::int64_t(c.rows.size()), Mx = c.m_max, N = c.n, K = c.k, BM = c.bm;
  const std::vector<std::int32_t> counts(c.rows.begin(), c.rows.end());
  tb::device_buffer A(G * Mx * K * 2), W(G * N * K * 2);
  const tb::device_buffer R = upload_i32(counts);
  tb::fill_uniform_bf16(A.get(), G * Mx * K, 13 + Mx);
  tb::fill_uniform_bf16(W.get(), G * N * K, 17 + N);
  const std::int64_t ldC = tb::padded_ld(N);
  tb::guarded_output C(tb::guarded_matrix(Mx, N, ldC, 2, true, G));
  C.reset();
  const ts::grid grid{unsigned(ts::cdiv(Mx, BM)), unsigned(ts::cdiv(N, std::int64_t(128))), unsigned(G)};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {G, Mx, K}),
                           ts::view<ts::bf16>(W.get(), {G, N, K}),
                           ts::view<ts::i32>(R.get(), {G}),
                           ts::view<ts::bf16>(C.data(), {G, Mx, N}, {Mx * ldC, ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const std::vector<float> a = to_float(tb::to_host_bf16(A.get(), std::size_t(G * Mx * K))),
                           w = to_float(tb::to_host_bf16(W.get(), std::size_t(G * N * K)));
  const tb::guard_report gr = C.check();
  expect_masked(C, gr, c, [&](std::int64_t g, std::int64_t i, std::int64_t j) {
    double want = 0;
    for (std::int64_t kk = 0; kk < K; ++kk) want += double(a[(g * Mx + i) * K + kk]) * double(w[(g * N + j) * K + kk]);
    return std::pair{want, tessel_gpu_test::sample_tol(want, K)};
  });
}

std::vector<masked_case> masked_cases() {
  std::vector<masked_case> out;
  // Groups of 0, 1, BM, BM + 1 and M_max rows; M_max = 200 is not a multiple of BM.
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::multistage, ts::schedule::warp_specialized,
                         ts::schedule::pingpong, ts::schedule::automatic})
    out.push_back({s, 64, {37, 0, 1, 64, 65, 200}, 200, 136, 520});
  out.push_back({ts::schedule::cooperative, 128, {37, 0, 1, 128, 129, 200}, 200, 136, 520});
  // Counts outside 0 .. M_max: above M_max every tile of the group is live, below 0 none is (the
  // kernel's min/max; the host need not clamp).
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::pingpong})
    out.push_back({s, 64, {300, -1, 37, -70}, 200, 136, 520});
  // More tiles than SMs, dead and live mixed, so that a persistent CTA walks both in turn:
  // 16 groups x 4 row tiles x 4 column tiles = 256 tiles (BM 64); x 2 x 5 = 160 (BM 128).
  const std::vector<std::int64_t> many = {3, 0, 256, 70, 129, 1, 0, 190, 64, 0, 255, 17, 0, 0, 100, 200};
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::pingpong, ts::schedule::automatic})
    out.push_back({s, 64, many, 256, 512, 192});
  out.push_back({ts::schedule::cooperative, 128, many, 256, 640, 192});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grouped, GroupedMasked, ::testing::ValuesIn(masked_cases()), masked_name);

// The SwiGLU experts in the masked layout: H[g][i] = silu(A[g][i] W1[g]^T) * (A[g][i] W3[g]^T) on
// live tiles; tolerance as GroupedSwiglu's.
class GroupedMaskedSwiglu : public ::testing::TestWithParam<masked_case> {};

TEST_P(GroupedMaskedSwiglu, LiveTilesMatchDeadTilesWriteNothing) {
  TESSEL_REQUIRE_GPU();
  const masked_case& c = GetParam();
  ASSERT_EQ(c.bm, 64) << "the cases instantiate grouped_swiglu_masked<64, 128>";
  ts::kernel k;
  ASSERT_NO_THROW(k = ts::jit(examples::grouped_swiglu_masked<64, 128>{}, {.schedule = c.schedule}));
  const std::int64_t G = std::int64_t(c.rows.size()), Mx = c.m_max, N = c.n, K = c.k;
  tb::device_buffer A(G * Mx * K * 2), W1(G * N * K * 2), W3(G * N * K * 2);
  const tb::device_buffer R = upload_i32(std::vector<std::int32_t>(c.rows.begin(), c.rows.end()));
  tb::fill_uniform_bf16(A.get(), G * Mx * K, 19 + Mx);
  tb::fill_uniform_bf16(W1.get(), G * N * K, 23 + N);
  tb::fill_uniform_bf16(W3.get(), G * N * K, 29 + K);
  const std::int64_t ldH = tb::padded_ld(N);
  tb::guarded_output H(tb::guarded_matrix(Mx, N, ldH, 2, true, G));
  H.reset();
  const ts::grid grid{unsigned(ts::cdiv(Mx, std::int64_t(64))), unsigned(ts::cdiv(N, std::int64_t(128))), unsigned(G)};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {G, Mx, K}),
                           ts::view<ts::bf16>(W1.get(), {G, N, K}), ts::view<ts::bf16>(W3.get(), {G, N, K}),
                           ts::view<ts::i32>(R.get(), {G}),
                           ts::view<ts::bf16>(H.data(), {G, Mx, N}, {Mx * ldH, ldH, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const std::vector<float> a = to_float(tb::to_host_bf16(A.get(), std::size_t(G * Mx * K))),
                           w1 = to_float(tb::to_host_bf16(W1.get(), std::size_t(G * N * K))),
                           w3 = to_float(tb::to_host_bf16(W3.get(), std::size_t(G * N * K)));
  const tb::guard_report gr = H.check();
  expect_masked(H, gr, c, [&](std::int64_t g, std::int64_t i, std::int64_t j) {
    return swiglu_expected(&a[(g * Mx + i) * K], &w1[(g * N + j) * K], &w3[(g * N + j) * K], K);
  });
}

// Groups of 0, 1, BM, BM + 1 and M_max rows; pingpong with 4 x 3 x 12 = 144 tiles on 132 SMs.
INSTANTIATE_TEST_SUITE_P(
    Grouped, GroupedMaskedSwiglu,
    ::testing::Values(masked_case{ts::schedule::warp_specialized, 64, {37, 0, 1, 64, 65, 200}, 200, 136, 520},
                      masked_case{ts::schedule::cooperative, 64, {37, 0, 1, 64, 65, 200}, 200, 136, 520},
                      masked_case{ts::schedule::pingpong, 64, {3, 0, 256, 70, 129, 1, 0, 190, 64, 0, 255, 17}, 256,
                                  264, 192},
                      masked_case{ts::schedule::automatic, 64, {37, 0, 1, 64, 65, 200}, 200, 136, 520}),
    masked_name);

// The fp8 experts in the masked layout (DeepSeek-V3's decode): SA G x ceil(K/128) x M_max, SW
// G x ceil(N/128) x ceil(K/128); the scaled mainloop with no k-steps for a dead tile. Tolerance as
// GroupedFp8Blockwise's.
class GroupedMaskedFp8 : public ::testing::TestWithParam<masked_case> {};

TEST_P(GroupedMaskedFp8, LiveTilesMatchDeadTilesWriteNothing) {
  TESSEL_REQUIRE_GPU();
  const masked_case& c = GetParam();
  ts::kernel k;
  const ts::options o{.schedule = c.schedule};
  ASSERT_NO_THROW(k = c.bm == 128 ? ts::jit(examples::grouped_fp8_blockwise_masked<128, 128>{}, o)
                                  : ts::jit(examples::grouped_fp8_blockwise_masked<64, 128>{}, o));
  const std::int64_t G = std::int64_t(c.rows.size()), Mx = c.m_max, N = c.n, K = c.k, BM = c.bm;
  const std::int64_t kb = ts::cdiv(K, std::int64_t(128)), nb = ts::cdiv(N, std::int64_t(128));
  const auto e4 = tb::fp8_kind::e4m3;
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(G * Mx * K), 5 + Mx, e4),
                                  w = tb::random_fp8(std::size_t(G * N * K), 6 + N, e4);
  std::mt19937 rng{static_cast<unsigned>(Mx + N + K)};
  std::uniform_real_distribution<float> u(-10, -4);
  std::vector<float> sa(std::size_t(G * kb * Mx)), sw(std::size_t(G * nb * kb));  // SA[g][kb][r], SW[g][nb][kb]
  for (float& s : sa) s = std::exp2(u(rng));
  for (float& s : sw) s = std::exp2(u(rng));
  tb::device_buffer dA(a.size()), dW(w.size()), dSA(sa.size() * 4), dSW(sw.size() * 4);
  ASSERT_EQ(cudaMemcpy(dA.get(), a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dW.get(), w.data(), w.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dSA.get(), sa.data(), sa.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dSW.get(), sw.data(), sw.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const tb::device_buffer R = upload_i32(std::vector<std::int32_t>(c.rows.begin(), c.rows.end()));
  const std::int64_t ldC = tb::padded_ld(N);
  tb::guarded_output C(tb::guarded_matrix(Mx, N, ldC, 2, true, G));
  C.reset();
  const ts::grid grid{unsigned(ts::cdiv(Mx, BM)), unsigned(ts::cdiv(N, std::int64_t(128))), unsigned(G)};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::f8e4m3>(dA.get(), {G, Mx, K}),
                           ts::view<ts::f8e4m3>(dW.get(), {G, N, K}), ts::view<ts::f32>(dSA.get(), {G, kb, Mx}),
                           ts::view<ts::f32>(dSW.get(), {G, nb, kb}), ts::view<ts::i32>(R.get(), {G}),
                           ts::view<ts::bf16>(C.data(), {G, Mx, N}, {Mx * ldC, ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report gr = C.check();
  expect_masked(C, gr, c, [&](std::int64_t g, std::int64_t i, std::int64_t j) {
    return fp8_blockwise_expected(&a[std::size_t((g * Mx + i) * K)], &w[std::size_t((g * N + j) * K)], K,
                                  [&](std::int64_t blk) {
                                    return double(sa[std::size_t((g * kb + blk) * Mx + i)]) *
                                           double(sw[std::size_t((g * nb + j / 128) * kb + blk)]);
                                  });
  });
}

// Groups of 0, 1, BM + 1 and M_max rows; K = 336, 112, 592 (3, 1 and 5 k-steps: the scaled
// mainloop's pairs end on one k-step) and 256 (2: they end on two). Cooperative with 2 x 10 x 8 =
// 160 tiles on 132 SMs: a persistent CTA walks dead and live tiles in turn.
INSTANTIATE_TEST_SUITE_P(
    Grouped, GroupedMaskedFp8,
    ::testing::Values(masked_case{ts::schedule::warp_specialized, 128, {37, 0, 1, 129, 200}, 200, 264, 336},
                      masked_case{ts::schedule::cooperative, 128, {37, 0, 1, 129, 256, 5, 0, 90}, 256, 1160, 256},
                      masked_case{ts::schedule::pingpong, 64, {37, 0, 1, 65, 200}, 200, 264, 112},
                      masked_case{ts::schedule::automatic, 64, {3, 0, 256, 70, 129, 1, 0, 190}, 256, 392, 592}),
    masked_name);

// ---- the SwiGLU experts and the fp8 block-scaled experts ----------------------------------------

struct variant_case {
  ts::schedule schedule;
  int bm, bn;
  std::vector<std::int64_t> rows;
  std::int64_t n, k, tail_tiles;
  ts::decomposition decomposition = ts::decomposition::automatic;
};

std::string variant_name(const ::testing::TestParamInfo<variant_case>& info) {
  const variant_case& c = info.param;
  std::string s = std::string(tb::schedule_name(c.schedule)) + "_" + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "_g";
  for (std::int64_t r : c.rows) s += std::to_string(r) + "_";
  s += "n" + std::to_string(c.n) + "_k" + std::to_string(c.k) + "_tail" + std::to_string(c.tail_tiles);
  if (c.decomposition == ts::decomposition::stream_k) s += "_sk";
  if (c.decomposition == ts::decomposition::data_parallel) s += "_dp";
  return s;
}

examples::contiguous_groups layout_of(const variant_case& c) {
  std::int64_t tiles = 0;
  for (std::int64_t r : c.rows) tiles += ts::cdiv(r, std::int64_t(c.bm));
  return examples::layout_groups(c.rows, c.bm, tiles + c.tail_tiles);
}

class GroupedSwiglu : public ::testing::TestWithParam<variant_case> {};

// H[r] = silu(A[r] W1[g]^T) * (A[r] W3[g]^T) for the group g of r's tile (0 for a tile of no
// group: silu(0) * 0). Tolerance as dual_test.cpp's: one bf16 rounding, and the f32 accumulation
// carried through the product.
TEST_P(GroupedSwiglu, EveryRowMatchesItsGroup) {
  TESSEL_REQUIRE_GPU();
  const variant_case& c = GetParam();
  ts::options o{.schedule = c.schedule, .decomposition = c.decomposition};
  ts::kernel k;
  ASSERT_NO_THROW(k = c.bm == 64 ? ts::jit(examples::grouped_swiglu<64, 128>{}, o)
                                 : ts::jit(examples::grouped_swiglu<128, 128>{}, o));
  const examples::contiguous_groups l = layout_of(c);
  const std::int64_t G = std::int64_t(c.rows.size()), M = l.total_rows, N = c.n, K = c.k;
  tb::device_buffer A(M * K * 2), W1(G * N * K * 2), W3(G * N * K * 2);
  const tb::device_buffer T = upload_i32(l.tile_group);
  tb::fill_uniform_bf16(A.get(), M * K, 5 + M);
  tb::fill_uniform_bf16(W1.get(), G * N * K, 7 + N);
  tb::fill_uniform_bf16(W3.get(), G * N * K, 9 + K);
  const std::int64_t ldH = tb::padded_ld(N);
  tb::guarded_output H(tb::guarded_matrix(M, N, ldH, 2));
  H.reset();
  const ts::grid grid{unsigned(l.tile_group.size()), unsigned(ts::cdiv(N, std::int64_t(c.bn)))};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {M, K}), ts::view<ts::bf16>(W1.get(), {G, N, K}),
                           ts::view<ts::bf16>(W3.get(), {G, N, K}),
                           ts::view<ts::i32>(T.get(), {std::int64_t(l.tile_group.size())}),
                           ts::view<ts::bf16>(H.data(), {M, N}, {ldH, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const std::vector<float> a = to_float(tb::to_host_bf16(A.get(), std::size_t(M * K))),
                           w1 = to_float(tb::to_host_bf16(W1.get(), std::size_t(G * N * K))),
                           w3 = to_float(tb::to_host_bf16(W3.get(), std::size_t(G * N * K)));
  const tb::guard_report gr = H.check();
  EXPECT_TRUE(gr.ok()) << gr.str();
  expect_rows_match(H, l, c.bm, G, N, "H", [&](std::int64_t i, std::int64_t j, std::int32_t grp) {
    const std::int64_t g = std::max(grp, 0);  // grp < 0: no group, K = 0 below
    return swiglu_expected(&a[i * K], &w1[(g * N + j) * K], &w3[(g * N + j) * K], grp >= 0 ? K : 0);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Grouped, GroupedSwiglu,
    ::testing::Values(variant_case{ts::schedule::cooperative, 128, 128, {300, 0, 129, 1, 517}, 136, 520, 2},
                      variant_case{ts::schedule::cooperative, 128, 128, {700, 50, 900}, 136, 1032, 0,
                                   ts::decomposition::stream_k},
                      variant_case{ts::schedule::pingpong, 64, 128, {300, 0, 129, 1, 517}, 136, 520, 2},
                      variant_case{ts::schedule::warp_specialized, 128, 128, {65, 64, 63}, 256, 200, 1},
                      variant_case{ts::schedule::automatic, 64, 128, {300, 0, 129, 1, 517}, 136, 520, 2}),
    variant_name);

class GroupedFp8Blockwise : public ::testing::TestWithParam<variant_case> {};

// C[r] = sum over K blocks kb of (A[r]_kb W[g]_kb^T) * SA[kb][r] * SW[g][n/128][kb], in double,
// bf16 out; a tile of no group reads zero weights and scales. fp8_test.cpp's tolerance: 2^-10 of
// the scaled sum of |products| (wgmma's fp8 accumulation) plus bf16's rounding.
TEST_P(GroupedFp8Blockwise, EveryRowMatchesItsGroup) {
  TESSEL_REQUIRE_GPU();
  const variant_case& c = GetParam();
  ts::options o{.schedule = c.schedule, .decomposition = c.decomposition};
  ts::kernel k;
  ASSERT_NO_THROW(k = c.bm == 64 ? ts::jit(examples::grouped_fp8_blockwise<64, 128>{}, o)
                                 : ts::jit(examples::grouped_fp8_blockwise<128, 128>{}, o));
  const examples::contiguous_groups l = layout_of(c);
  const std::int64_t G = std::int64_t(c.rows.size()), M = l.total_rows, N = c.n, K = c.k;
  const std::int64_t kb = ts::cdiv(K, std::int64_t(128)), nb = ts::cdiv(N, std::int64_t(128));
  const auto e4 = tb::fp8_kind::e4m3;
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(M * K), 3 + M, e4),
                                  w = tb::random_fp8(std::size_t(G * N * K), 4 + N, e4);
  std::mt19937 rng{static_cast<unsigned>(M + N + K)};
  std::uniform_real_distribution<float> u(-10, -4);  // scales 2^-10 .. 2^-4, as an fp8 recipe's
  std::vector<float> sa(std::size_t(kb * M)), sw(std::size_t(G * nb * kb));  // SA[kb][r], SW[g][nb][kb]
  for (float& s : sa) s = std::exp2(u(rng));
  for (float& s : sw) s = std::exp2(u(rng));
  tb::device_buffer dA(a.size()), dW(w.size()), dSA(sa.size() * 4), dSW(sw.size() * 4);
  ASSERT_EQ(cudaMemcpy(dA.get(), a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dW.get(), w.data(), w.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dSA.get(), sa.data(), sa.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dSW.get(), sw.data(), sw.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const tb::device_buffer T = upload_i32(l.tile_group);
  const std::int64_t ldC = tb::padded_ld(N);
  tb::guarded_output C(tb::guarded_matrix(M, N, ldC, 2));
  C.reset();
  const ts::grid grid{unsigned(l.tile_group.size()), unsigned(ts::cdiv(N, std::int64_t(c.bn)))};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::f8e4m3>(dA.get(), {M, K}),
                           ts::view<ts::f8e4m3>(dW.get(), {G, N, K}), ts::view<ts::f32>(dSA.get(), {kb, M}),
                           ts::view<ts::f32>(dSW.get(), {G, nb, kb}),
                           ts::view<ts::i32>(T.get(), {std::int64_t(l.tile_group.size())}),
                           ts::view<ts::bf16>(C.data(), {M, N}, {ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report gr = C.check();
  EXPECT_TRUE(gr.ok()) << gr.str();
  expect_rows_match(C, l, c.bm, G, N, "C", [&](std::int64_t i, std::int64_t j, std::int32_t grp) {
    const std::int64_t g = std::max(grp, 0);  // grp < 0: no group, K = 0 below
    return fp8_blockwise_expected(&a[std::size_t(i * K)], &w[std::size_t((g * N + j) * K)], grp >= 0 ? K : 0,
                                  [&](std::int64_t blk) {
                                    return double(sa[std::size_t(blk * M + i)]) *
                                           double(sw[std::size_t((g * nb + j / 128) * kb + blk)]);
                                  });
  });
}

INSTANTIATE_TEST_SUITE_P(
    Grouped, GroupedFp8Blockwise,
    ::testing::Values(variant_case{ts::schedule::cooperative, 128, 128, {300, 0, 129, 1, 517}, 264, 720, 2},
                      variant_case{ts::schedule::cooperative, 128, 128, {700, 50, 900}, 136, 2048, 0,
                                   ts::decomposition::stream_k},
                      variant_case{ts::schedule::pingpong, 64, 128, {300, 0, 129, 1, 517}, 264, 720, 2},
                      variant_case{ts::schedule::warp_specialized, 128, 128, {65, 64, 63}, 256, 640, 1},
                      variant_case{ts::schedule::automatic, 128, 128, {300, 0, 129, 1, 517}, 264, 720, 2}),
    variant_name);

}  // namespace
