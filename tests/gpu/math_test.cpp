// math_test.cpp - numerics of every DSL math function (tests/support/math_functions.hpp) on the GPU,
// against a double-precision reference with the tolerance docs/math.md states:
//   * elementwise: Y = f(pre(X)) on 100003 f32 values (uniform in [-10, 10] plus special values:
//     0, +-1e-30 subnormal-adjacent, +-30, +-88), every element compared;
//   * in a GEMM epilogue of each of the five schedules: C = bf16(f(pre(A @ B^T / 64))) with
//     integer-valued bf16 inputs (exact f32 accumulation), M x N = 200 x 304 (partial tiles),
//     K = 192; every element compared with the bf16 rounding added to the tolerance.
// Outputs are NaN-poisoned inside a sentinel-filled buffer with guards before and after (and
// padded rows for C); nothing outside the output may change.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "math_functions.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
using tessel_test::math_case;

namespace {

constexpr unsigned char kSentinel = 0xA5;
constexpr std::int64_t kGuard = 1024;  // bytes before and after every output

/// Bytes of `host` (the whole buffer) outside [guard, guard + rows * ld * esize) or outside the
/// first `cols` elements of each row that no longer hold the sentinel.
std::int64_t count_guard_changes(const std::vector<unsigned char>& host, std::int64_t rows, std::int64_t cols,
                                 std::int64_t ld, std::int64_t esize) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(host.size()); ++i) {
    std::int64_t rel = i - kGuard;
    bool inside = false;
    if (rel >= 0 && rel < rows * ld * esize) {
      std::int64_t col = (rel / esize) % ld;
      inside = col < cols;
    }
    if (!inside && host[i] != kSentinel) ++bad;
  }
  return bad;
}

class MathElementwise : public ::testing::TestWithParam<math_case> {};

TEST_P(MathElementwise, MatchesDoubleReference) {
  TESSEL_REQUIRE_GPU();
  const math_case& c = GetParam();
  ts::kernel k = c.jit_elementwise({});

  std::vector<float> x = {0.f, -0.f, 1e-30f, -1e-30f, 30.f, -30.f, 88.f, -88.f, 1.f, -1.f, 0.5f};
  const std::int64_t n = 100003;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-10.f, 10.f);
  while (static_cast<std::int64_t>(x.size()) < n) x.push_back(u(rng));

  tb::device_buffer dx(n * 4), dy(n * 4 + 2 * kGuard);
  ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy.get(), kSentinel, dy.bytes()), cudaSuccess);
  auto* y = reinterpret_cast<float*>(dy.as<unsigned char>() + kGuard);
  tb::poison_nan(y, n * 4);
  k.launch(nullptr, ts::grid{unsigned((n + 255) / 256)}, ts::view<ts::f32>(dx.get(), {n}),
           ts::view<ts::f32>(y, {n}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<unsigned char> host(dy.bytes());
  ASSERT_EQ(cudaMemcpy(host.data(), dy.get(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(count_guard_changes(host, 1, n, n, 4), 0) << "bytes outside Y changed";
  std::int64_t bad = 0;
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    float got;
    std::memcpy(&got, host.data() + kGuard + i * 4, 4);
    double want = c.ref(x[i]);
    double err = std::fabs(double(got) - want);
    bool ok = (std::isnan(want) && std::isnan(got)) || (std::isinf(want) && got == want) ||
              err <= c.tol(x[i], want);
    if (!ok && bad++ < 5)
      ADD_FAILURE() << c.name << "(" << x[i] << "): got " << got << ", want " << want << " (tolerance "
                    << c.tol(x[i], want) << ")";
    if (std::isfinite(want) && std::fabs(want) > 0) worst = std::fmax(worst, err / std::fabs(want));
  }
  EXPECT_EQ(bad, 0) << c.name << ": " << bad << " of " << n << " elements out of tolerance";
  std::printf("  %-10s worst relative error %.3g over %lld elements\n", c.name.c_str(), worst, (long long)n);
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, MathElementwise, ::testing::ValuesIn(tessel_test::math_cases()),
                         [](const ::testing::TestParamInfo<math_case>& i) { return i.param.name; });

class MathEpilogue : public ::testing::TestWithParam<std::tuple<math_case, ts::schedule>> {};

TEST_P(MathEpilogue, MatchesDoubleReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [c, s] = GetParam();
  ts::options o;
  o.schedule = s;
  o.stages = s == ts::schedule::multistage ? 3 : 4;
  ts::kernel k = c.jit_gemm(o);

  // Padded rows of C; both row length and stride multiples of 16 bytes, so the TMA-store schedules
  // store C with TMA.
  const std::int64_t M = 200, N = 304, K = 192, ldc = N + 8;
  std::mt19937 rng(std::uint32_t(31 + int(s)));
  std::uniform_int_distribution<int> small(-2, 2);
  std::vector<std::uint16_t> a(M * K), b(N * K);
  std::vector<float> af(M * K), bf(N * K);
  for (std::int64_t i = 0; i < M * K; ++i) af[i] = float(small(rng)), a[i] = tb::float_to_bf16(af[i]);
  for (std::int64_t i = 0; i < N * K; ++i) bf[i] = float(small(rng)), b[i] = tb::float_to_bf16(bf[i]);
  tb::device_buffer da(M * K * 2), db(N * K * 2), dc(M * ldc * 2 + 2 * kGuard);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), M * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), N * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dc.get(), kSentinel, dc.bytes()), cudaSuccess);
  void* C = dc.as<unsigned char>() + kGuard;
  ASSERT_EQ(cudaMemset2D(C, ldc * 2, 0xFF, N * 2, M), cudaSuccess);  // NaN-poison C itself

  k.launch(nullptr, ts::grid{unsigned((M + 127) / 128), unsigned((N + 127) / 128)},
           ts::view<ts::bf16>(da.get(), {M, K}), ts::view<ts::bf16>(db.get(), {N, K}),
           ts::view<ts::bf16>(C, {M, N}, {ldc, 1}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<unsigned char> host(dc.bytes());
  ASSERT_EQ(cudaMemcpy(host.data(), dc.get(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(count_guard_changes(host, M, N, ldc, 2), 0) << "bytes outside C changed";
  std::int64_t bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) acc += double(af[m * K + kk]) * double(bf[n * K + kk]);
      double x = acc / 64, want = c.ref(x);
      std::uint16_t h;
      std::memcpy(&h, host.data() + kGuard + (m * ldc + n) * 2, 2);
      double got = tb::bf16_to_float(h);
      double tol = c.tol(x, want) + std::ldexp(std::fabs(want), -8);
      if (!(std::fabs(got - want) <= tol) && bad++ < 5)
        ADD_FAILURE() << c.name << " at (" << m << ", " << n << "), x = " << x << ": got " << got << ", want "
                      << want << " (tolerance " << tol << ")";
    }
  EXPECT_EQ(bad, 0) << c.name << " in " << ts::to_string(s) << ": " << bad
                     << " elements out of tolerance";
}

INSTANTIATE_TEST_SUITE_P(
    AllFunctionsAllSchedules, MathEpilogue,
    ::testing::Combine(::testing::ValuesIn(tessel_test::math_cases()),
                       ::testing::ValuesIn(tessel_test::all_schedules())),
    [](const ::testing::TestParamInfo<std::tuple<math_case, ts::schedule>>& i) {
      return std::get<0>(i.param).name + "_" + ts::to_string(std::get<1>(i.param));
    });

}  // namespace
