// empty_test.cpp - empty problems and size contracts on the GPU (issue 11, docs/errors.md):
//   * K == 0: C gets the epilogue of a zero accumulator (0 for the plain GEMM, relu(bias) for the
//     fused one) in every schedule, with ts::view's strides and with explicit ones;
//   * M == 0 or N == 0, with the grid built from the sizes (a zero extent): nothing is launched,
//     no error, nothing written;
//   * mismatched K (A: 192 x 128, B: 64 x 64): a tessel::error naming both arguments, and the
//     process goes on (a correct GEMM afterwards).
// Every output lives in a sentinel-filled buffer; bytes outside it must not change.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr unsigned char kSentinel = 0xA5;
constexpr std::int64_t kGuard = 4096;

const tb::tile_shape& tile_for(ts::schedule s) {
  static const tb::tile_shape t64{128, 128, 64}, t32{128, 128, 32};
  return s == ts::schedule::multistage ? t32 : t64;
}

ts::kernel jit(tb::gemm_variant v, ts::schedule s) {
  ts::options o;
  o.schedule = s;
  o.stages = s == ts::schedule::multistage ? 4 : 3;
  return tb::jit_gemm(v, tile_for(s), o);
}

/// M x N bf16 output between two guards, poisoned with NaN; `host()` reads it all back.
struct guarded_c {
  std::int64_t M, N;
  tb::device_buffer buf;
  guarded_c(std::int64_t m, std::int64_t n) : M(m), N(n), buf(std::size_t(m * n * 2 + 2 * kGuard)) {
    EXPECT_EQ(cudaMemset(buf.get(), kSentinel, buf.bytes()), cudaSuccess);
    if (M * N) tb::poison_nan(data(), std::size_t(M * N * 2));
  }
  void* data() const { return buf.as<unsigned char>() + kGuard; }
  std::vector<unsigned char> host() const {
    std::vector<unsigned char> h(buf.bytes());
    EXPECT_EQ(cudaMemcpy(h.data(), buf.get(), h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  float at(const std::vector<unsigned char>& h, std::int64_t m, std::int64_t n) const {
    std::uint16_t v;
    std::memcpy(&v, h.data() + kGuard + (m * N + n) * 2, 2);
    return tb::bf16_to_float(v);
  }
  std::int64_t guard_changes(const std::vector<unsigned char>& h) const {
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < kGuard; ++i) bad += h[i] != kSentinel;
    for (std::size_t i = std::size_t(kGuard + M * N * 2); i < h.size(); ++i) bad += h[i] != kSentinel;
    return bad;
  }
};

class EmptyK : public ::testing::TestWithParam<ts::schedule> {};

TEST_P(EmptyK, WritesTheEpilogueOfAZeroAccumulator) {
  TESSEL_REQUIRE_GPU();
  const ts::schedule s = GetParam();
  const std::int64_t M = 200, N = 136;
  const tb::tile_shape& t = tile_for(s);

  // Plain GEMM: C = 0. A and B are empty (null data); once with ts::view's strides, once with
  // explicit strides as a user with a K-strided allocation would pass them.
  ts::kernel plain = jit(tb::gemm_variant::plain, s);
  for (bool explicit_strides : {false, true}) {
    guarded_c c(M, N);
    ts::tensor_arg a = explicit_strides ? ts::view<ts::bf16>(nullptr, {M, 0}, {64, 1}) : ts::view<ts::bf16>(nullptr, {M, 0});
    ts::tensor_arg b = explicit_strides ? ts::view<ts::bf16>(nullptr, {N, 0}, {64, 1}) : ts::view<ts::bf16>(nullptr, {N, 0});
    ASSERT_NO_THROW(plain.launch(nullptr, tb::gemm_grid(t, M, N), a, b, ts::view<ts::bf16>(c.data(), {M, N})));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto h = c.host();
    EXPECT_EQ(c.guard_changes(h), 0);
    int bad = 0;
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n)
        if (c.at(h, m, n) != 0.f && bad++ < 3) ADD_FAILURE() << "C(" << m << ", " << n << ") = " << c.at(h, m, n);
  }

  // Fused: C = relu(0 + bias).
  ts::kernel fused = jit(tb::gemm_variant::bias_relu, s);
  std::vector<std::uint16_t> bias(N);
  for (std::int64_t n = 0; n < N; ++n) bias[n] = tb::float_to_bf16(float(n % 7) - 3.f);
  tb::device_buffer dbias(N * 2);
  ASSERT_EQ(cudaMemcpy(dbias.get(), bias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  guarded_c c(M, N);
  ASSERT_NO_THROW(tb::launch_gemm_bias_relu(fused, t, nullptr, nullptr, nullptr, dbias.get(), c.data(), M, N, 0));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto h = c.host();
  EXPECT_EQ(c.guard_changes(h), 0);
  int bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      float want = std::max(float(n % 7) - 3.f, 0.f);
      if (c.at(h, m, n) != want && bad++ < 3)
        ADD_FAILURE() << "C(" << m << ", " << n << ") = " << c.at(h, m, n) << ", want " << want;
    }
}

TEST_P(EmptyK, EmptyMOrNLaunchesNothing) {
  TESSEL_REQUIRE_GPU();
  const ts::schedule s = GetParam();
  ts::kernel k = jit(tb::gemm_variant::plain, s);
  tb::device_buffer a(64 * 64 * 2), b(64 * 64 * 2);
  guarded_c c(0, 0);
  for (auto [M, N] : {std::pair<std::int64_t, std::int64_t>{0, 64}, {64, 0}, {0, 0}}) {
    ASSERT_NO_THROW(tb::launch_gemm(k, tile_for(s), nullptr, a.get(), b.get(), c.data(), M, N, 64))
        << M << " x " << N;
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(c.guard_changes(c.host()), 0);
}

TEST_P(EmptyK, MismatchedKIsAnErrorAndTheProcessGoesOn) {
  TESSEL_REQUIRE_GPU();
  const ts::schedule s = GetParam();
  ts::kernel k = jit(tb::gemm_variant::plain, s);
  tb::device_buffer a(192 * 128 * 2), b(64 * 128 * 2), c(192 * 64 * 2);
  std::string what;
  try {
    k.launch(nullptr, tb::gemm_grid(tile_for(s), 192, 64), ts::view<ts::bf16>(a.get(), {192, 128}),
             ts::view<ts::bf16>(b.get(), {64, 64}), ts::view<ts::bf16>(c.get(), {192, 64}));
  } catch (const ts::error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("argument 1 dimension 1 has size 64 but argument 0 dimension 1 has size 128; they must "
                      "be equal"),
            std::string::npos)
      << what;
  tb::fill_uniform_bf16(a.get(), 192 * 128, 1);
  tb::fill_uniform_bf16(b.get(), 64 * 128, 2);
  ASSERT_NO_THROW(tb::launch_gemm(k, tile_for(s), nullptr, a.get(), b.get(), c.get(), 192, 64, 128));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Schedules, EmptyK,
                         ::testing::Values(ts::schedule::multistage, ts::schedule::tma,
                                           ts::schedule::warp_specialized, ts::schedule::cooperative,
                                           ts::schedule::pingpong),
                         [](const ::testing::TestParamInfo<ts::schedule>& i) { return tb::schedule_name(i.param); });

}  // namespace
