// fp8_test.cpp - fp8 operands and outputs on the GPU (ts::f8e4m3, ts::f8e5m2; docs/fp8.md):
//   * the fp8 GEMM of examples/08_fp8_gemm, C = cast<TC>(scale * A B^T), in the four TMA-fed
//     schedules (tma, warp_specialized, cooperative with both decompositions, pingpong), with
//     e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3 and e5m2 x e5m2 operands (wgmma's four fp8 kinds),
//     outputs bf16, f32 and e4m3, tiles 128x128, 128x256, 128x192 and 256x128, on shapes with
//     partial tiles, a K of one tile and K of many ring wraps. Inputs are random fp8 codes of
//     magnitude 1/8 .. 4 (never zero, NaN or Inf). Each element is compared with a CPU
//     reference in double (every element of small outputs, corners + tile edges + random ones of
//     large outputs) within a stated tolerance (check_element);
//   * rowwise scales (fp8_gemm_rowwise: an f32 scale per row of A and per row of B, applied to the
//     accumulator), outputs e4m3 and bf16, in the four schedules;
//   * block scales (fp8_gemm_blockwise: SA per row of A and 128-wide block of K, SB per 128 x 128
//     block of B, applied to each k-step's product), in warp_specialized, cooperative (both
//     decompositions), pingpong (64-row tiles) and automatic, K and N not multiples of 128;
//   * SwiGLU's gate and up projections from e4m3 weights as one dual GEMM (fp8_swiglu) in the four
//     schedules, against the CPU in double on sampled elements;
//   * the quantize / dequantize pair of an fp8 pipeline (fp8_roundtrip): f32 -> e4m3 / e5m2 must
//     equal the host's round-to-nearest-even with saturation (tessel.cast's rule) bit for bit on
//     ties, subnormals, values past the largest finite one, infinities and NaN; the dequantized
//     value must be the code's exact value, computed from the register and after a load from
//     memory (an elementwise kernel reading the fp8 tensor back).
// Outputs are NaN-poisoned inside a sentinel-filled buffer (tb::guarded_output): nothing outside
// an output may change and every element must be written, with rows padded to 16 bytes (run 1)
// and with rows one element past a 16-byte multiple (run 2, which must match run 1 exactly).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fp8_gemm.hpp"
#include "tessel_gemm.hpp"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

/// A device copy of `host` (synchronous).
template <class T>
tb::device_buffer upload(const std::vector<T>& host) {
  tb::device_buffer d(host.size() * sizeof(T));
  TB_CUDA(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

enum class out_kind { bf16, f32, e4m3 };
const char* out_name(out_kind o) { return o == out_kind::bf16 ? "bf16" : o == out_kind::f32 ? "f32" : "e4m3"; }
const char* kind_name(tb::fp8_kind k) { return k == tb::fp8_kind::e4m3 ? "e4m3" : "e5m2"; }
int out_bytes(out_kind o) { return o == out_kind::bf16 ? 2 : o == out_kind::f32 ? 4 : 1; }

struct fp8_case {
  ts::schedule schedule;
  int bm, bn;
  tb::fp8_kind a, b;
  out_kind out;
  std::int64_t m, n, k;
  ts::decomposition decomposition = ts::decomposition::automatic;
  std::string name() const {
    return std::string(tb::schedule_name(schedule)) + "_" + std::to_string(bm) + "x" + std::to_string(bn) + "_" +
           kind_name(a) + "x" + kind_name(b) + "_to_" + out_name(out) + "_" + std::to_string(m) + "x" +
           std::to_string(n) + "x" + std::to_string(k) +
           (decomposition == ts::decomposition::data_parallel ? "_dp"
            : decomposition == ts::decomposition::stream_k    ? "_sk"
                                                               : "");
  }
};

// The kernels the cases use: one instantiation per (A, B, C types, tile).
template <class TA, class TB, class TC, int BM, int BN>
struct typed {
  static ts::kernel jit(const ts::options& o) { return ts::jit(examples::fp8_gemm<TA, TB, TC, BM, BN>{}, o); }
  static void launch(ts::kernel& k, const fp8_case& c, const void* A, const void* B, void* C, std::int64_t ldc,
                     float scale) {
    const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(BM))), unsigned(ts::cdiv(c.n, std::int64_t(BN)))};
    k.launch(nullptr, grid, ts::view<TA>(A, {c.m, c.k}), ts::view<TB>(B, {c.n, c.k}),
             ts::view<TC>(C, {c.m, c.n}, {ldc, 1}), scale);
  }
};

struct dispatch {
  std::function<ts::kernel(const ts::options&)> jit;
  std::function<void(ts::kernel&, const fp8_case&, const void*, const void*, void*, std::int64_t, float)> launch;
};

template <class TA, class TB, class TC, int BM, int BN>
dispatch make_dispatch() {
  return {&typed<TA, TB, TC, BM, BN>::jit, &typed<TA, TB, TC, BM, BN>::launch};
}

template <int BM, int BN>
dispatch by_types(const fp8_case& c) {
  using tb::fp8_kind;
  if (c.out == out_kind::bf16) {
    if (c.a == fp8_kind::e4m3 && c.b == fp8_kind::e4m3) return make_dispatch<ts::f8e4m3, ts::f8e4m3, ts::bf16, BM, BN>();
    if (c.a == fp8_kind::e4m3 && c.b == fp8_kind::e5m2) return make_dispatch<ts::f8e4m3, ts::f8e5m2, ts::bf16, BM, BN>();
    if (c.a == fp8_kind::e5m2 && c.b == fp8_kind::e4m3) return make_dispatch<ts::f8e5m2, ts::f8e4m3, ts::bf16, BM, BN>();
    return make_dispatch<ts::f8e5m2, ts::f8e5m2, ts::bf16, BM, BN>();
  }
  if (c.a != fp8_kind::e4m3 || c.b != fp8_kind::e4m3) throw std::invalid_argument("fp8_test: f32/e4m3 outputs only for e4m3 x e4m3");
  if (c.out == out_kind::f32) return make_dispatch<ts::f8e4m3, ts::f8e4m3, ts::f32, BM, BN>();
  return make_dispatch<ts::f8e4m3, ts::f8e4m3, ts::f8e4m3, BM, BN>();
}

dispatch dispatch_for(const fp8_case& c) {
  if (c.bm == 128 && c.bn == 128) return by_types<128, 128>(c);
  if (c.bm == 128 && c.bn == 256) return by_types<128, 256>(c);
  if (c.bm == 128 && c.bn == 192) return by_types<128, 192>(c);
  if (c.bm == 256 && c.bn == 128) return by_types<256, 128>(c);
  if (c.bm == 64 && c.bn == 64) return by_types<64, 64>(c);
  if (c.bm == 64 && c.bn == 128) return by_types<64, 128>(c);
  throw std::invalid_argument("fp8_test: no instantiation for tile " + std::to_string(c.bm) + "x" + std::to_string(c.bn));
}

/// One output element as a double.
double decode(const tb::guarded_output& o, out_kind k, std::int64_t r, std::int64_t c) {
  const std::uint32_t w = o.bits(0, r, c);
  if (k == out_kind::bf16) return tb::bf16_to_float(std::uint16_t(w));
  if (k == out_kind::e4m3) return tb::fp8_to_double(std::uint8_t(w), tb::fp8_kind::e4m3);
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

/// The elements a case checks: all of a small C; else the corners, every tile edge of row 0 /
/// column 0 and of the last row / column, and random positions.
std::vector<std::pair<std::int64_t, std::int64_t>> positions(const fp8_case& c) {
  std::vector<std::pair<std::int64_t, std::int64_t>> at;
  if (c.m * c.n <= 65536) {
    for (std::int64_t r = 0; r < c.m; ++r)
      for (std::int64_t col = 0; col < c.n; ++col) at.emplace_back(r, col);
    return at;
  }
  for (std::int64_t r : {std::int64_t(0), c.m - 1})
    for (std::int64_t col = 0; col < c.n; col += std::max<std::int64_t>(1, c.bn / 2)) at.emplace_back(r, col);
  for (std::int64_t col : {std::int64_t(0), c.n - 1})
    for (std::int64_t r = 0; r < c.m; r += std::max<std::int64_t>(1, c.bm / 2)) at.emplace_back(r, col);
  at.emplace_back(c.m - 1, c.n - 1);
  std::mt19937_64 rng(std::uint64_t(c.m * 31 + c.n * 7 + c.k));
  for (int i = 0; i < 2048; ++i) at.emplace_back(std::int64_t(rng() % std::uint64_t(c.m)), std::int64_t(rng() % std::uint64_t(c.n)));
  return at;
}

/// Tolerance of one element: the products of fp8 values are exact in f32, but wgmma's fp8
/// accumulation keeps fewer bits than an f32 add (DeepSeek-V3 / DeepGEMM: "about 14 bits",
/// perf_anchors.md), and the error grows with K: 2^-10 of the sum of |products| (the worst seen,
/// run 72: 2^-11.2 at K = 8192, on an element whose sum cancels to 4% of it); plus the output
/// rounding (half an ulp: 2^-9 bf16, 2^-4 e4m3, and e4m3's smallest subnormal). A wrong layout or
/// k-step gives errors of the size of the value itself.
double tolerance(double want, double abs_sum, out_kind o) {
  double t = abs_sum * std::ldexp(1.0, -10);
  if (o == out_kind::bf16) t += std::fabs(want) * std::ldexp(1.0, -8);
  if (o == out_kind::e4m3) t += std::fabs(want) * std::ldexp(1.0, -4) * 1.01 + std::ldexp(1.0, -10);
  return t;
}

class Fp8Gemm : public ::testing::TestWithParam<fp8_case> {};

TEST_P(Fp8Gemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const fp8_case& c = GetParam();
  const dispatch d = dispatch_for(c);
  const std::string key = "fp8/" + c.name();
  tessel_gpu_test::cached_kernel& ck = tessel_gpu_test::cached(key, [&] {
    ts::options o;
    o.schedule = c.schedule;
    o.decomposition = c.decomposition;
    return d.jit(o);
  });
  ASSERT_TRUE(ck.kernel) << "tessel could not build the kernel: " << ck.error;

  const std::uint64_t seed = std::uint64_t(c.m * 1000003 + c.n * 7919 + c.k * 31 + c.bn);
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(c.m * c.k), seed, c.a);
  const std::vector<std::uint8_t> b = tb::random_fp8(std::size_t(c.n * c.k), seed + 1, c.b);
  const tb::device_buffer da = upload(a), db = upload(b);
  // A power of two keeps scale * (A B^T) exact before the output's rounding; an e4m3 output
  // needs the values inside its range (|sum| <= 16 K).
  const float scale = c.out == out_kind::e4m3 ? std::ldexp(1.0f, -int(std::ceil(std::log2(double(c.k))))) : 0.5f;

  const int eb = out_bytes(c.out);
  std::vector<std::unique_ptr<tb::guarded_output>> outs;
  for (bool aligned : {true, false}) {
    const std::int64_t ld = aligned ? tb::padded_ld(c.n, eb) : tb::misaligned_ld(c.n, eb);
    auto out = std::make_unique<tb::guarded_output>(tb::guarded_matrix(c.m, c.n, ld, eb, aligned));
    out->reset();
    ASSERT_NO_THROW(d.launch(*ck.kernel, c, da.get(), db.get(), out->data(), ld, scale));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    const tb::guard_report g = out->check();
    EXPECT_TRUE(g.ok()) << (aligned ? "run 1 (padded rows): " : "run 2 (misaligned rows): ") << g.str();
    outs.push_back(std::move(out));
  }

  std::vector<double> ad(a.size()), bd(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ad[i] = tb::fp8_to_double(a[i], c.a);
  for (std::size_t i = 0; i < b.size(); ++i) bd[i] = tb::fp8_to_double(b[i], c.b);
  int bad = 0, differ = 0;
  for (auto [r, col] : positions(c)) {
    double sum = 0, abs_sum = 0;
    for (std::int64_t k = 0; k < c.k; ++k) {
      const double p = ad[std::size_t(r * c.k + k)] * bd[std::size_t(col * c.k + k)];
      sum += p;
      abs_sum += std::fabs(p);
    }
    const double want = sum * scale, got = decode(*outs[0], c.out, r, col);
    if (!(std::fabs(got - want) <= tolerance(want, abs_sum * scale, c.out)) && bad++ < 8)
      ADD_FAILURE() << "C[" << r << "][" << col << "] = " << got << ", reference " << want << " (tolerance "
                    << tolerance(want, abs_sum * scale, c.out) << ")";
    if (outs[1]->bits(0, r, col) != outs[0]->bits(0, r, col) && differ++ < 4)
      ADD_FAILURE() << "C[" << r << "][" << col << "]: run 2 (misaligned rows) gave " << decode(*outs[1], c.out, r, col)
                    << ", run 1 " << got;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(differ, 0);
}

std::vector<fp8_case> cases() {
  using tb::fp8_kind;
  const auto e4 = fp8_kind::e4m3, e5 = fp8_kind::e5m2;
  std::vector<fp8_case> v;
  const ts::schedule all[] = {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                              ts::schedule::pingpong};
  // Every schedule x every operand pairing, 128x128, bf16 out: partial tiles; K of one tile.
  for (ts::schedule s : all)
    for (auto [ta, tbk] : {std::pair{e4, e4}, std::pair{e4, e5}, std::pair{e5, e4}, std::pair{e5, e5}}) {
      v.push_back({s, 128, 128, ta, tbk, out_kind::bf16, 200, 328, 384});
      v.push_back({s, 128, 128, ta, tbk, out_kind::bf16, 129, 136, 128});
    }
  // Outputs f32 and e4m3 (a quantized output), every schedule.
  for (ts::schedule s : all)
    for (out_kind o : {out_kind::f32, out_kind::e4m3}) v.push_back({s, 128, 128, e4, e4, o, 257, 264, 640});
  // Larger tiles and many ring wraps (K = 4096: 32 k-steps); stream-K and whole tiles.
  v.push_back({ts::schedule::cooperative, 128, 256, e4, e4, out_kind::bf16, 1000, 1504, 4096});
  v.push_back({ts::schedule::cooperative, 128, 256, e4, e4, out_kind::bf16, 1000, 1504, 4096, ts::decomposition::data_parallel});
  v.push_back({ts::schedule::cooperative, 128, 256, e4, e5, out_kind::bf16, 2048, 2048, 1024, ts::decomposition::stream_k});
  v.push_back({ts::schedule::cooperative, 256, 128, e4, e4, out_kind::bf16, 1000, 1504, 2048});
  v.push_back({ts::schedule::pingpong, 128, 192, e4, e4, out_kind::bf16, 1000, 1504, 4096});
  v.push_back({ts::schedule::pingpong, 128, 128, e4, e4, out_kind::e4m3, 1000, 1504, 2048});
  v.push_back({ts::schedule::cooperative, 128, 256, e4, e4, out_kind::e4m3, 1000, 1504, 2048});
  v.push_back({ts::schedule::pingpong, 128, 192, e4, e4, out_kind::e4m3, 1000, 1504, 2048});
  v.push_back({ts::schedule::tma, 128, 256, e4, e4, out_kind::bf16, 777, 1032, 1152});
  v.push_back({ts::schedule::warp_specialized, 128, 256, e5, e5, out_kind::bf16, 777, 1032, 1152});
  // Small M (docs/small-m.md): 64-row tiles, A with fewer rows than the tile (clipped boxes).
  v.push_back({ts::schedule::pingpong, 64, 64, e4, e4, out_kind::bf16, 13, 2112, 1024});
  v.push_back({ts::schedule::pingpong, 64, 128, e4, e5, out_kind::bf16, 40, 1000, 2048, ts::decomposition::data_parallel});
  v.push_back({ts::schedule::cooperative, 64, 64, e4, e4, out_kind::e4m3, 5, 300, 512});
  v.push_back({ts::schedule::tma, 64, 128, e4, e4, out_kind::bf16, 100, 333, 640});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp8Gemm, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<fp8_case>& i) { return i.param.name(); });

// ---- rowwise scales (per row of A, per row of B) -----------------------------------------------------

struct rowwise_case {
  ts::schedule schedule;
  int bm, bn;
  out_kind out;
  std::int64_t m, n, k;
};

class Fp8Rowwise : public ::testing::TestWithParam<rowwise_case> {};

template <class TC>
ts::kernel jit_rowwise(const rowwise_case& c) {
  ts::options o{.schedule = c.schedule};
  if (c.bm == 128 && c.bn == 256) return ts::jit(examples::fp8_gemm_rowwise<TC, 128, 256>{}, o);
  return ts::jit(examples::fp8_gemm_rowwise<TC, 128, 128>{}, o);
}

TEST_P(Fp8Rowwise, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const rowwise_case& c = GetParam();
  ts::kernel k = c.out == out_kind::e4m3 ? jit_rowwise<ts::f8e4m3>(c) : jit_rowwise<ts::bf16>(c);
  const auto e4 = tb::fp8_kind::e4m3;
  const std::uint64_t seed = std::uint64_t(c.m * 131 + c.n * 17 + c.k);
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(c.m * c.k), seed, e4),
                                  b = tb::random_fp8(std::size_t(c.n * c.k), seed + 1, e4);
  // Scales of the size an fp8 recipe gives (amax / 448 of bf16 rows): 2^-10 .. 2^-4.
  std::mt19937 rng{static_cast<unsigned>(seed)};
  std::uniform_real_distribution<float> u(-10, -4);
  std::vector<float> sa(std::size_t(c.m)), sb(std::size_t(c.n));
  for (float& s : sa) s = std::exp2(u(rng));
  for (float& s : sb) s = std::exp2(u(rng));
  const tb::device_buffer da = upload(a), db = upload(b), dsa = upload(sa), dsb = upload(sb);
  const int eb = out_bytes(c.out);
  const std::int64_t ld = tb::padded_ld(c.n, eb);
  tb::guarded_output out(tb::guarded_matrix(c.m, c.n, ld, eb));
  out.reset();
  const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(c.bm))), unsigned(ts::cdiv(c.n, std::int64_t(c.bn)))};
  auto cview = c.out == out_kind::e4m3 ? ts::view<ts::f8e4m3>(out.data(), {c.m, c.n}, {ld, 1})
                                       : ts::view<ts::bf16>(out.data(), {c.m, c.n}, {ld, 1});
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::f8e4m3>(da.get(), {c.m, c.k}),
                           ts::view<ts::f8e4m3>(db.get(), {c.n, c.k}), ts::view<ts::f32>(dsa.get(), {c.m}),
                           ts::view<ts::f32>(dsb.get(), {c.n}), cview));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report g = out.check();
  EXPECT_TRUE(g.ok()) << g.str();
  fp8_case as_gemm{c.schedule, c.bm, c.bn, e4, e4, c.out, c.m, c.n, c.k};
  int bad = 0;
  for (auto [r, col] : positions(as_gemm)) {
    double sum = 0, abs_sum = 0;
    for (std::int64_t kk = 0; kk < c.k; ++kk) {
      const double p = tb::fp8_to_double(a[std::size_t(r * c.k + kk)], e4) * tb::fp8_to_double(b[std::size_t(col * c.k + kk)], e4);
      sum += p;
      abs_sum += std::fabs(p);
    }
    const double s = double(sa[std::size_t(r)]) * double(sb[std::size_t(col)]);
    const double want = sum * s, got = decode(out, c.out, r, col);
    if (!(std::fabs(got - want) <= tolerance(want, abs_sum * s, c.out) + std::fabs(want) * 1e-6) && bad++ < 8)
      ADD_FAILURE() << "C[" << r << "][" << col << "] = " << got << ", reference " << want;
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Fp8Rowwise,
    ::testing::Values(rowwise_case{ts::schedule::pingpong, 128, 128, out_kind::e4m3, 1000, 1504, 2048},
                      rowwise_case{ts::schedule::pingpong, 128, 128, out_kind::bf16, 257, 264, 640},
                      rowwise_case{ts::schedule::cooperative, 128, 256, out_kind::e4m3, 1000, 1504, 2048},
                      rowwise_case{ts::schedule::cooperative, 128, 256, out_kind::bf16, 257, 264, 640},
                      rowwise_case{ts::schedule::tma, 128, 128, out_kind::e4m3, 257, 264, 640},
                      rowwise_case{ts::schedule::warp_specialized, 128, 128, out_kind::bf16, 257, 264, 640}),
    [](const ::testing::TestParamInfo<rowwise_case>& i) {
      return std::string(tb::schedule_name(i.param.schedule)) + "_" + std::to_string(i.param.bm) + "x" +
             std::to_string(i.param.bn) + "_to_" + out_name(i.param.out) + "_" + std::to_string(i.param.m) + "x" +
             std::to_string(i.param.n) + "x" + std::to_string(i.param.k);
    });

// ---- block scales (DeepSeek-V3's recipe: 1 x 128 for A, 128 x 128 for B) -----------------------------

struct blockwise_case {
  ts::schedule schedule;
  int bm, bn;
  out_kind out;
  std::int64_t m, n, k;
  ts::decomposition decomposition = ts::decomposition::automatic;
  bool row_factor = true;  ///< fp8_gemm_blockwise's RowFactor
};

class Fp8Blockwise : public ::testing::TestWithParam<blockwise_case> {};

template <class TC>
ts::kernel jit_blockwise(const blockwise_case& c) {
  ts::options o{.schedule = c.schedule, .decomposition = c.decomposition};
  if (!c.row_factor) return ts::jit(examples::fp8_gemm_blockwise<TC, 128, 128, false>{}, o);
  if (c.bm == 64 && c.bn == 128) return ts::jit(examples::fp8_gemm_blockwise<TC, 64, 128>{}, o);
  if (c.bm == 64 && c.bn == 64) return ts::jit(examples::fp8_gemm_blockwise<TC, 64, 64>{}, o);
  return ts::jit(examples::fp8_gemm_blockwise<TC, 128, 128>{}, o);
}

// Each k-step's product is scaled by SA[k/128][m] * SB[n/128][k/128] before it is added
// (fp8_gemm_blockwise): the reference sums the 128-wide blocks of K separately in double. K need
// not be a multiple of 128 (the last block is partial: TMA's zero fill, and SA / SB have
// ceil(K/128) blocks); N need not be one either (SB's last row of blocks covers a partial block).
TEST_P(Fp8Blockwise, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const blockwise_case& c = GetParam();
  ts::kernel k = c.out == out_kind::e4m3 ? jit_blockwise<ts::f8e4m3>(c) : jit_blockwise<ts::bf16>(c);
  const auto e4 = tb::fp8_kind::e4m3;
  const std::uint64_t seed = std::uint64_t(c.m * 137 + c.n * 19 + c.k);
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(c.m * c.k), seed, e4),
                                  b = tb::random_fp8(std::size_t(c.n * c.k), seed + 1, e4);
  const std::int64_t kb = ts::cdiv(c.k, std::int64_t(128)), nb = ts::cdiv(c.n, std::int64_t(128));
  // Scales of the size an fp8 recipe gives (amax / 448 of bf16 blocks): 2^-10 .. 2^-4.
  std::mt19937 rng{static_cast<unsigned>(seed)};
  std::uniform_real_distribution<float> u(-10, -4);
  std::vector<float> sa(std::size_t(kb * c.m)), sb(std::size_t(nb * kb));  // SA[kb][m], SB[nb][kb]
  for (float& s : sa) s = std::exp2(u(rng));
  for (float& s : sb) s = std::exp2(u(rng));
  const tb::device_buffer da = upload(a), db = upload(b), dsa = upload(sa), dsb = upload(sb);
  const int eb = out_bytes(c.out);
  const std::int64_t ld = tb::padded_ld(c.n, eb);
  tb::guarded_output out(tb::guarded_matrix(c.m, c.n, ld, eb));
  out.reset();
  const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(c.bm))), unsigned(ts::cdiv(c.n, std::int64_t(c.bn)))};
  auto cview = c.out == out_kind::e4m3 ? ts::view<ts::f8e4m3>(out.data(), {c.m, c.n}, {ld, 1})
                                       : ts::view<ts::bf16>(out.data(), {c.m, c.n}, {ld, 1});
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::f8e4m3>(da.get(), {c.m, c.k}),
                           ts::view<ts::f8e4m3>(db.get(), {c.n, c.k}), ts::view<ts::f32>(dsa.get(), {kb, c.m}),
                           ts::view<ts::f32>(dsb.get(), {nb, kb}), cview));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report g = out.check();
  EXPECT_TRUE(g.ok()) << g.str();
  fp8_case as_gemm{c.schedule, c.bm, c.bn, e4, e4, c.out, c.m, c.n, c.k};
  int bad = 0;
  for (auto [r, col] : positions(as_gemm)) {
    double want = 0, scaled_abs = 0;
    for (std::int64_t blk = 0; blk < kb; ++blk) {
      double sum = 0, abs_sum = 0;
      for (std::int64_t kk = blk * 128; kk < std::min(c.k, blk * 128 + 128); ++kk) {
        const double p =
            tb::fp8_to_double(a[std::size_t(r * c.k + kk)], e4) * tb::fp8_to_double(b[std::size_t(col * c.k + kk)], e4);
        sum += p;
        abs_sum += std::fabs(p);
      }
      const double s = double(sa[std::size_t(blk * c.m + r)]) * double(sb[std::size_t((col / 128) * kb + blk)]);
      want += sum * s;
      scaled_abs += abs_sum * s;
    }
    const double got = decode(out, c.out, r, col);
    if (!(std::fabs(got - want) <= tolerance(want, scaled_abs, c.out) + std::fabs(want) * 1e-6) && bad++ < 8)
      ADD_FAILURE() << "C[" << r << "][" << col << "] = " << got << ", reference " << want;
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Fp8Blockwise,
    ::testing::Values(
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::bf16, 1000, 1504, 2048},
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::bf16, 1000, 1504, 2048,
                       ts::decomposition::data_parallel},
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::bf16, 1000, 1504, 2048,
                       ts::decomposition::stream_k},
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::e4m3, 257, 264, 640},
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::bf16, 257, 264, 720},
        blockwise_case{ts::schedule::pingpong, 64, 128, out_kind::bf16, 257, 264, 720},
        blockwise_case{ts::schedule::pingpong, 64, 128, out_kind::bf16, 1000, 1504, 2048,
                       ts::decomposition::stream_k},
        blockwise_case{ts::schedule::pingpong, 64, 64, out_kind::bf16, 16, 200, 2048},
        blockwise_case{ts::schedule::warp_specialized, 128, 128, out_kind::bf16, 257, 264, 640},
        blockwise_case{ts::schedule::automatic, 128, 128, out_kind::bf16, 300, 520, 1024},
        blockwise_case{ts::schedule::automatic, 64, 128, out_kind::e4m3, 7, 9, 16},
        blockwise_case{ts::schedule::cooperative, 128, 128, out_kind::bf16, 1000, 1504, 2048,
                       ts::decomposition::automatic, false}),
    [](const ::testing::TestParamInfo<blockwise_case>& i) {
      return std::string(tb::schedule_name(i.param.schedule)) + "_" + std::to_string(i.param.bm) + "x" +
             std::to_string(i.param.bn) + "_to_" + out_name(i.param.out) + "_" + std::to_string(i.param.m) + "x" +
             std::to_string(i.param.n) + "x" + std::to_string(i.param.k) +
             (i.param.decomposition == ts::decomposition::data_parallel ? "_dp"
              : i.param.decomposition == ts::decomposition::stream_k    ? "_sk"
                                                                         : "") +
             (i.param.row_factor ? "" : "_two_factors");
    });

// ---- a dual GEMM from fp8 weights (SwiGLU's gate and up) ------------------------------------------

struct swiglu_case {
  ts::schedule schedule;
  int bm, bn;
  std::int64_t m, n, k;
};

class Fp8Swiglu : public ::testing::TestWithParam<swiglu_case> {};

template <int BM, int BN>
ts::kernel jit_swiglu(ts::schedule s) {
  return ts::jit(examples::fp8_swiglu<BM, BN>{}, {.schedule = s});
}

TEST_P(Fp8Swiglu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const swiglu_case& c = GetParam();
  ts::kernel k = c.bm == 64 ? jit_swiglu<64, 128>(c.schedule) : jit_swiglu<128, 128>(c.schedule);
  const std::uint64_t seed = std::uint64_t(c.m * 31 + c.n * 7 + c.k);
  const auto e4 = tb::fp8_kind::e4m3;
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(c.m * c.k), seed, e4),
                                  w1 = tb::random_fp8(std::size_t(c.n * c.k), seed + 1, e4),
                                  w3 = tb::random_fp8(std::size_t(c.n * c.k), seed + 2, e4);
  const tb::device_buffer da = upload(a), dw1 = upload(w1), dw3 = upload(w3);
  const float scale = 1.0f / 64;  // keeps silu's argument in a range where it is not trivially 0 or x
  const std::int64_t ld = tb::padded_ld(c.n, 2);
  tb::guarded_output h(tb::guarded_matrix(c.m, c.n, ld, 2));
  h.reset();
  const ts::grid grid{unsigned(ts::cdiv(c.m, std::int64_t(c.bm))), unsigned(ts::cdiv(c.n, std::int64_t(c.bn)))};
  ASSERT_NO_THROW(k.launch(nullptr, grid, ts::view<ts::f8e4m3>(da.get(), {c.m, c.k}),
                           ts::view<ts::f8e4m3>(dw1.get(), {c.n, c.k}), ts::view<ts::f8e4m3>(dw3.get(), {c.n, c.k}),
                           ts::view<ts::bf16>(h.data(), {c.m, c.n}, {ld, 1}), scale));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report g = h.check();
  EXPECT_TRUE(g.ok()) << g.str();
  int bad = 0;
  std::mt19937_64 rng(seed);
  for (int s = 0; s < 1024; ++s) {
    const std::int64_t r = s == 0 ? c.m - 1 : std::int64_t(rng() % std::uint64_t(c.m));
    const std::int64_t col = s == 0 ? c.n - 1 : std::int64_t(rng() % std::uint64_t(c.n));
    double gsum = 0, usum = 0, gabs = 0, uabs = 0;
    for (std::int64_t kk = 0; kk < c.k; ++kk) {
      const double av = tb::fp8_to_double(a[std::size_t(r * c.k + kk)], e4);
      const double g1 = av * tb::fp8_to_double(w1[std::size_t(col * c.k + kk)], e4);
      const double u3 = av * tb::fp8_to_double(w3[std::size_t(col * c.k + kk)], e4);
      gsum += g1, usum += u3, gabs += std::fabs(g1), uabs += std::fabs(u3);
    }
    const double gx = gsum * scale, ux = usum * scale;
    const double want = gx / (1 + std::exp(-gx)) * ux;
    const double got = tb::bf16_to_float(std::uint16_t(h.bits(0, r, col)));
    // The accumulations' tolerance (as tolerance() above) through silu (|d silu / dx| <= 1.1) and
    // the product, then bf16's rounding; silu uses ex2.approx (docs/math.md: 2 ulp).
    const double eg = gabs * scale * std::ldexp(1.0, -10), eu = uabs * scale * std::ldexp(1.0, -10);
    const double tol = 1.1 * eg * std::fabs(ux) + std::fabs(gx) * eu + std::fabs(want) * (std::ldexp(1.0, -8) + 1e-6) + 1e-6;
    if (!(std::fabs(got - want) <= tol) && bad++ < 8)
      ADD_FAILURE() << "H[" << r << "][" << col << "] = " << got << ", reference " << want << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp8Swiglu,
                         ::testing::Values(swiglu_case{ts::schedule::cooperative, 128, 128, 1000, 1504, 2048},
                                           swiglu_case{ts::schedule::pingpong, 64, 128, 1000, 1504, 2048},
                                           swiglu_case{ts::schedule::tma, 128, 128, 257, 264, 640},
                                           swiglu_case{ts::schedule::warp_specialized, 128, 128, 257, 264, 640}),
                         [](const ::testing::TestParamInfo<swiglu_case>& i) {
                           return std::string(tb::schedule_name(i.param.schedule)) + "_" + std::to_string(i.param.bm) +
                                  "x" + std::to_string(i.param.bn) + "_" + std::to_string(i.param.m) + "x" +
                                  std::to_string(i.param.n) + "x" + std::to_string(i.param.k);
                         });

// ---- quantize / dequantize -------------------------------------------------------------------------

/// One program instance per 64 x 64 tile of an M x N tensor (the elementwise kernels below).
ts::grid grid_of_64x64(std::int64_t M, std::int64_t N) {
  return ts::grid{unsigned(ts::cdiv(M, std::int64_t(64))), unsigned(ts::cdiv(N, std::int64_t(64)))};
}

class Fp8Roundtrip : public ::testing::TestWithParam<tb::fp8_kind> {};

/// Dequantization from memory: Y = f32(Q) * 2, Q an fp8 tensor (fp8 element loads in an
/// elementwise kernel).
template <class TQ>
struct dequant {
  void operator()(ts::tensor<TQ, 2> Q, ts::tensor<ts::f32, 2> Y) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 64_c, n = ts::program_id(1) * 64_c;
    Y.store({m, n}, ts::cast<ts::f32>(Q.load({m, n}, 64_c, 64_c)) * 2.0f);
  }
};

template <class TQ>
void check_roundtrip(tb::fp8_kind kind) {
  constexpr std::int64_t M = 67, N = 160;  // partial tiles of 64 x 64
  const float qscale = 0.5f;               // exact: x * qscale rounds only in the cast
  const double max_finite = kind == tb::fp8_kind::e4m3 ? 448 : 57344;
  // Specials first, then random values over fp8's whole range.
  std::vector<float> x;
  for (int c = 0; c < 0x100; ++c) {  // every code's value, and every midpoint to the next code
    const double v = tb::fp8_to_double(std::uint8_t(c), kind), w = tb::fp8_to_double(std::uint8_t(c + 1), kind);
    if (std::isfinite(v)) x.push_back(float(v / qscale));
    if ((c & 0x7f) != 0x7f && std::isfinite(v) && std::isfinite(w)) x.push_back(float((v + w) / 2 / qscale));
  }
  for (double s : {max_finite * 1.03, max_finite * 4, 1e30, -1e30}) x.push_back(float(s / qscale));
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(std::ldexp(1.0f, -30));  // rounds to (signed) zero
  x.push_back(-std::ldexp(1.0f, -30));
  std::mt19937 rng(5);
  while (x.size() < std::size_t(M * N))
    x.push_back(float(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                                 std::uniform_int_distribution<int>(-12, 17)(rng))));
  x.resize(std::size_t(M * N));

  const tb::device_buffer dx = upload(x);
  tb::guarded_output q(tb::guarded_matrix(M, N, tb::padded_ld(N, 1), 1));
  tb::guarded_output d(tb::guarded_matrix(M, N, N + 3, 4, /*aligned=*/false));
  q.reset();
  d.reset();
  ts::kernel k = ts::jit(examples::fp8_roundtrip<TQ, 64, 64>{});
  k.launch(nullptr, grid_of_64x64(M, N),
           ts::view<ts::f32>(dx.get(), {M, N}), ts::view<TQ>(q.data(), {M, N}, {tb::padded_ld(N, 1), 1}),
           ts::view<ts::f32>(d.data(), {M, N}, {N + 3, 1}), qscale);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report gq = q.check(), gd = d.check();
  EXPECT_TRUE(gq.ok()) << "Q: " << gq.str();
  EXPECT_TRUE(gd.ok()) << "D: " << gd.str();
  int bad = 0;
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c) {
      const float xv = x[std::size_t(r * N + c)] * qscale;
      const std::uint8_t want = tb::double_to_fp8(xv, kind), got = std::uint8_t(q.bits(0, r, c));
      const bool zeros = (want & 0x7f) == 0 && (got & 0x7f) == 0;  // +0 and -0 are one value
      const bool nans = std::isnan(tb::fp8_to_double(want, kind)) && std::isnan(tb::fp8_to_double(got, kind));
      if (want != got && !zeros && !nans && bad++ < 8)
        ADD_FAILURE() << "cast(" << xv << ") = 0x" << std::hex << int(got) << ", want 0x" << int(want) << std::dec;
      std::uint32_t dw = d.bits(0, r, c);
      float dv;
      std::memcpy(&dv, &dw, 4);
      const double qv = tb::fp8_to_double(got, kind);
      if (!(dv == qv || (std::isnan(dv) && std::isnan(qv))) && bad++ < 8)
        ADD_FAILURE() << "cast<f32>(0x" << std::hex << int(got) << std::dec << ") = " << dv << ", want " << qv;
    }
  EXPECT_EQ(bad, 0);

  // Q as written (every code the cast produced), read back by an elementwise kernel.
  tb::guarded_output y(tb::guarded_matrix(M, N, N + 1, 4, /*aligned=*/false));
  y.reset();
  ts::kernel dq = ts::jit(dequant<TQ>{});
  dq.launch(nullptr, grid_of_64x64(M, N),
            ts::view<TQ>(q.data(), {M, N}, {tb::padded_ld(N, 1), 1}), ts::view<ts::f32>(y.data(), {M, N}, {N + 1, 1}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report gy = y.check();
  EXPECT_TRUE(gy.ok()) << "Y: " << gy.str();
  int wrong = 0;
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c) {
      std::uint32_t yw = y.bits(0, r, c);
      float yv;
      std::memcpy(&yv, &yw, 4);
      const double want = 2 * tb::fp8_to_double(std::uint8_t(q.bits(0, r, c)), kind);
      if (!(yv == want || (std::isnan(yv) && std::isnan(want))) && wrong++ < 8)
        ADD_FAILURE() << "f32(Q[" << r << "][" << c << "]) * 2 = " << yv << ", want " << want;
    }
  EXPECT_EQ(wrong, 0);
}

TEST_P(Fp8Roundtrip, RoundsToNearestEvenAndSaturates) {
  TESSEL_REQUIRE_GPU();
  if (GetParam() == tb::fp8_kind::e4m3)
    check_roundtrip<ts::f8e4m3>(GetParam());
  else
    check_roundtrip<ts::f8e5m2>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Kinds, Fp8Roundtrip, ::testing::Values(tb::fp8_kind::e4m3, tb::fp8_kind::e5m2),
                         [](const ::testing::TestParamInfo<tb::fp8_kind>& i) { return std::string(kind_name(i.param)); });


// ---- one fp8 format to the other -------------------------------------------------------------------

/// Y = cast<TO>(X) for fp8 X: widened to f32 (exact), then one rounding (satfinite).
template <class TI, class TO>
struct recode {
  void operator()(ts::tensor<TI, 2> X, ts::tensor<TO, 2> Y) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 64_c, n = ts::program_id(1) * 64_c;
    Y.store({m, n}, ts::cast<TO>(X.load({m, n}, 64_c, 64_c)));
  }
};

template <class TI, class TO>
void check_recode(tb::fp8_kind from, tb::fp8_kind to) {
  constexpr std::int64_t M = 67, N = 160;  // partial tiles of 64 x 64
  std::vector<std::uint8_t> x(std::size_t(M * N));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::uint8_t(i * 0x9d + (i >> 8));  // every code, scrambled
  for (int c = 0; c < 0x100; ++c) x[std::size_t(c)] = std::uint8_t(c);                  // and in order
  const tb::device_buffer dx = upload(x);
  tb::guarded_output y(tb::guarded_matrix(M, N, tb::padded_ld(N, 1) + 16, 1, /*aligned=*/false));
  y.reset();
  ts::kernel k = ts::jit(recode<TI, TO>{});
  k.launch(nullptr, grid_of_64x64(M, N),
           ts::view<TI>(dx.get(), {M, N}), ts::view<TO>(y.data(), {M, N}, {tb::padded_ld(N, 1) + 16, 1}));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report gy = y.check();
  EXPECT_TRUE(gy.ok()) << "Y: " << gy.str();
  int bad = 0;
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < N; ++c) {
      const std::uint8_t in = x[std::size_t(r * N + c)];
      const std::uint8_t want = tb::double_to_fp8(tb::fp8_to_double(in, from), to), got = std::uint8_t(y.bits(0, r, c));
      const bool nans = std::isnan(tb::fp8_to_double(want, to)) && std::isnan(tb::fp8_to_double(got, to));
      if (want != got && !nans && bad++ < 8)
        ADD_FAILURE() << "cast(0x" << std::hex << int(in) << " = " << tb::fp8_to_double(in, from) << ") = 0x"
                      << int(got) << ", want 0x" << int(want) << std::dec;
    }
  EXPECT_EQ(bad, 0);
}

TEST(Fp8Recode, E4m3ToE5m2RoundsOnce) {
  TESSEL_REQUIRE_GPU();
  check_recode<ts::f8e4m3, ts::f8e5m2>(tb::fp8_kind::e4m3, tb::fp8_kind::e5m2);
}

TEST(Fp8Recode, E5m2ToE4m3Saturates) {
  TESSEL_REQUIRE_GPU();
  check_recode<ts::f8e5m2, ts::f8e4m3>(tb::fp8_kind::e5m2, tb::fp8_kind::e4m3);
}

}  // namespace
