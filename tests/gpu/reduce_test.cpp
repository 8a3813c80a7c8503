// reduce_test.cpp - reductions in the GEMM epilogue (docs/reductions.md) and a two-output
// epilogue on the GPU, in every schedule (cooperative and pingpong with stream-K and
// data-parallel):
//   * Y = A @ B^T + bias (bf16 C), rowamax[i] = max_j |Y|, rowsum[i] = sum_j Y, colmax[j] =
//     max_i Y, combined across CTAs with atomics into vectors that start at 0, 0 and -inf.
//     Two data sets:
//       exact: integer bf16 values (A, B in [-2, 2], bias in [-4, 4]): every f32 value and every
//              partial sum is an integer below 2^24, so all three vectors and C must equal the
//              double reference bit for bit, whatever the order of the atomic adds;
//       random: uniform [-1, 1) bf16 values: amax and colmax within 1e-5 * max_j sum_k |a b|
//              (+1e-6) of the double reference (the f32 dot product's error; the max itself is
//              exact); rowsum within 2e-5 * sum_j (sum_k |a b| + |bias|) (+1e-5).
//     Shapes with M and N not multiples of the tile (200 x 304 x 192 and 333 x 97 x 128, the
//     latter's C rows not 16-byte aligned). C is NaN-poisoned; each output sits in a
//     sentinel-filled buffer with 1 KiB guards before and after (and C's row padding), which
//     must not change. max and amax are deterministic: a second launch into re-initialised
//     vectors gives the same bits; a third without re-initialising leaves max / amax as they
//     were and doubles the exact sums (the outputs accumulate).
//   * NaN propagates: a NaN in one row of A makes that row's amax and sum and every column's max
//     NaN, and leaves the other rows exact;
//   * Z = A @ B^T + bias and Y = gelu(Z) from one kernel: Z bit-exact (integer data), Y within
//     docs/math.md's gelu tolerance of the double reference (2e-3 abs + 1 bf16 ulp rel).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"
#include "reduce_kernels.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr unsigned char kSentinel = 0xA5;
constexpr std::int64_t kGuard = 1024;  // bytes before and after every output

struct config {
  ts::schedule schedule;
  ts::decomposition decomposition;
};

std::string label(const config& c) {
  std::string s = ts::to_string(c.schedule);
  if (c.decomposition == ts::decomposition::data_parallel) s += "_data_parallel";
  return s;
}

ts::options options_for(const config& c) {
  ts::options o;
  o.schedule = c.schedule;
  o.decomposition = c.decomposition;
  o.stages = c.schedule == ts::schedule::multistage ? 3 : 4;
  return o;
}

/// The GEMM + bias + reductions kernel of a configuration, compiled once for all the tests.
tessel_gpu_test::cached_kernel& reduce_kernel(const config& cfg) {
  return tessel_gpu_test::cached("reduce_gemm_bias:" + label(cfg), [&] {
    return ts::jit(tessel_test::gemm_bias_reduce<128, 128>{}, options_for(cfg));
  });
}

/// A device buffer of `bytes` with kGuard sentinel bytes on each side.
struct guarded {
  tb::device_buffer buf;
  std::int64_t bytes;
  explicit guarded(std::int64_t n) : buf(n + 2 * kGuard), bytes(n) {}
  void* data() const { return buf.as<unsigned char>() + kGuard; }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> h(buf.bytes());
    EXPECT_EQ(cudaMemcpy(h.data(), buf.get(), h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  /// Sentinel bytes outside the data that changed.
  static std::int64_t guard_changes(const std::vector<unsigned char>& h, std::int64_t bytes) {
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < std::int64_t(h.size()); ++i)
      if ((i < kGuard || i >= kGuard + bytes) && h[i] != kSentinel) ++bad;
    return bad;
  }
};

void fill_f32(const guarded& g, float v, std::int64_t n) {
  ASSERT_EQ(cudaMemset(g.buf.get(), kSentinel, g.buf.bytes()), cudaSuccess);
  std::vector<float> h(n, v);
  ASSERT_EQ(cudaMemcpy(g.data(), h.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
}

std::vector<float> floats_of(const std::vector<unsigned char>& h, std::int64_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), h.data() + kGuard, n * 4);
  return v;
}

struct shape {
  std::int64_t M, N, K;
};

class ReduceGemm : public ::testing::TestWithParam<config> {};

void run_reduce(const config& cfg, const shape& s, bool exact) {
  auto& ck = reduce_kernel(cfg);
  ASSERT_TRUE(ck.kernel) << ck.error;
  const ts::kernel& k = *ck.kernel;
  const std::int64_t M = s.M, N = s.N, K = s.K, ld = N + 8;
  const std::string what = label(cfg) + (exact ? " exact " : " random ") + std::to_string(M) + "x" +
                           std::to_string(N) + "x" + std::to_string(K);

  std::mt19937 rng(std::uint32_t(7 + int(cfg.schedule) * 13 + int(cfg.decomposition) + M));
  std::uniform_int_distribution<int> small(-2, 2), bint(-4, 4);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  auto draw = [&](bool wide) {
    float v = exact ? float(wide ? bint(rng) : small(rng)) : unit(rng);
    return tb::float_to_bf16(v);
  };
  std::vector<std::uint16_t> a(M * K), b(N * K), bias(N);
  for (auto& x : a) x = draw(false);
  for (auto& x : b) x = draw(false);
  for (auto& x : bias) x = draw(true);

  // Double reference, and the error scale of each element (sum_k |a b|).
  std::vector<double> y(M * N), scale(M * N);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) {
        double p = double(tb::bf16_to_float(a[m * K + kk])) * tb::bf16_to_float(b[n * K + kk]);
        acc += p, mag += std::fabs(p);
      }
      y[m * N + n] = acc + tb::bf16_to_float(bias[n]);
      scale[m * N + n] = mag + std::fabs(tb::bf16_to_float(bias[n]));
    }
  std::vector<double> rowamax(M, 0), rowsum(M, 0), rowscale(M, 0), rowmaxscale(M, 0),
      colmax(N, -INFINITY), colscale(N, 0);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double v = y[m * N + n], e = scale[m * N + n];
      rowamax[m] = std::max(rowamax[m], std::fabs(v));
      rowsum[m] += v;
      rowscale[m] += e;
      rowmaxscale[m] = std::max(rowmaxscale[m], e);
      colmax[n] = std::max(colmax[n], v);
      colscale[n] = std::max(colscale[n], e);
    }

  tb::device_buffer da(M * K * 2), db(N * K * 2), dbias(N * 2);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), M * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), N * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dbias.get(), bias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  guarded dc(M * ld * 2), damax(M * 4), dsum(M * 4), dcmax(N * 4);

  const ts::grid g{unsigned((M + 127) / 128), unsigned((N + 127) / 128)};
  auto launch = [&] {
    k.launch(nullptr, g, ts::view<ts::bf16>(da.get(), {M, K}), ts::view<ts::bf16>(db.get(), {N, K}),
             ts::view<ts::bf16>(dbias.get(), {N}), ts::view<ts::bf16>(dc.data(), {M, N}, {ld, 1}),
             ts::view<ts::f32>(damax.data(), {M}), ts::view<ts::f32>(dsum.data(), {M}),
             ts::view<ts::f32>(dcmax.data(), {N}));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  };
  auto init = [&] {
    fill_f32(damax, 0.0f, M);
    fill_f32(dsum, 0.0f, M);
    fill_f32(dcmax, -std::numeric_limits<float>::infinity(), N);
  };
  init();
  ASSERT_EQ(cudaMemset(dc.buf.get(), kSentinel, dc.buf.bytes()), cudaSuccess);
  ASSERT_EQ(cudaMemset2D(dc.data(), ld * 2, 0xFF, N * 2, M), cudaSuccess);  // NaN-poison C
  launch();

  // C: guards (outside the rows and in the padding) and values.
  {
    auto h = dc.read();
    std::int64_t outside = 0, bad = 0;
    for (std::int64_t i = 0; i < std::int64_t(h.size()); ++i) {
      std::int64_t rel = i - kGuard;
      bool inside = rel >= 0 && rel < M * ld * 2 && (rel / 2) % ld < N;
      if (!inside && h[i] != kSentinel) ++outside;
    }
    EXPECT_EQ(outside, 0) << what << ": bytes outside C changed";
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        std::uint16_t got;
        std::memcpy(&got, h.data() + kGuard + (m * ld + n) * 2, 2);
        const double want = y[m * N + n];
        const double gotf = tb::bf16_to_float(got);
        const bool ok = exact ? got == tb::float_to_bf16(float(want))
                              : std::fabs(gotf - want) <= 1e-5 * scale[m * N + n] + 8e-3 * std::fabs(want) + 1e-6;
        if (!ok && bad++ < 5)
          ADD_FAILURE() << what << ": C(" << m << ", " << n << ") = " << gotf << ", want " << want;
      }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " elements of C differ";
  }

  auto check = [&](const char* name, const guarded& buf, std::int64_t n, const std::vector<double>& want,
                   auto tol, std::vector<float>* out) {
    auto h = buf.read();
    EXPECT_EQ(guarded::guard_changes(h, n * 4), 0) << what << ": bytes around " << name << " changed";
    auto got = floats_of(h, n);
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const bool ok = exact ? double(got[i]) == want[i] : std::fabs(double(got[i]) - want[i]) <= tol(i);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << what << ": " << name << "[" << i << "] = " << got[i] << ", want " << want[i]
                      << " (tolerance " << (exact ? 0.0 : tol(i)) << ")";
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << n << " elements of " << name << " differ";
    if (out) *out = got;
  };
  std::vector<float> amax1, sum1, cmax1;
  check("rowamax", damax, M, rowamax, [&](std::int64_t i) { return 1e-5 * rowmaxscale[i] + 1e-6; }, &amax1);
  check("rowsum", dsum, M, rowsum, [&](std::int64_t i) { return 2e-5 * rowscale[i] + 1e-5; }, &sum1);
  check("colmax", dcmax, N, colmax, [&](std::int64_t i) { return 1e-5 * colscale[i] + 1e-6; }, &cmax1);

  // Determinism of max and amax: the same bits from a second launch.
  init();
  launch();
  EXPECT_EQ(std::memcmp(floats_of(damax.read(), M).data(), amax1.data(), M * 4), 0)
      << what << ": rowamax differs between two launches";
  EXPECT_EQ(std::memcmp(floats_of(dcmax.read(), N).data(), cmax1.data(), N * 4), 0)
      << what << ": colmax differs between two launches";
  // The outputs accumulate: a third launch without re-initialising.
  launch();
  EXPECT_EQ(std::memcmp(floats_of(damax.read(), M).data(), amax1.data(), M * 4), 0)
      << what << ": rowamax changed when combined with itself";
  EXPECT_EQ(std::memcmp(floats_of(dcmax.read(), N).data(), cmax1.data(), N * 4), 0)
      << what << ": colmax changed when combined with itself";
  if (exact) {
    auto sum3 = floats_of(dsum.read(), M);
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < M; ++i) bad += double(sum3[i]) != 2 * rowsum[i];
    EXPECT_EQ(bad, 0) << what << ": rowsum after two launches is not twice the sum";
  }
}

TEST_P(ReduceGemm, RowAmaxRowSumColumnMaxExact) {
  TESSEL_REQUIRE_GPU();
  run_reduce(GetParam(), {200, 304, 192}, /*exact=*/true);
  run_reduce(GetParam(), {333, 97, 128}, /*exact=*/true);
}

TEST_P(ReduceGemm, RowAmaxRowSumColumnMaxRandom) {
  TESSEL_REQUIRE_GPU();
  run_reduce(GetParam(), {200, 304, 192}, /*exact=*/false);
  run_reduce(GetParam(), {333, 97, 128}, /*exact=*/false);
}

/// Leaves NaN in the operand ring of every SM (as far as the GPU keeps shared memory from one
/// launch to the next, which it does not promise): the kernel once over NaN operands whose tiles
/// are all whole.
void stale_nan_ring(const ts::kernel& k) {
  const std::int64_t M = 1024, N = 1024, K = 512;
  tb::device_buffer da(M * K * 2), db(N * K * 2), dbias(N * 2), dc(M * N * 2), d1(M * 4), d2(M * 4), d3(N * 4);
  for (const tb::device_buffer* d : {&da, &db, &dbias})
    ASSERT_EQ(cudaMemset(d->get(), 0xFF, d->bytes()), cudaSuccess);  // bf16 NaN
  k.launch(nullptr, ts::grid{unsigned(M / 128), unsigned(N / 128)}, ts::view<ts::bf16>(da.get(), {M, K}),
           ts::view<ts::bf16>(db.get(), {N, K}), ts::view<ts::bf16>(dbias.get(), {N}),
           ts::view<ts::bf16>(dc.get(), {M, N}), ts::view<ts::f32>(d1.get(), {M}), ts::view<ts::f32>(d2.get(), {M}),
           ts::view<ts::f32>(d3.get(), {N}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Tiles taller or wider than the tensor (M < BM, N < BN) load boxes clipped to its rows
// (Ring.cpp): the ring rows past them keep whatever an earlier launch left there, here NaN.
// Those rows only reach accumulator rows / columns that no store writes and every reduction
// leaves out: C, the row and column reductions stay exact.
TEST_P(ReduceGemm, ClippedBoxesOverStaleSharedMemory) {
  TESSEL_REQUIRE_GPU();
  const config& cfg = GetParam();
  auto& ck = reduce_kernel(cfg);
  ASSERT_TRUE(ck.kernel) << ck.error;
  for (shape s : {shape{13, 304, 576}, shape{200, 40, 320}, shape{5, 3, 200}, shape{64, 128, 1024}}) {
    stale_nan_ring(*ck.kernel);
    run_reduce(cfg, s, /*exact=*/true);
    stale_nan_ring(*ck.kernel);
    run_reduce(cfg, s, /*exact=*/false);
  }
}

// A NaN in row r of A makes row r of Y NaN: rowamax[r], rowsum[r] and every colmax[j] are NaN;
// the other rows are unaffected.
TEST_P(ReduceGemm, NaNPropagates) {
  TESSEL_REQUIRE_GPU();
  const config& cfg = GetParam();
  auto& ck = reduce_kernel(cfg);
  ASSERT_TRUE(ck.kernel) << ck.error;
  const ts::kernel& k = *ck.kernel;
  const std::int64_t M = 200, N = 304, K = 192, ld = N, nanRow = 131;
  std::vector<std::uint16_t> a(M * K, tb::float_to_bf16(1.0f)), b(N * K, tb::float_to_bf16(-1.0f)),
      bias(N, tb::float_to_bf16(0.0f));
  a[nanRow * K + 5] = 0x7FC0;  // bf16 NaN
  tb::device_buffer da(M * K * 2), db(N * K * 2), dbias(N * 2), dc(M * ld * 2);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), M * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), N * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dbias.get(), bias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  guarded damax(M * 4), dsum(M * 4), dcmax(N * 4);
  fill_f32(damax, 0.0f, M);
  fill_f32(dsum, 0.0f, M);
  fill_f32(dcmax, -std::numeric_limits<float>::infinity(), N);
  const ts::grid g{unsigned((M + 127) / 128), unsigned((N + 127) / 128)};
  k.launch(nullptr, g, ts::view<ts::bf16>(da.get(), {M, K}), ts::view<ts::bf16>(db.get(), {N, K}),
           ts::view<ts::bf16>(dbias.get(), {N}), ts::view<ts::bf16>(dc.get(), {M, N}),
           ts::view<ts::f32>(damax.data(), {M}), ts::view<ts::f32>(dsum.data(), {M}),
           ts::view<ts::f32>(dcmax.data(), {N}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto amax = floats_of(damax.read(), M), sum = floats_of(dsum.read(), M), cmax = floats_of(dcmax.read(), N);
  // Every other element of Y is -K: amax K, sum -K N, colmax -K.
  for (std::int64_t i = 0; i < M; ++i) {
    if (i == nanRow) {
      EXPECT_TRUE(std::isnan(amax[i])) << label(cfg) << ": rowamax[" << i << "] = " << amax[i];
      EXPECT_TRUE(std::isnan(sum[i])) << label(cfg) << ": rowsum[" << i << "] = " << sum[i];
    } else {
      EXPECT_EQ(amax[i], float(K)) << label(cfg) << ": rowamax[" << i << "]";
      EXPECT_EQ(sum[i], -float(K * N)) << label(cfg) << ": rowsum[" << i << "]";
    }
  }
  for (std::int64_t j = 0; j < N; ++j)
    EXPECT_TRUE(std::isnan(cmax[j])) << label(cfg) << ": colmax[" << j << "] = " << cmax[j];
}

TEST_P(ReduceGemm, PreActivationAndActivation) {
  TESSEL_REQUIRE_GPU();
  const config& cfg = GetParam();
  auto& ck = tessel_gpu_test::cached("reduce_two_outputs:" + label(cfg), [&] {
    return ts::jit(tessel_test::gemm_bias_gelu_two_outputs<128, 128>{}, options_for(cfg));
  });
  ASSERT_TRUE(ck.kernel) << ck.error;
  const ts::kernel& k = *ck.kernel;
  const std::int64_t M = 200, N = 304, K = 192, ld = N + 8;
  std::mt19937 rng(std::uint32_t(31 + int(cfg.schedule) * 5 + int(cfg.decomposition)));
  std::uniform_int_distribution<int> small(-2, 2), bint(-4, 4);
  std::vector<std::uint16_t> a(M * K), b(N * K), bias(N);
  for (auto& x : a) x = tb::float_to_bf16(float(small(rng)));
  for (auto& x : b) x = tb::float_to_bf16(float(small(rng)));
  for (auto& x : bias) x = tb::float_to_bf16(float(bint(rng)) / 4);
  tb::device_buffer da(M * K * 2), db(N * K * 2), dbias(N * 2);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), M * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), N * K * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dbias.get(), bias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  guarded dz(M * ld * 2), dy(M * ld * 2);
  for (guarded* o : {&dz, &dy}) {
    ASSERT_EQ(cudaMemset(o->buf.get(), kSentinel, o->buf.bytes()), cudaSuccess);
    ASSERT_EQ(cudaMemset2D(o->data(), ld * 2, 0xFF, N * 2, M), cudaSuccess);
  }
  const ts::grid g{unsigned((M + 127) / 128), unsigned((N + 127) / 128)};
  k.launch(nullptr, g, ts::view<ts::bf16>(da.get(), {M, K}), ts::view<ts::bf16>(db.get(), {N, K}),
           ts::view<ts::bf16>(dbias.get(), {N}), ts::view<ts::bf16>(dz.data(), {M, N}, {ld, 1}),
           ts::view<ts::bf16>(dy.data(), {M, N}, {ld, 1}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto hz = dz.read(), hy = dy.read();
  std::int64_t outside = 0, bad = 0;
  for (const auto* h : {&hz, &hy})
    for (std::int64_t i = 0; i < std::int64_t(h->size()); ++i) {
      std::int64_t rel = i - kGuard;
      bool inside = rel >= 0 && rel < M * ld * 2 && (rel / 2) % ld < N;
      if (!inside && (*h)[i] != kSentinel) ++outside;
    }
  EXPECT_EQ(outside, 0) << label(cfg) << ": bytes outside Z or Y changed";
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double z = tb::bf16_to_float(bias[n]);
      for (std::int64_t kk = 0; kk < K; ++kk)
        z += double(tb::bf16_to_float(a[m * K + kk])) * tb::bf16_to_float(b[n * K + kk]);
      const double gy = 0.5 * z * (1 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
      std::uint16_t gotz, goty;
      std::memcpy(&gotz, hz.data() + kGuard + (m * ld + n) * 2, 2);
      std::memcpy(&goty, hy.data() + kGuard + (m * ld + n) * 2, 2);
      const bool okz = gotz == tb::float_to_bf16(float(z));
      const bool oky = std::fabs(tb::bf16_to_float(goty) - gy) <= 2e-3 + std::fabs(gy) / 128;
      if ((!okz || !oky) && bad++ < 5)
        ADD_FAILURE() << label(cfg) << ": (" << m << ", " << n << ") Z = " << tb::bf16_to_float(gotz) << " Y = "
                      << tb::bf16_to_float(goty) << ", want Z = " << z << " Y = " << gy;
    }
  EXPECT_EQ(bad, 0) << label(cfg) << ": " << bad << " elements differ";
}

// ---- a kernel without a dot -----------------------------------------------------------------------
//
// tessel_test::elementwise_row_stats: per 64 x 128 tile of X, row sums, row amaxes and column
// maxima through shared memory (docs/reductions.md, "Kernels without a dot"). X holds integer bf16
// values in [-4, 4] (every partial sum exact in f32), M x N = 200 x 300 (partial tiles on both
// axes: the elements outside X are left out, which an all-negative column's maximum shows: rows
// 200..255 of the last tile row must not count as zeros), and a row of zeros elsewhere. Each vector sits
// between sentinel guards; rowsum and rowamax start at 0, colmax at -inf.
TEST(ElementwiseReduce, RowSumsRowAmaxesAndColumnMaximaAreExact) {
  TESSEL_REQUIRE_GPU();
  const std::int64_t M = 200, N = 300;
  ts::kernel k = ts::jit(tessel_test::elementwise_row_stats{});
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> v(-4, 4);
  std::vector<std::uint16_t> x(M * N);
  std::vector<float> xf(M * N);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      float f = j == 5 ? float(-1 - (v(rng) + 4) % 4) : i == 7 ? 0.f : float(v(rng));
      xf[i * N + j] = f;
      x[i * N + j] = tb::float_to_bf16(f);
    }
  tb::device_buffer X(M * N * 2);
  ASSERT_EQ(cudaMemcpy(X.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  guarded sum(M * 4), amax(M * 4), cmax(N * 4);
  fill_f32(sum, 0.f, M);
  fill_f32(amax, 0.f, M);
  fill_f32(cmax, -std::numeric_limits<float>::infinity(), N);
  const ts::grid g{unsigned(ts::cdiv(M, std::int64_t(64))), unsigned(ts::cdiv(N, std::int64_t(128)))};
  ASSERT_NO_THROW(k.launch(nullptr, g, ts::view<ts::bf16>(X.get(), {M, N}), ts::view<ts::f32>(sum.data(), {M}),
                           ts::view<ts::f32>(amax.data(), {M}), ts::view<ts::f32>(cmax.data(), {N})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const auto hs = sum.read(), ha = amax.read(), hc = cmax.read();
  EXPECT_EQ(guarded::guard_changes(hs, M * 4), 0);
  EXPECT_EQ(guarded::guard_changes(ha, M * 4), 0);
  EXPECT_EQ(guarded::guard_changes(hc, N * 4), 0);
  const std::vector<float> gs = floats_of(hs, M), ga = floats_of(ha, M), gc = floats_of(hc, N);
  int bad = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    float s = 0, a = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      s += xf[i * N + j];
      a = std::max(a, std::fabs(xf[i * N + j]));
    }
    if ((gs[i] != s || ga[i] != a) && bad++ < 8)
      ADD_FAILURE() << "row " << i << ": sum " << gs[i] << " (want " << s << "), amax " << ga[i] << " (want " << a
                    << ")";
  }
  for (std::int64_t j = 0; j < N; ++j) {
    float c = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < M; ++i)
      c = std::max(c, xf[i * N + j]);
    if (gc[j] != c && bad++ < 16)
      ADD_FAILURE() << "column " << j << ": max " << gc[j] << " (want " << c << ")";
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllSchedules, ReduceGemm,
    ::testing::Values(config{ts::schedule::multistage, ts::decomposition::automatic},
                      config{ts::schedule::tma, ts::decomposition::automatic},
                      config{ts::schedule::warp_specialized, ts::decomposition::automatic},
                      config{ts::schedule::cooperative, ts::decomposition::automatic},
                      config{ts::schedule::cooperative, ts::decomposition::data_parallel},
                      config{ts::schedule::pingpong, ts::decomposition::automatic},
                      config{ts::schedule::pingpong, ts::decomposition::data_parallel}),
    [](const ::testing::TestParamInfo<config>& i) { return label(i.param); });

}  // namespace
