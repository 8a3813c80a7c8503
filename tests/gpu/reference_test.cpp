// reference_test.cpp - tests of the measuring instruments themselves (tools/tessel-bench/bench_util):
// the cuBLASLt reference against a CPU GEMM, the random fill, NaN poisoning, the comparison and
// mismatch kernels, guarded outputs, and the interleaved timer. No tessel code: if these fail, no tessel GPU test
// or benchmark number can be trusted.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"

namespace tb = tessel_bench;
using tessel_gpu_test::cublas;
using tessel_gpu_test::device;

namespace {

// Full CPU GEMM (double) of a problem's set 0, with bias + relu when it has a bias.
std::vector<double> cpu_gemm(const tb::gemm_problem& p) {
  auto a = tb::to_host_bf16(p.A(0), std::size_t(p.M * p.K));
  auto b = tb::to_host_bf16(p.B(0), std::size_t(p.N * p.K));
  std::vector<std::uint16_t> bias;
  if (p.with_bias()) bias = tb::to_host_bf16(p.bias(0), std::size_t(p.N));
  std::vector<float> af(a.size()), bf(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) af[i] = tb::bf16_to_float(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) bf[i] = tb::bf16_to_float(b[i]);
  std::vector<double> c(std::size_t(p.M * p.N));
  for (std::int64_t m = 0; m < p.M; ++m)
    for (std::int64_t n = 0; n < p.N; ++n) {
      double acc = 0;
      for (std::int64_t k = 0; k < p.K; ++k) acc += double(af[m * p.K + k]) * double(bf[n * p.K + k]);
      if (p.with_bias()) acc = std::max(acc + double(tb::bf16_to_float(bias[n])), 0.0);
      c[m * p.N + n] = acc;
    }
  return c;
}

}  // namespace

TEST(Host, Bf16RoundTrip) {
  EXPECT_EQ(tb::float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(tb::float_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(tb::bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(tb::float_to_bf16(1.0f + 1.0f / 256), 0x3f80);   // tie -> even
  EXPECT_EQ(tb::float_to_bf16(1.0f + 3.0f / 256), 0x3f82);   // tie -> even (up)
  EXPECT_TRUE(std::isnan(tb::bf16_to_float(0xffff)));
  EXPECT_TRUE(std::isnan(tb::bf16_to_float(tb::float_to_bf16(NAN))));
}

TEST(Host, RotationSets) {
  const std::size_t L2 = 50u << 20;
  EXPECT_EQ(tb::rotation_sets(384u << 20, L2, 3, 24ull << 30), 3);           // 8192^3: 3 sets
  EXPECT_EQ(tb::rotation_sets(24u << 20, L2, 3, 24ull << 30), 6);            // 2048^3: others > 2x L2
  EXPECT_EQ(tb::rotation_sets(1u << 20, L2, 3, 0), 1);                       // tests: one set
  EXPECT_GE((tb::rotation_sets(24u << 20, L2, 3, 24ull << 30) - 1) * (24u << 20), 2 * L2);
}

TEST(Host, GemmLayoutNamesAndStrides) {
  // BLAS names: letter 1 is A (T = K-contiguous), letter 2 is B (N = K-contiguous).
  const tb::gemm_layout tn = tb::gemm_layout::parse("TN"), nt = tb::gemm_layout::parse("nt");
  EXPECT_TRUE(tn == tb::gemm_layout{});
  EXPECT_EQ(nt.str(), "NT");
  EXPECT_FALSE(nt.a_k_contiguous);
  EXPECT_FALSE(nt.b_k_contiguous);
  EXPECT_EQ(tb::gemm_layout::parse("TT").str(), "TT");
  EXPECT_EQ(tb::gemm_layout::parse("NN").str(), "NN");
  // M x K A: row-major {K, 1}, or M-contiguous {1, M}; N x K B likewise.
  EXPECT_EQ(tn.a_strides(300, 200), (std::array<std::int64_t, 2>{200, 1}));
  EXPECT_EQ(nt.a_strides(300, 200), (std::array<std::int64_t, 2>{1, 300}));
  EXPECT_EQ(nt.b_strides(100, 200), (std::array<std::int64_t, 2>{1, 100}));
  EXPECT_THROW(tb::gemm_layout::parse("TX"), std::invalid_argument);
  EXPECT_THROW(tb::gemm_layout::parse("TNN"), std::invalid_argument);
}

TEST(Host, GuardedLayouts) {
  EXPECT_EQ(tb::padded_ld(17), 32);  // 16-byte rows, 15 elements of padding at least
  EXPECT_EQ(tb::padded_ld(16), 24);
  EXPECT_EQ(tb::padded_ld(17, 4), 24);
  EXPECT_EQ(tb::misaligned_ld(17), 18);
  EXPECT_EQ(tb::misaligned_ld(7), 9);  // 8 elements would be 16 bytes
  EXPECT_EQ(tb::misaligned_ld(7, 4), 9);
  const tb::guarded_layout l = tb::guarded_matrix(3, 17, 24), m = tb::guarded_matrix(3, 17, 24, 2, false, 2, 80);
  EXPECT_EQ(l.front * 2 % 16, 0);
  EXPECT_EQ(m.front, l.front + 1);
  EXPECT_EQ(l.batch_stride, 72);
  EXPECT_EQ(m.batch_stride, 80);
  EXPECT_GT(l.back, 0);
  EXPECT_THROW(tb::guarded_matrix(3, 17, 16), std::invalid_argument);
}

/// Sets `count` elements of 2 bytes at element `at` of `out` (relative to element (0, 0)) to 0.
void zero(const tb::guarded_output& out, std::int64_t at, std::int64_t count) {
  TB_CUDA(cudaMemset(static_cast<char*>(out.data()) + at * 2, 0, std::size_t(count) * 2));
}

TEST(Guard, ReportsWritesOutsideTheOutputAndUnwrittenElements) {
  TESSEL_REQUIRE_GPU();
  // C 2 x 17 bf16 in rows of 24 (the TMA-store overrun: a row written up to its 16-byte boundary).
  tb::guarded_output out(tb::guarded_matrix(2, 17, 24));
  out.reset();
  tb::guard_report g = out.check();
  EXPECT_EQ(g.unwritten, 34u);
  EXPECT_EQ(g.clobbered, 0u);
  zero(out, 0, 17);
  zero(out, 24, 17);
  g = out.check();
  EXPECT_TRUE(g.ok()) << g.str();
  EXPECT_EQ(out.bits(0, 1, 16), 0u);
  zero(out, 17, 7);
  g = out.check();
  EXPECT_EQ(g.clobbered, 7u);
  EXPECT_NE(g.detail.find("row 0, col 17 (1 past the row's end) = 0x0000"), std::string::npos) << g.detail;
  out.reset();
  zero(out, -1, 17);  // the element before C, and row 0 but its last element
  zero(out, 24, 18);  // row 1 and the element after it
  g = out.check();
  EXPECT_EQ(g.clobbered, 2u);
  EXPECT_EQ(g.unwritten, 1u);
  EXPECT_NE(g.detail.find("front guard, 1 before element (0, 0)"), std::string::npos) << g.detail;
  EXPECT_NE(g.detail.find("back guard, 1 past the last element"), std::string::npos) << g.detail;
  EXPECT_NE(g.detail.find("never written: (b, row, col) (0, 0, 16)"), std::string::npos) << g.detail;
  // Dense copy of the rows.
  tb::device_buffer dense(2 * 17 * 2);
  out.copy_to_dense(dense.get());
  const auto h = tb::to_host_bf16(dense.get(), 34);
  EXPECT_EQ(h[16], 0xffff);  // never written
  EXPECT_EQ(h[17], 0);
}

TEST(Guard, ColumnMajorAndBatchedOutputs) {
  TESSEL_REQUIRE_GPU();
  // 3 x 2, columns 5 apart: element (r, c) at 5c + r.
  tb::guarded_layout cm;
  cm.rows = 3;
  cm.cols = 2;
  cm.row_stride = 1;
  cm.col_stride = 5;
  cm.front = 8;
  cm.back = 8;
  tb::guarded_output out(cm);
  out.reset();
  zero(out, 0, 4);  // column 0 and the element after it
  tb::guard_report g = out.check();
  EXPECT_EQ(g.clobbered, 1u);
  EXPECT_EQ(g.unwritten, 3u);
  EXPECT_NE(g.detail.find("col 0, row 3 (1 past the column's end)"), std::string::npos) << g.detail;
  EXPECT_NE(g.detail.find("(0, 0, 1)"), std::string::npos) << g.detail;
  // Two 2 x 3 matrices in rows of 4, 10 apart: the gap after matrix 0 is guarded too.
  tb::guarded_output b(tb::guarded_matrix(2, 3, 4, 2, true, 2, 10));
  b.reset();
  zero(b, 0, 3);
  zero(b, 4, 3);
  zero(b, 10, 3);
  zero(b, 14, 3);
  EXPECT_TRUE(b.check().ok()) << b.check().str();
  zero(b, 8, 1);
  g = b.check();
  EXPECT_EQ(g.clobbered, 1u);
  EXPECT_NE(g.detail.find("matrix 0, row 1, col 4 (2 past the row's end)"), std::string::npos) << g.detail;
}

TEST(Reference, CublasLtMatchesCpuExactly) {
  TESSEL_REQUIRE_GPU();
  // Non-square, nothing a multiple of anything, so that a transposed or mis-strided reference fails.
  for (auto [M, N, K] : {std::tuple<int, int, int>{200, 300, 72}, {7, 9, 8}, {129, 257, 136}, {64, 48, 1000}}) {
    SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
    tb::gemm_problem p(M, N, K, false, device(), 5, 1, 0);
    const float* ref = p.reference(cublas());
    std::vector<float> r(std::size_t(M * N));
    ASSERT_EQ(cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    auto want = cpu_gemm(p);
    double err2 = 0, ref2 = 0, worst = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      err2 += (r[i] - want[i]) * (r[i] - want[i]);
      ref2 += want[i] * want[i];
      worst = std::max(worst, std::abs(r[i] - want[i]));
    }
    EXPECT_LT(std::sqrt(err2 / ref2), 1e-5) << "f32 cuBLASLt vs double CPU";
    EXPECT_LT(worst, 1e-3);

    // bf16 output of the same GEMM: only rounding differs (relative ~2^-9).
    tb::lt_gemm g(cublas(), M, N, K, tb::out_type::bf16);
    p.poison(0);
    g.run(p.A(0), p.B(0), p.C(0));
    auto st = p.check_set0(cublas());
    EXPECT_TRUE(st.ok(1e-2)) << st.str();
    EXPECT_GT(st.rel_err, 1e-4) << "bf16 output should show rounding";
    EXPECT_LT(st.rel_err, 5e-3);
  }
}

TEST(Reference, BiasReluEpilogueMatchesCpu) {
  TESSEL_REQUIRE_GPU();
  const int M = 200, N = 300, K = 72;
  tb::gemm_problem p(M, N, K, true, device(), 6, 1, 0);
  const float* ref = p.reference(cublas());  // f32 GEMM + bias_relu_f32_inplace
  std::vector<float> r(std::size_t(M * N));
  ASSERT_EQ(cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  auto want = cpu_gemm(p);
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    ASSERT_NEAR(r[i], want[i], 1e-4 + 1e-5 * std::abs(want[i])) << "at " << i;
    zeros += want[i] == 0;
  }
  EXPECT_GT(zeros, r.size() / 4) << "relu should zero about half";
  EXPECT_LT(zeros, 3 * r.size() / 4);
  // cuBLASLt's fused RELU_BIAS epilogue (what the fused benchmarks time) agrees.
  tb::lt_gemm g(cublas(), M, N, K, tb::out_type::bf16, tb::epilogue::bias_relu, p.bias(0));
  p.poison(0);
  g.run(p.A(0), p.B(0), p.C(0));
  auto st = p.check_set0(cublas());
  EXPECT_TRUE(st.ok(1e-2)) << st.str();
}

TEST(Reference, LargeShapeSampledAgainstCpu) {
  TESSEL_REQUIRE_GPU();
  tb::gemm_problem p(3000, 5000, 2000, false, device(), 8, 1, 0);
  const float* ref = p.reference(cublas());
  tb::lt_gemm g(cublas(), p.M, p.N, p.K, tb::out_type::bf16);
  p.poison(0);
  g.run(p.A(0), p.B(0), p.C(0));
  for (const auto& s : tessel_gpu_test::cpu_samples(p, ref, 128, 256)) {
    EXPECT_NEAR(s.ref_f32, s.want, 1e-3 * std::abs(s.want) + 1e-4 * std::sqrt(double(p.K)));
    EXPECT_NEAR(s.got, s.want, tessel_gpu_test::sample_tol(s.want, p.K));
  }
}

TEST(Fill, UniformNonZeroDeterministic) {
  TESSEL_REQUIRE_GPU();
  const std::size_t n = 1 << 22;
  tb::device_buffer a(n * 2), b(n * 2), c(n * 2);
  tb::fill_uniform_bf16(a.get(), n, 42);
  tb::fill_uniform_bf16(b.get(), n, 42);
  tb::fill_uniform_bf16(c.get(), n, 43);
  EXPECT_EQ(tb::count_mismatched_u16(a.get(), b.get(), n), 0u) << "same seed, same values";
  EXPECT_GT(tb::count_mismatched_u16(a.get(), c.get(), n), n * 9 / 10) << "another seed, other values";
  auto h = tb::to_host_bf16(a.get(), n);
  double sum = 0, sum2 = 0, lo = 1, hi = -1;
  std::size_t zeros = 0;
  for (auto v : h) {
    double x = tb::bf16_to_float(v);
    zeros += x == 0;
    sum += x;
    sum2 += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_EQ(zeros, 0u);
  EXPECT_GE(lo, -1.0);
  EXPECT_LE(hi, 1.0);
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
  EXPECT_NEAR(sum / n, 0.0, 3e-3);
  EXPECT_NEAR(sum2 / n, 1.0 / 3.0, 3e-3);
}

TEST(Compare, PoisonIsNaNAndDetected) {
  TESSEL_REQUIRE_GPU();
  const std::size_t n = 100003;
  tb::device_buffer t(n * 2), r(n * 4);
  tb::fill_uniform_f32(r.as<float>(), n, 1);
  tb::poison_nan(t.get(), t.bytes());
  auto st = tb::compare_bf16_f32(t.get(), r.as<float>(), n);
  EXPECT_EQ(st.nonfinite, n);
  EXPECT_EQ(st.first_nonfinite, 0);
  EXPECT_FALSE(st.ok(1e-2));
}

TEST(Compare, RelativeErrorIsExact) {
  TESSEL_REQUIRE_GPU();
  // test = bf16(ref) on a ref that is exactly representable in bf16: error 0; then one element off.
  const std::size_t n = 4096;
  std::vector<float> ref(n);
  std::vector<std::uint16_t> test(n);
  for (std::size_t i = 0; i < n; ++i) {
    ref[i] = float(int(i % 17) - 8);  // small integers: exact in bf16
    test[i] = tb::float_to_bf16(ref[i]);
  }
  tb::device_buffer dt(n * 2), dr(n * 4);
  ASSERT_EQ(cudaMemcpy(dr.get(), ref.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dt.get(), test.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  auto st = tb::compare_bf16_f32(dt.get(), dr.as<float>(), n);
  EXPECT_EQ(st.rel_err, 0.0);
  EXPECT_EQ(st.nonfinite, 0u);
  double ref2 = 0;
  for (float v : ref) ref2 += double(v) * v;
  test[100] = tb::float_to_bf16(ref[100] + 4.0f);
  test[200] = 0xffff;  // one NaN
  ASSERT_EQ(cudaMemcpy(dt.get(), test.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  st = tb::compare_bf16_f32(dt.get(), dr.as<float>(), n);
  EXPECT_NEAR(st.rel_err, 4.0 / std::sqrt(ref2), 1e-12);
  EXPECT_EQ(st.max_abs_err, 4.0);
  EXPECT_EQ(st.nonfinite, 1u);
  EXPECT_EQ(st.first_nonfinite, 200);
  tb::device_buffer d2(n * 2);
  ASSERT_EQ(cudaMemcpy(d2.get(), dt.get(), n * 2, cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(tb::count_mismatched_u16(dt.get(), d2.get(), n), 0u);
  test[5] ^= 1;
  ASSERT_EQ(cudaMemcpy(d2.get(), test.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(tb::count_mismatched_u16(dt.get(), d2.get(), n), 1u);
}

TEST(Timing, SpinAndInterleavedTimerAreConsistent) {
  TESSEL_REQUIRE_GPU();
  tb::nvml_probe nvml(device());
  std::printf("  NVML: %s\n", nvml.available() ? ("SM clock " + std::to_string(nvml.sm_clock_mhz()) + " MHz").c_str()
                                                : nvml.why().c_str());
  // A spin of 2 ms is timed as 2 ms.
  tb::timing_config cfg;
  cfg.batch = 5;
  cfg.repeats = 5;
  cfg.warmup_ms = 50;
  cfg.min_batch_ms = 0;
  auto spin = tb::time_interleaved({[](int, cudaStream_t s) { tb::gpu_spin(2000, s); }}, cfg, nullptr, &nvml);
  EXPECT_NEAR(spin[0].median_ms, 2.0, 0.1);
  // The same cuBLASLt GEMM timed as two candidates: the ratio is about 1 (position bias, rotation).
  tb::gemm_problem p(4096, 4096, 4096, false, device(), 3);
  EXPECT_GE(p.sets(), 3);
  tb::lt_gemm g(cublas(), p.M, p.N, p.K, tb::out_type::bf16);
  tb::launch_fn f = [&](int i, cudaStream_t s) { g.run(p.A(i), p.B(i), p.C(i), s); };
  cfg = tb::timing_config{};
  cfg.warmup_ms = 300;
  auto t = tb::time_interleaved({f, f}, cfg, nullptr, &nvml);
  double r = t[0].median_ms / t[1].median_ms;
  std::printf("  cuBLASLt 4096^3 twice: %.1f / %.1f TFLOP/s (ratio %.3f), batch %d, SM %u/%u MHz, host %.1f us/launch\n",
              tb::tflops(p.flops(), t[0].median_ms), tb::tflops(p.flops(), t[1].median_ms), r, t[0].batch,
              t[0].median_sm_mhz, t[1].median_sm_mhz, t[0].enqueue_us);
  EXPECT_NEAR(r, 1.0, 0.05);
  EXPECT_GT(tb::tflops(p.flops(), t[0].median_ms), 300.0) << "cuBLASLt bf16 4096^3 on an H100/H200 runs at 600-800";
}
