// triangular_test.cpp - a GEMM whose mainloop's trip count depends on the tile
// (tests/support/triangular_kernels.hpp: row block m sums k < m + BM), in every schedule and
// `automatic` (which takes warp_specialized, rule R8); cooperative and pingpong carry each tile's
// ring position as a running sum of the earlier tiles' counts (TileScheduler.cpp), which the
// 18 x 8 = 144-tile grids exercise: 144 tiles on 132 CTAs, so some CTAs walk two tiles of
// different counts (pingpong's consumers each add the other's). K covers every row block's
// range (K >= the last m + BM), so each row block has its own trip count and a wrong one changes
// the result; the 9- and 18-row-tile grids make multistage's grouped raster map launch indices to
// other tiles (a trip count computed from %ctaid instead of the tile's program ids fails there).
// Rows of K * 2 bytes, multiples of 16: no fallback to multistage (TESSEL_FALLBACK=error).
// Random bf16 inputs in [-1, 1), C poisoned with NaN inside sentinel guards, every element
// against a CPU reference in double.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "scoped_env.hpp"
#include "tessel_gemm.hpp"
#include "triangular_kernels.hpp"

#include <tessel/tessel.hpp>

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

struct tri_case {
  ts::schedule schedule;
  std::int64_t m, n, k;
};

class TriangularGemm : public ::testing::TestWithParam<tri_case> {};

TEST_P(TriangularGemm, EachRowBlockSumsItsOwnK) {
  TESSEL_REQUIRE_GPU();
  const tri_case& c = GetParam();
  constexpr std::int64_t BM = 128, BN = 128;
  ts::kernel k;
  ASSERT_NO_THROW(k = ts::jit(tessel_test::gemm_triangular<128, 128>{}, {.schedule = c.schedule}));
  tessel_test::scoped_env no_fallback("TESSEL_FALLBACK", "error");  // the schedule named runs
  const std::int64_t ldC = tb::padded_ld(c.n);
  tb::device_buffer A(c.m * c.k * 2), B(c.n * c.k * 2);
  tb::guarded_output C(tb::guarded_matrix(c.m, c.n, ldC, 2));
  tb::fill_uniform_bf16(A.get(), c.m * c.k, 13 + c.m);
  tb::fill_uniform_bf16(B.get(), c.n * c.k, 17 + c.n);
  C.reset();
  const ts::grid grid{unsigned(ts::cdiv(c.m, BM)), unsigned(ts::cdiv(c.n, BN))};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {c.m, c.k}), ts::view<ts::bf16>(B.get(), {c.n, c.k}),
                           ts::view<ts::bf16>(C.data(), {c.m, c.n}, {ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const std::vector<std::uint16_t> a = tb::to_host_bf16(A.get(), std::size_t(c.m * c.k)),
                                   b = tb::to_host_bf16(B.get(), std::size_t(c.n * c.k));
  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << g.str();
  // Every row, or (large grids) the first, middle and last row of each row block: a wrong trip
  // count or ring position spoils whole tiles.
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < c.m; ++i)
    if (c.m * c.n * c.k <= (std::int64_t(1) << 29) || i % BM == 0 || i % BM == BM / 2 - 1 || i % BM == BM - 1 ||
        i == c.m - 1)
      rows.push_back(i);
  int bad = 0;
  for (std::int64_t i : rows) {
    const std::int64_t kmax = std::min(c.k, (i / BM) * BM + BM);
    for (std::int64_t j = 0; j < c.n; ++j) {
      double want = 0;
      for (std::int64_t kk = 0; kk < kmax; ++kk)
        want += double(tb::bf16_to_float(a[std::size_t(i * c.k + kk)])) * tb::bf16_to_float(b[std::size_t(j * c.k + kk)]);
      const double got = tb::bf16_to_float(std::uint16_t(C.bits(0, i, j)));
      const double tol = tessel_gpu_test::sample_tol(want, kmax);
      if (!(std::fabs(got - want) <= tol) && bad++ < 8)
        ADD_FAILURE() << "C[" << i << "][" << j << "] (k < " << kmax << ") = " << got << ", CPU " << want << " (tol "
                      << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0) << bad << " elements differ from the CPU reference";
}

INSTANTIATE_TEST_SUITE_P(
    Triangular, TriangularGemm,
    ::testing::Values(tri_case{ts::schedule::tma, 1100, 300, 1200}, tri_case{ts::schedule::warp_specialized, 1100, 300, 1200},
                      tri_case{ts::schedule::multistage, 1100, 300, 1200}, tri_case{ts::schedule::automatic, 1100, 300, 1200},
                      tri_case{ts::schedule::multistage, 2200, 136, 2304}, tri_case{ts::schedule::warp_specialized, 300, 136, 384},
                      tri_case{ts::schedule::cooperative, 1100, 300, 1200}, tri_case{ts::schedule::pingpong, 1100, 300, 1200},
                      tri_case{ts::schedule::cooperative, 2304, 1024, 2304}, tri_case{ts::schedule::pingpong, 2304, 1024, 2304}),
    [](const ::testing::TestParamInfo<tri_case>& i) {
      return std::string(tb::schedule_name(i.param.schedule)) + "_" + std::to_string(i.param.m) + "x" +
             std::to_string(i.param.n) + "x" + std::to_string(i.param.k);
    });

}  // namespace
