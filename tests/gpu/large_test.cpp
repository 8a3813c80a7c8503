// large_test.cpp - tensors of more than 2^31 elements (issue 11): every dimension fits the kernels'
// 32-bit indices (each is at most 2^31 - 1, checked at launch), but element and byte offsets past
// 2^31 must be computed in 64 bits.
//   * A over 2^31 elements: M = 1048600, K = 2048 (A: 2^31 + 49152 elements, 4.3 GB), N = 200;
//   * C over 2^31 elements: M = 1048600, N = 2056 (C: 2^31 + 8.6e6 elements), K = 64;
// in every schedule, checked on sampled elements near the start and the end (rows past 2^20, byte
// offsets past 2^32) against a CPU reference in double, and the unsampled rest for NaN poison.
// Both problems run one launch per schedule on shared buffers (about 9 GB of device memory).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

struct large_case {
  const char* name;
  std::int64_t M, N, K;
};

std::string schedule_label(ts::schedule s) { return tb::schedule_name(s); }

class LargeTensors : public ::testing::TestWithParam<std::tuple<large_case, ts::schedule>> {};

TEST_P(LargeTensors, OffsetsPast2To31) {
  TESSEL_REQUIRE_GPU();
  const auto& [c, s] = GetParam();
  const tb::tile_shape tile{128, 128, s == ts::schedule::multistage ? 32 : 64};
  ts::options o;
  o.schedule = s;
  o.stages = s == ts::schedule::multistage ? 4 : 3;
  ts::kernel k = tb::jit_gemm(tb::gemm_variant::plain, tile, o);

  const std::size_t a_n = std::size_t(c.M) * c.K, b_n = std::size_t(c.N) * c.K, c_n = std::size_t(c.M) * c.N;
  ASSERT_TRUE(a_n > (std::size_t(1) << 31) || c_n > (std::size_t(1) << 31));
  tb::device_buffer A(a_n * 2), B(b_n * 2), C(c_n * 2);
  tb::fill_uniform_bf16(A.get(), a_n, 11);
  tb::fill_uniform_bf16(B.get(), b_n, 12);
  tb::poison_nan(C.get(), c_n * 2);
  tb::launch_gemm(k, tile, nullptr, A.get(), B.get(), C.get(), c.M, c.N, c.K);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // Every element written (no poison left): one pass over C on the GPU against a zero "reference"
  // counts non-finite elements only.
  tb::device_buffer zeros(c_n * 4);
  ASSERT_EQ(cudaMemset(zeros.get(), 0, zeros.bytes()), cudaSuccess);
  tb::compare_stats st = tb::compare_bf16_f32(C.get(), zeros.as<float>(), c_n);
  EXPECT_EQ(st.nonfinite, 0u) << "elements of C never written (first at " << st.first_nonfinite << ")";

  // Sampled rows: the first, around 2^20 and the last; B whole (small), A and C by row.
  std::vector<std::uint16_t> b = tb::to_host_bf16(B.get(), b_n);
  const std::int64_t rows[] = {0, 1, (std::int64_t(1) << 20) - 1, std::int64_t(1) << 20, c.M - 2, c.M - 1};
  for (std::int64_t m : rows) {
    std::vector<std::uint16_t> a = tb::to_host_bf16(A.as<std::uint16_t>() + std::size_t(m) * c.K, c.K);
    std::vector<std::uint16_t> out = tb::to_host_bf16(C.as<std::uint16_t>() + std::size_t(m) * c.N, c.N);
    int bad = 0;
    for (std::int64_t n = 0; n < c.N; n += (n < 8 || n > c.N - 8) ? 1 : 37) {
      double want = 0;
      for (std::int64_t kk = 0; kk < c.K; ++kk)
        want += double(tb::bf16_to_float(a[kk])) * double(tb::bf16_to_float(b[std::size_t(n) * c.K + kk]));
      double got = tb::bf16_to_float(out[n]);
      if (!(std::fabs(got - want) <= tessel_gpu_test::sample_tol(want, c.K)) && bad++ < 4)
        ADD_FAILURE() << c.name << " " << schedule_label(s) << ": C(" << m << ", " << n << ") = " << got
                      << ", want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Over2To31Elements, LargeTensors,
    ::testing::Combine(::testing::Values(large_case{"A_over_2e31", 1048600, 200, 2048},
                                         large_case{"C_over_2e31", 1048600, 2056, 64}),
                       ::testing::Values(ts::schedule::multistage, ts::schedule::tma,
                                         ts::schedule::warp_specialized, ts::schedule::cooperative,
                                         ts::schedule::pingpong)),
    [](const ::testing::TestParamInfo<std::tuple<large_case, ts::schedule>>& i) {
      return std::string(std::get<0>(i.param).name) + "_" + tb::schedule_name(std::get<1>(i.param));
    });

}  // namespace
