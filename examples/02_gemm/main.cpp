// 02_gemm - the flagship example: C = A @ B^T in bf16 (f32 accumulate), JIT-compiled by tessel for
// one of the Hopper schedules, checked against cuBLASLt and timed against it in the same process.
//
//   tessel-gemm [--schedule tma] [--m 8192 --n 8192 --k 8192] [--tile 128x256] [--stages 4]
//               [--swizzle auto|none|32|64|128] [--decomposition auto|dp|sk] [--dump-dir DIR] [--no-run] [--iters 20] [--repeats 10] [--check|--no-check]
//
// --no-run traces and compiles only (no GPU needed) and writes every stage (tessel IR ... PTX,
// ptxas log, cubin) to DIR. Without a GPU the kernel is compiled and the program says so.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "bench_util.h"
#include "cli.h"
#include "gemm.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-gemm [options]
  --schedule NAME     tma | multistage | warp_specialized | cooperative | pingpong | auto   (default tma)
  --m M --n N --k K   problem size, C (MxN) = A (MxK) @ B (NxK)^T                        (default 8192 each)
  --tile BMxBN        128x256, 128x192, 192x128, 128x128, (cooperative) 256x192, 256x128,
                      or for small M (docs/small-m.md) 64x128, 64x64, and 16x64, 32x64
                      (computed transposed: swap-AB, not yet run on a GPU)
                                                                  (default 128x256; pingpong: 128x128)
  --stages S          shared-memory pipeline depth, 0 = tessel's choice (at most 4; auto
                      deepens it for decode shapes), -1 = as many as fit               (default 0)
  --cluster MxN       CTA cluster 1x1, 2x1 (B multicast) or 1x2 (A multicast); cooperative
                      and pingpong                                                          (default 1x1)
  --swizzle S         shared-memory swizzle of A and B: auto, none, 32, 64, 128 (bytes);
                      narrower than 128 loads each tile as several TMA boxes             (default auto)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's default          (default 0)
  --decomposition D   auto (sk for cooperative / pingpong 1x1, else dp), dp (whole tiles), sk
                      (stream-K for the last wave where it pays; cooperative / pingpong 1x1) (default auto)
  --dump-dir DIR      write every compilation stage to DIR
  --no-run            trace + compile only (no GPU needed); writes the stages to DIR
                      (default DIR: ./tessel-gemm-dump)
  --iters N           launches per timed batch                                              (default 20)
  --repeats R         timed batches per kernel (at least: raised to fill 400 ms), median    (default 10)
  --warmup-ms T       untimed warm-up before timing                                         (default 1000)
  --check/--no-check  verify against cuBLASLt (relative Frobenius error < 1e-2, no NaN)     (default on)
  --no-cublas         launch tessel once and stop: no cuBLASLt, no check, no timing
                      (for compute-sanitizer, which would check cuBLASLt's kernels too)
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms and keep the fastest      (default 1)
  --seed S            random inputs seed                                                    (default 1)
)";

// The tile shape is a compile-time parameter of the kernel: one instantiation per choice.
ts::kernel compile(const tb::tile_shape& tile, const ts::options& o) {
  if (tile == tb::tile_shape{128, 256, 64}) return ts::jit(examples::gemm<128, 256>{}, o);
  if (tile == tb::tile_shape{128, 192, 64}) return ts::jit(examples::gemm<128, 192>{}, o);
  if (tile == tb::tile_shape{128, 128, 64}) return ts::jit(examples::gemm<128, 128>{}, o);
  if (tile == tb::tile_shape{192, 128, 64}) return ts::jit(examples::gemm<192, 128>{}, o);
  if (tile == tb::tile_shape{256, 192, 64}) return ts::jit(examples::gemm<256, 192>{}, o);
  if (tile == tb::tile_shape{256, 128, 64}) return ts::jit(examples::gemm<256, 128>{}, o);
  if (tile == tb::tile_shape{64, 128, 64}) return ts::jit(examples::gemm<64, 128>{}, o);  // small M
  if (tile == tb::tile_shape{64, 64, 64}) return ts::jit(examples::gemm<64, 64>{}, o);
  // Fewer than 64 rows: computed as the transpose (swap-AB, docs/small-m.md).
  if (tile == tb::tile_shape{16, 64, 64}) return ts::jit(examples::gemm<16, 64>{}, o);
  if (tile == tb::tile_shape{32, 64, 64}) return ts::jit(examples::gemm<32, 64>{}, o);
  throw tb::usage_error("--tile: this example instantiates 128x256, 128x192, 192x128, 128x128, 256x192, 256x128, "
                        "64x128, 64x64, 16x64 and 32x64 (tessel-bench has more)");
}

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-gemm", kUsage, [&]() -> int {
    tb::cli args(argc, argv,
                 {"schedule", "m", "n", "k", "tile", "stages", "cluster", "swizzle", "raster-group", "decomposition", "dump-dir", "iters",
                  "repeats", "warmup-ms",
                  "cublas-algos", "seed"},
                 {"no-run", "check", "no-check", "no-cublas", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", "tma"));
    const std::int64_t M = args.i64("m", 8192), N = args.i64("n", 8192), K = args.i64("k", 8192);
    if (M <= 0 || N <= 0 || K <= 0) throw tb::usage_error("--m/--n/--k must be positive");
    // pingpong keeps a whole tile per consumer warpgroup: its default tile is 128x128.
    const tb::tile_shape tile =
        tb::parse_tile(args.str("tile", schedule == ts::schedule::pingpong ? "128x128" : "128x256"));
    const bool no_run = args.flag("no-run");
    const bool check = !args.flag("no-check");
    std::string dump_dir = args.str("dump-dir", no_run ? "tessel-gemm-dump" : "");

    ts::options opts{.schedule = schedule,
                     .stages = args.i32("stages", 0),
                     .cluster = tb::parse_cluster(args.str("cluster", "1x1")),
                     .swizzle = tb::parse_swizzle(args.str("swizzle", "auto")),
                     .raster_group = args.i32("raster-group", 0),
                     .decomposition = tb::parse_decomposition(args.str("decomposition", "auto")),
                     .dump_dir = dump_dir};

    std::printf("tessel-gemm: C[%lldx%lld] = A[%lldx%lld] @ B[%lldx%lld]^T   bf16 in/out, f32 accumulate\n",
                (long long)M, (long long)N, (long long)M, (long long)K, (long long)N, (long long)K);
    auto t0 = std::chrono::steady_clock::now();
    ts::kernel k = compile(tile, opts);
    double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  kernel: gemm<%d,%d,%d> schedule=%s stages=%d cluster=%s swizzle=%s raster_group=%d decomposition=%s"
                "   traced + compiled in %.2f s\n",
                tile.bm, tile.bn, tile.bk, tb::schedule_name(schedule), opts.stages,
                tb::cluster_str(opts.cluster).c_str(), tb::swizzle_str(opts.swizzle).c_str(), opts.raster_group,
                tb::decomposition_str(opts.decomposition).c_str(), compile_s);

    if (!dump_dir.empty()) tb::report_dump_dir(k, dump_dir, std::cout);
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    const tb::device_info& dev = gpu->dev;
    const tb::nvml_probe& nvml = gpu->nvml;
    cudaStream_t stream = gpu->stream;

    tb::gemm_problem p(M, N, K, /*with_bias=*/false, dev, std::uint64_t(args.i64("seed", 1)), 3, 24ull << 30, stream);
    std::printf("  data:   uniform [-1,1) bf16 (no zeros), %d rotated A/B/C sets of %.1f MB, C poisoned with NaN\n",
                p.sets(), p.bytes_per_set() / 1e6);

    // Launch i computes rotated set i. The launch itself: grid of BM x BN tiles, three row-major views.
    const ts::grid grid{unsigned(ts::cdiv(M, std::int64_t(tile.bm))), unsigned(ts::cdiv(N, std::int64_t(tile.bn)))};
    tb::launch_fn tessel_launch = [&](int i, cudaStream_t s) {
      k.launch(s, grid, ts::view<ts::bf16>(p.A(i), {M, K}), ts::view<ts::bf16>(p.B(i), {N, K}),
               ts::view<ts::bf16>(p.C(i), {M, N}));
    };
    if (args.flag("no-cublas")) {
      // For compute-sanitizer: only tessel's kernel runs (cuBLASLt's kernels would be checked too).
      tessel_launch(0, stream);
      TB_CUDA(cudaStreamSynchronize(stream));
      std::printf("  launched once, no cuBLASLt (--no-cublas): nothing checked or timed\n");
      return 0;
    }

    tb::lt_context lt;
    tb::lt_gemm cublas(lt, M, N, K, tb::out_type::bf16, tb::epilogue::none, nullptr, args.i32("cublas-algos", 1));
    tb::select_fastest_algo(cublas, p, stream, &nvml);
    std::printf("  cuBLASLt: %s\n", cublas.algo_description().c_str());

    tb::output_launch_fn check_launch = [&](void* C, std::int64_t ldc, cudaStream_t s) {
      k.launch(s, grid, ts::view<ts::bf16>(p.A(0), {M, K}), ts::view<ts::bf16>(p.B(0), {N, K}),
               ts::view<ts::bf16>(C, {M, N}, {ldc, 1}));
    };
    return tb::check_and_time(args, check, tessel_launch, check_launch, p, cublas, lt, stream, &nvml, dev,
                                      "tessel result does not match cuBLASLt");
  });
}
