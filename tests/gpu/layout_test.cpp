// layout_test.cpp - operand layouts and swizzle modes of the TMA-fed schedules on the GPU:
// {tma, warp_specialized, cooperative, pingpong} x {TN, NN, NT, TT} x swizzle {none, 32, 64, 128},
// 128x128x64 tiles, shapes with tails in every dimension (M, N, K from {1, 7, 64, 129, 1000}).
//
// Layout names follow BLAS (column-major) usage, first letter op(A), second op(B), for
// C (M x N) = A (M x K) @ B^T with B logically N x K:
//   TN  A K-major, B K-major     (tessel's default: row-major M x K A and N x K B)
//   NN  A M-major, B K-major
//   NT  A M-major, B N-major
//   TT  A K-major, B N-major
//
// Two ways of getting an MN-major operand:
//   LayoutGemm        row-major tensors only: an M-major A is stored K x M and loaded
//                     A.load({k, m}, BK, BM).T(); an N-major B is stored K x N and loaded
//                     B.load({k, n}, BK, BN) (no .T()). The trace alone makes the operand MN-major,
//                     so these run today.
//   StridedLayoutGemm the default kernel (A.load({m, k}), B.load({n, k}).T()) launched on
//                     column-major views, ts::view(p, {M, K}, {1, ldA}). The kernel must be compiled
//                     with tessel.contiguous_dim = 0 on such arguments: the launch compiles that
//                     layout variant. TESSEL_FALLBACK=error makes sure the MN-major TMA variant
//                     itself runs (padded leading dimensions meet TMA's rules), not multistage.
//
// Every case: random bf16 inputs in [-1, 1), leading dimensions padded to 8 elements (TMA's 16-byte
// stride rule) with NaN in the padding; C inside a sentinel-filled buffer (bench_util.h,
// guarded_output), dense, in padded rows, or one element past a 16-byte boundary in rows that are
// not 16-byte multiples (by case), and poisoned with NaN; one launch, then the sentinel must be
// intact and every element of C match a CPU reference in double.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <ostream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"
#include "scoped_env.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace tessel {
void PrintTo(schedule s, std::ostream* os) { *os << tessel_bench::schedule_name(s); }
}  // namespace tessel

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 64;

/// C = A @ B^T with A stored K x M when `AMN` (M-major) and B stored K x N when `BMN` (N-major),
/// all tensors row-major: the layout comes from the trace (see the file comment).
template <bool AMN, bool BMN>
struct layout_gemm {
  static constexpr auto BM = ts::c<kBM>, BN = ts::c<kBN>, BK = ts::c<kBK>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    if constexpr (!AMN && !BMN) {
      for (auto k : ts::range(0, A.size(1), BK))
        acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    } else if constexpr (AMN && !BMN) {
      for (auto k : ts::range(0, A.size(0), BK))
        acc += ts::dot(A.load({k, m}, BK, BM).T(), B.load({n, k}, BN, BK).T());
    } else if constexpr (AMN && BMN) {
      for (auto k : ts::range(0, A.size(0), BK))
        acc += ts::dot(A.load({k, m}, BK, BM).T(), B.load({k, n}, BK, BN));
    } else {
      for (auto k : ts::range(0, A.size(1), BK))
        acc += ts::dot(A.load({m, k}, BM, BK), B.load({k, n}, BK, BN));
    }
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

struct shape {
  std::int64_t m, n, k;
  std::string str() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};

void PrintTo(const shape& s, std::ostream* os) { *os << s.str(); }

/// `layout`: "TN", "NN", "NT" or "TT"; `swizzle`: ts::options::swizzle.
using layout_param = std::tuple<ts::schedule, std::string, int, shape>;

bool a_mn_major(const std::string& layout) { return layout[0] == 'N'; }
bool b_mn_major(const std::string& layout) { return layout[1] == 'T'; }

std::string swizzle_name(int s) { return s == ts::swizzle_none ? "none" : s == 0 ? "auto" : std::to_string(s); }

std::string param_name(const ::testing::TestParamInfo<layout_param>& info) {
  const auto& [schedule, layout, swizzle, sh] = info.param;
  return std::string(tb::schedule_name(schedule)) + "_" + layout + "_sw" + swizzle_name(swizzle) + "_" + sh.str();
}

using tessel_gpu_test::cached_kernel;

/// One kernel per (trace layout, schedule, swizzle), shared by the tests of a process.
cached_kernel& get_kernel(bool amn, bool bmn, ts::schedule s, int swizzle) {
  std::string key = std::to_string(amn) + std::to_string(bmn) + "/" + tb::schedule_name(s) + "/" +
                    swizzle_name(swizzle);
  return tessel_gpu_test::cached(key, [&]() -> ts::kernel {
    ts::options o;
    o.schedule = s;
    o.swizzle = swizzle;
    if (!amn && !bmn) return ts::jit(layout_gemm<false, false>{}, o);
    if (amn && !bmn) return ts::jit(layout_gemm<true, false>{}, o);
    if (amn && bmn) return ts::jit(layout_gemm<true, true>{}, o);
    return ts::jit(layout_gemm<false, true>{}, o);
  });
}

std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even (no NaN inputs here)
  return std::uint16_t(u >> 16);
}

float from_bf16(std::uint16_t h) {
  std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr std::uint16_t kNaN = 0x7FC1;
std::int64_t pad8(std::int64_t x) { return (x + 7) / 8 * 8; }

/// One operand in device memory: logical rows x cols (A: M x K, B: N x K), stored row-major
/// (`mn_major` false: [rows][ld], ld = pad8(cols)) or transposed ([cols][ld], ld = pad8(rows)).
struct operand {
  std::vector<float> value;  ///< logical rows x cols, row-major
  std::int64_t rows, cols, ld;
  bool mn_major;
  tb::device_buffer buf;

  operand(std::int64_t r, std::int64_t c, bool mn, std::mt19937_64& rng) : rows(r), cols(c), mn_major(mn) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    value.resize(std::size_t(r * c));
    for (auto& v : value) v = from_bf16(to_bf16(u(rng)));
    std::int64_t outer = mn ? c : r, inner = mn ? r : c;
    ld = pad8(inner);
    std::vector<std::uint16_t> host(std::size_t(outer * ld), kNaN);
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        host[std::size_t(mn ? j * ld + i : i * ld + j)] = to_bf16(value[std::size_t(i * c + j)]);
    buf = tb::device_buffer(host.size() * 2);
    EXPECT_EQ(cudaMemcpy(buf.get(), host.data(), host.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  /// The tensor the layout_gemm kernels expect: row-major, transposed when MN-major.
  ts::tensor_arg traced_view() const {
    return mn_major ? ts::view<ts::bf16>(buf.get(), {cols, rows}, {ld, 1})
                    : ts::view<ts::bf16>(buf.get(), {rows, cols}, {ld, 1});
  }
  /// The logical rows x cols tensor with its real strides (column-major when MN-major).
  ts::tensor_arg strided_view() const {
    return mn_major ? ts::view<ts::bf16>(buf.get(), {rows, cols}, {1, ld})
                    : ts::view<ts::bf16>(buf.get(), {rows, cols}, {ld, 1});
  }
};

void run_case(const layout_param& param, bool strided) {
  const auto& [schedule, layout, swizzle, sh] = param;
  const bool amn = a_mn_major(layout), bmn = b_mn_major(layout);
  // Strided views run the default (TN) kernel; the runtime picks the MN-major variant.
  cached_kernel& ck = strided ? get_kernel(false, false, schedule, swizzle) : get_kernel(amn, bmn, schedule, swizzle);
  ASSERT_TRUE(ck.kernel) << "tessel could not build the kernel: " << ck.error;

  std::mt19937_64 rng(std::uint64_t(sh.m * 1000003 + sh.n * 7919 + sh.k * 31 + amn * 2 + bmn));
  operand A(sh.m, sh.k, amn, rng), B(sh.n, sh.k, bmn, rng);
  const std::size_t nc = std::size_t(sh.m * sh.n);
  const std::uint64_t c_kind = rng() % 3;  // dense, padded rows, misaligned
  tb::guarded_output C(c_kind == 0   ? tb::guarded_matrix(sh.m, sh.n, sh.n)
                       : c_kind == 1 ? tb::guarded_matrix(sh.m, sh.n, tb::padded_ld(sh.n))
                                     : tb::guarded_matrix(sh.m, sh.n, tb::misaligned_ld(sh.n), 2, false));
  C.reset();

  const ts::grid grid{unsigned((sh.m + kBM - 1) / kBM), unsigned((sh.n + kBN - 1) / kBN)};
  const ts::tensor_arg c = ts::view<ts::bf16>(C.data(), {sh.m, sh.n}, {C.layout().row_stride, 1});
  if (strided) {
    tessel_test::scoped_env no_fallback("TESSEL_FALLBACK", "error");
    ASSERT_NO_THROW(ck.kernel->launch(nullptr, grid, A.strided_view(), B.strided_view(), c));
  }
  else
    ASSERT_NO_THROW(ck.kernel->launch(nullptr, grid, A.traced_view(), B.traced_view(), c));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());

  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << "C in rows of " << C.layout().row_stride << ": " << g.str();
  int bad = 0;
  for (std::int64_t i = 0; i < sh.m; ++i)
    for (std::int64_t j = 0; j < sh.n; ++j) {
      double want = 0;
      const float* a = &A.value[std::size_t(i * sh.k)];
      const float* b = &B.value[std::size_t(j * sh.k)];
      for (std::int64_t k = 0; k < sh.k; ++k) want += double(a[k]) * double(b[k]);
      double got = from_bf16(std::uint16_t(C.bits(0, i, j)));
      double tol = tessel_gpu_test::sample_tol(want, sh.k);
      if (!(std::abs(got - want) <= tol) && bad++ < 8)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", CPU reference " << want << " (tol " << tol
                      << ")";
    }
  EXPECT_EQ(bad, 0) << bad << " of " << nc << " elements differ from the CPU reference (NaN: never written)";
}

const std::vector<shape> kShapes = {{1, 1, 1},      {7, 129, 64},   {129, 7, 1000}, {1000, 64, 129},
                                    {64, 1000, 7},  {129, 129, 129}, {1000, 1000, 64}, {7, 64, 1000}};
const std::vector<ts::schedule> kSchedules = {ts::schedule::tma, ts::schedule::warp_specialized,
                                              ts::schedule::cooperative, ts::schedule::pingpong};
const std::vector<std::string> kLayouts = {"TN", "NN", "NT", "TT"};
const std::vector<int> kSwizzles = {ts::swizzle_none, 32, 64, 128};

/// Every (schedule, layout, swizzle) on two shapes, rotating through kShapes: 128 cases, each
/// shape used by every schedule and layout.
std::vector<layout_param> layout_cases() {
  std::vector<layout_param> v;
  std::size_t i = 0;
  for (auto s : kSchedules)
    for (const auto& l : kLayouts)
      for (int sw : kSwizzles) {
        v.emplace_back(s, l, sw, kShapes[i++ % kShapes.size()]);
        v.emplace_back(s, l, sw, kShapes[(i + 3) % kShapes.size()]);
      }
  return v;
}

/// The MN-major layouts through strided views, automatic swizzle: 4 x 3 x 2 = 24 cases.
std::vector<layout_param> strided_cases() {
  std::vector<layout_param> v;
  for (auto s : kSchedules)
    for (const auto& l : {"NN", "NT", "TT"}) {
      v.emplace_back(s, l, 0, shape{129, 1000, 129});
      v.emplace_back(s, l, 0, shape{7, 64, 1000});
    }
  return v;
}

}  // namespace

class LayoutGemm : public ::testing::TestWithParam<layout_param> {};

TEST_P(LayoutGemm, MatchesCpu) {
  TESSEL_REQUIRE_GPU();
  run_case(GetParam(), /*strided=*/false);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LayoutGemm, ::testing::ValuesIn(layout_cases()), param_name);

class StridedLayoutGemm : public ::testing::TestWithParam<layout_param> {};

TEST_P(StridedLayoutGemm, MatchesCpu) {
  TESSEL_REQUIRE_GPU();
  run_case(GetParam(), /*strided=*/true);
}

INSTANTIATE_TEST_SUITE_P(Layouts, StridedLayoutGemm, ::testing::ValuesIn(strided_cases()), param_name);
