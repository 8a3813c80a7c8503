// scalar_test.cpp - runtime scalar kernel parameters (ts::scalar<ts::f32>, ts::scalar<ts::i32>;
// docs/scalars.md) on the GPU:
//   * C = bf16(alpha * (A @ B^T) + beta * D) in every schedule (cooperative and pingpong with
//     both decompositions): integer-valued bf16 inputs and alpha, beta multiples of 1/4, so every
//     f32 value is exact and each element must equal the host's bf16 rounding bit for bit;
//     M x N x K = 200 x 304 x 192 (partial tiles), C and D with padded rows; D is also read
//     through rows of an odd pitch, column-major, from a base address that is not 4-byte aligned
//     and with an odd N (303): the epilogue must read exactly the elements inside D whatever its
//     layout. In the warp-specialized schedules D's 128 x 128 tiles go through shared memory
//     (tessel-lower-epilogue rule 6: TMA loads by each consumer, or its threads' bounds-checked
//     copies where D breaks TMA's rules, runs 2-4), also with 2x1 and 1x2 clusters (1x2: the
//     third column of tiles has a partner past the grid, which loads and waits but stores
//     nothing); 128 x 192 tiles' D (pingpong, cooperative, warp_specialized) and cooperative
//     256 x 128's chunk by chunk through the staging buffers (rule 7: a TMA load per chunk, or
//     the threads' copies), with stream-K parts that skip the epilogue, whole tiles and a 2x1
//     cluster; elsewhere through predicated element loads (loadElement);
//   * an elementwise kernel: Y[i] = max(X[i + shift] * (alpha + 1), f32(shift)), 100003 f32
//     elements, with a positive and a negative i32 shift (reads past X's ends give 0);
//   * each kernel is compiled once and launched twice with different values (plain C++ numbers and
//     ts::value): both results are checked, and ts::detail::kernels_built() must not change across
//     the launches (no recompilation, no launch-time variant per value).
// Outputs are NaN-poisoned inside a sentinel-filled buffer with guards before and after (and the
// padding of C's rows); nothing outside the output may change.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"
#include "scalar_kernels.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr unsigned char kSentinel = 0xA5;
constexpr std::int64_t kGuard = 1024;  // bytes before and after every output

/// Bytes outside the first `cols` elements of each of `rows` rows of `ld` (after the front guard)
/// that no longer hold the sentinel.
std::int64_t count_guard_changes(const std::vector<unsigned char>& host, std::int64_t rows, std::int64_t cols,
                                 std::int64_t ld, std::int64_t esize) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(host.size()); ++i) {
    std::int64_t rel = i - kGuard;
    bool inside = false;
    if (rel >= 0 && rel < rows * ld * esize) inside = (rel / esize) % ld < cols;
    if (!inside && host[i] != kSentinel) ++bad;
  }
  return bad;
}

struct gemm_config {
  ts::schedule schedule;
  ts::decomposition decomposition;
  std::array<int, 2> cluster = {1, 1};
  int bn = 128;
  int bm = 128;
};

std::string label(const gemm_config& c) {
  std::string s = ts::to_string(c.schedule);
  if (c.decomposition == ts::decomposition::data_parallel) s += "_data_parallel";
  if (c.decomposition == ts::decomposition::stream_k) s += "_stream_k";
  if (c.cluster[0] * c.cluster[1] > 1) s += "_c" + std::to_string(c.cluster[0]) + "x" + std::to_string(c.cluster[1]);
  if (c.bm != 128 || c.bn != 128) s += "_" + std::to_string(c.bm) + "x" + std::to_string(c.bn);
  return s;
}

class ScalarGemm : public ::testing::TestWithParam<gemm_config> {};

TEST_P(ScalarGemm, AlphaBetaEpilogueTwoValuesOneCompile) {
  TESSEL_REQUIRE_GPU();
  const gemm_config& cfg = GetParam();
  auto& ck = tessel_gpu_test::cached("scalar_gemm_alpha_beta:" + label(cfg), [&] {
    ts::options o;
    o.schedule = cfg.schedule;
    o.decomposition = cfg.decomposition;
    o.cluster = cfg.cluster;
    o.stages = cfg.schedule == ts::schedule::multistage ? 3 : 4;
    return cfg.bm == 256  ? ts::jit(tessel_test::gemm_alpha_beta<256, 128>{}, o)
           : cfg.bn == 192 ? ts::jit(tessel_test::gemm_alpha_beta<128, 192>{}, o)
                           : ts::jit(tessel_test::gemm_alpha_beta<128, 128>{}, o);
  });
  ASSERT_TRUE(ck.kernel) << ck.error;
  const ts::kernel& k = *ck.kernel;
  const bool warp_specialized = cfg.schedule == ts::schedule::warp_specialized ||
                                cfg.schedule == ts::schedule::cooperative || cfg.schedule == ts::schedule::pingpong;
  // The path under test: D through shared memory where the schedule has consumer warpgroups (in
  // whole tiles, or chunk by chunk for the 128 x 192 and 256 x 128 tiles, which do not fit).
  const bool chunked = cfg.bn == 192 || cfg.bm == 256;
  const char* path = chunked ? "hopper.prefetch = \"tma_chunk\"" : "hopper.prefetch = \"tma_smem\"";
  EXPECT_EQ(k.stage("lower-epilogue").find(path) != std::string::npos, warp_specialized) << label(cfg);

  const std::int64_t M = 200, N0 = 304, K = 192, ld = N0 + 8;
  const std::int64_t N = N0;  // rows of C and D: 624 bytes (16-aligned)
  std::mt19937 rng(std::uint32_t(101 + int(cfg.schedule) * 7 + int(cfg.decomposition)));
  std::uniform_int_distribution<int> small(-2, 2), dval(-4, 4);
  std::vector<std::uint16_t> a(M * K), b(N * K), d(M * ld, 0);
  std::vector<float> af(M * K), bf(N * K), dfv(M * ld, 0.f);
  for (std::int64_t i = 0; i < M * K; ++i) af[i] = float(small(rng)), a[i] = tb::float_to_bf16(af[i]);
  for (std::int64_t i = 0; i < N * K; ++i) bf[i] = float(small(rng)), b[i] = tb::float_to_bf16(bf[i]);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) dfv[m * ld + n] = float(dval(rng)), d[m * ld + n] = tb::float_to_bf16(dfv[m * ld + n]);
  std::vector<float> acc(M * N);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) s += double(af[m * K + kk]) * double(bf[n * K + kk]);
      acc[m * N + n] = float(s);  // exact: |s| <= 768
    }

  // Run 2 reads D through rows of N + 1 elements (610 bytes, not a multiple of 16): a tensor TMA
  // cannot describe, so the warp-specialized schedules' consumers copy it into shared memory
  // with bounds-checked loads (tessel-lower-epilogue rule 6; its tmaok flag is 0).
  const std::int64_t ld2 = N + 1;
  std::vector<std::uint16_t> d2(M * ld2, 0), dcol(M * N), dmis(M * ld + 1, 0);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      d2[m * ld2 + n] = d[m * ld + n];
      dcol[n * M + m] = d[m * ld + n];   // run 3: column-major D (inner stride M)
      dmis[1 + m * ld + n] = d[m * ld + n];  // run 4: D starts 2 bytes into its buffer
    }
  tb::device_buffer da(M * K * 2), db(N * K * 2), dd(M * ld * 2), dd2(M * ld2 * 2), ddcol(M * N * 2),
      ddmis((M * ld + 1) * 2), dc(M * ld * 2 + 2 * kGuard);
  ASSERT_EQ(cudaMemcpy(ddcol.get(), dcol.data(), M * N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ddmis.get(), dmis.data(), (M * ld + 1) * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), M * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), N * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dd.get(), d.data(), M * ld * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dd2.get(), d2.data(), M * ld2 * 2, cudaMemcpyHostToDevice), cudaSuccess);
  void* C = dc.as<unsigned char>() + kGuard;

  const std::uint64_t built = ts::detail::kernels_built();
  // Two launches of the one kernel; the second passes its scalars through ts::value (a double alpha).
  const struct {
    float alpha, beta;
  } runs[] = {{1.5f, -0.25f}, {-0.75f, 2.0f}, {1.5f, -0.25f}, {0.5f, 1.25f}, {-1.25f, 0.75f}, {2.0f, -1.5f}};
  for (int run = 0; run < 6; ++run) {
    const float alpha = runs[run].alpha, beta = runs[run].beta;
    const std::int64_t N = run == 5 ? N0 - 1 : N0;  // run 5: odd N, a pair's second column outside
    ASSERT_EQ(cudaMemset(dc.get(), kSentinel, dc.bytes()), cudaSuccess);
    ASSERT_EQ(cudaMemset2D(C, ld * 2, 0xFF, N * 2, M), cudaSuccess);  // NaN-poison C itself
    const ts::grid g{unsigned((M + cfg.bm - 1) / cfg.bm), unsigned((N + cfg.bn - 1) / cfg.bn)};
    auto A = ts::view<ts::bf16>(da.get(), {M, K}), B = ts::view<ts::bf16>(db.get(), {N, K});
    auto D = run == 2   ? ts::view<ts::bf16>(dd2.get(), {M, N}, {ld2, 1})
             : run == 3 ? ts::view<ts::bf16>(ddcol.get(), {M, N}, {1, M})
             : run == 4 ? ts::view<ts::bf16>(ddmis.as<std::uint16_t>() + 1, {M, N}, {ld, 1})
                        : ts::view<ts::bf16>(dd.get(), {M, N}, {ld, 1});
    auto Cv = ts::view<ts::bf16>(C, {M, N}, {ld, 1});
    if (run == 0)
      k.launch(nullptr, g, A, B, alpha, beta, D, Cv);
    else
      k.launch(nullptr, g, A, B, ts::value(double(alpha)), ts::value(beta), D, Cv);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

    std::vector<unsigned char> host(dc.bytes());
    ASSERT_EQ(cudaMemcpy(host.data(), dc.get(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(count_guard_changes(host, M, N, ld, 2), 0) << "run " << run << ": bytes outside C changed";
    std::int64_t bad = 0;
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        const float want_f = acc[m * N0 + n] * alpha + dfv[m * ld + n] * beta;  // exact in f32
        const std::uint16_t want = tb::float_to_bf16(want_f);
        std::uint16_t got;
        std::memcpy(&got, host.data() + kGuard + (m * ld + n) * 2, 2);
        if (got != want && bad++ < 5)
          ADD_FAILURE() << label(cfg) << " run " << run << " (alpha " << alpha << ", beta " << beta << ") C(" << m
                        << ", " << n << ") = " << tb::bf16_to_float(got) << ", want " << tb::bf16_to_float(want);
      }
    EXPECT_EQ(bad, 0) << label(cfg) << " run " << run << ": " << bad << " of " << M * N << " elements differ";
    // Runs 0-2 differ only in the scalars' values (and D's row pitch); run 3's column-major D may
    // need a layout variant.
    if (run == 2)
      EXPECT_EQ(ts::detail::kernels_built(), built)
          << "launching with new scalar values built a kernel (a recompilation or a launch-time variant)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllSchedules, ScalarGemm,
    ::testing::Values(gemm_config{ts::schedule::multistage, ts::decomposition::automatic},
                      gemm_config{ts::schedule::tma, ts::decomposition::automatic},
                      gemm_config{ts::schedule::warp_specialized, ts::decomposition::automatic},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::automatic},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::data_parallel},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::automatic},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::data_parallel},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::automatic, {2, 1}},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::automatic, {2, 1}},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::automatic, {1, 2}},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::automatic, {1, 1}, 192},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::stream_k, {1, 1}, 192},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::data_parallel, {1, 1}, 192},
                      gemm_config{ts::schedule::pingpong, ts::decomposition::automatic, {2, 1}, 192},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::automatic, {1, 1}, 192},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::stream_k, {1, 1}, 192},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::data_parallel, {1, 1}, 192},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::automatic, {2, 1}, 192},
                      gemm_config{ts::schedule::warp_specialized, ts::decomposition::automatic, {1, 1}, 192},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::automatic, {1, 1}, 128, 256},
                      gemm_config{ts::schedule::cooperative, ts::decomposition::stream_k, {1, 1}, 128, 256}),
    [](const ::testing::TestParamInfo<gemm_config>& i) { return label(i.param); });

TEST(ScalarElementwise, ScaleShiftTwoValuesOneCompile) {
  TESSEL_REQUIRE_GPU();
  auto& ck = tessel_gpu_test::cached("scalar_scale_shift", [] { return ts::jit(tessel_test::scale_shift{}); });
  ASSERT_TRUE(ck.kernel) << ck.error;
  const ts::kernel& k = *ck.kernel;

  const std::int64_t n = 100003;
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-10.f, 10.f);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);
  tb::device_buffer dx(n * 4), dy(n * 4 + 2 * kGuard);
  ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  auto* y = reinterpret_cast<float*>(dy.as<unsigned char>() + kGuard);

  const std::uint64_t built = ts::detail::kernels_built();
  const struct {
    float alpha;
    int shift;
  } runs[] = {{0.5f, 3}, {-2.0f, -5}};
  for (int run = 0; run < 2; ++run) {
    const float alpha = runs[run].alpha;
    const int shift = runs[run].shift;
    ASSERT_EQ(cudaMemset(dy.get(), kSentinel, dy.bytes()), cudaSuccess);
    tb::poison_nan(y, n * 4);
    const ts::grid g{unsigned((n + 1023) / 1024)};
    if (run == 0)
      k.launch(nullptr, g, ts::view<ts::f32>(dx.get(), {n}), alpha, shift, ts::view<ts::f32>(y, {n}));
    else
      k.launch(nullptr, g, ts::view<ts::f32>(dx.get(), {n}), ts::value(alpha), ts::value(std::int64_t(shift)),
               ts::view<ts::f32>(y, {n}));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

    std::vector<unsigned char> host(dy.bytes());
    ASSERT_EQ(cudaMemcpy(host.data(), dy.get(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(count_guard_changes(host, 1, n, n, 4), 0) << "run " << run << ": bytes outside Y changed";
    const float factor = alpha + 1.0f, lo = float(shift);
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t src = i + shift;
      const float xs = src >= 0 && src < n ? x[src] : 0.0f;
      const float p = xs * factor;
      const float want = p > lo ? p : (p < lo ? lo : p);
      float got;
      std::memcpy(&got, host.data() + kGuard + i * 4, 4);
      if (!(got == want) && bad++ < 5)
        ADD_FAILURE() << "run " << run << " (alpha " << alpha << ", shift " << shift << ") Y[" << i << "] = " << got
                      << ", want " << want;
    }
    EXPECT_EQ(bad, 0) << "run " << run << ": " << bad << " of " << n << " elements differ";
  }
  EXPECT_EQ(ts::detail::kernels_built(), built)
      << "launching with new scalar values built a kernel (a recompilation or a launch-time variant)";
}

}  // namespace
