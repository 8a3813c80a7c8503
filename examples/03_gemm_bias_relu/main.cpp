// 03_gemm_bias_relu - GEMM with a fused epilogue, C = relu(A @ B^T + bias) (or gelu: --activation
// gelu), checked against cuBLASLt (f32 reference + bias + activation) and timed against cuBLASLt's
// fused RELU_BIAS (GELU_BIAS) epilogue.
//
// --col-scale multiplies each column by a factor after the activation, C = gelu(A @ B^T + bias) *
// scale[n] (scale: N f32). The check's f32 reference (cuBLASLt's f32 GEMM, bias, activation)
// includes the scale, and cuBLASLt's GELU_BIAS output, scaled afterwards on the GPU, is checked
// against it too. cuBLASLt has no column scale after its GELU_BIAS epilogue: the epilogue ends with
// the activation, and its alpha vector (one factor per row of its column-major D, a column of C)
// scales A @ B^T before the bias and the activation. So tessel is timed WITH the scale against
// cuBLASLt's GELU_BIAS (RELU_BIAS) WITHOUT it, the best cuBLASLt equivalent: one kernel doing
// less (a scaled cuBLASLt result would need a second pass over C).
//
//   tessel-gemm-bias-relu [--schedule tma] [--m 4096 --n 4096 --k 4096] [--tile 128x256] [--stages 4]
//                         [--activation relu|gelu] [--col-scale]
//                         [--dump-dir DIR] [--no-run] [--iters 20] [--repeats 10] [--check|--no-check]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "bench_util.h"
#include "cli.h"
#include "gemm_bias_relu.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-gemm-bias-relu [options]
  --schedule NAME     tma | multistage | warp_specialized | cooperative | pingpong | auto   (default tma)
  --m M --n N --k K   problem size, C (MxN) = relu(A (MxK) @ B (NxK)^T + bias (N))          (default 4096 each)
  --activation A      relu or gelu (tanh form; cuBLASLt GELU_BIAS)                         (default relu)
  --col-scale         then times scale[n] (N f32, uniform [0.25, 2)): C = act(A @ B^T + bias) * scale;
                      cuBLASLt has no such epilogue and is timed without it
  --tile BMxBN        128x256, 128x192, 192x128, 128x128, (cooperative) 256x192, 256x128,
                      or for small M (docs/small-m.md) 64x128, 64x64  (default 128x256)
  --stages S          shared-memory pipeline depth, 0 = tessel's choice (at most 4; auto
                      deepens it for decode shapes), -1 = as many as fit               (default 0)
  --dump-dir DIR      write every compilation stage to DIR
  --no-run            trace + compile only (no GPU needed); DIR defaults to ./tessel-gemm-bias-relu-dump
  --decomposition D   auto, dp (whole tiles) or sk (stream-K)                              (default auto)
  --cluster MxN       CTA cluster 1x1, 2x1 or 1x2 (cooperative and pingpong)              (default 1x1)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's default          (default 0)
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms, keep the fastest          (default 1)
  --iters N / --repeats R / --warmup-ms T / --check / --no-check / --seed S   as in tessel-gemm
)";

ts::kernel compile(const tb::tile_shape& tile, bool gelu, bool col_scale, const ts::options& o) {
  if (col_scale)
    return gelu ? tb::jit_example_tile<examples::gemm_bias_gelu_scale>(tile, o)
                : tb::jit_example_tile<examples::gemm_bias_relu_scale>(tile, o);
  return gelu ? tb::jit_example_tile<examples::gemm_bias_gelu>(tile, o)
              : tb::jit_example_tile<examples::gemm_bias_relu>(tile, o);
}

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-gemm-bias-relu", kUsage, [&]() -> int {
    tb::cli args(argc, argv,
                 {"schedule", "m", "n", "k", "tile", "stages", "dump-dir", "iters", "repeats", "warmup-ms", "seed", "activation", "decomposition", "cluster", "raster-group", "cublas-algos"},
                 {"no-run", "check", "no-check", "col-scale", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", "tma"));
    const std::int64_t M = args.i64("m", 4096), N = args.i64("n", 4096), K = args.i64("k", 4096);
    if (M <= 0 || N <= 0 || K <= 0) throw tb::usage_error("--m/--n/--k must be positive");
    const std::string activation = args.str("activation", "relu");
    if (activation != "relu" && activation != "gelu") throw tb::usage_error("--activation: relu or gelu");
    const bool gelu = activation == "gelu";
    const bool col_scale = args.flag("col-scale");
    const tb::tile_shape tile =
        tb::parse_tile(args.str("tile", schedule == ts::schedule::pingpong ? "128x128" : "128x256"));
    const bool no_run = args.flag("no-run");
    std::string dump_dir = args.str("dump-dir", no_run ? "tessel-gemm-bias-relu-dump" : "");
    const ts::options opts = tb::example_options(args, schedule, dump_dir);

    std::printf("tessel-gemm-bias-relu: C[%lldx%lld] = %s(A[%lldx%lld] @ B[%lldx%lld]^T + bias[%lld])%s\n",
                (long long)M, (long long)N, activation.c_str(), (long long)M, (long long)K, (long long)N, (long long)K, (long long)N,
                col_scale ? (" * scale[" + std::to_string(N) + "]").c_str() : "");
    ts::kernel k = tb::compile_example("gemm_bias_" + activation + (col_scale ? "_scale" : ""), tile, opts,
                                       [&] { return compile(tile, gelu, col_scale, opts); });
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    const tb::device_info& dev = gpu->dev;
    const tb::nvml_probe& nvml = gpu->nvml;
    cudaStream_t stream = gpu->stream;
    tb::gemm_problem p(M, N, K, /*with_bias=*/true, dev, std::uint64_t(args.i64("seed", 1)), 3, 24ull << 30, stream);
    p.bias_epilogue = gelu ? tb::epilogue::bias_gelu : tb::epilogue::bias_relu;
    if (col_scale) p.add_col_scale(std::uint64_t(args.i64("seed", 1)), 0.25f, 2.f, stream);
    std::printf("  data:   uniform [-1,1) bf16 (no zeros), %d rotated sets, C poisoned with NaN%s\n", p.sets(),
                col_scale ? "; one scale, uniform [0.25, 2) f32" : "");

    tb::lt_context lt;
    tb::lt_gemm cublas(lt, M, N, K, tb::out_type::bf16, p.bias_epilogue, p.bias(0), args.i32("cublas-algos", 1));
    tb::select_fastest_algo(cublas, p, stream, &nvml);
    std::printf("  cuBLASLt (%s epilogue): %s\n", gelu ? "GELU_BIAS" : "RELU_BIAS", cublas.algo_description().c_str());
    if (col_scale)
      std::printf("  note:   cuBLASLt has no column scale after %s: it is timed without it (tessel with it);\n"
                  "          its output is checked after scaling it on the GPU\n", gelu ? "GELU_BIAS" : "RELU_BIAS");

    const ts::grid grid{unsigned(ts::cdiv(M, std::int64_t(tile.bm))), unsigned(ts::cdiv(N, std::int64_t(tile.bn)))};
    // cuBLASLt's bias pointer is fixed at set 0; use the same bias for tessel (it lives in L2 either way).
    // The scale, when there is one, is the argument after the bias.
    tb::launch_fn tessel_launch = [&](int i, cudaStream_t s) {
      if (col_scale)
        k.launch(s, grid, ts::view<ts::bf16>(p.A(i), {M, K}), ts::view<ts::bf16>(p.B(i), {N, K}),
                 ts::view<ts::bf16>(p.bias(0), {N}), ts::view<ts::f32>(p.col_scale(), {N}),
                 ts::view<ts::bf16>(p.C(i), {M, N}));
      else
        k.launch(s, grid, ts::view<ts::bf16>(p.A(i), {M, K}), ts::view<ts::bf16>(p.B(i), {N, K}),
                 ts::view<ts::bf16>(p.bias(0), {N}), ts::view<ts::bf16>(p.C(i), {M, N}));
    };

    tb::output_launch_fn check_launch = [&](void* C, std::int64_t ldc, cudaStream_t s) {
      if (col_scale)
        k.launch(s, grid, ts::view<ts::bf16>(p.A(0), {M, K}), ts::view<ts::bf16>(p.B(0), {N, K}),
                 ts::view<ts::bf16>(p.bias(0), {N}), ts::view<ts::f32>(p.col_scale(), {N}),
                 ts::view<ts::bf16>(C, {M, N}, {ldc, 1}));
      else
        k.launch(s, grid, ts::view<ts::bf16>(p.A(0), {M, K}), ts::view<ts::bf16>(p.B(0), {N, K}),
                 ts::view<ts::bf16>(p.bias(0), {N}), ts::view<ts::bf16>(C, {M, N}, {ldc, 1}));
    };
    return tb::check_and_time(args, !args.flag("no-check"), tessel_launch, check_launch, p, cublas, lt, stream, &nvml, dev,
                                      "tessel result does not match the reference");
  });
}
