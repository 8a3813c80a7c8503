// dual_test.cpp - dual GEMMs (two ts::dot sharing the A tile, tests/support/dual_kernels.hpp) on the
// GPU, in every schedule that holds two accumulators (cooperative and pingpong, stream-K and
// data-parallel, the 2x1 and 1x2 clusters, a 64B swizzle; tma and warp_specialized):
//   * AllOutputsExact: gate G and up U stored in f32, H = bf16(silu(G) * U) and
//     rowamax[i] = max_j |silu(G) U| from one kernel, integer bf16 data in [-2, 2] so that G and
//     U are exact integers and must equal the double reference bit for bit; H within one bf16
//     rounding plus docs/math.md's silu bound (2e-6 relative + 1e-7 absolute, times |U|) of
//     silu(G) * U in double; rowamax within 1e-5 relative + 1e-6. Shapes 200 x 304 x 192 (partial
//     tiles) and 333 x 97 x 128 (outputs whose rows are not 16-byte multiples: the bounds-checked
//     copy-out instead of TMA stores).
//   * SwigluRandom: H of uniform [-1, 1) data at 448 x 392 x 456 (no dimension a tile multiple, K
//     not a multiple of BK) against silu(g) u in double: |H - h| <= 2^-8 |h| + 1e-5 (|u| sum|a w1|
//     + |g| sum|a w3|) + 1e-6.
//   * NMajorWeights: W1 and W3 stored K x N (unit stride along N), the same bound.
//   * ResidualThroughSharedMemory: H = bf16(silu(g) u + R) with an M x N bf16 residual, which the
//     warp-specialized schedules read through shared memory (chunk by chunk beside the dual
//     ring: tessel-lower-epilogue rule 7), also from rows TMA cannot describe (N + 1 elements);
//     the bound above plus R's share of the rounding.
// Every output is NaN-poisoned inside a sentinel-filled buffer (tessel_bench::guarded_output):
// every element must be written and nothing around it may change.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "dual_kernels.hpp"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

struct config {
  const char* name;
  ts::options options;
  bool pingpong = false;  // tile 64 x 128 (two accumulators of a whole tile per consumer)
};

std::string label(const config& c) { return c.name; }

const config kConfigs[] = {
    {"cooperative", {.schedule = ts::schedule::cooperative}},
    {"cooperative_data_parallel",
     {.schedule = ts::schedule::cooperative, .decomposition = ts::decomposition::data_parallel}},
    {"cooperative_cluster_2x1", {.schedule = ts::schedule::cooperative, .cluster = {2, 1}}},
    {"cooperative_cluster_1x2", {.schedule = ts::schedule::cooperative, .cluster = {1, 2}}},
    {"cooperative_swizzle_64", {.schedule = ts::schedule::cooperative, .swizzle = 64}},
    {"pingpong", {.schedule = ts::schedule::pingpong}, true},
    {"pingpong_data_parallel",
     {.schedule = ts::schedule::pingpong, .decomposition = ts::decomposition::data_parallel},
     true},
    {"tma", {.schedule = ts::schedule::tma}},
    {"warp_specialized", {.schedule = ts::schedule::warp_specialized}},
};

template <template <int, int> class K>
const ts::kernel& compiled(const config& c, const char* what) {
  auto& ck = tessel_gpu_test::cached(std::string(what) + ":" + c.name, [&] {
    return c.pingpong ? ts::jit(K<64, 128>{}, c.options) : ts::jit(K<128, 128>{}, c.options);
  });
  if (!ck.kernel) throw std::runtime_error(ck.error);
  return *ck.kernel;
}

ts::grid grid_for(const config& c, std::int64_t M, std::int64_t N) {
  const std::int64_t bm = c.pingpong ? 64 : 128;
  return {unsigned((M + bm - 1) / bm), unsigned((N + 127) / 128)};
}

double silu(double x) { return x / (1 + std::exp(-x)); }

/// bf16 inputs on the host and the device.
struct inputs {
  std::vector<std::uint16_t> a, w1, w3;
  tb::device_buffer da, dw1, dw3;
  inputs(std::int64_t M, std::int64_t N, std::int64_t K, bool exact, std::uint32_t seed)
      : a(M * K), w1(N * K), w3(N * K), da(M * K * 2), dw1(N * K * 2), dw3(N * K * 2) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> small(-2, 2);
    std::uniform_real_distribution<float> unit(-1.f, 1.f);
    for (auto* v : {&a, &w1, &w3})
      for (auto& x : *v) x = tb::float_to_bf16(exact ? float(small(rng)) : unit(rng));
    EXPECT_EQ(cudaMemcpy(da.get(), a.data(), a.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(dw1.get(), w1.data(), w1.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(dw3.get(), w3.data(), w3.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  float av(std::int64_t i) const { return tb::bf16_to_float(a[i]); }
};

/// gate, up and their error scales (sum_k |a w|) in double; W[n][k] at w[n * wn + k * wk].
struct reference {
  std::vector<double> g, u, sg, su;
  reference(const inputs& in, std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t wn, std::int64_t wk)
      : g(M * N), u(M * N), sg(M * N), su(M * N) {
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double x = 0, y = 0, ex = 0, ey = 0;
        for (std::int64_t k = 0; k < K; ++k) {
          const double av = in.av(m * K + k);
          const double p = av * tb::bf16_to_float(in.w1[n * wn + k * wk]);
          const double q = av * tb::bf16_to_float(in.w3[n * wn + k * wk]);
          x += p, y += q, ex += std::fabs(p), ey += std::fabs(q);
        }
        g[m * N + n] = x, u[m * N + n] = y, sg[m * N + n] = ex, su[m * N + n] = ey;
      }
  }
  double h(std::int64_t i) const { return silu(g[i]) * u[i]; }
  /// Bound on |H - h| for a bf16 H: one rounding of bf16, and the f32 accumulation and silu's
  /// error carried through the product.
  double tol(std::int64_t i) const {
    return std::ldexp(std::fabs(h(i)), -8) + 1e-5 * (std::fabs(u[i]) * sg[i] + std::fabs(g[i]) * su[i]) +
           2e-6 * std::fabs(h(i)) + 1e-7 * std::fabs(u[i]) + 1e-6;
  }
};

/// Compares a bf16 output with the reference's h; returns the number of bad elements.
std::int64_t check_h(tb::guarded_output& H, const reference& r, std::int64_t M, std::int64_t N, const std::string& what) {
  std::int64_t bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      const double got = tb::bf16_to_float(std::uint16_t(H.bits(0, m, n)));
      const std::int64_t i = m * N + n;
      if (!(std::fabs(got - r.h(i)) <= r.tol(i)) && bad++ < 5)
        ADD_FAILURE() << what << ": H(" << m << ", " << n << ") = " << got << ", want " << r.h(i)
                      << " (tolerance " << r.tol(i) << ")";
    }
  return bad;
}

class DualGemm : public ::testing::TestWithParam<config> {};

void run_all_outputs(const config& c, std::int64_t M, std::int64_t N, std::int64_t K) {
  const ts::kernel& k = compiled<tessel_test::dual_outputs>(c, "dual_outputs");
  const std::string what = label(c) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  inputs in(M, N, K, /*exact=*/true, std::uint32_t(11 + M + 7 * N));
  reference r(in, M, N, K, K, 1);
  const std::int64_t ld32 = tb::padded_ld(N, 4), ld16 = tb::padded_ld(N, 2);
  tb::guarded_output G(tb::guarded_matrix(M, N, N % 4 ? N : ld32, 4)), U(tb::guarded_matrix(M, N, ld32, 4)),
      H(tb::guarded_matrix(M, N, N % 8 ? N : ld16, 2)), amax(tb::guarded_matrix(1, M, M, 4));
  for (auto* o : {&G, &U, &H, &amax}) o->reset();
  ASSERT_EQ(cudaMemset(amax.data(), 0, M * 4), cudaSuccess);  // the vector starts at 0
  k.launch(nullptr, grid_for(c, M, N), ts::view<ts::bf16>(in.da.get(), {M, K}),
           ts::view<ts::bf16>(in.dw1.get(), {N, K}), ts::view<ts::bf16>(in.dw3.get(), {N, K}),
           ts::view<ts::f32>(G.data(), {M, N}, {G.layout().row_stride, 1}),
           ts::view<ts::f32>(U.data(), {M, N}, {U.layout().row_stride, 1}),
           ts::view<ts::bf16>(H.data(), {M, N}, {H.layout().row_stride, 1}),
           ts::view<ts::f32>(amax.data(), {M}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  for (auto [name, o] : {std::pair{"G", &G}, std::pair{"U", &U}, std::pair{"H", &H}, std::pair{"rowamax", &amax}}) {
    tb::guard_report rep = o->check();
    EXPECT_TRUE(rep.ok()) << what << ": " << name << ": " << rep.str();
  }
  std::int64_t bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      float g, u;
      std::uint32_t gb = G.bits(0, m, n), ub = U.bits(0, m, n);
      std::memcpy(&g, &gb, 4), std::memcpy(&u, &ub, 4);
      if ((double(g) != r.g[m * N + n] || double(u) != r.u[m * N + n]) && bad++ < 5)
        ADD_FAILURE() << what << ": (G, U)(" << m << ", " << n << ") = (" << g << ", " << u << "), want ("
                      << r.g[m * N + n] << ", " << r.u[m * N + n] << ")";
    }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements of G or U differ";
  EXPECT_EQ(check_h(H, r, M, N, what), 0) << what << ": H differs";
  bad = 0;
  for (std::int64_t m = 0; m < M; ++m) {
    double want = 0;
    for (std::int64_t n = 0; n < N; ++n) want = std::max(want, std::fabs(r.h(m * N + n)));
    float got;
    std::uint32_t bits = amax.bits(0, 0, m);
    std::memcpy(&got, &bits, 4);
    if (!(std::fabs(got - want) <= 1e-5 * want + 1e-6) && bad++ < 5)
      ADD_FAILURE() << what << ": rowamax[" << m << "] = " << got << ", want " << want;
  }
  EXPECT_EQ(bad, 0) << what << ": rowamax differs";
}

TEST_P(DualGemm, AllOutputsExact) {
  TESSEL_REQUIRE_GPU();
  run_all_outputs(GetParam(), 200, 304, 192);
  run_all_outputs(GetParam(), 333, 97, 128);
}

TEST_P(DualGemm, SwigluRandom) {
  TESSEL_REQUIRE_GPU();
  const config& c = GetParam();
  const ts::kernel& k = compiled<tessel_test::swiglu>(c, "swiglu");
  const std::int64_t M = 448, N = 392, K = 456;
  inputs in(M, N, K, /*exact=*/false, 5);
  reference r(in, M, N, K, K, 1);
  tb::guarded_output H(tb::guarded_matrix(M, N, tb::padded_ld(N, 2), 2));
  H.reset();
  k.launch(nullptr, grid_for(c, M, N), ts::view<ts::bf16>(in.da.get(), {M, K}),
           ts::view<ts::bf16>(in.dw1.get(), {N, K}), ts::view<ts::bf16>(in.dw3.get(), {N, K}),
           ts::view<ts::bf16>(H.data(), {M, N}, {H.layout().row_stride, 1}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  tb::guard_report rep = H.check();
  EXPECT_TRUE(rep.ok()) << label(c) << ": " << rep.str();
  EXPECT_EQ(check_h(H, r, M, N, label(c)), 0);
}

TEST_P(DualGemm, NMajorWeights) {
  TESSEL_REQUIRE_GPU();
  const config& c = GetParam();
  const ts::kernel& k = compiled<tessel_test::swiglu_n_major>(c, "swiglu_n_major");
  const std::int64_t M = 320, N = 384, K = 192;
  // The weights as K x N matrices: w[k * N + n] (inputs' N x K draw, read transposed).
  inputs in(M, N, K, /*exact=*/false, 9);
  reference r(in, M, N, K, 1, N);
  tb::guarded_output H(tb::guarded_matrix(M, N, N, 2));
  H.reset();
  k.launch(nullptr, grid_for(c, M, N), ts::view<ts::bf16>(in.da.get(), {M, K}),
           ts::view<ts::bf16>(in.dw1.get(), {K, N}), ts::view<ts::bf16>(in.dw3.get(), {K, N}),
           ts::view<ts::bf16>(H.data(), {M, N}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  tb::guard_report rep = H.check();
  EXPECT_TRUE(rep.ok()) << label(c) << ": " << rep.str();
  EXPECT_EQ(check_h(H, r, M, N, label(c)), 0);
}

TEST_P(DualGemm, ResidualThroughSharedMemory) {
  TESSEL_REQUIRE_GPU();
  const config& c = GetParam();
  const ts::kernel& k = compiled<tessel_test::swiglu_residual>(c, "swiglu_residual");
  // The path under test: R through shared memory wherever the schedule has consumer warpgroups
  // (chunk by chunk for 128 x 128 beside the dual ring, whole tiles for pingpong's 64 x 128).
  const std::string epi = k.stage("lower-epilogue");
  if (c.options.schedule != ts::schedule::tma)
    EXPECT_TRUE(epi.find("tma_chunk") != std::string::npos || epi.find("tma_smem") != std::string::npos)
        << label(c);
  const std::int64_t M = 448, N = 392, K = 456;
  inputs in(M, N, K, /*exact=*/false, 13);
  reference r(in, M, N, K, K, 1);
  // R in rows of ldr elements: padded (TMA loads it), then N + 1 (610 bytes, not a multiple of 16:
  // the consumers' bounds-checked copies into the same buffers).
  for (const std::int64_t ldr : {tb::padded_ld(N, 2), N + 1}) {
    const std::string what = label(c) + " ldr " + std::to_string(ldr);
    std::vector<std::uint16_t> rh(M * ldr, 0);
    std::mt19937 rng(std::uint32_t(17 + ldr));
    std::uniform_real_distribution<float> unit(-1.f, 1.f);
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) rh[m * ldr + n] = tb::float_to_bf16(unit(rng));
    tb::device_buffer dr(M * ldr * 2);
    ASSERT_EQ(cudaMemcpy(dr.get(), rh.data(), rh.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    tb::guarded_output H(tb::guarded_matrix(M, N, tb::padded_ld(N, 2), 2));
    H.reset();
    k.launch(nullptr, grid_for(c, M, N), ts::view<ts::bf16>(in.da.get(), {M, K}),
             ts::view<ts::bf16>(in.dw1.get(), {N, K}), ts::view<ts::bf16>(in.dw3.get(), {N, K}),
             ts::view<ts::bf16>(dr.get(), {M, N}, {ldr, 1}),
             ts::view<ts::bf16>(H.data(), {M, N}, {H.layout().row_stride, 1}));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
    tb::guard_report rep = H.check();
    EXPECT_TRUE(rep.ok()) << what << ": " << rep.str();
    std::int64_t bad = 0;
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t i = m * N + n;
        const double rv = tb::bf16_to_float(rh[m * ldr + n]);
        const double want = r.h(i) + rv;
        // r.tol(i) bounds H's rounding and error for h; adding R widens the rounding by |R| 2^-8.
        const double tol = r.tol(i) + std::ldexp(std::fabs(rv), -8);
        const double got = tb::bf16_to_float(std::uint16_t(H.bits(0, m, n)));
        if (!(std::fabs(got - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << what << ": H(" << m << ", " << n << ") = " << got << ", want " << want << " (tolerance "
                        << tol << ")";
      }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " elements differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, DualGemm, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<config>& i) { return std::string(i.param.name); });

}  // namespace
