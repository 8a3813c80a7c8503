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
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
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
  int bad = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    const std::int32_t grp = l.tile_group[std::size_t(i / BM)];
    for (std::int64_t j = 0; j < c.n; ++j) {
      double want = 0;
      if (grp >= 0 && grp < G)
        for (std::int64_t kk = 0; kk < c.k; ++kk)
          want += double(a[i * c.k + kk]) * double(w[(grp * c.n + j) * c.k + kk]);
      const float got = tb::bf16_to_float(std::uint16_t(C.bits(0, i, j)));
      const double tol = tessel_gpu_test::sample_tol(want, c.k);
      if (!(std::abs(got - want) <= tol) && bad++ < 8)
        ADD_FAILURE() << "C[" << i << "][" << j << "] (tile " << i / BM << ", group " << grp << ") = " << got
                      << ", CPU " << want << " (tol " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0) << bad << " elements differ from the CPU reference";
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

}  // namespace
