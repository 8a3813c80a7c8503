// 09_grouped_gemm - a grouped GEMM (mixture-of-experts layer, contiguous layout): G groups, group g
// with its own rows of A and weights W[g], C[rows of g] = A[rows of g] @ W[g]^T in one launch
// (grouped_gemm.hpp, docs/grouped.md). Checked on the GPU against an f32 reference (cuBLASLt's f32
// GEMM of each group's rows, padding rows included; zero rows for tiles of no group) inside a
// NaN-poisoned, sentinel-guarded C.
//
// Timed, interleaved in one process, against
//   * tessel's plain GEMM (examples/02_gemm's kernel, same schedule, tile and options) of all the
//     stacked rows by one weight matrix: the same flops with no group to read;
//   * cuBLASLt's GEMM of the same size (one weight matrix);
//   * cuBLASLt, one GEMM per group: what a user without a grouped kernel launches.
//
// With --masked, the masked layout (decode; grouped_gemm_masked): A G x M_max x K, C G x M_max x N,
// group g's first rows[g] rows hold tokens, the counts read on the device. Checked the same way (and
// every element of a tile past its group's rows must still hold the NaN poison: such tiles write
// nothing); timed against the same kernel with every group full (a batched GEMM of all M_max rows:
// what the launch costs without the counts) and one cuBLASLt GEMM per group of its rows.
//
//   tessel-grouped-gemm [--groups 8 --m 2048 | --rows R0,R1,...] [--n 4096 --k 4096] [--schedule cooperative]
//                       [--tile 128x256] [--tail-tiles T] [--dump-dir DIR] [--no-run] [--check|--no-check]
//   tessel-grouped-gemm --masked [--m-max 256] [--groups G --m M | --rows ...] [--tile 64x128] [--fp8] ...
//   tessel-grouped-gemm [--masked] --swiglu | --fp8 ...
// (--fp8: the block-scaled fp8 experts, checked on sampled elements, timed against cuBLASLt's
// block-scaled fp8 GEMM per group and, --masked, every group full; --swiglu: the SwiGLU experts, one
// dual GEMM, timed against tessel's grouped GEMM of [W1; W3] (contiguous) or every group full
// (--masked) and cuBLASLt's GEMM of [W1; W3] per group.)
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "02_gemm/gemm.hpp"
#include "bench_util.h"
#include "cli.h"
#include "grouped_gemm.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-grouped-gemm [options]
  --groups G          number of groups (experts)                                            (default 8)
  --m M               mean rows per group: group g gets a seeded random count in [M/2, 3M/2]
                                                                        (default 2048; --masked: 64)
  --rows R0,R1,...    the rows of each group instead (0 allowed)
  --n N --k K         each group's weights are N x K                                        (default 4096 each)
  --tail-tiles T      T more row tiles of no group (tile_group -1) after the last group      (default 0)
  --schedule NAME     tma | multistage | warp_specialized | cooperative | pingpong | auto
                                                          (default cooperative; --masked: auto)
  --tile BMxBN        128x256, 128x192, 192x128, 128x128, (cooperative) 256x192, 256x128, 64x128, 64x64
                                                 (default 128x256; pingpong: 128x128; --masked: 64x128)
  --stages S / --decomposition D / --cluster MxN / --raster-group G   as in tessel-gemm (a cluster
                      must be 1x2 or 1x1: a 2x1 pair would share one B tile across two groups)
  --masked            the masked layout (decode): A is G x M_max x K, group g's first rows[g] rows hold
                      tokens, counted on the device; tiles past them skip their k-loop and store nothing
  --m-max M_MAX       (--masked) rows of each group's block; --m's counts are clamped to it   (default 256)
  --fp8               DeepSeek-V3's block-scaled fp8 experts (grouped_fp8_blockwise, --masked:
                      grouped_fp8_blockwise_masked; tiles 128x128 (default), 64x128), checked on
                      sampled elements against the CPU, timed against cuBLASLt's block-scaled fp8
                      GEMM per group
  --swiglu            the SwiGLU experts, silu(A W1[g]^T) * (A W3[g]^T) as one dual GEMM
                      (grouped_swiglu, --masked: grouped_swiglu_masked; BN <= 128, default tile
                      128x128, pingpong 64x128), timed against tessel's grouped GEMM of [W1; W3]
                      (contiguous) or every group full (--masked), and cuBLASLt's GEMM of [W1; W3]
                      per group
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms, keep the fastest          (default 1)
                      (contiguous layout, bf16 GEMM only)
  --dump-dir DIR      write every compilation stage to DIR
  --no-run            trace + compile only (no GPU needed); DIR defaults to ./tessel-grouped-gemm-dump
  --iters N / --repeats R / --warmup-ms T / --check / --no-check / --seed S   as in tessel-gemm
)";

/// --rows, or G seeded counts in [M/2, 3M/2].
std::vector<std::int64_t> group_rows(const tb::cli& args, std::uint64_t seed, std::int64_t default_m = 2048) {
  std::vector<std::int64_t> rows;
  if (args.has("rows") && (args.has("groups") || args.has("m")))
    throw tb::usage_error("--rows gives every group's rows: it cannot be combined with --groups or --m");
  if (args.has("rows")) {
    const std::string s = args.str("rows", "");
    std::size_t at = 0;
    while (at <= s.size()) {
      const std::size_t comma = s.find(',', at);
      const std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      try {
        std::size_t used = 0;
        const long long v = std::stoll(item, &used);
        if (used != item.size() || v < 0) throw std::invalid_argument(item);
        rows.push_back(v);
      } catch (const std::exception&) {
        throw tb::usage_error("--rows: '" + item + "' is not a row count >= 0");
      }
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    return rows;
  }
  const std::int64_t G = args.i64("groups", 8), M = args.i64("m", default_m);
  if (G <= 0 || M <= 0) throw tb::usage_error("--groups and --m must be positive");
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (std::int64_t g = 0; g < G; ++g) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    rows.push_back(M / 2 + std::int64_t(x % std::uint64_t(M + 1)));
  }
  return rows;
}

/// --masked: the problem (rows per group, clamped to M_max), printed; the kernel's options.
struct masked_problem {
  std::vector<std::int64_t> rows;
  std::int64_t G = 0, M_max = 0, N = 0, K = 0, useful_rows = 0, row_tiles = 0;
  tb::tile_shape tile;
  ts::options opts;
  bool no_run = false;
  /// The rows of group g that the kernel writes: its live tiles' rows (none when rows[g] is 0).
  std::int64_t live_rows(std::int64_t g) const {
    return rows[g] ? std::min(M_max, ts::cdiv(rows[g], std::int64_t(tile.bm)) * tile.bm) : 0;
  }
};

masked_problem masked_setup(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N,
                            std::int64_t K) {
  masked_problem p;
  p.N = N, p.K = K;
  if (args.has("tail-tiles")) throw tb::usage_error("--tail-tiles is for the contiguous layout, not --masked");
  if (args.has("cublas-algos"))
    throw tb::usage_error("--cublas-algos is for the contiguous layout: --masked runs cuBLASLt's default algorithm per "
                          "group (and no cuBLASLt with --fp8)");
  if (args.flag("fp8") && K % 16 != 0)
    throw tb::usage_error("--k: --fp8 needs K a multiple of 16 (A's and W's rows must be 16-byte multiples for TMA; "
                          "an fp8 tensor has no fallback), got " + std::to_string(K));
  const std::int64_t M_max = p.M_max = args.i64("m-max", 256);
  if (M_max <= 0) throw tb::usage_error("--m-max must be positive");
  const tb::tile_shape tile = p.tile = tb::parse_tile(args.str("tile", "64x128"));
  std::vector<std::int64_t>& rows = p.rows = group_rows(args, seed, /*default_m=*/64);
  const std::int64_t G = p.G = std::int64_t(rows.size());
  std::int64_t useful_rows = 0, live_tiles = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    if (rows[g] > M_max) {
      if (args.has("rows"))
        throw tb::usage_error("--rows: group " + std::to_string(g) + " has " + std::to_string(rows[g]) +
                              " rows, more than --m-max " + std::to_string(M_max));
      rows[g] = M_max;
    }
    useful_rows += rows[g], live_tiles += ts::cdiv(rows[g], std::int64_t(tile.bm));
  }
  if (useful_rows == 0) throw tb::usage_error("every group is empty (0 rows): nothing to compute");
  p.useful_rows = useful_rows;
  p.no_run = args.flag("no-run");
  std::string dump_dir = args.str("dump-dir", p.no_run ? "tessel-grouped-gemm-dump" : "");
  p.opts = tb::example_options(args, schedule, dump_dir);
  const std::int64_t row_tiles = p.row_tiles = ts::cdiv(M_max, std::int64_t(tile.bm));
  std::printf("tessel-grouped-gemm --masked%s: %lld groups, %s[g][%lldx%lld] = %s, A[g] %lldx%lld, W[g] %lldx%lld, the "
              "first rows[g] rows of each\n",
              args.flag("fp8") ? " --fp8" : args.flag("swiglu") ? " --swiglu" : "", (long long)G,
              args.flag("swiglu") ? "H" : "C", (long long)M_max, (long long)N,
              args.flag("swiglu") ? "silu(A[g] W1[g]^T) * (A[g] W3[g]^T)" : "A[g] W[g]^T", (long long)M_max,
              (long long)K, (long long)N, (long long)K);
  std::printf("  rows:   ");
  for (std::int64_t g = 0; g < G; ++g) std::printf("%s%lld", g ? "," : "", (long long)rows[g]);
  std::printf(" (%lld useful of %lld rows; %lld live row tiles of %lld)\n", (long long)useful_rows,
              (long long)(G * M_max), (long long)live_tiles, (long long)(G * row_tiles));
  return p;
}

/// --masked (bf16 out): launches into `out` (NaN-poisoned inside sentinel guards), compares each
/// group's live rows with the reference `group_check(g, live rows, those rows of the dense copy)`
/// and checks that every element of a dead tile kept its poison and nothing else did. Prints the
/// result; false on any failure.
bool check_masked(const masked_problem& p, tb::guarded_output& out, const std::function<void(void*)>& launch,
                  const std::function<tb::compare_stats(std::int64_t, std::int64_t, const char*)>& group_check,
                  cudaStream_t stream) {
  tb::device_buffer dense(p.G * p.M_max * p.N * 2);
  out.reset(stream);
  launch(out.data());
  const tb::guard_report gr = out.check(stream);
  out.copy_to_dense(dense.get(), stream);
  std::int64_t dead_elements = 0, groups = 0;
  double worst = 0;
  bool ok = true;
  for (std::int64_t g = 0; g < p.G; ++g) {
    const std::int64_t live = p.live_rows(g);
    dead_elements += (p.M_max - live) * p.N;
    if (!live) continue;
    ++groups;
    const tb::compare_stats st = group_check(g, live, dense.as<char>() + g * p.M_max * p.N * 2);
    worst = std::max(worst, st.rel_err);
    if (!st.ok(1e-2)) {
      std::printf("  group %lld: %s\n", (long long)g, st.str().c_str());
      ok = false;
    }
  }
  // Every element of a dead tile keeps its poison, and nothing else does.
  const bool dead_untouched = gr.clobbered == 0 && std::int64_t(gr.unwritten) == dead_elements;
  std::printf("  check:  live tiles: worst relative error %.2e over %lld non-empty groups; dead tiles: %llu "
              "elements unwritten (want %lld), %llu guard bytes clobbered\n",
              worst, (long long)groups, (unsigned long long)gr.unwritten, (long long)dead_elements,
              (unsigned long long)gr.clobbered);
  if (!ok || !dead_untouched)
    std::printf("FAILED: a live tile does not match the reference (relative Frobenius error < 1e-2, no NaN), or a "
                "dead tile was written, or a guard was clobbered\n%s\n", gr.str().c_str());
  return ok && dead_untouched;
}

/// --masked (bf16): checked against cuBLASLt per group, timed (see the top of this file).
int run_masked(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N, std::int64_t K) {
  const masked_problem p = masked_setup(args, seed, schedule, N, K);
  const std::vector<std::int64_t>& rows = p.rows;
  const std::int64_t G = p.G, M_max = p.M_max, useful_rows = p.useful_rows;
  const tb::tile_shape& tile = p.tile;
  ts::kernel k = tb::compile_example("grouped_gemm_masked", tile, p.opts,
                                     [&] { return tb::jit_example_tile<examples::grouped_gemm_masked>(tile, p.opts); });
  if (p.no_run) return 0;

  const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
  if (!gpu) return 0;
  cudaStream_t stream = gpu->stream;
  const std::int64_t M = G * M_max;  // every group's block, stacked
  tb::device_buffer A(M * K * 2), W(G * N * K * 2), Rows(G * 4), Full(G * 4), Cfull(M * N * 2), Cloop(M * N * 2);
  tb::fill_uniform_bf16(A.get(), M * K, seed, -1.f, 1.f, stream);
  tb::fill_uniform_bf16(W.get(), G * N * K, seed + 1, -1.f, 1.f, stream);
  const std::vector<std::int32_t> counts(rows.begin(), rows.end());
  const std::vector<std::int32_t> full(static_cast<std::size_t>(G), static_cast<std::int32_t>(M_max));
  tb::check_cuda(cudaMemcpyAsync(Rows.get(), counts.data(), G * 4, cudaMemcpyHostToDevice, stream), "copy group_rows",
                 __FILE__, __LINE__);
  tb::check_cuda(cudaMemcpyAsync(Full.get(), full.data(), G * 4, cudaMemcpyHostToDevice, stream), "copy full rows",
                 __FILE__, __LINE__);
  tb::guarded_output C(tb::guarded_matrix(M, N, N, 2));
  std::printf("  data:   uniform [-1,1) bf16 (no zeros), padding rows of A random too; "
              "C NaN-poisoned inside sentinel guards\n");

  const ts::grid grid{unsigned(p.row_tiles), unsigned(ts::cdiv(N, std::int64_t(tile.bn))), unsigned(G)};
  auto a = ts::view<ts::bf16>(A.get(), {G, M_max, K});
  auto w = ts::view<ts::bf16>(W.get(), {G, N, K});
  auto launch = [&](const tb::device_buffer& r, void* out, cudaStream_t s) {
    k.launch(s, grid, a, w, ts::view<ts::i32>(r.get(), {G}), ts::view<ts::bf16>(out, {G, M_max, N}));
  };

  // cuBLASLt: one GEMM per group of its rows (the host must know the counts: no CUDA graph replay).
  tb::lt_context lt;
  const char* bytesA = A.as<char>();
  const char* bytesW = static_cast<const char*>(W.get());
  std::vector<std::unique_ptr<tb::lt_gemm>> per_group(G), per_group_f32(G);
  for (std::int64_t g = 0; g < G; ++g) {
    if (rows[g] == 0) continue;
    // The reference covers the live tiles' padding rows too (the kernel writes them).
    const std::int64_t live = p.live_rows(g);
    per_group[g] = std::make_unique<tb::lt_gemm>(lt, rows[g], N, K, tb::out_type::bf16);
    per_group_f32[g] = std::make_unique<tb::lt_gemm>(lt, live, N, K, tb::out_type::f32);
  }
  auto launch_loop = [&](void* out, cudaStream_t s) {
    for (std::int64_t g = 0; g < G; ++g)
      if (per_group[g])
        per_group[g]->run(bytesA + g * M_max * K * 2, bytesW + g * N * K * 2,
                          static_cast<char*>(out) + g * M_max * N * 2, s);
  };

  if (!args.flag("no-check")) {
    tb::device_buffer ref(M * N * 4);
    const bool ok = check_masked(
        p, C, [&](void* out) { launch(Rows, out, stream); },
        [&](std::int64_t g, std::int64_t live, const char* rows) {
          per_group_f32[g]->run(bytesA + g * M_max * K * 2, bytesW + g * N * K * 2, ref.as<float>(), stream);
          return tb::compare_bf16_f32(rows, ref.as<float>(), std::size_t(live * N), stream);
        },
        stream);
    if (!ok) return 1;
  }

  const tb::timing_config cfg = tb::example_timing(args);
  std::vector<tb::launch_fn> candidates = {
      [&](int, cudaStream_t s) { launch(Rows, C.data(), s); },
      [&](int, cudaStream_t s) { launch(Full, Cfull.get(), s); },
      [&](int, cudaStream_t s) { launch_loop(Cloop.get(), s); },
  };
  const std::vector<tb::timing> t = tb::time_interleaved(candidates, cfg, stream, &gpu->nvml);
  const double useful = 2.0 * double(useful_rows) * double(N) * double(K);
  const double weights_gb = double(G) * double(N) * double(K) * 2 / 1e9;
  const char* names[] = {"masked grouped GEMM (tessel)", "same kernel, every group full (all M_max rows)",
                         "cuBLASLt, one GEMM per group's rows"};
  for (std::size_t i = 0; i < t.size(); ++i)
    std::printf("  %-48s %8.3f ms  %7.1f useful TFLOP/s  %6.0f GB/s of weights  (enqueue %.1f us)\n", names[i],
                t[i].median_ms, tb::tflops(useful, t[i].median_ms), weights_gb / (t[i].median_ms / 1e3),
                t[i].enqueue_us);
  std::printf("  masked / every group full: %.3f   masked / cuBLASLt per group: %.3f   (time ratios inverted: > 1 "
              "means the masked kernel is faster)\n",
              t[1].median_ms / t[0].median_ms, t[2].median_ms / t[0].median_ms);
  return 0;
}

/// Uploads `bytes` of host memory to a new device buffer.
tb::device_buffer upload(const void* host, std::size_t bytes) {
  tb::device_buffer d(bytes);
  tb::check_cuda(cudaMemcpy(d.get(), host, bytes, cudaMemcpyHostToDevice), "upload", __FILE__, __LINE__);
  return d;
}

/// `n` block scales 2^u, u uniform in [-10, -4) (DeepSeek-V3's scales keep products in range).
std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::mt19937 rng{static_cast<unsigned>(seed)};
  std::uniform_real_distribution<float> u(-10, -4);
  for (float& x : v) x = std::exp2(u(rng));
  return v;
}

/// Checks 256 sampled elements of C (bf16; after C.check(), which copied it back) against the CPU
/// in double: C[row][c] = sum over the 128-wide blocks kb of K of (sum_k a[row][k] w[g][c][k]) *
/// sa(g, row, kb) * sw[g][c / 128][kb]. `live` lists the (group, row of A and C) pairs to sample;
/// the first (at column 0) and the last (at column N - 1) always are. Prints the first 4 that
/// differ; returns how many did.
template <class ScaleOfA>
int check_fp8_sampled(const tb::guarded_output& C, const std::vector<std::pair<std::int64_t, std::int64_t>>& live,
                      std::int64_t N, std::int64_t K, const std::vector<std::uint8_t>& a,
                      const std::vector<std::uint8_t>& w, const std::vector<float>& sw, std::uint64_t seed,
                      ScaleOfA sa) {
  const auto e4 = tb::fp8_kind::e4m3;
  const std::int64_t KB = ts::cdiv(K, std::int64_t(128)), NB = ts::cdiv(N, std::int64_t(128));
  std::mt19937_64 rng(seed);
  int bad = 0;
  for (int t = 0; t < 256; ++t) {
    const auto [g, row] = t == 0 ? live.front() : t == 1 ? live.back() : live[rng() % live.size()];
    const std::int64_t c = t == 0 ? 0 : t == 1 ? N - 1 : std::int64_t(rng() % std::uint64_t(N));
    double want = 0, scaled_abs = 0;
    for (std::int64_t blk = 0; blk < KB; ++blk) {
      double sum = 0, abs_sum = 0;
      for (std::int64_t kk = blk * 128; kk < std::min(K, blk * 128 + 128); ++kk) {
        const double x = tb::fp8_to_double(a[std::size_t(row * K + kk)], e4) *
                         tb::fp8_to_double(w[std::size_t((g * N + c) * K + kk)], e4);
        sum += x, abs_sum += std::fabs(x);
      }
      const double sc = double(sa(g, row, blk)) * double(sw[std::size_t((g * NB + c / 128) * KB + blk)]);
      want += sum * sc, scaled_abs += abs_sum * sc;
    }
    const double got = tb::bf16_to_float(std::uint16_t(C.bits(0, row, c)));
    const double tol = scaled_abs * std::ldexp(1.0, -10) + std::fabs(want) * (std::ldexp(1.0, -8) + 1e-6);
    if (!(std::fabs(got - want) <= tol) && bad++ < 4)
      std::printf("  C[%lld][%lld] (group %lld) = %.9g, CPU reference %.9g (tol %.3g)\n", (long long)row,
                  (long long)c, (long long)g, got, want, tol);
  }
  return bad;
}

/// One group's block-scaled fp8 GEMM for lt_fp8_per_group: its `rows` rows of A (e4m3, K each),
/// its scales of A (the first `rows` of each of the K/128 rows of a [K/128][sa_ld] f32 block),
/// its weights W[g] (N x K) and their scales SW[g] ([N/128][K/128]), where cuBLASLt writes (bf16,
/// rows x N) and tessel's result for those rows (bf16, N per row; nullptr: not checked).
struct fp8_group_gemm {
  const char* a;
  std::int64_t rows;
  const float* sa;
  std::int64_t sa_ld;
  const float* sw;
  const char* w;
  char* out;
  const char* tessel;
};

/// cuBLASLt's block-scaled fp8 GEMM (VEC128_32F on A, BLK128x128_32F on W: SA [K/128][rows],
/// SW [N/128][K/128], the layouts example 08 found it takes, run 90), one per group of its rows:
/// what a user without a grouped kernel launches (the counts on the host). cuBLASLt takes no
/// leading dimension for the scales, and whether it pads their rows to 16 bytes (PyTorch's
/// block-scaled tests pad the K-blocks of the 128 x 128 scales to a multiple of 4) was only seen
/// where no padding is needed (K a multiple of 512): so each group's scales are copied into
/// blocks with rows of `rows` or round_up(rows, 4) scales of A and K/128 or round_up(K/128, 4)
/// scales of W, and the first of the four layouts whose f32 results all match tessel's (relative
/// Frobenius error < 1e-2; tessel's was checked against the CPU) is timed. ready() says whether one
/// did; the constructor prints which, or why none.
class lt_fp8_per_group {
public:
  lt_fp8_per_group(tb::lt_context& lt, const std::vector<fp8_group_gemm>& groups, std::int64_t N, std::int64_t K,
                   cudaStream_t stream)
      : groups_(groups) {
    const std::int64_t KB = ts::cdiv(K, std::int64_t(128));
    std::string failures;
    for (const bool padA : {false, true})
      for (const bool padW : {false, true}) {
        if ((padW && up4(KB) == KB) || (padA && std::all_of(groups_.begin(), groups_.end(), [&](const fp8_group_gemm& g) {
                                          return up4(g.rows) == g.rows;
                                        })))
          continue;  // the same layout as an attempt before
        failure_.clear();
        double worst = 0;
        try {
          worst = build(lt, N, K, padA, padW ? up4(KB) : KB, stream);
        } catch (const std::exception& e) {
          failure_ = e.what();
        }
        const std::string layout = std::string("scale rows of A ") + (padA ? "padded to 4" : "compact") +
                                   ", of W " + (padW ? "padded to 4" : "compact");
        if (failure_.empty()) {
          std::printf("  cuBLASLt block-scaled per group (%s): matches tessel (worst relative error %.2e): timed "
                      "below\n", layout.c_str(), worst);
          return;
        }
        failures += "\n    " + layout + ": " + failure_;
        if (failure_ == "not checked (--no-check)") break;
      }
    gemms_.clear();
    std::printf("  cuBLASLt block-scaled per group: not timed:%s\n", failures.c_str());
  }
  bool ready() const { return failure_.empty() && gemms_.size() == groups_.size(); }
  void run(cudaStream_t s) const {
    for (std::size_t i = 0; i < gemms_.size(); ++i) gemms_[i]->run(groups_[i].a, groups_[i].w, groups_[i].out, s);
  }

private:
  static std::int64_t up4(std::int64_t v) { return (v + 3) / 4 * 4; }

  /// One attempt: every group's GEMM with its scales copied into rows of `rows` scales of A
  /// (round_up(rows, 4) with `padA`) and `ldW` of W; the worst relative error against tessel
  /// (sets failure_ on a mismatch).
  double build(tb::lt_context& lt, std::int64_t N, std::int64_t K, bool padA, std::int64_t ldW, cudaStream_t stream) {
    const std::int64_t KB = ts::cdiv(K, std::int64_t(128)), NB = ts::cdiv(N, std::int64_t(128));
    gemms_.clear();
    scales_.clear();
    double worst = 0;
    std::int64_t most = 0;
    for (const fp8_group_gemm& g : groups_) most = std::max(most, g.rows);
    tb::device_buffer ref(std::size_t(most * N * 4));
    for (const fp8_group_gemm& g : groups_) {
      const std::int64_t lda = padA ? up4(g.rows) : g.rows;
      tb::device_buffer sa(std::size_t(KB * lda * 4)), sw(std::size_t(NB * ldW * 4));
      tb::check_cuda(cudaMemsetAsync(sa.get(), 0, sa.bytes(), stream), "clear the scales", __FILE__, __LINE__);
      tb::check_cuda(cudaMemsetAsync(sw.get(), 0, sw.bytes(), stream), "clear the scales", __FILE__, __LINE__);
      tb::check_cuda(cudaMemcpy2DAsync(sa.get(), lda * 4, g.sa, g.sa_ld * 4, g.rows * 4, KB, cudaMemcpyDeviceToDevice,
                                       stream),
                     "copy a group's scales of A", __FILE__, __LINE__);
      tb::check_cuda(cudaMemcpy2DAsync(sw.get(), ldW * 4, g.sw, KB * 4, KB * 4, NB, cudaMemcpyDeviceToDevice, stream),
                     "copy a group's scales of W", __FILE__, __LINE__);
      const tb::lt_block_scales scales{sa.get(), sw.get()};
      gemms_.push_back(std::make_unique<tb::lt_gemm>(lt, g.rows, N, K, tb::out_type::bf16, tb::epilogue::none, nullptr,
                                                     1, tb::gemm_layout{}, tb::in_type::e4m3, scales));
      if (!g.tessel) {
        failure_ = "not checked (--no-check)";
      } else {
        tb::lt_gemm f32(lt, g.rows, N, K, tb::out_type::f32, tb::epilogue::none, nullptr, 1, tb::gemm_layout{},
                        tb::in_type::e4m3, scales);
        f32.run(g.a, g.w, ref.get(), stream);
        const tb::compare_stats st = tb::compare_bf16_f32(g.tessel, ref.as<float>(), std::size_t(g.rows * N), stream);
        worst = std::max(worst, st.rel_err);
        if (!st.ok(1e-2) && failure_.empty())
          failure_ = "a group of " + std::to_string(g.rows) + " rows differs from tessel's: " + st.str();
      }
      scales_.push_back(std::move(sa));
      scales_.push_back(std::move(sw));
    }
    return worst;
  }

  std::vector<fp8_group_gemm> groups_;
  std::vector<std::unique_ptr<tb::lt_gemm>> gemms_;
  std::vector<tb::device_buffer> scales_;
  std::string failure_;
};

/// The fp8 experts' kernel for a tile (BN divides 128: 128x128 or 64x128).
template <template <int, int> class Kernel>
ts::kernel jit_fp8_experts(const char* program, const tb::tile_shape& tile, const ts::options& o) {
  return tb::compile_example(program, {tile.bm, tile.bn, 128}, o, [&] {
    if (tile == tb::tile_shape{128, 128, 64}) return ts::jit(Kernel<128, 128>{}, o);
    if (tile == tb::tile_shape{64, 128, 64}) return ts::jit(Kernel<64, 128>{}, o);
    throw tb::usage_error("--tile: the fp8 experts instantiate 128x128 and 64x128 (BN divides 128)");
  });
}

/// Prints each timing (TFLOP/s of `flops`) under its name.
void print_timings(const std::vector<tb::timing>& t, const std::vector<const char*>& names, double flops,
                   const char* flops_what) {
  for (std::size_t i = 0; i < t.size(); ++i)
    std::printf("  %-52s %8.3f ms  %7.1f %s TFLOP/s  (enqueue %.1f us)\n", names[i], t[i].median_ms,
                tb::tflops(flops, t[i].median_ms), flops_what, t[i].enqueue_us);
}

/// --masked --fp8: DeepSeek-V3's decode experts (grouped_fp8_blockwise_masked): e4m3 A and W, SA
/// G x ceil(K/128) x M_max, SW G x ceil(N/128) x ceil(K/128), scales in [2^-10, 2^-4]. Checked on 256
/// sampled live elements against the CPU in double (tests/gpu/grouped_test.cpp checks every one) and
/// on the dead tiles' poison; timed against the same kernel with every group full and against
/// cuBLASLt's block-scaled fp8 GEMM per group's rows.
int run_masked_fp8(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N, std::int64_t K) {
  const masked_problem p = masked_setup(args, seed, schedule, N, K);
  const std::int64_t G = p.G, M_max = p.M_max;
  const tb::tile_shape& tile = p.tile;
  ts::kernel k = jit_fp8_experts<examples::grouped_fp8_blockwise_masked>("grouped_fp8_blockwise_masked", tile, p.opts);
  if (p.no_run) return 0;

  const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
  if (!gpu) return 0;
  cudaStream_t stream = gpu->stream;
  const std::int64_t M = G * M_max, KB = ts::cdiv(K, std::int64_t(128)), NB = ts::cdiv(N, std::int64_t(128));
  const auto e4 = tb::fp8_kind::e4m3;
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(M * K), seed, e4),
                                  w = tb::random_fp8(std::size_t(G * N * K), seed + 1, e4);
  // SA[g][kb][r], SW[g][nb][kb]
  const std::vector<float> sa = random_scales(std::size_t(G * KB * M_max), seed + 7),
                           sw = random_scales(std::size_t(G * NB * KB), seed + 8);
  const std::vector<std::int32_t> counts(p.rows.begin(), p.rows.end());
  const std::vector<std::int32_t> full(static_cast<std::size_t>(G), static_cast<std::int32_t>(M_max));
  const tb::device_buffer A = upload(a.data(), a.size()), W = upload(w.data(), w.size()),
                          SA = upload(sa.data(), sa.size() * 4), SW = upload(sw.data(), sw.size() * 4),
                          Rows = upload(counts.data(), G * 4), Full = upload(full.data(), G * 4);
  tb::device_buffer Cfull(M * N * 2), Cloop(M * N * 2), dense(M * N * 2);
  tb::guarded_output C(tb::guarded_matrix(M, N, N, 2));
  std::printf("  data:   random e4m3 (no zeros), padding rows of A random too; "
              "C NaN-poisoned inside sentinel guards\n");
  const ts::grid grid{unsigned(p.row_tiles), unsigned(ts::cdiv(N, std::int64_t(tile.bn))), unsigned(G)};
  auto launch = [&](const tb::device_buffer& r, void* out, cudaStream_t s) {
    k.launch(s, grid, ts::view<ts::f8e4m3>(A.get(), {G, M_max, K}), ts::view<ts::f8e4m3>(W.get(), {G, N, K}),
             ts::view<ts::f32>(SA.get(), {G, KB, M_max}), ts::view<ts::f32>(SW.get(), {G, NB, KB}),
             ts::view<ts::i32>(r.get(), {G}), ts::view<ts::bf16>(out, {G, M_max, N}));
  };

  const bool check = !args.flag("no-check");
  if (check) {
    C.reset(stream);
    launch(Rows, C.data(), stream);
    const tb::guard_report gr = C.check(stream);
    C.copy_to_dense(dense.get(), stream);
    std::int64_t dead_elements = 0;
    for (std::int64_t g = 0; g < G; ++g) dead_elements += (M_max - p.live_rows(g)) * N;
    // 256 sampled elements of live tiles (the first and last live ones among them), in double.
    std::vector<std::pair<std::int64_t, std::int64_t>> live;  // (group, row of C) of every live row
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t r = 0; r < p.live_rows(g); ++r) live.push_back({g, g * M_max + r});
    const int bad = check_fp8_sampled(C, live, N, K, a, w, sw, seed, [&](std::int64_t g, std::int64_t row, std::int64_t kb) {
      return sa[std::size_t((g * KB + kb) * M_max + (row - g * M_max))];
    });
    const bool dead_untouched = gr.clobbered == 0 && std::int64_t(gr.unwritten) == dead_elements;
    std::printf("  check:  live tiles: %d of 256 sampled elements differ from the CPU (double); dead tiles: %llu "
                "elements unwritten (want %lld), %llu guard bytes clobbered\n",
                bad, (unsigned long long)gr.unwritten, (long long)dead_elements, (unsigned long long)gr.clobbered);
    if (bad || !dead_untouched) {
      std::printf("FAILED: a sampled live element differs from the CPU, or a dead tile was written, or a guard was "
                  "clobbered\n%s\n", gr.str().c_str());
      return 1;
    }
  }

  // cuBLASLt's block-scaled fp8 GEMM per group of its rows, checked against tessel's C first.
  tb::lt_context lt;
  std::vector<fp8_group_gemm> groups;
  for (std::int64_t g = 0; g < G; ++g)
    if (p.rows[g])
      groups.push_back({A.as<char>() + g * M_max * K, p.rows[g], SA.as<float>() + g * KB * M_max, M_max,
                        SW.as<float>() + g * NB * KB, W.as<char>() + g * N * K, Cloop.as<char>() + g * M_max * N * 2,
                        check ? dense.as<char>() + g * M_max * N * 2 : nullptr});
  const lt_fp8_per_group lt_groups(lt, groups, N, K, stream);

  const tb::timing_config cfg = tb::example_timing(args);
  std::vector<tb::launch_fn> candidates = {[&](int, cudaStream_t s) { launch(Rows, C.data(), s); },
                                           [&](int, cudaStream_t s) { launch(Full, Cfull.get(), s); }};
  if (lt_groups.ready()) candidates.push_back([&](int, cudaStream_t s) { lt_groups.run(s); });
  const std::vector<tb::timing> t = tb::time_interleaved(candidates, cfg, stream, &gpu->nvml);
  const double useful = 2.0 * double(p.useful_rows) * double(N) * double(K);
  const double weights_gb = double(G) * double(N) * double(K) / 1e9;
  const char* names[] = {"masked grouped fp8 GEMM (tessel)", "same kernel, every group full (all M_max rows)",
                         "cuBLASLt block-scaled, one GEMM per group's rows"};
  for (std::size_t i = 0; i < t.size(); ++i)
    std::printf("  %-48s %8.3f ms  %7.1f useful TFLOP/s  %6.0f GB/s of weights  (enqueue %.1f us)\n", names[i],
                t[i].median_ms, tb::tflops(useful, t[i].median_ms), weights_gb / (t[i].median_ms / 1e3),
                t[i].enqueue_us);
  std::printf("  masked / every group full: %.3f", t[1].median_ms / t[0].median_ms);
  if (t.size() > 2) std::printf("   masked / cuBLASLt per group: %.3f", t[2].median_ms / t[0].median_ms);
  std::printf("   (time ratios inverted: > 1 means the masked launch is faster)\n");
  return 0;
}

/// A and the stacked weights [W1; W3] of the SwiGLU experts: W13 is G x 2N x K, group g's W1[g]
/// its first N rows and W3[g] the next N, so that cuBLASLt's reference (and baseline) is one GEMM
/// of 2N columns per group and the kernel reads W1 and W3 as two G x N x K views of it.
struct swiglu_weights {
  tb::device_buffer W13;
  std::int64_t G = 0, N = 0, K = 0;
  swiglu_weights(std::int64_t g, std::int64_t n, std::int64_t k, std::uint64_t seed, cudaStream_t stream)
      : W13(std::size_t(g * 2 * n * k * 2)), G(g), N(n), K(k) {
    tb::fill_uniform_bf16(W13.get(), G * 2 * N * K, seed, -1.f, 1.f, stream);
  }
  ts::tensor_arg w1() const { return ts::view<ts::bf16>(W13.get(), {G, N, K}, {2 * N * K, K, 1}); }
  ts::tensor_arg w3() const {
    return ts::view<ts::bf16>(W13.as<char>() + N * K * 2, {G, N, K}, {2 * N * K, K, 1});
  }
  const char* group(std::int64_t g) const { return W13.as<char>() + g * 2 * N * K * 2; }  ///< [W1[g]; W3[g]]

  /// cuBLASLt's bf16 GEMM of [W1[g]; W3[g]] (2N columns, no activation: the unfused path's GEMM)
  /// for each group of rows[g] > 0 rows, group g's rows of A and of the output (2N per row) starting
  /// at row first_row[g] of both.
  struct per_group_gemms {
    std::vector<std::unique_ptr<tb::lt_gemm>> gemms;
    std::vector<std::int64_t> first_row;
  };
  per_group_gemms cublas_per_group(tb::lt_context& lt, const std::vector<std::int64_t>& rows,
                                   std::vector<std::int64_t> first_row) const {
    per_group_gemms p{std::vector<std::unique_ptr<tb::lt_gemm>>(rows.size()), std::move(first_row)};
    for (std::size_t g = 0; g < rows.size(); ++g)
      if (rows[g]) p.gemms[g] = std::make_unique<tb::lt_gemm>(lt, rows[g], 2 * N, K, tb::out_type::bf16);
    return p;
  }
  void run(const per_group_gemms& p, const char* a, char* out, cudaStream_t s) const {
    for (std::size_t g = 0; g < p.gemms.size(); ++g)
      if (p.gemms[g])
        p.gemms[g]->run(a + p.first_row[g] * K * 2, group(std::int64_t(g)), out + p.first_row[g] * 2 * N * 2, s);
  }
};

/// Checks H's rows [first, first + rows) (bf16, dense, N per row) against the f32 reference
/// silu(A W1[g]^T) * (A W3[g]^T) of group g: cuBLASLt's f32 GEMM of [W1[g]; W3[g]], then
/// swiglu_f32_reference. `gu` and `ref` hold at least rows x 2N and rows x N floats.
tb::compare_stats check_swiglu_group(tb::lt_context& lt, const char* a_rows, const swiglu_weights& w, std::int64_t g,
                                     std::int64_t rows, const char* h_rows, const tb::device_buffer& gu,
                                     const tb::device_buffer& ref, cudaStream_t stream) {
  tb::lt_gemm f32(lt, rows, 2 * w.N, w.K, tb::out_type::f32);
  f32.run(a_rows, w.group(g), gu.get(), stream);
  tb::swiglu_f32_reference(gu.as<float>(), rows, w.N, ref.as<float>(), stream);
  return tb::compare_bf16_f32(h_rows, ref.as<float>(), std::size_t(rows * w.N), stream);
}

/// --masked --swiglu: the SwiGLU experts in the masked layout (grouped_swiglu_masked, a dual GEMM):
/// H[g] = silu(A[g] W1[g]^T) * (A[g] W3[g]^T) for each group's live tiles. Checked per group
/// against the f32 reference (and the dead tiles' poison); timed against the same kernel with every
/// group full and cuBLASLt's GEMM of [W1[g]; W3[g]] per group's rows (the GEMM alone: the unfused
/// path also runs the activation).
int run_masked_swiglu(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N, std::int64_t K) {
  const masked_problem p = masked_setup(args, seed, schedule, N, K);
  const std::int64_t G = p.G, M_max = p.M_max;
  const tb::tile_shape& tile = p.tile;
  ts::kernel k = tb::compile_example("grouped_swiglu_masked", tile, p.opts, [&] {
    return tb::jit_example_tile<examples::grouped_swiglu_masked>(tile, p.opts);
  });
  if (p.no_run) return 0;

  const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
  if (!gpu) return 0;
  cudaStream_t stream = gpu->stream;
  const std::int64_t M = G * M_max;
  tb::device_buffer A(M * K * 2), Hfull(M * N * 2), Hloop(M * 2 * N * 2);
  tb::fill_uniform_bf16(A.get(), M * K, seed, -1.f, 1.f, stream);
  const swiglu_weights w(G, N, K, seed + 1, stream);
  const std::vector<std::int32_t> counts(p.rows.begin(), p.rows.end());
  const std::vector<std::int32_t> full(static_cast<std::size_t>(G), static_cast<std::int32_t>(M_max));
  const tb::device_buffer Rows = upload(counts.data(), G * 4), Full = upload(full.data(), G * 4);
  tb::guarded_output H(tb::guarded_matrix(M, N, N, 2));
  std::printf("  data:   uniform [-1,1) bf16 (no zeros), padding rows of A random too; "
              "H NaN-poisoned inside sentinel guards\n");
  const ts::grid grid{unsigned(p.row_tiles), unsigned(ts::cdiv(N, std::int64_t(tile.bn))), unsigned(G)};
  auto a = ts::view<ts::bf16>(A.get(), {G, M_max, K});
  auto launch = [&](const tb::device_buffer& r, void* out, cudaStream_t s) {
    k.launch(s, grid, a, w.w1(), w.w3(), ts::view<ts::i32>(r.get(), {G}), ts::view<ts::bf16>(out, {G, M_max, N}));
  };

  tb::lt_context lt;
  if (!args.flag("no-check")) {
    tb::device_buffer gu(M_max * 2 * N * 4), ref(M_max * N * 4);
    const bool ok = check_masked(
        p, H, [&](void* out) { launch(Rows, out, stream); },
        [&](std::int64_t g, std::int64_t live, const char* rows) {
          return check_swiglu_group(lt, A.as<char>() + g * M_max * K * 2, w, g, live, rows, gu, ref, stream);
        },
        stream);
    if (!ok) return 1;
  }

  std::vector<std::int64_t> first_rows(static_cast<std::size_t>(G));
  for (std::int64_t g = 0; g < G; ++g) first_rows[std::size_t(g)] = g * M_max;
  const auto per_group = w.cublas_per_group(lt, p.rows, std::move(first_rows));
  const tb::timing_config cfg = tb::example_timing(args);
  const std::vector<tb::timing> t = tb::time_interleaved(
      {[&](int, cudaStream_t s) { launch(Rows, H.data(), s); },
       [&](int, cudaStream_t s) { launch(Full, Hfull.get(), s); },
       [&](int, cudaStream_t s) { w.run(per_group, A.as<char>(), Hloop.as<char>(), s); }},
      cfg, stream, &gpu->nvml);
  print_timings(t,
                {"masked SwiGLU experts (tessel, one dual GEMM)", "same kernel, every group full (all M_max rows)",
                 "cuBLASLt GEMM of [W1; W3] per group's rows (no act.)"},
                2.0 * double(p.useful_rows) * double(2 * N) * double(K), "useful");
  std::printf("  masked / every group full: %.3f   masked / cuBLASLt per group: %.3f   (time ratios inverted: > 1 "
              "means the masked kernel is faster)\n",
              t[1].median_ms / t[0].median_ms, t[2].median_ms / t[0].median_ms);
  return 0;
}

/// The contiguous layout's problem: the groups' rows laid out in tiles of BM rows (and --tail-tiles
/// tiles of no group), printed.
struct contiguous_problem {
  std::vector<std::int64_t> rows;
  examples::contiguous_groups layout;
  std::int64_t G = 0, M = 0, useful_rows = 0;
};

contiguous_problem contiguous_setup(const tb::cli& args, std::uint64_t seed, const tb::tile_shape& tile,
                                    std::int64_t N, std::int64_t K, const char* what) {  // what: " --swiglu"
  contiguous_problem p;
  if (args.has("cublas-algos"))
    throw tb::usage_error(std::string("--cublas-algos is for the bf16 grouped GEMM: ") + (what + 1) +
                          " runs cuBLASLt's default algorithm per group");
  const std::int64_t tail = args.i64("tail-tiles", 0);
  if (tail < 0) throw tb::usage_error("--tail-tiles must be >= 0");
  p.rows = group_rows(args, seed);
  p.G = std::int64_t(p.rows.size());
  std::int64_t needed_tiles = 0;
  for (std::int64_t r : p.rows) needed_tiles += ts::cdiv(r, std::int64_t(tile.bm)), p.useful_rows += r;
  // (The check's relative error needs a nonzero reference.)
  if (p.useful_rows == 0) throw tb::usage_error("every group is empty (0 rows): nothing to compute");
  p.layout = examples::layout_groups(p.rows, tile.bm, needed_tiles + tail);
  p.M = p.layout.total_rows;
  std::printf("tessel-grouped-gemm%s: %lld groups, %lld stacked rows, N %lld, K %lld\n", what, (long long)p.G,
              (long long)p.M, (long long)N, (long long)K);
  std::printf("  rows:   ");
  for (std::int64_t g = 0; g < p.G; ++g) std::printf("%s%lld", g ? "," : "", (long long)p.rows[g]);
  std::printf(" (%lld useful of %lld stacked rows, %lld row tiles, %lld of no group)\n", (long long)p.useful_rows,
              (long long)p.M, (long long)p.layout.tile_group.size(), (long long)tail);
  return p;
}

/// --swiglu (contiguous layout): the SwiGLU experts (grouped_swiglu, a dual GEMM). Checked per group
/// against the f32 reference; timed against tessel's grouped GEMM of [W1; W3] (the same flops, one
/// dot of 2N columns), and cuBLASLt's GEMM of [W1[g]; W3[g]] per group (the GEMM alone).
int run_contiguous_swiglu(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N,
                          std::int64_t K) {
  const tb::tile_shape tile =
      tb::parse_tile(args.str("tile", schedule == ts::schedule::pingpong ? "64x128" : "128x128"));
  const contiguous_problem p = contiguous_setup(args, seed, tile, N, K, " --swiglu");
  const std::int64_t G = p.G, M = p.M;
  const bool no_run = args.flag("no-run");
  std::string dump_dir = args.str("dump-dir", no_run ? "tessel-grouped-gemm-dump" : "");
  const ts::options opts = tb::example_options(args, schedule, dump_dir);
  ts::kernel k = tb::compile_example("grouped_swiglu", tile, opts,
                                     [&] { return tb::jit_example_tile<examples::grouped_swiglu>(tile, opts); });
  ts::options plain_opts = opts;
  plain_opts.dump_dir.clear();  // the dump is the SwiGLU kernel's
  // The same flops as one dot of 2N columns: BN = 2 x the dual GEMM's BN (its wgmma's width) where
  // the example has that tile (128x256, 64x128), else the dual GEMM's own tile (64x128 for 64x256).
  const tb::tile_shape wide{tile.bm, 2 * tile.bn, 64};
  const tb::tile_shape plain_tile =
      wide == tb::tile_shape{128, 256, 64} || wide == tb::tile_shape{64, 128, 64} ? wide : tile;
  ts::kernel plain = tb::jit_example_tile<examples::grouped_gemm>(plain_tile, plain_opts);
  if (no_run) return 0;

  const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
  if (!gpu) return 0;
  cudaStream_t stream = gpu->stream;
  tb::device_buffer A(M * K * 2), Hplain(M * 2 * N * 2), Hloop(M * 2 * N * 2);
  tb::fill_uniform_bf16(A.get(), M * K, seed, -1.f, 1.f, stream);
  const swiglu_weights w(G, N, K, seed + 1, stream);
  const tb::device_buffer Tg = upload(p.layout.tile_group.data(), p.layout.tile_group.size() * 4);
  tb::guarded_output H(tb::guarded_matrix(M, N, N, 2));
  std::printf("  data:   uniform [-1,1) bf16 (no zeros), padding rows of A random too; "
              "H NaN-poisoned inside sentinel guards\n");
  auto a = ts::view<ts::bf16>(A.get(), {M, K});
  auto tg = ts::view<ts::i32>(Tg.get(), {std::int64_t(p.layout.tile_group.size())});
  const ts::grid grid = tb::gemm_grid(tile, M, N);
  auto launch = [&](void* out, cudaStream_t s) { k.launch(s, grid, a, w.w1(), w.w3(), tg, ts::view<ts::bf16>(out, {M, N})); };
  const ts::grid plain_grid = tb::gemm_grid(plain_tile, M, 2 * N);
  auto launch_plain = [&](cudaStream_t s) {
    plain.launch(s, plain_grid, a, ts::view<ts::bf16>(w.W13.get(), {G, 2 * N, K}), tg,
                 ts::view<ts::bf16>(Hplain.get(), {M, 2 * N}));
  };

  tb::lt_context lt;
  std::vector<std::int64_t> padded_rows;  // each group's tiles' rows
  for (std::int64_t r : p.rows) padded_rows.push_back(ts::cdiv(r, std::int64_t(tile.bm)) * tile.bm);
  const std::int64_t most = *std::max_element(padded_rows.begin(), padded_rows.end());
  const auto per_group = w.cublas_per_group(lt, padded_rows, p.layout.first_row);
  if (!args.flag("no-check")) {
    tb::device_buffer gu(most * 2 * N * 4), ref(most * N * 4), dense(M * N * 2);
    H.reset(stream);
    launch(H.data(), stream);
    const tb::guard_report gr = H.check(stream);
    H.copy_to_dense(dense.get(), stream);
    double worst = 0;
    bool ok = gr.ok();
    for (std::int64_t g = 0; g < G; ++g) {
      const std::int64_t padded = padded_rows[std::size_t(g)], first = p.layout.first_row[g];
      if (!padded) continue;
      const tb::compare_stats st = check_swiglu_group(lt, A.as<char>() + first * K * 2, w, g, padded,
                                                      dense.as<char>() + first * N * 2, gu, ref, stream);
      worst = std::max(worst, st.rel_err);
      if (!st.ok(1e-2)) {
        std::printf("  group %lld: %s\n", (long long)g, st.str().c_str());
        ok = false;
      }
    }
    std::printf("  check:  SwiGLU experts: worst relative error %.2e over the groups' tiles; %s\n", worst,
                gr.str().c_str());
    if (!ok) {
      std::printf("FAILED: a group does not match the reference (relative Frobenius error < 1e-2, no NaN), or a guard "
                  "was clobbered or an element left unwritten\n");
      return 1;
    }
  }

  const tb::timing_config cfg = tb::example_timing(args);
  const std::vector<tb::timing> t = tb::time_interleaved(
      {[&](int, cudaStream_t s) { launch(H.data(), s); }, [&](int, cudaStream_t s) { launch_plain(s); },
       [&](int, cudaStream_t s) { w.run(per_group, A.as<char>(), Hloop.as<char>(), s); }},
      cfg, stream, &gpu->nvml);
  const std::string plain_name = "grouped GEMM of [W1; W3], tile " + std::to_string(plain_tile.bm) + "x" +
                                 std::to_string(plain_tile.bn) + " (tessel)";
  print_timings(t,
                {"SwiGLU experts (tessel, one dual GEMM)", plain_name.c_str(),
                 "cuBLASLt GEMM of [W1; W3] per group (no act.)"},
                2.0 * double(p.useful_rows) * double(2 * N) * double(K), "useful");
  std::printf("  SwiGLU / grouped GEMM of the same flops: %.3f   SwiGLU / cuBLASLt per group: %.3f   (time ratios "
              "inverted: > 1 means the SwiGLU kernel is faster)\n",
              t[1].median_ms / t[0].median_ms, t[2].median_ms / t[0].median_ms);
  return 0;
}

/// --fp8 (contiguous layout): DeepSeek-V3's prefill experts (grouped_fp8_blockwise): e4m3 A (M x K)
/// and W (G x N x K), SA ceil(K/128) x M, SW G x ceil(N/128) x ceil(K/128). Checked on 256 sampled
/// elements of the groups' rows against the CPU in double; timed against cuBLASLt's block-scaled
/// fp8 GEMM per group's rows.
int run_contiguous_fp8(const tb::cli& args, std::uint64_t seed, ts::schedule schedule, std::int64_t N, std::int64_t K) {
  if (K % 16 != 0)
    throw tb::usage_error("--k: --fp8 needs K a multiple of 16 (A's and W's rows must be 16-byte multiples for TMA; "
                          "an fp8 tensor has no fallback), got " + std::to_string(K));
  const tb::tile_shape tile = tb::parse_tile(args.str("tile", "128x128"));
  const contiguous_problem p = contiguous_setup(args, seed, tile, N, K, " --fp8");
  const std::int64_t G = p.G, M = p.M, KB = ts::cdiv(K, std::int64_t(128)), NB = ts::cdiv(N, std::int64_t(128));
  const bool no_run = args.flag("no-run");
  std::string dump_dir = args.str("dump-dir", no_run ? "tessel-grouped-gemm-dump" : "");
  const ts::options opts = tb::example_options(args, schedule, dump_dir);
  ts::kernel k = jit_fp8_experts<examples::grouped_fp8_blockwise>("grouped_fp8_blockwise", tile, opts);
  if (no_run) return 0;

  const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
  if (!gpu) return 0;
  cudaStream_t stream = gpu->stream;
  const auto e4 = tb::fp8_kind::e4m3;
  const std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(M * K), seed, e4),
                                  w = tb::random_fp8(std::size_t(G * N * K), seed + 1, e4);
  const std::vector<float> sa = random_scales(std::size_t(KB * M), seed + 7),  // SA[kb][row]
      sw = random_scales(std::size_t(G * NB * KB), seed + 8);                  // SW[g][nb][kb]
  const tb::device_buffer A = upload(a.data(), a.size()), W = upload(w.data(), w.size()),
                          SA = upload(sa.data(), sa.size() * 4), SW = upload(sw.data(), sw.size() * 4),
                          Tg = upload(p.layout.tile_group.data(), p.layout.tile_group.size() * 4);
  tb::device_buffer Cloop(M * N * 2), dense(M * N * 2);
  tb::guarded_output C(tb::guarded_matrix(M, N, N, 2));
  std::printf("  data:   random e4m3 (no zeros), padding rows of A random too; "
              "C NaN-poisoned inside sentinel guards\n");
  const ts::grid grid = tb::gemm_grid(tile, M, N);
  auto launch = [&](void* out, cudaStream_t s) {
    k.launch(s, grid, ts::view<ts::f8e4m3>(A.get(), {M, K}), ts::view<ts::f8e4m3>(W.get(), {G, N, K}),
             ts::view<ts::f32>(SA.get(), {KB, M}), ts::view<ts::f32>(SW.get(), {G, NB, KB}),
             ts::view<ts::i32>(Tg.get(), {std::int64_t(p.layout.tile_group.size())}), ts::view<ts::bf16>(out, {M, N}));
  };

  const bool check = !args.flag("no-check");
  if (check) {
    C.reset(stream);
    launch(C.data(), stream);
    const tb::guard_report gr = C.check(stream);
    C.copy_to_dense(dense.get(), stream);
    std::vector<std::pair<std::int64_t, std::int64_t>> live;  // (group, row) of every row of a group
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t r = 0; r < p.rows[g]; ++r) live.push_back({g, p.layout.first_row[g] + r});
    const int bad = check_fp8_sampled(C, live, N, K, a, w, sw, seed,
                                      [&](std::int64_t, std::int64_t row, std::int64_t kb) { return sa[std::size_t(kb * M + row)]; });
    std::printf("  check:  %d of 256 sampled elements differ from the CPU (double); %s\n", bad, gr.str().c_str());
    if (bad || !gr.ok()) {
      std::printf("FAILED: a sampled element differs from the CPU, or a guard was clobbered or an element left "
                  "unwritten\n");
      return 1;
    }
  }

  tb::lt_context lt;
  std::vector<fp8_group_gemm> groups;
  for (std::int64_t g = 0; g < G; ++g)
    if (p.rows[g]) {
      const std::int64_t first = p.layout.first_row[g];
      groups.push_back({A.as<char>() + first * K, p.rows[g], SA.as<float>() + first, M, SW.as<float>() + g * NB * KB,
                        W.as<char>() + g * N * K, Cloop.as<char>() + first * N * 2,
                        check ? dense.as<char>() + first * N * 2 : nullptr});
    }
  const lt_fp8_per_group lt_groups(lt, groups, N, K, stream);
  const tb::timing_config cfg = tb::example_timing(args);
  std::vector<tb::launch_fn> candidates = {[&](int, cudaStream_t s) { launch(C.data(), s); }};
  if (lt_groups.ready()) candidates.push_back([&](int, cudaStream_t s) { lt_groups.run(s); });
  const std::vector<tb::timing> t = tb::time_interleaved(candidates, cfg, stream, &gpu->nvml);
  print_timings(t, {"fp8 experts (tessel, block-scaled grouped GEMM)", "cuBLASLt block-scaled, one GEMM per group"},
                2.0 * double(p.useful_rows) * double(N) * double(K), "useful");
  if (t.size() > 1)
    std::printf("  grouped / cuBLASLt per group: %.3f   (time ratio inverted: > 1 means the grouped GEMM is faster)\n",
                t[1].median_ms / t[0].median_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-grouped-gemm", kUsage, [&]() -> int {
    tb::cli args(argc, argv,
                 {"groups", "m", "rows", "n", "k", "tail-tiles", "m-max", "schedule", "tile", "stages", "decomposition",
                  "cluster", "raster-group", "cublas-algos", "dump-dir", "iters", "repeats", "warmup-ms", "seed"},
                 {"no-run", "check", "no-check", "help", "masked", "fp8", "swiglu"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    const bool masked = args.flag("masked");
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", masked ? "auto" : "cooperative"));
    const std::int64_t N = args.i64("n", 4096), K = args.i64("k", 4096), tail = args.i64("tail-tiles", 0);
    if (N <= 0 || K <= 0) throw tb::usage_error("--n/--k must be positive");
    if (args.flag("fp8") && args.flag("swiglu"))
      throw tb::usage_error("--fp8 and --swiglu: choose one (the fp8 experts are the plain block-scaled GEMM)");
    if (masked)
      return args.flag("fp8")      ? run_masked_fp8(args, seed, schedule, N, K)
             : args.flag("swiglu") ? run_masked_swiglu(args, seed, schedule, N, K)
                                   : run_masked(args, seed, schedule, N, K);
    if (args.has("m-max")) throw tb::usage_error("--m-max is for --masked");
    if (args.flag("fp8")) return run_contiguous_fp8(args, seed, schedule, N, K);
    if (args.flag("swiglu")) return run_contiguous_swiglu(args, seed, schedule, N, K);
    if (tail < 0) throw tb::usage_error("--tail-tiles must be >= 0");
    const tb::tile_shape tile =
        tb::parse_tile(args.str("tile", schedule == ts::schedule::pingpong ? "128x128" : "128x256"));
    const std::vector<std::int64_t> rows = group_rows(args, seed);
    const std::int64_t G = std::int64_t(rows.size());
    std::int64_t needed_tiles = 0, useful_rows = 0;
    for (std::int64_t r : rows) needed_tiles += ts::cdiv(r, std::int64_t(tile.bm)), useful_rows += r;
    const examples::contiguous_groups layout = examples::layout_groups(rows, tile.bm, needed_tiles + tail);
    const std::int64_t M = layout.total_rows;
    // (The check's relative error needs a nonzero reference.)
    if (useful_rows == 0) throw tb::usage_error("every group is empty (0 rows): nothing to compute");
    const bool no_run = args.flag("no-run");
    std::string dump_dir = args.str("dump-dir", no_run ? "tessel-grouped-gemm-dump" : "");
    const ts::options opts = tb::example_options(args, schedule, dump_dir);

    std::printf("tessel-grouped-gemm: %lld groups, C[%lldx%lld] = A[%lldx%lld] @ W[g][%lldx%lld]^T per group's rows\n",
                (long long)G, (long long)M, (long long)N, (long long)M, (long long)K, (long long)N, (long long)K);
    std::printf("  rows:   ");
    for (std::int64_t g = 0; g < G; ++g) std::printf("%s%lld", g ? "," : "", (long long)rows[g]);
    std::printf(" (%lld useful of %lld stacked rows, %lld row tiles, %lld of no group)\n", (long long)useful_rows,
                (long long)M, (long long)layout.tile_group.size(), (long long)tail);
    ts::kernel k = tb::compile_example("grouped_gemm", tile, opts,
                                       [&] { return tb::jit_example_tile<examples::grouped_gemm>(tile, opts); });
    ts::options plain_opts = opts;
    plain_opts.dump_dir.clear();  // the dump is the grouped kernel's
    ts::kernel plain = tb::jit_example_tile<examples::gemm>(tile, plain_opts);
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    cudaStream_t stream = gpu->stream;
    tb::device_buffer A(M * K * 2), W(G * N * K * 2), Tg(layout.tile_group.size() * 4), Cplain(M * N * 2),
        Ccublas(M * N * 2), Cloop(M * N * 2);
    tb::fill_uniform_bf16(A.get(), M * K, seed, -1.f, 1.f, stream);
    tb::fill_uniform_bf16(W.get(), G * N * K, seed + 1, -1.f, 1.f, stream);
    tb::check_cuda(cudaMemcpyAsync(Tg.get(), layout.tile_group.data(), layout.tile_group.size() * 4,
                                   cudaMemcpyHostToDevice, stream),
                   "copy tile_group", __FILE__, __LINE__);
    tb::guarded_output C(tb::guarded_matrix(M, N, N, 2));
    std::printf("  data:   uniform [-1,1) bf16 (no zeros), padding rows of A random too; C NaN-poisoned inside sentinel guards\n");

    const ts::grid grid = tb::gemm_grid(tile, M, N);
    auto a = ts::view<ts::bf16>(A.get(), {M, K});
    auto w = ts::view<ts::bf16>(W.get(), {G, N, K});
    auto tg = ts::view<ts::i32>(Tg.get(), {std::int64_t(layout.tile_group.size())});
    auto launch_grouped = [&](void* out, cudaStream_t s) { k.launch(s, grid, a, w, tg, ts::view<ts::bf16>(out, {M, N})); };

    // cuBLASLt: one GEMM per group over the group's tiles (its padding rows too), and one of all rows.
    tb::lt_context lt;
    const char* bytesW = static_cast<const char*>(W.get());
    std::vector<std::unique_ptr<tb::lt_gemm>> per_group(G), per_group_f32(G);
    for (std::int64_t g = 0; g < G; ++g) {
      const std::int64_t padded = ts::cdiv(rows[g], std::int64_t(tile.bm)) * tile.bm;
      if (padded == 0) continue;
      per_group[g] = std::make_unique<tb::lt_gemm>(lt, padded, N, K, tb::out_type::bf16);
      per_group_f32[g] = std::make_unique<tb::lt_gemm>(lt, padded, N, K, tb::out_type::f32);
    }
    auto launch_loop = [&](void* out, cudaStream_t s) {
      for (std::int64_t g = 0; g < G; ++g)
        if (per_group[g])
          per_group[g]->run(A.as<char>() + layout.first_row[g] * K * 2, bytesW + g * N * K * 2,
                            static_cast<char*>(out) + layout.first_row[g] * N * 2, s);
    };
    tb::lt_gemm cublas(lt, M, N, K, tb::out_type::bf16, tb::epilogue::none, nullptr, args.i32("cublas-algos", 1));
    std::printf("  cuBLASLt (all %lld rows by W[0], bf16 out): %s\n", (long long)M, cublas.algo_description().c_str());

    if (!args.flag("no-check")) {
      tb::device_buffer ref(M * N * 4), dense(M * N * 2);
      tb::check_cuda(cudaMemsetAsync(ref.get(), 0, M * N * 4, stream), "zero the reference", __FILE__, __LINE__);
      for (std::int64_t g = 0; g < G; ++g)
        if (per_group_f32[g])
          per_group_f32[g]->run(A.as<char>() + layout.first_row[g] * K * 2, bytesW + g * N * K * 2,
                                ref.as<float>() + layout.first_row[g] * N, stream);
      C.reset(stream);
      launch_grouped(C.data(), stream);
      const tb::guard_report gr = C.check(stream);
      C.copy_to_dense(dense.get(), stream);
      const tb::compare_stats got = tb::compare_bf16_f32(dense.get(), ref.as<float>(), M * N, stream);
      tb::check_cuda(cudaMemsetAsync(Cloop.get(), 0, M * N * 2, stream), "zero the loop's C (it writes only the groups' rows)", __FILE__, __LINE__);
      launch_loop(Cloop.get(), stream);
      const tb::compare_stats loop = tb::compare_bf16_f32(Cloop.get(), ref.as<float>(), M * N, stream);
      std::printf("  check:  grouped GEMM %s, %s\n          cuBLASLt per group %s\n", got.str().c_str(), gr.str().c_str(),
                  loop.str().c_str());
      if (!gr.ok() || !got.ok(1e-2) || !loop.ok(1e-2)) {
        std::printf("FAILED: a result does not match the reference (relative Frobenius error < 1e-2, no NaN, "
                    "guards intact)\n");
        return 1;
      }
    }

    const tb::timing_config cfg = tb::example_timing(args);
    std::vector<tb::launch_fn> candidates = {
        [&](int, cudaStream_t s) { launch_grouped(C.data(), s); },
        [&](int, cudaStream_t s) {
          plain.launch(s, grid, a, ts::view<ts::bf16>(W.get(), {N, K}), ts::view<ts::bf16>(Cplain.get(), {M, N}));
        },
        [&](int, cudaStream_t s) { cublas.run(A.get(), W.get(), Ccublas.get(), s); },
        [&](int, cudaStream_t s) { launch_loop(Cloop.get(), s); },
    };
    const std::vector<tb::timing> t = tb::time_interleaved(candidates, cfg, stream, &gpu->nvml);
    const double flops = 2.0 * double(M) * double(N) * double(K);
    const char* names[] = {"grouped GEMM (tessel)", "plain GEMM, all rows (tessel, same flops)",
                           "cuBLASLt GEMM, all rows (same flops)", "cuBLASLt, one GEMM per group"};
    for (std::size_t i = 0; i < t.size(); ++i)
      std::printf("  %-44s %8.3f ms  %7.1f TFLOP/s  (enqueue %.1f us)\n", names[i], t[i].median_ms,
                  tb::tflops(flops, t[i].median_ms), t[i].enqueue_us);
    std::printf("  grouped / plain GEMM: %.3f   grouped / cuBLASLt GEMM: %.3f   grouped / cuBLASLt per group: %.3f   "
                "(time ratios inverted: > 1 means the grouped GEMM is faster)\n",
                t[1].median_ms / t[0].median_ms, t[2].median_ms / t[0].median_ms, t[3].median_ms / t[0].median_ms);
    return 0;
  });
}
