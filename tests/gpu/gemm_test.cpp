// gemm_test.cpp - numerics of the tessel GEMM kernels (examples/02_gemm, examples/03_gemm_bias_relu)
// on the GPU: every schedule (tma, warp_specialized, cooperative, pingpong, multistage), clusters
// 2x1/1x2, tiles 128x128 and 128x256 (and 128x128x32 for multistage), stages 2..4, shapes from one
// element to 8192^3, non-multiples of the tile, K of one tile and K of many ring wraps.
//
// Each case: random bf16 inputs in [-1, 1) (never zero); C lives in rows padded to a 16-byte
// multiple inside a larger buffer filled with a sentinel (bench_util.h, guarded_output) and is
// poisoned with NaN; one launch must leave the sentinel intact and write every element of C, which
// is compared with the cuBLASLt f32 reference by relative Frobenius norm (< 1e-2, no NaN/Inf
// anywhere), and sampled elements with a CPU reference in double. Run 2 (same C layout) must be
// bitwise identical to run 1, and so must run 3, with C one element past a 16-byte boundary in rows
// that are not 16-byte multiples (the kernels' bounds-checked stores instead of TMA stores), guards
// checked again.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"
#include "tessel_gemm.hpp"
#include "transposed_kernels.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
using tessel_gpu_test::cublas;

// Readable parameters in gtest messages ("128x256", "200x300x72").
namespace tessel_bench {
void PrintTo(const tile_shape& t, std::ostream* os) { *os << t.str(); }
void PrintTo(const gemm_shape& s, std::ostream* os) { *os << s.str(); }
}  // namespace tessel_bench

using tessel_gpu_test::device;

namespace {

using tessel_gpu_test::cached_kernel;

/// One compiled kernel per (variant, tile, schedule, stages, cluster), shared by the tests.
cached_kernel& get_kernel(tb::gemm_variant v, const tb::tile_shape& tile, ts::schedule s, int stages,
                          std::array<int, 2> cluster = {1, 1},
                          ts::decomposition d = ts::decomposition::automatic) {
  std::string key = std::string(v == tb::gemm_variant::plain ? "gemm" : "gemm_bias_relu") + "/" + tile.str() + "/" +
                    tb::schedule_name(s) + "/" + std::to_string(stages) + "/" + tb::cluster_str(cluster) + "/" +
                    tb::decomposition_str(d);
  return tessel_gpu_test::cached(key, [&] {
    ts::options o;
    o.schedule = s;
    o.stages = stages;
    o.cluster = cluster;
    o.decomposition = d;
    return tb::jit_gemm(v, tile, o);
  });
}

void launch(ts::kernel& k, tb::gemm_variant v, const tb::tile_shape& tile, const tb::gemm_problem& p, void* C,
            std::int64_t ldc, cudaStream_t stream, bool swap = false) {
  if (v == tb::gemm_variant::plain)
    tb::launch_gemm(k, tile, stream, p.A(0), p.B(0), C, p.M, p.N, p.K, {}, ldc, swap);
  else
    tb::launch_gemm_bias_relu(k, tile, stream, p.A(0), p.B(0), p.bias(0), C, p.M, p.N, p.K, ldc);
}

/// Launches a case's kernel with C at `C`, rows `ldc` elements apart.
using launch_into = std::function<void(void* C, std::int64_t ldc)>;

/// One run into a fresh guarded C laid out as `l`: nothing outside C may change and every element
/// of C must be written. C is then copied densely into p.C(0), where the other checks read it.
void run_guarded(const launch_into& run, const tb::guarded_layout& l, const tb::gemm_problem& p,
                 const std::string& what) {
  tb::guarded_output out(l);
  out.reset();
  ASSERT_NO_THROW(run(out.data(), l.row_stride)) << what;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what << ": " << cudaGetErrorString(cudaGetLastError());
  tb::guard_report g = out.check();
  EXPECT_TRUE(g.ok()) << what << ": " << g.str();
  out.copy_to_dense(p.C(0));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

/// Run 1's C: rows padded to a 16-byte multiple (TMA can store them), 16-byte aligned.
tb::guarded_layout padded_c(const tb::gemm_problem& p) { return tb::guarded_matrix(p.M, p.N, tb::padded_ld(p.N)); }
/// Run 3's C: one element past a 16-byte boundary, rows that are not 16-byte multiples.
tb::guarded_layout misaligned_c(const tb::gemm_problem& p) {
  return tb::guarded_matrix(p.M, p.N, tb::misaligned_ld(p.N), 2, /*aligned=*/false);
}

/// C of set 0 (p.C(0), dense M x N) against cuBLASLt's f32 reference (relative Frobenius norm,
/// nothing left NaN) and sampled elements against the CPU in double: corners and edges of bm x bn
/// tiles plus random positions.
void expect_set0_matches(tb::gemm_problem& p, const float* ref, int bm, int bn) {
  tb::compare_stats st = p.check_set0(cublas(), nullptr);
  EXPECT_EQ(st.nonfinite, 0u) << "elements left NaN (never written?) or Inf: " << st.str();
  EXPECT_LT(st.rel_err, 1e-2) << st.str();
  EXPECT_GT(st.ref_norm, 0.0);
  int bad = 0;
  for (const auto& s : tessel_gpu_test::cpu_samples(p, ref, bm, bn)) {
    double tol = tessel_gpu_test::sample_tol(s.want, p.K);
    if (!(std::abs(s.got - s.want) <= tol) && bad++ < 8)
      ADD_FAILURE() << "C[" << s.m << "][" << s.n << "] = " << s.got << ", CPU reference " << s.want
                    << " (cuBLASLt f32 " << s.ref_f32 << ", tol " << tol << ")";
    // The reference itself must agree with the CPU (guards the cuBLASLt layout convention).
    EXPECT_NEAR(s.ref_f32, s.want, 1e-3 * std::abs(s.want) + 1e-4 * std::sqrt(double(p.K)))
        << "cuBLASLt reference disagrees with the CPU at [" << s.m << "][" << s.n << "]";
  }
  EXPECT_EQ(bad, 0) << bad << " sampled elements differ from the CPU reference";
}

std::uint64_t case_seed(const tb::gemm_shape& s, const tb::tile_shape& t, int stages) {
  return std::uint64_t(s.m * 1000003 + s.n * 7919 + s.k * 31 + t.bn + stages);
}

void check_gemm(tb::gemm_variant v, const tb::tile_shape& tile, int stages, const tb::gemm_shape& shape,
                ts::schedule schedule = ts::schedule::tma, std::array<int, 2> cluster = {1, 1},
                ts::decomposition decomposition = ts::decomposition::automatic, bool swap = false) {
  cached_kernel& ck = get_kernel(v, tile, schedule, stages, cluster, decomposition);
  ASSERT_TRUE(ck.kernel) << "tessel could not build the kernel: " << ck.error;

  cudaStream_t stream = nullptr;  // legacy default stream: tessel and cuBLAS share it
  // One buffer set (max_total_bytes 0): rotation is for timing only.
  tb::gemm_problem p(shape.m, shape.n, shape.k, v == tb::gemm_variant::bias_relu, device(),
                     case_seed(shape, tile, stages), 1, 0, stream);
  const float* ref = p.reference(cublas(), stream);
  const std::size_t n = std::size_t(p.M) * std::size_t(p.N);
  const launch_into run = [&](void* C, std::int64_t ldc) { launch(*ck.kernel, v, tile, p, C, ldc, stream, swap); };

  // Run 1. (A swapped launch's tile covers tile.bn rows of C and tile.bm columns.)
  ASSERT_NO_FATAL_FAILURE(run_guarded(run, padded_c(p), p, "run 1 (C in padded rows)"));
  expect_set0_matches(p, ref, swap ? tile.bn : tile.bm, swap ? tile.bm : tile.bn);

  // Run 2: bitwise identical.
  tb::device_buffer first(n * 2);
  ASSERT_EQ(cudaMemcpy(first.get(), p.C(0), n * 2, cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(run_guarded(run, padded_c(p), p, "run 2 (C in padded rows)"));
  EXPECT_EQ(tb::count_mismatched_u16(first.get(), p.C(0), n, stream), 0u)
      << "two runs on the same inputs differ (a race?)";

  // Run 3: bounds-checked stores, bitwise identical to run 1.
  ASSERT_NO_FATAL_FAILURE(run_guarded(run, misaligned_c(p), p, "run 3 (C misaligned, in misaligned rows)"));
  EXPECT_EQ(tb::count_mismatched_u16(first.get(), p.C(0), n, stream), 0u)
      << "C one element past a 16-byte boundary in rows that are not 16-byte multiples differs from run 1";
}

std::string tile_name(const tb::tile_shape& t) { return "t" + t.str(); }

using gemm_param = std::tuple<tb::tile_shape, int, tb::gemm_shape>;

std::string param_name(const ::testing::TestParamInfo<gemm_param>& info) {
  const auto& [tile, stages, shape] = info.param;
  return tile_name(tile) + "_s" + std::to_string(stages) + "_" + shape.str();
}

const std::vector<tb::tile_shape> kTiles = {{128, 128, 64}, {128, 256, 64}};

}  // namespace

class TmaGemm : public ::testing::TestWithParam<gemm_param> {};

TEST_P(TmaGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TmaGemm,
    ::testing::Combine(::testing::ValuesIn(kTiles), ::testing::Values(2, 3, 4),
                       ::testing::Values(tb::gemm_shape{128, 128, 64},      // one tile, one k-step
                                         tb::gemm_shape{1024, 1024, 64},    // K of one tile
                                         tb::gemm_shape{256, 256, 8192},    // K of many ring wraps
                                         tb::gemm_shape{200, 300, 72},      // nothing a multiple of the tile
                                         tb::gemm_shape{7, 9, 8},           // smaller than one tile
                                         tb::gemm_shape{129, 257, 136},     // one past the tile
                                         tb::gemm_shape{64, 4096, 4096},    // M below the tile
                                         tb::gemm_shape{3000, 5000, 2000},
                                         tb::gemm_shape{4000, 4000, 4000},
                                         tb::gemm_shape{8192, 8192, 8192})),
    param_name);

class TmaGemmBiasRelu : public ::testing::TestWithParam<gemm_param> {};

TEST_P(TmaGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tile, stages, shape);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TmaGemmBiasRelu,
                         ::testing::Combine(::testing::ValuesIn(kTiles), ::testing::Values(2, 4),
                                            ::testing::Values(tb::gemm_shape{128, 128, 64},
                                                              tb::gemm_shape{200, 300, 72},
                                                              tb::gemm_shape{3000, 5000, 2000},
                                                              tb::gemm_shape{4000, 4000, 4000})),
                         param_name);

// The warp-specialized schedules (producer warpgroup + consumer warpgroups; cooperative is also
// persistent with a grouped-raster tile scheduler) on the same shapes and the fused epilogue.
using ws_param = std::tuple<ts::schedule, tb::tile_shape, int, tb::gemm_shape>;

class WarpSpecializedGemm : public ::testing::TestWithParam<ws_param> {};

TEST_P(WarpSpecializedGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape, schedule);
}

class WarpSpecializedGemmBiasRelu : public ::testing::TestWithParam<ws_param> {};

TEST_P(WarpSpecializedGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tile, stages, shape, schedule);
}

std::string ws_param_name(const ::testing::TestParamInfo<ws_param>& info) {
  const auto& [schedule, tile, stages, shape] = info.param;
  return std::string(tb::schedule_name(schedule)) + "_" + tile_name(tile) + "_s" +
         (stages == ts::stages_max ? std::string("max") : std::to_string(stages)) + "_" + shape.str();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WarpSpecializedGemm,
    ::testing::Combine(::testing::Values(ts::schedule::warp_specialized, ts::schedule::cooperative),
                       ::testing::ValuesIn(kTiles), ::testing::Values(2, 4),
                       ::testing::Values(tb::gemm_shape{128, 128, 64}, tb::gemm_shape{1024, 1024, 64},
                                         tb::gemm_shape{256, 256, 8192}, tb::gemm_shape{200, 300, 72},
                                         tb::gemm_shape{7, 9, 8}, tb::gemm_shape{129, 257, 136},
                                         tb::gemm_shape{64, 4096, 4096}, tb::gemm_shape{3000, 5000, 2000},
                                         tb::gemm_shape{8192, 8192, 8192})),
    ws_param_name);

INSTANTIATE_TEST_SUITE_P(
    Shapes, WarpSpecializedGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::schedule::warp_specialized, ts::schedule::cooperative),
                       ::testing::ValuesIn(kTiles), ::testing::Values(4),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    ws_param_name);

// The shapes of the larger tiles' suites below (384x128x64: three 128-row tiles, an odd count of
// tiles for pingpong's two consumers and one past a 256-row tile).
const std::vector<tb::gemm_shape> kLargeTileShapes = {
    {128, 128, 64}, {1024, 1024, 64}, {256, 256, 8192}, {200, 300, 72},     {7, 9, 8},
    {129, 257, 136}, {64, 4096, 4096}, {384, 128, 64},  {3000, 5000, 2000}, {8192, 8192, 8192}};

// Pingpong: each consumer warpgroup holds a whole tile, so tiles of at most 192 accumulator
// registers per thread: 128x128, and 128x192 / 192x128 (whose consumers spill a few bytes).
INSTANTIATE_TEST_SUITE_P(
    Pingpong, WarpSpecializedGemm,
    ::testing::Combine(::testing::Values(ts::schedule::pingpong),
                       ::testing::Values(tb::tile_shape{128, 128, 64}, tb::tile_shape{128, 192, 64},
                                         tb::tile_shape{192, 128, 64}),
                       ::testing::Values(2, 4),
                       ::testing::ValuesIn(kLargeTileShapes)),
    ws_param_name);

INSTANTIATE_TEST_SUITE_P(
    Pingpong, WarpSpecializedGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::schedule::pingpong),
                       ::testing::Values(tb::tile_shape{128, 128, 64}, tb::tile_shape{128, 192, 64},
                                         tb::tile_shape{192, 128, 64}),
                       ::testing::Values(4),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    ws_param_name);

// Small M (docs/small-m.md): 64-row tiles with the default ring and the deepest one
// (ts::stages_max: 12 stages of 64x64, 8 of 64x128), on decode-like shapes whose A has fewer
// rows than the tile (its TMA box clipped to 8-row multiples of M: 5, 13, 16, 100 rows) and on
// a B with fewer rows than BN (N = 3, 40).
INSTANTIATE_TEST_SUITE_P(
    SmallM, WarpSpecializedGemm,
    ::testing::Combine(::testing::Values(ts::schedule::pingpong, ts::schedule::cooperative),
                       ::testing::Values(tb::tile_shape{64, 64, 64}, tb::tile_shape{64, 128, 64}),
                       ::testing::Values(4, ts::stages_max),
                       ::testing::Values(tb::gemm_shape{16, 8192, 1024}, tb::gemm_shape{13, 2112, 640},
                                         tb::gemm_shape{5, 3, 200}, tb::gemm_shape{100, 333, 640},
                                         tb::gemm_shape{128, 2112, 512}, tb::gemm_shape{200, 40, 1024})),
    ws_param_name);

// Cooperative with 256-row tiles: two consumer warpgroups of 128 rows (two m64 row blocks) each,
// 256x128 (128 accumulator registers per thread) and 256x192 (192; 3 stages fit beside the staging
// buffers). `automatic` decomposition: the stream-K plan (256x192 spills a few bytes there).
INSTANTIATE_TEST_SUITE_P(
    Cooperative256, WarpSpecializedGemm,
    ::testing::Combine(::testing::Values(ts::schedule::cooperative),
                       ::testing::Values(tb::tile_shape{256, 128, 64}, tb::tile_shape{256, 192, 64}),
                       ::testing::Values(2, 3),
                       ::testing::ValuesIn(kLargeTileShapes)),
    ws_param_name);

INSTANTIATE_TEST_SUITE_P(
    Cooperative256, WarpSpecializedGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::schedule::cooperative),
                       ::testing::Values(tb::tile_shape{256, 128, 64}, tb::tile_shape{256, 192, 64}),
                       ::testing::Values(3),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    ws_param_name);

// Stream-K (StreamK.cpp, options::decomposition stream_k, also what `automatic` gives cooperative
// 1x1, so the cooperative suites above run it too): the kernel splits the k-iterations of the last
// wave (plus one full wave) evenly among all CTAs where it computes that this pays, and for grids
// with fewer tiles than SMs every tile among up to 4 CTAs (256x256x8192: 2 tiles of 128x256 on 8
// CTAs, 4 parts each). By its rule, on 132 SMs, 128x256 / 128x128 tiles: 1408x4608x2048 198 tiles:
// split / 396 = 3 x 132: whole; 3000x5000x2000, 8192^3: split; 4096^3: whole / split;
// 4096x4096x1024: whole. Finishers add the parts in a fixed order: run 2 of every case must be
// bitwise identical. `dp` is whole tiles.
using sk_param = std::tuple<ts::decomposition, tb::tile_shape, int, tb::gemm_shape>;

const std::vector<tb::gemm_shape> kStreamKShapes = {
    {128, 128, 64},   {7, 9, 8},          {200, 300, 72},     {129, 257, 136},    {256, 256, 8192},
    {64, 4096, 4096}, {1000, 1000, 1000}, {3000, 5000, 2000}, {1408, 4608, 2048}, {4096, 4096, 1024}};
const std::vector<tb::gemm_shape> kStreamKLargeShapes = {
    {4096, 4096, 4096}, {8192, 8192, 8192}, {16384, 8192, 1024}, {128, 8192, 8192}, {4096, 14336, 4096}};

// Swap-AB (docs/small-m.md): C = A B^T for a few rows of A computed as C^T = B A^T
// (tb::launch_gemm's `swap`, tessel-bench --swap yes), the 64-row tile over N, its 8..32 columns
// over M (wgmma N = 8..32), into C's column-major N x M view (the launch compiles that layout
// variant; its stores go through registers with C's strides, so runs 1 and 3 cover aligned and
// misaligned rows of C). The deepest ring; M past the tile and not a multiple of 8.
class SwapAbByHand : public ::testing::TestWithParam<ws_param> {};

TEST_P(SwapAbByHand, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape, schedule, {1, 1}, ts::decomposition::automatic,
             /*swap=*/true);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SwapAbByHand,
    ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                                         ts::schedule::pingpong, ts::schedule::automatic),
                       ::testing::Values(tb::tile_shape{64, 8, 64}, tb::tile_shape{64, 16, 64},
                                         tb::tile_shape{64, 32, 64}),
                       ::testing::Values(ts::stages_max),
                       ::testing::Values(tb::gemm_shape{1, 1000, 520}, tb::gemm_shape{16, 2112, 1024},
                                         tb::gemm_shape{37, 300, 72})),
    ws_param_name);

// Tiles of fewer than 64 rows (tessel-swap-operands, docs/small-m.md): the compiler computes
// the BN x BM transpose of the user's BM x BN tile (wgmma m64nBMk16, the 64-row blocks over N)
// and the epilogue writes each fragment element across the diagonal, with bounds-checked stores
// from registers; the program, its grid and its views are the user's. M past one tile and not a
// multiple of 8, N and K not multiples of the tile.
class SwappedTileGemm : public ::testing::TestWithParam<ws_param> {};

TEST_P(SwappedTileGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape, schedule);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SwappedTileGemm,
    ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                                         ts::schedule::pingpong, ts::schedule::automatic),
                       ::testing::Values(tb::tile_shape{8, 64, 64}, tb::tile_shape{16, 64, 64},
                                         tb::tile_shape{32, 64, 64}, tb::tile_shape{16, 128, 64},
                                         tb::tile_shape{32, 128, 64}),
                       ::testing::Values(ts::stages_max),
                       ::testing::Values(tb::gemm_shape{1, 1000, 520}, tb::gemm_shape{16, 2112, 1024},
                                         tb::gemm_shape{37, 300, 72})),
    ws_param_name);

// The accumulator stored transposed (acc.T(): C^T = (A B^T)^T, an N x M output written tile by
// tile at [n, m]). Each thread writes its fragment element (r, c) at (c, r) of the stored tile,
// from registers in every schedule (tessel-lower-epilogue); before the fix the fragments were
// written where they sat, the tile untransposed. The output is checked inside its guards, then
// transposed on the host and compared with the references like any C.
using tessel_test::gemm_store_transposed;

/// (schedule, BN: 128 for a square 128 x 128 tile, 256 for 128 x 256 stored as 256 x 128, shape).
using transposed_param = std::tuple<ts::schedule, int, tb::gemm_shape>;

class TransposedStoreGemm : public ::testing::TestWithParam<transposed_param> {};

TEST_P(TransposedStoreGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, bn, shape] = GetParam();
  cached_kernel& ck = tessel_gpu_test::cached(
      "gemm_store_transposed/" + std::string(tb::schedule_name(schedule)) + "/" + std::to_string(bn), [&] {
        return bn == 256 ? ts::jit(gemm_store_transposed<128, 256>{}, {.schedule = schedule})
                         : ts::jit(gemm_store_transposed<128, 128>{}, {.schedule = schedule});
      });
  ASSERT_TRUE(ck.kernel) << "tessel could not build the kernel: " << ck.error;
  tb::gemm_problem p(shape.m, shape.n, shape.k, false, device(), case_seed(shape, {128, 128, 64}, 0), 1, 0, nullptr);
  const float* ref = p.reference(cublas(), nullptr);
  const tb::guarded_layout l = tb::guarded_matrix(p.N, p.M, tb::padded_ld(p.M));
  tb::guarded_output out(l);
  out.reset();
  ASSERT_NO_THROW(ck.kernel->launch(nullptr, ts::grid{unsigned(ts::cdiv(p.M, 128)), unsigned(ts::cdiv(p.N, bn))},
                                    ts::view<ts::bf16>(p.A(0), {p.M, p.K}), ts::view<ts::bf16>(p.B(0), {p.N, p.K}),
                                    ts::view<ts::bf16>(out.data(), {p.N, p.M}, {l.row_stride, 1})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  tb::guard_report g = out.check();
  EXPECT_TRUE(g.ok()) << g.str();
  // C^T (N x M) back to C (M x N) in p.C(0).
  const std::size_t n = std::size_t(p.M) * std::size_t(p.N);
  tb::device_buffer dense(n * 2);
  out.copy_to_dense(dense.get());
  std::vector<std::uint16_t> ct(n), c(n);
  ASSERT_EQ(cudaMemcpy(ct.data(), dense.get(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::int64_t i = 0; i < p.N; ++i)
    for (std::int64_t j = 0; j < p.M; ++j) c[std::size_t(j * p.N + i)] = ct[std::size_t(i * p.M + j)];
  ASSERT_EQ(cudaMemcpy(p.C(0), c.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  expect_set0_matches(p, ref, 128, bn);
}

const auto kTransposedShapes = ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{129, 257, 136},
                                                 tb::gemm_shape{1000, 1000, 1000});

std::string transposed_name(const ::testing::TestParamInfo<transposed_param>& info) {
  return std::string(tb::schedule_name(std::get<0>(info.param))) + "_bn" + std::to_string(std::get<1>(info.param)) +
         "_" + std::get<2>(info.param).str();
}

INSTANTIATE_TEST_SUITE_P(
    Square, TransposedStoreGemm,
    ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                                         ts::schedule::pingpong, ts::schedule::multistage),
                       ::testing::Values(128), kTransposedShapes),
    transposed_name);

// 128 x 256 stored as 256 x 128 tiles.
INSTANTIATE_TEST_SUITE_P(
    Wide, TransposedStoreGemm,
    ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::cooperative, ts::schedule::multistage),
                       ::testing::Values(256), kTransposedShapes),
    transposed_name);

// The bias of examples/03 read along the transposed fragments of a swapped tile.
class SwappedTileGemmBiasRelu : public ::testing::TestWithParam<ws_param> {};

TEST_P(SwappedTileGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tile, stages, shape, schedule);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SwappedTileGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::cooperative, ts::schedule::pingpong),
                       ::testing::Values(tb::tile_shape{16, 64, 64}, tb::tile_shape{32, 128, 64}),
                       ::testing::Values(ts::stages_max),
                       ::testing::Values(tb::gemm_shape{16, 2112, 1024}, tb::gemm_shape{37, 300, 72})),
    ws_param_name);

class StreamKGemm : public ::testing::TestWithParam<sk_param> {};

TEST_P(StreamKGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [decomposition, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape, ts::schedule::cooperative, {1, 1}, decomposition);
}

class StreamKGemmBiasRelu : public ::testing::TestWithParam<sk_param> {};

TEST_P(StreamKGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [decomposition, tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tile, stages, shape, ts::schedule::cooperative, {1, 1}, decomposition);
}

std::string sk_param_name(const ::testing::TestParamInfo<sk_param>& info) {
  const auto& [decomposition, tile, stages, shape] = info.param;
  return tb::decomposition_str(decomposition) + "_" + tile_name(tile) + "_s" + std::to_string(stages) + "_" +
         shape.str();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, StreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k, ts::decomposition::data_parallel),
                       ::testing::ValuesIn(kTiles), ::testing::Values(2, 4),
                       ::testing::ValuesIn(kStreamKShapes)),
    sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Large, StreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k), ::testing::ValuesIn(kTiles),
                       ::testing::Values(4),
                       ::testing::ValuesIn(kStreamKLargeShapes)),
    sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Shapes, StreamKGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k), ::testing::ValuesIn(kTiles),
                       ::testing::Values(4),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Cooperative256, StreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k, ts::decomposition::data_parallel),
                       ::testing::Values(tb::tile_shape{256, 128, 64}, tb::tile_shape{256, 192, 64}),
                       ::testing::Values(3), ::testing::ValuesIn(kStreamKShapes)),
    sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Cooperative256Large, StreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k),
                       ::testing::Values(tb::tile_shape{256, 128, 64}, tb::tile_shape{256, 192, 64}),
                       ::testing::Values(3), ::testing::ValuesIn(kStreamKLargeShapes)),
    sk_param_name);

// Stream-K on pingpong (128x128: a whole tile per consumer warpgroup, whose 128 threads write and
// add the partial tiles; units alternate between the consumers). Same shapes and rules as above.
using pingpong_sk_param = std::tuple<ts::decomposition, int, tb::gemm_shape>;

class PingpongStreamKGemm : public ::testing::TestWithParam<pingpong_sk_param> {};

TEST_P(PingpongStreamKGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [decomposition, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tb::tile_shape{128, 128, 64}, stages, shape, ts::schedule::pingpong, {1, 1},
             decomposition);
}

class PingpongStreamKGemmBiasRelu : public ::testing::TestWithParam<pingpong_sk_param> {};

TEST_P(PingpongStreamKGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [decomposition, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tb::tile_shape{128, 128, 64}, stages, shape, ts::schedule::pingpong,
             {1, 1}, decomposition);
}

std::string pingpong_sk_param_name(const ::testing::TestParamInfo<pingpong_sk_param>& info) {
  const auto& [decomposition, stages, shape] = info.param;
  return tb::decomposition_str(decomposition) + "_s" + std::to_string(stages) + "_" + shape.str();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PingpongStreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k, ts::decomposition::data_parallel),
                       ::testing::Values(2, 4),
                       ::testing::ValuesIn(kStreamKShapes)),
    pingpong_sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Large, PingpongStreamKGemm,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k), ::testing::Values(4),
                       ::testing::ValuesIn(kStreamKLargeShapes)),
    pingpong_sk_param_name);

INSTANTIATE_TEST_SUITE_P(
    Shapes, PingpongStreamKGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::decomposition::stream_k), ::testing::Values(4),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    pingpong_sk_param_name);

// Clusters of two CTAs with TMA multicast of the shared operand (B for 2x1, A for 1x2), on the
// persistent schedules; odd tile counts leave a cluster partner without a tile of its own.
using cluster_param = std::tuple<ts::schedule, std::array<int, 2>, tb::gemm_shape>;

/// pingpong holds a whole tile per consumer warpgroup (at most 128x128); cooperative takes 128x256.
tb::tile_shape cluster_tile(ts::schedule s) {
  return s == ts::schedule::pingpong ? tb::tile_shape{128, 128, 64} : tb::tile_shape{128, 256, 64};
}

class ClusterGemm : public ::testing::TestWithParam<cluster_param> {};

TEST_P(ClusterGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, cluster, shape] = GetParam();
  const tb::tile_shape tile = cluster_tile(schedule);
  check_gemm(tb::gemm_variant::plain, tile, 4, shape, schedule, cluster);
}

class ClusterGemmBiasRelu : public ::testing::TestWithParam<cluster_param> {};

TEST_P(ClusterGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, cluster, shape] = GetParam();
  const tb::tile_shape tile = cluster_tile(schedule);
  check_gemm(tb::gemm_variant::bias_relu, tile, 4, shape, schedule, cluster);
}

std::string cluster_param_name(const ::testing::TestParamInfo<cluster_param>& info) {
  const auto& [schedule, cluster, shape] = info.param;
  return std::string(tb::schedule_name(schedule)) + "_c" + tb::cluster_str(cluster) + "_" + shape.str();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ClusterGemm,
    ::testing::Combine(::testing::Values(ts::schedule::cooperative, ts::schedule::pingpong),
                       ::testing::Values(std::array<int, 2>{2, 1}, std::array<int, 2>{1, 2}),
                       ::testing::Values(tb::gemm_shape{128, 128, 64}, tb::gemm_shape{1024, 1024, 64},
                                         tb::gemm_shape{256, 256, 8192}, tb::gemm_shape{200, 300, 72},
                                         tb::gemm_shape{7, 9, 8}, tb::gemm_shape{129, 257, 136},
                                         tb::gemm_shape{384, 640, 192}, tb::gemm_shape{3000, 5000, 2000},
                                         tb::gemm_shape{8192, 8192, 8192})),
    cluster_param_name);

INSTANTIATE_TEST_SUITE_P(
    Shapes, ClusterGemmBiasRelu,
    ::testing::Combine(::testing::Values(ts::schedule::cooperative, ts::schedule::pingpong),
                       ::testing::Values(std::array<int, 2>{2, 1}, std::array<int, 2>{1, 2}),
                       ::testing::Values(tb::gemm_shape{200, 300, 72}, tb::gemm_shape{3000, 5000, 2000})),
    cluster_param_name);

// Clusters with cooperative 256x192 tiles: 2x1 multicasts 96 of B's rows per CTA, 1x2 128 of A's.
class Cooperative256ClusterGemm : public ::testing::TestWithParam<cluster_param> {};

TEST_P(Cooperative256ClusterGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, cluster, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tb::tile_shape{256, 192, 64}, 3, shape, schedule, cluster);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Cooperative256ClusterGemm,
    ::testing::Combine(::testing::Values(ts::schedule::cooperative),
                       ::testing::Values(std::array<int, 2>{2, 1}, std::array<int, 2>{1, 2}),
                       ::testing::Values(tb::gemm_shape{7, 9, 8}, tb::gemm_shape{129, 257, 136},
                                         tb::gemm_shape{384, 640, 192}, tb::gemm_shape{3000, 5000, 2000},
                                         tb::gemm_shape{8192, 8192, 8192})),
    cluster_param_name);

// Schedule multistage (cp.async ring + ldmatrix + mma.sync, all warps computing). First every
// combination of M, N, K in {1, 7, 64, 129, 1000} on the 128x128x32 tile (odd K: rows that are not
// 16-byte aligned take the synchronous-copy fallback; K below BK; M, N below and one past the tile),
// then the TMA suite's shapes on the BK = 64 tiles, then the fused bias+relu epilogue.
class MultistageGemm : public ::testing::TestWithParam<gemm_param> {};

TEST_P(MultistageGemm, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::plain, tile, stages, shape, ts::schedule::multistage);
}

class MultistageGemmBiasRelu : public ::testing::TestWithParam<gemm_param> {};

TEST_P(MultistageGemmBiasRelu, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [tile, stages, shape] = GetParam();
  check_gemm(tb::gemm_variant::bias_relu, tile, stages, shape, ts::schedule::multistage);
}

namespace {
std::vector<tb::gemm_shape> edge_shapes() {
  const std::int64_t sizes[] = {1, 7, 64, 129, 1000};
  std::vector<tb::gemm_shape> out;
  for (std::int64_t m : sizes)
    for (std::int64_t n : sizes)
      for (std::int64_t k : sizes) out.push_back({m, n, k});
  return out;
}
}  // namespace

INSTANTIATE_TEST_SUITE_P(EdgeShapes, MultistageGemm,
                         ::testing::Combine(::testing::Values(tb::tile_shape{128, 128, 32}), ::testing::Values(3),
                                            ::testing::ValuesIn(edge_shapes())),
                         param_name);

INSTANTIATE_TEST_SUITE_P(
    Shapes, MultistageGemm,
    ::testing::Combine(::testing::Values(tb::tile_shape{128, 128, 64}, tb::tile_shape{128, 256, 64},
                                         tb::tile_shape{128, 128, 32}),
                       ::testing::Values(2, 4),
                       ::testing::Values(tb::gemm_shape{128, 128, 64}, tb::gemm_shape{1024, 1024, 64},
                                         tb::gemm_shape{256, 256, 8192}, tb::gemm_shape{200, 300, 72},
                                         tb::gemm_shape{7, 9, 8}, tb::gemm_shape{129, 257, 136},
                                         tb::gemm_shape{64, 4096, 4096}, tb::gemm_shape{3000, 5000, 2000},
                                         tb::gemm_shape{1000, 1000, 1001}, tb::gemm_shape{8192, 8192, 8192})),
    param_name);

INSTANTIATE_TEST_SUITE_P(Shapes, MultistageGemmBiasRelu,
                         ::testing::Combine(::testing::Values(tb::tile_shape{128, 128, 32},
                                                              tb::tile_shape{128, 256, 64}),
                                            ::testing::Values(3),
                                            ::testing::Values(tb::gemm_shape{128, 128, 64},
                                                              tb::gemm_shape{200, 300, 72},
                                                              tb::gemm_shape{129, 7, 1000},
                                                              tb::gemm_shape{3000, 5000, 2000})),
                         param_name);

// Schedule multistage with MN-major operands, built from strided views of transposed copies of the
// problem's inputs. Layouts name A then B the BLAS way for C = A B^T computed as C^T = B A^T by a
// column-major library: "T" A / "N" B is K-contiguous (the TN case every other test uses), "N" A
// is M-contiguous (A^T stored K x M, view {M, K} strides {1, M}), "T" B is N-contiguous (B^T stored
// K x N, view {N, K} strides {1, N}). With the runtime's variant selection (tessel.contiguous_dim
// set from the strides) MN-major tiles take cp.async + ldmatrix.trans when their rows are 16-byte
// aligned (M or N a multiple of 8) and the synchronous strided copy otherwise; without it every
// MN-major operand takes the synchronous strided copy. Shapes have tails in M, N and K. C is
// guarded as in check_gemm: run 1 in padded rows, run 2 misaligned (bitwise identical).
namespace {

/// `src` (rows x cols bf16, row-major, device) transposed into a new cols x rows device buffer.
tb::device_buffer transposed_copy(const void* src, std::int64_t rows, std::int64_t cols) {
  const std::size_t n = std::size_t(rows) * std::size_t(cols);
  std::vector<std::uint16_t> h(n), t(n);
  EXPECT_EQ(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[std::size_t(c) * rows + r] = h[std::size_t(r) * cols + c];
  tb::device_buffer out(std::max<std::size_t>(n * 2, 16));
  EXPECT_EQ(cudaMemcpy(out.get(), t.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  return out;
}

void check_layout(const std::string& layout, const tb::tile_shape& tile, int stages, const tb::gemm_shape& shape) {
  cached_kernel& ck = get_kernel(tb::gemm_variant::plain, tile, ts::schedule::multistage, stages);
  ASSERT_TRUE(ck.kernel) << "tessel could not build the kernel: " << ck.error;
  const bool a_m_major = layout[0] == 'N', b_n_major = layout[1] == 'T';
  cudaStream_t stream = nullptr;
  tb::gemm_problem p(shape.m, shape.n, shape.k, false, device(), case_seed(shape, tile, stages) + layout[0] * 3 + layout[1],
                     1, 0, stream);
  const float* ref = p.reference(cublas(), stream);
  const std::size_t n = std::size_t(p.M) * std::size_t(p.N);
  tb::device_buffer at, bt;
  if (a_m_major) at = transposed_copy(p.A(0), p.M, p.K);
  if (b_n_major) bt = transposed_copy(p.B(0), p.N, p.K);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const launch_into run = [&](void* C, std::int64_t ldc) {
    ts::tensor_arg a = a_m_major ? ts::view<ts::bf16>(at.get(), {p.M, p.K}, {1, p.M})
                                 : ts::view<ts::bf16>(p.A(0), {p.M, p.K});
    ts::tensor_arg b = b_n_major ? ts::view<ts::bf16>(bt.get(), {p.N, p.K}, {1, p.N})
                                 : ts::view<ts::bf16>(p.B(0), {p.N, p.K});
    ck.kernel->launch(stream, tb::gemm_grid(tile, p.M, p.N), a, b, ts::view<ts::bf16>(C, {p.M, p.N}, {ldc, 1}));
  };

  ASSERT_NO_FATAL_FAILURE(run_guarded(run, padded_c(p), p, "run 1 (C in padded rows)"));
  tb::compare_stats st = p.check_set0(cublas(), stream);
  EXPECT_EQ(st.nonfinite, 0u) << "elements left NaN (never written?) or Inf: " << st.str();
  EXPECT_LT(st.rel_err, 1e-2) << st.str();
  int bad = 0;
  for (const auto& s : tessel_gpu_test::cpu_samples(p, ref, tile.bm, tile.bn)) {
    double tol = tessel_gpu_test::sample_tol(s.want, p.K);
    if (!(std::abs(s.got - s.want) <= tol) && bad++ < 8)
      ADD_FAILURE() << "C[" << s.m << "][" << s.n << "] = " << s.got << ", CPU reference " << s.want;
  }
  EXPECT_EQ(bad, 0) << bad << " sampled elements differ from the CPU reference";

  tb::device_buffer first(n * 2 + 16);
  ASSERT_EQ(cudaMemcpy(first.get(), p.C(0), n * 2, cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(run_guarded(run, misaligned_c(p), p, "run 2 (C misaligned, in misaligned rows)"));
  EXPECT_EQ(tb::count_mismatched_u16(first.get(), p.C(0), n, stream), 0u)
      << "two runs on the same inputs (the second with C misaligned) differ";
}

using layout_param = std::tuple<std::string, tb::tile_shape, tb::gemm_shape>;

std::string layout_param_name(const ::testing::TestParamInfo<layout_param>& info) {
  const auto& [layout, tile, shape] = info.param;
  return layout + "_" + tile_name(tile) + "_" + shape.str();
}

}  // namespace

class MultistageLayout : public ::testing::TestWithParam<layout_param> {};

TEST_P(MultistageLayout, MatchesReference) {
  TESSEL_REQUIRE_GPU();
  const auto& [layout, tile, shape] = GetParam();
  check_layout(layout, tile, 3, shape);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MultistageLayout,
    ::testing::Combine(::testing::Values(std::string("TN"), std::string("NN"), std::string("NT"), std::string("TT")),
                       ::testing::Values(tb::tile_shape{128, 128, 32}, tb::tile_shape{128, 256, 64}),
                       ::testing::Values(tb::gemm_shape{1, 1, 1}, tb::gemm_shape{7, 64, 129},
                                         tb::gemm_shape{64, 7, 1000}, tb::gemm_shape{129, 1000, 7},
                                         tb::gemm_shape{1000, 129, 64}, tb::gemm_shape{64, 64, 64},
                                         tb::gemm_shape{129, 129, 129}, tb::gemm_shape{1, 1000, 64},
                                         tb::gemm_shape{1000, 1, 129}, tb::gemm_shape{1000, 1000, 1000})),
    layout_param_name);

TEST(GpuAvailable, AgreesWithCudaRuntime) {
  TESSEL_REQUIRE_GPU();
  std::string why;
  EXPECT_TRUE(ts::gpu_available(&why)) << "the CUDA runtime sees a GPU but tessel does not: " << why;
}
