// batched_test.cpp - batched GEMM through rank-3 tensors and program_id(2), in every schedule.
//
// The tile program takes matrix program_id(2) of rank-3 A [batch, M, K], B [batch, N, K] and
// C [batch, M, N] (lower-rank tiles: A.load({b, m, k}, BM, BK)). Each case: random bf16 inputs in
// [-1, 1) (never zero), C poisoned with NaN inside a sentinel-filled buffer (bench_util.h,
// guarded_output; rows padded to a 16-byte multiple, or, when M + N is odd, one element longer
// than N and not 16-byte multiples), one launch; nothing outside C may change, and every element
// of every matrix is compared with a CPU reference in double. Batch strides are padded (not M*K)
// so that a kernel that ignored the batch stride, or read matrix 0 for every batch, fails.
// BatchedResidual: a rank-3 epilogue operand R[b] (3-d TMA prefetch) and the 3-d TMA store.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.h"
#include "fuzz_kernels.hpp"
#include "gpu_test_util.hpp"
#include "scoped_env.hpp"
#include "tessel_gemm.hpp"

#include <tessel/tessel.hpp>

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

using tessel_fuzz::batched_gemm;  // C[b] = A[b] @ B[b]^T, one matrix of the batch per program_id(2)

struct batched_case {
  ts::schedule schedule;
  int bk;  ///< 64 (wgmma schedules) or 32 (multistage's 128x128x32 tile)
  std::int64_t batch, m, n, k;
  bool a_mn = false, b_mn = false;  ///< each matrix of A (B) M- (N-) contiguous: a layout variant
  int swizzle = 0;                  ///< options::swizzle
  std::int64_t batch_pad = 0;       ///< extra elements between A's (and B's) matrices
};

std::string case_name(const ::testing::TestParamInfo<batched_case>& info) {
  const batched_case& c = info.param;
  std::string s = tb::schedule_name(c.schedule);
  return s + "_bk" + std::to_string(c.bk) + (c.batch_pad ? "_pad" + std::to_string(c.batch_pad) : "") + "_" +
         (c.a_mn ? "N" : "T") + (c.b_mn ? "T" : "N") + "_sw" +
         (c.swizzle < 0 ? std::string("none") : std::to_string(c.swizzle)) + "_" + std::to_string(c.batch) + "x" +
         std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
}

ts::kernel compile(const batched_case& c) {
  ts::options o;
  o.schedule = c.schedule;
  o.swizzle = c.swizzle;
  if (c.bk == 32) return ts::jit(batched_gemm<128, 128, 32>{}, o);
  return ts::jit(batched_gemm<128, 128, 64>{}, o);
}

std::vector<float> to_float(const std::vector<std::uint16_t>& v) {
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = tb::bf16_to_float(v[i]);
  return f;
}

/// Every element of every matrix of C against `want(z, i, j)` (a double reference of a K-deep dot
/// product), within tessel_gpu_test::sample_tol; the first 8 differences are reported.
template <class Want>
void expect_matches(const tb::guarded_output& C, std::int64_t batch, std::int64_t m, std::int64_t n,
                    std::int64_t k, Want want) {
  int bad = 0;
  for (std::int64_t z = 0; z < batch; ++z)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double w = want(z, i, j);
        float got = tb::bf16_to_float(std::uint16_t(C.bits(z, i, j)));
        double tol = tessel_gpu_test::sample_tol(w, k);
        if (!(std::abs(got - w) <= tol) && bad++ < 8)
          ADD_FAILURE() << "C[" << z << "][" << i << "][" << j << "] = " << got << ", CPU " << w << " (tol " << tol
                        << ")";
      }
  EXPECT_EQ(bad, 0) << bad << " elements differ from the CPU reference";
}

class BatchedGemm : public ::testing::TestWithParam<batched_case> {};

TEST_P(BatchedGemm, EveryMatrixMatchesCpu) {
  TESSEL_REQUIRE_GPU();
  const batched_case& c = GetParam();
  ts::kernel k;
  ASSERT_NO_THROW(k = compile(c));

  // Padded batch strides: one extra row (A, B) or 8 extra elements (C) between matrices. Each
  // matrix of A is M x K with leading dimension ldA (K, or M when M-contiguous), likewise B.
  const std::int64_t ldA = c.a_mn ? c.m : c.k, ldB = c.b_mn ? c.n : c.k;
  const std::int64_t ldC = (c.m + c.n) % 2 ? tb::misaligned_ld(c.n) : tb::padded_ld(c.n);
  const std::int64_t sA = (c.a_mn ? c.k + 1 : c.m + 1) * ldA + c.batch_pad,
                     sB = (c.b_mn ? c.k + 1 : c.n + 1) * ldB + c.batch_pad, sC = c.m * ldC + 8;
  // Element (i, kk) of matrix z: z * sA + i * rA + kk * kA.
  const std::int64_t rA = c.a_mn ? 1 : c.k, kA = c.a_mn ? c.m : 1, rB = c.b_mn ? 1 : c.k, kB = c.b_mn ? c.n : 1;
  const std::size_t nA = std::size_t(c.batch * sA), nB = std::size_t(c.batch * sB);
  tb::device_buffer A(nA * 2), B(nB * 2);
  tb::guarded_output C(tb::guarded_matrix(c.m, c.n, ldC, 2, true, c.batch, sC));
  tb::fill_uniform_bf16(A.get(), nA, 11 + c.m);
  tb::fill_uniform_bf16(B.get(), nB, 23 + c.n);
  C.reset();

  const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(128))), unsigned(ts::cdiv(c.n, std::int64_t(128))),
                      unsigned(c.batch)};
  // MN-major matrices here meet TMA's rules: their layout variant itself must run (no fallback).
  tessel_test::scoped_env policy("TESSEL_FALLBACK",
                                 (c.a_mn || c.b_mn) && c.schedule != ts::schedule::multistage ? "error" : nullptr);
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {c.batch, c.m, c.k}, {sA, rA, kA}),
                           ts::view<ts::bf16>(B.get(), {c.batch, c.n, c.k}, {sB, rB, kB}),
                           ts::view<ts::bf16>(C.data(), {c.batch, c.m, c.n}, {sC, ldC, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());

  std::vector<float> a = to_float(tb::to_host_bf16(A.get(), nA)), b = to_float(tb::to_host_bf16(B.get(), nB));
  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << "C in rows of " << ldC << ", matrices " << sC << " apart: " << g.str();
  expect_matches(C, c.batch, c.m, c.n, c.k, [&](std::int64_t z, std::int64_t i, std::int64_t j) {
    double want = 0;
    for (std::int64_t kk = 0; kk < c.k; ++kk)
      want += double(a[z * sA + i * rA + kk * kA]) * double(b[z * sB + j * rB + kk * kB]);
    return want;
  });
}

std::vector<batched_case> cases() {
  std::vector<batched_case> out;
  const ts::schedule wgmma[] = {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                                ts::schedule::pingpong};
  const std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t> shapes[] = {
      {3, 200, 136, 72}, {2, 128, 128, 64}, {4, 7, 129, 1000}, {1, 129, 1, 7}};
  for (ts::schedule s : wgmma)
    for (auto [z, m, n, k] : shapes) out.push_back({s, 64, z, m, n, k});
  for (auto [z, m, n, k] : shapes) out.push_back({ts::schedule::multistage, 32, z, m, n, k});
  // MN-major matrices of a batch (layout variants) and narrower swizzles.
  out.push_back({ts::schedule::tma, 64, 3, 200, 136, 72, true, false, 64});
  out.push_back({ts::schedule::cooperative, 64, 3, 200, 136, 72, false, true, 0});
  out.push_back({ts::schedule::pingpong, 64, 2, 136, 256, 136, true, true, ts::swizzle_none});
  out.push_back({ts::schedule::warp_specialized, 64, 2, 128, 128, 64, true, true, 32});
  out.push_back({ts::schedule::multistage, 32, 3, 200, 136, 72, true, true, 0});
  // Rows that are not 16-byte multiples (K = 100): multistage's synchronous copies, directly and
  // as tma's fallback, for every matrix of the batch.
  out.push_back({ts::schedule::multistage, 32, 3, 130, 72, 100});
  out.push_back({ts::schedule::tma, 64, 3, 130, 72, 100});
  // Aligned rows but a batch stride 8 bytes off 16: TMA's rule fails on the batch dimension and
  // multistage must not issue 16-byte cp.async into the later matrices.
  out.push_back({ts::schedule::cooperative, 64, 3, 128, 128, 64, false, false, 0, 4});
  out.push_back({ts::schedule::multistage, 32, 3, 128, 128, 64, false, false, 0, 4});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Batched, BatchedGemm, ::testing::ValuesIn(cases()), case_name);

// ---- a per-matrix epilogue operand ---------------------------------------------------------------
//
// C[b] = A[b] @ B[b]^T + R[b]: the warp-specialized schedules prefetch R's tile into L2 with a 3-d
// TMA box (tessel-lower-epilogue rule 6) and write C with 3-d TMA stores (rule 1). R and C have
// padded rows and batch strides; with `misaligned` their rows break TMA's rules (no prefetch, the
// bounds-checked store path). Every element of every matrix is checked, and the guards around C.

template <int BM_, int BN_, int BK_>
struct batched_gemm_residual3 {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B, ts::tensor<ts::bf16, 3> R,
                  ts::tensor<ts::bf16, 3> C) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(acc + ts::cast<ts::f32>(R.load({b, m, n}, BM, BN))));
  }
};

struct residual_case {
  ts::schedule schedule;
  std::int64_t batch, m, n, k;
  bool misaligned;
};

class BatchedResidual : public ::testing::TestWithParam<residual_case> {};

TEST_P(BatchedResidual, EveryMatrixMatchesCpu) {
  TESSEL_REQUIRE_GPU();
  const residual_case& c = GetParam();
  ts::options o;
  o.schedule = c.schedule;
  ts::kernel k;
  ASSERT_NO_THROW(k = ts::jit(batched_gemm_residual3<128, 128, 64>{}, o));
  const std::int64_t ld = c.misaligned ? tb::misaligned_ld(c.n) : tb::padded_ld(c.n);
  const std::int64_t sA = (c.m + 1) * c.k, sB = (c.n + 1) * c.k, sR = c.m * ld + 8, sC = c.m * ld + 8;
  const std::size_t nA = std::size_t(c.batch * sA), nB = std::size_t(c.batch * sB), nR = std::size_t(c.batch * sR);
  tb::device_buffer A(nA * 2), B(nB * 2), R(nR * 2);
  tb::guarded_output C(tb::guarded_matrix(c.m, c.n, ld, 2, !c.misaligned, c.batch, sC));
  tb::fill_uniform_bf16(A.get(), nA, 31 + c.m);
  tb::fill_uniform_bf16(B.get(), nB, 37 + c.n);
  tb::fill_uniform_bf16(R.get(), nR, 41 + c.k);
  C.reset();
  const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(128))), unsigned(ts::cdiv(c.n, std::int64_t(128))),
                      unsigned(c.batch)};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::bf16>(A.get(), {c.batch, c.m, c.k}, {sA, c.k, 1}),
                           ts::view<ts::bf16>(B.get(), {c.batch, c.n, c.k}, {sB, c.k, 1}),
                           ts::view<ts::bf16>(R.get(), {c.batch, c.m, c.n}, {sR, ld, 1}),
                           ts::view<ts::bf16>(C.data(), {c.batch, c.m, c.n}, {sC, ld, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());

  std::vector<float> a = to_float(tb::to_host_bf16(A.get(), nA)), b = to_float(tb::to_host_bf16(B.get(), nB)),
                     r = to_float(tb::to_host_bf16(R.get(), nR));
  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << g.str();
  expect_matches(C, c.batch, c.m, c.n, c.k, [&](std::int64_t z, std::int64_t i, std::int64_t j) {
    double want = r[z * sR + i * ld + j];
    for (std::int64_t kk = 0; kk < c.k; ++kk)
      want += double(a[z * sA + i * c.k + kk]) * double(b[z * sB + j * c.k + kk]);
    return want;
  });
}

std::vector<residual_case> residual_cases() {
  std::vector<residual_case> out;
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::cooperative, ts::schedule::pingpong,
                         ts::schedule::tma})
    for (bool misaligned : {false, true}) {
      out.push_back({s, 3, 200, 136, 72, misaligned});
      out.push_back({s, 2, 256, 256, 520, misaligned});
    }
  return out;
}

std::string residual_name(const ::testing::TestParamInfo<residual_case>& info) {
  const residual_case& c = info.param;
  return std::string(tb::schedule_name(c.schedule)) + (c.misaligned ? "_misaligned_" : "_") +
         std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
}

INSTANTIATE_TEST_SUITE_P(Batched, BatchedResidual, ::testing::ValuesIn(residual_cases()), residual_name);

}  // namespace
