// 05_gemm_residual - C = A @ B^T + R, a residual M x N bf16 tensor added in the epilogue, checked
// against an f32 reference (cuBLASLt's f32 GEMM, then + R on the GPU; cuBLASLt's own bf16 result
// is checked against it too) and timed against cuBLASLt computing the same: alpha = 1, beta = 1,
// its C matrix = R, D a separate output.
//
//   tessel-gemm-residual [--schedule pingpong] [--m 4096 --n 4096 --k 4096] [--tile 128x128] [--stages 4]
//                        [--dump-dir DIR] [--no-run] [--iters 20] [--repeats 10] [--check|--no-check]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "bench_util.h"
#include "cli.h"
#include "gemm_residual.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-gemm-residual [options]
  --schedule NAME     tma | multistage | warp_specialized | cooperative | pingpong | auto   (default pingpong)
  --m M --n N --k K   problem size, C (MxN) = A (MxK) @ B (NxK)^T + R (MxN)                (default 4096 each)
  --tile BMxBN        128x256, 128x192, 192x128, 128x128, (cooperative) 256x192, 256x128,
                      or for small M (docs/small-m.md) 64x128, 64x64
                                                                  (default 128x256; pingpong: 128x128)
  --stages S          shared-memory pipeline depth, 0 = tessel's choice (at most 4; auto
                      deepens it for decode shapes), -1 = as many as fit               (default 0)
  --decomposition D   auto, dp (whole tiles) or sk (stream-K)                              (default auto)
  --cluster MxN       CTA cluster 1x1, 2x1 or 1x2 (cooperative and pingpong)              (default 1x1)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's default          (default 0)
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms, keep the fastest          (default 1)
  --dump-dir DIR      write every compilation stage to DIR
  --no-run            trace + compile only (no GPU needed); DIR defaults to ./tessel-gemm-residual-dump
  --iters N / --repeats R / --warmup-ms T / --check / --no-check / --seed S   as in tessel-gemm
)";

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-gemm-residual", kUsage, [&]() -> int {
    tb::cli args(argc, argv,
                 {"schedule", "m", "n", "k", "tile", "stages", "decomposition", "cluster", "raster-group", "cublas-algos", "dump-dir", "iters",
                  "repeats", "warmup-ms", "seed"},
                 {"no-run", "check", "no-check", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", "pingpong"));
    const std::int64_t M = args.i64("m", 4096), N = args.i64("n", 4096), K = args.i64("k", 4096);
    if (M <= 0 || N <= 0 || K <= 0) throw tb::usage_error("--m/--n/--k must be positive");
    const tb::tile_shape tile =
        tb::parse_tile(args.str("tile", schedule == ts::schedule::pingpong ? "128x128" : "128x256"));
    const bool no_run = args.flag("no-run");
    std::string dump_dir = args.str("dump-dir", no_run ? "tessel-gemm-residual-dump" : "");
    const ts::options opts = tb::example_options(args, schedule, dump_dir);

    std::printf("tessel-gemm-residual: C[%lldx%lld] = A[%lldx%lld] @ B[%lldx%lld]^T + R[%lldx%lld]\n", (long long)M,
                (long long)N, (long long)M, (long long)K, (long long)N, (long long)K, (long long)M, (long long)N);
    ts::kernel k = tb::compile_example("gemm_residual", tile, opts, [&] { return tb::jit_example_tile<examples::gemm_residual>(tile, opts); });
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    const tb::device_info& dev = gpu->dev;
    const tb::nvml_probe& nvml = gpu->nvml;
    cudaStream_t stream = gpu->stream;
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    tb::gemm_problem p(M, N, K, /*with_bias=*/false, dev, seed, 3, 24ull << 30, stream);
    // The residual is the problem's C0 with alpha = beta = 1: the reference is A B^T + R.
    p.add_c0(1.f, 1.f, seed, stream);
    std::printf("  data:   uniform [-1,1) bf16 (no zeros), %d rotated A/B/C sets, one R, C poisoned with NaN\n",
                p.sets());

    tb::lt_context lt;
    tb::lt_gemm cublas(lt, M, N, K, tb::out_type::bf16, tb::epilogue::none, nullptr, args.i32("cublas-algos", 1));
    cublas.set_alpha_beta(1.f, 1.f, p.c0());
    tb::select_fastest_algo(cublas, p, stream, &nvml);
    std::printf("  cuBLASLt (alpha 1, beta 1, C = R, D separate): %s\n", cublas.algo_description().c_str());

    const ts::grid grid = tb::gemm_grid(tile, M, N);
    tb::launch_fn tessel_launch = [&](int i, cudaStream_t s) {
      k.launch(s, grid, ts::view<ts::bf16>(p.A(i), {M, K}), ts::view<ts::bf16>(p.B(i), {N, K}),
               ts::view<ts::bf16>(p.c0(), {M, N}), ts::view<ts::bf16>(p.C(i), {M, N}));
    };
    tb::output_launch_fn check_launch = [&](void* C, std::int64_t ldc, cudaStream_t s) {
      k.launch(s, grid, ts::view<ts::bf16>(p.A(0), {M, K}), ts::view<ts::bf16>(p.B(0), {N, K}),
               ts::view<ts::bf16>(p.c0(), {M, N}), ts::view<ts::bf16>(C, {M, N}, {ldc, 1}));
    };
    return tb::check_and_time(args, !args.flag("no-check"), tessel_launch, check_launch, p, cublas, lt, stream, &nvml, dev,
                              "tessel result does not match the reference");
  });
}
