// 07_swiglu - the SwiGLU MLP's first half, H = silu(A @ W1^T) * (A @ W3^T), as one dual GEMM (two
// ts::dot sharing the A tile), checked against an f32 reference (cuBLASLt computes A @ [W1; W3]^T in
// f32, then silu(gate) * up on the GPU) and timed in the same process against:
//   * tessel's plain GEMM doing the same flops: C = A @ [W1; W3]^T (M x 2N, W1 and W3 one buffer);
//   * the best two-kernel tessel sequence: S = bf16(silu(A @ W1^T)), then H = S * (A @ W3^T) with S
//     read in the second kernel's epilogue (an M x N bf16 round trip);
//   * cuBLASLt's GEMM of the same flops, A @ [W1; W3]^T in bf16 (cuBLASLt has no fused SwiGLU: its
//     users add an elementwise kernel, not timed here).
// Every candidate's TFLOP/s counts the dual GEMM's flops, 4 M N K.
//
//   tessel-swiglu [--schedule cooperative] [--m 8192 --n 14336 --k 4096] [--tile 128x128]
//                 [--dump-dir DIR] [--no-run] [--iters 20] [--repeats 10]
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "02_gemm/gemm.hpp"
#include "bench_util.h"
#include "cli.h"
#include "swiglu.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-swiglu [options]
  --schedule NAME     the dual GEMM's schedule: cooperative | pingpong | tma | warp_specialized
                      (multistage cannot hold two accumulators)                         (default cooperative)
  --m M --n N --k K   tokens, intermediate, hidden: H (MxN) = silu(A (MxK) @ W1 (NxK)^T) * (A @ W3 (NxK)^T)
                                                                       (default 8192 x 14336 x 4096)
  --tile BMxBN        the dual GEMM's tile: 128x128, 128x64 or 64x128 (each dot's; the tensor cores
                      compute 2 x BN columns)                   (default 128x128; pingpong: 64x128)
  --stages S          shared-memory pipeline depth, 0 = tessel's choice                    (default 0)
  --decomposition D   auto, dp (whole tiles) or sk (stream-K)                              (default auto)
  --cluster MxN       CTA cluster 1x1, 2x1 (W1, W3 tiles multicast) or 1x2 (A multicast)   (default 1x1)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's default          (default 0)
  --baseline-schedule NAME   schedule of the plain GEMM and of the two-kernel sequence (default pingpong)
  --baseline-tile BMxBN      their tile: 128x128 or 128x256            (default 128x128)
  --dump-dir DIR      write every compilation stage of the dual GEMM to DIR
  --no-run            trace + compile only (no GPU needed); DIR defaults to ./tessel-swiglu-dump
  --iters N / --repeats R / --warmup-ms T / --check / --no-check / --seed S   as in tessel-gemm
)";

/// --tile: the dual GEMM's own instantiations (tessel-bench's parse_tile knows the plain GEMM's).
tb::tile_shape parse_dual_tile(const std::string& s) {
  if (s == "128x128") return {128, 128, 64};
  if (s == "128x64") return {128, 64, 64};
  if (s == "64x128") return {64, 128, 64};
  throw tb::usage_error("--tile '" + s + "': the dual GEMM is instantiated for 128x128, 128x64 and 64x128");
}

ts::kernel compile_dual(const tb::tile_shape& t, const ts::options& o) {
  if (t == tb::tile_shape{128, 128, 64}) return ts::jit(examples::swiglu<128, 128>{}, o);
  if (t == tb::tile_shape{128, 64, 64}) return ts::jit(examples::swiglu<128, 64>{}, o);
  if (t == tb::tile_shape{64, 128, 64}) return ts::jit(examples::swiglu<64, 128>{}, o);
  throw tb::usage_error("--tile: the dual GEMM is instantiated for 128x128, 128x64 and 64x128");
}

struct baseline_kernels {
  ts::kernel plain, silu, mul;
};

baseline_kernels compile_baselines(const tb::tile_shape& t, const ts::options& o) {
  if (t == tb::tile_shape{128, 128, 64})
    return {ts::jit(examples::gemm<128, 128>{}, o), ts::jit(examples::silu_gemm<128, 128>{}, o),
            ts::jit(examples::mul_gemm<128, 128>{}, o)};
  if (t == tb::tile_shape{128, 256, 64})
    return {ts::jit(examples::gemm<128, 256>{}, o), ts::jit(examples::silu_gemm<128, 256>{}, o),
            ts::jit(examples::mul_gemm<128, 256>{}, o)};
  throw tb::usage_error("--baseline-tile: 128x128 or 128x256");
}

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-swiglu", kUsage, [&]() -> int {
    tb::cli args(argc, argv,
                 {"schedule", "m", "n", "k", "tile", "stages", "decomposition", "cluster", "raster-group", "baseline-schedule", "baseline-tile",
                  "dump-dir", "iters", "repeats", "warmup-ms", "seed"},
                 {"no-run", "check", "no-check", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", "cooperative"));
    const std::int64_t M = args.i64("m", 8192), N = args.i64("n", 14336), K = args.i64("k", 4096);
    if (M <= 0 || N <= 0 || K <= 0) throw tb::usage_error("--m/--n/--k must be positive");
    const tb::tile_shape tile = parse_dual_tile(args.str("tile", schedule == ts::schedule::pingpong ? "64x128" : "128x128"));
    const bool no_run = args.flag("no-run");
    std::string dump_dir = args.str("dump-dir", no_run ? "tessel-swiglu-dump" : "");
    const ts::options opts = tb::example_options(args, schedule, dump_dir, /*default_stages=*/0);
    const ts::schedule base_schedule = tb::parse_schedule(args.str("baseline-schedule", "pingpong"));
    const tb::tile_shape base_tile = tb::parse_tile(args.str("baseline-tile", "128x128"));
    const ts::options base_opts{.schedule = base_schedule};

    std::printf("tessel-swiglu: H[%lldx%lld] = silu(A[%lldx%lld] @ W1[%lldx%lld]^T) * (A @ W3[%lldx%lld]^T)\n",
                (long long)M, (long long)N, (long long)M, (long long)K, (long long)N, (long long)K, (long long)N,
                (long long)K);
    ts::kernel dual = tb::compile_example("swiglu", tile, opts, [&] { return compile_dual(tile, opts); });
    baseline_kernels base = compile_baselines(base_tile, base_opts);
    std::printf("  baselines: gemm, silu_gemm, mul_gemm <%d,%d,%d> schedule=%s\n", base_tile.bm, base_tile.bn,
                base_tile.bk, tb::schedule_name(base_schedule));
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    cudaStream_t stream = gpu->stream;
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    const std::int64_t N2 = 2 * N;
    // W1 and W3 are the two halves of one [W1; W3] buffer (2N x K): the plain GEMM and cuBLASLt
    // multiply by all of it, the dual GEMM and the two-kernel sequence by each half.
    tb::device_buffer A(M * K * 2), W(N2 * K * 2), S(M * N * 2), H2(M * N * 2), Cplain(M * N2 * 2),
        Ccublas(M * N2 * 2);
    tb::fill_uniform_bf16(A.get(), M * K, seed, -1.f, 1.f, stream);
    tb::fill_uniform_bf16(W.get(), N2 * K, seed + 1, -1.f, 1.f, stream);
    const void* W1 = W.get();
    const void* W3 = W.as<char>() + N * K * 2;
    tb::guarded_output H(tb::guarded_matrix(M, N, N, 2));
    std::printf("  data:   uniform [-1,1) bf16 (no zeros); H NaN-poisoned inside sentinel guards\n");

    const ts::grid dual_grid = tb::gemm_grid(tile, M, N), base_grid = tb::gemm_grid(base_tile, M, N),
                   plain_grid = tb::gemm_grid(base_tile, M, N2);
    auto a = ts::view<ts::bf16>(A.get(), {M, K});
    auto w1 = ts::view<ts::bf16>(W1, {N, K}), w3 = ts::view<ts::bf16>(W3, {N, K});
    auto launch_dual = [&](void* out, cudaStream_t s) {
      dual.launch(s, dual_grid, a, w1, w3, ts::view<ts::bf16>(out, {M, N}));
    };
    auto launch_two = [&](void* out, cudaStream_t s) {
      base.silu.launch(s, base_grid, a, w1, ts::view<ts::bf16>(S.get(), {M, N}));
      base.mul.launch(s, base_grid, a, w3, ts::view<ts::bf16>(S.get(), {M, N}), ts::view<ts::bf16>(out, {M, N}));
    };
    auto launch_plain = [&](cudaStream_t s) {
      base.plain.launch(s, plain_grid, a, ts::view<ts::bf16>(W.get(), {N2, K}), ts::view<ts::bf16>(Cplain.get(), {M, N2}));
    };
    tb::lt_context lt;
    tb::lt_gemm cublas(lt, M, N2, K, tb::out_type::bf16);
    std::printf("  cuBLASLt (A @ [W1; W3]^T, bf16 out): %s\n", cublas.algo_description().c_str());

    if (!args.flag("no-check")) {
      // f32 reference: [gate | up] = A @ [W1; W3]^T by cuBLASLt (f32 out), then silu(gate) * up.
      tb::device_buffer gu(M * N2 * 4), ref(M * N * 4), dense(M * N * 2);
      tb::lt_gemm f32(lt, M, N2, K, tb::out_type::f32);
      f32.run(A.get(), W.get(), gu.get(), stream);
      tb::swiglu_f32_reference(gu.as<float>(), M, N, ref.as<float>(), stream);
      H.reset(stream);
      launch_dual(H.data(), stream);
      const tb::guard_report g = H.check(stream);
      H.copy_to_dense(dense.get(), stream);
      const tb::compare_stats dual_c = tb::compare_bf16_f32(dense.get(), ref.as<float>(), M * N, stream);
      tb::poison_nan(H2.get(), M * N * 2, stream);
      launch_two(H2.get(), stream);
      const tb::compare_stats two_c = tb::compare_bf16_f32(H2.get(), ref.as<float>(), M * N, stream);
      tb::poison_nan(Cplain.get(), M * N2 * 2, stream);
      launch_plain(stream);
      const tb::compare_stats plain_c = tb::compare_bf16_f32(Cplain.get(), gu.as<float>(), M * N2, stream);
      std::printf("  check:  dual GEMM %s, %s\n          two kernels %s\n          plain GEMM %s\n", dual_c.str().c_str(),
                  g.str().c_str(), two_c.str().c_str(), plain_c.str().c_str());
      if (!g.ok() || !dual_c.ok(1e-2) || !two_c.ok(1e-2) || !plain_c.ok(1e-2)) {
        std::printf("FAILED: a result does not match the reference (relative Frobenius error < 1e-2, no NaN, "
                    "guards intact)\n");
        return 1;
      }
    }

    const tb::timing_config cfg = tb::example_timing(args);
    std::vector<tb::launch_fn> candidates = {
        [&](int, cudaStream_t s) { launch_dual(H.data(), s); },
        [&](int, cudaStream_t s) { launch_plain(s); },
        [&](int, cudaStream_t s) { launch_two(H2.get(), s); },
        [&](int, cudaStream_t s) { cublas.run(A.get(), W.get(), Ccublas.get(), s); },
    };
    const std::vector<tb::timing> t = tb::time_interleaved(candidates, cfg, stream, &gpu->nvml);
    const double flops = 4.0 * double(M) * double(N) * double(K);
    const char* names[] = {"dual GEMM (tessel, fused SwiGLU)", "plain GEMM M x 2N (tessel, same flops)",
                           "two kernels (tessel silu_gemm + mul_gemm)", "cuBLASLt GEMM M x 2N (same flops)"};
    for (std::size_t i = 0; i < t.size(); ++i)
      std::printf("  %-44s %8.3f ms  %7.1f TFLOP/s  (enqueue %.1f us)\n", names[i], t[i].median_ms,
                  tb::tflops(flops, t[i].median_ms), t[i].enqueue_us);
    std::printf("  dual / plain GEMM: %.3f   dual / two kernels: %.3f   dual / cuBLASLt GEMM: %.3f   (time ratios "
                "inverted: > 1 means the dual GEMM is faster)\n",
                t[1].median_ms / t[0].median_ms, t[2].median_ms / t[0].median_ms, t[3].median_ms / t[0].median_ms);
    return 0;
  });
}
