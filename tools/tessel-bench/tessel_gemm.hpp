// tessel_gemm.hpp - the tessel side of tessel-bench, the GEMM examples and tests/gpu: schedule and
// tile names, JIT of the example GEMM kernels (examples/02_gemm, examples/03_gemm_bias_relu) for a
// tile chosen at run time, and their launch.
#pragma once

#include <tessel/tessel.hpp>

#include "bench_util.h"

#include <cstdint>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessel_bench {

// ---- schedules ---------------------------------------------------------------------------------

/// "auto"|"automatic", "tma", "multistage", "warp_specialized" (or "ws"), "cooperative", "pingpong".
/// Throws usage_error (cli.h) naming the valid spellings.
tessel::schedule parse_schedule(std::string_view name);
std::vector<tessel::schedule> parse_schedules(std::string_view comma_separated);
const char* schedule_name(tessel::schedule s);

// ---- tiles and shapes ---------------------------------------------------------------------------

struct tile_shape {
  int bm = 128, bn = 256, bk = 64;
  std::string str() const;  ///< "128x256" (with "x<bk>" when bk != 64)
  friend bool operator==(const tile_shape&, const tile_shape&) = default;
};
/// "128x256" or "128x256x64"; must be one of supported_tiles().
tile_shape parse_tile(std::string_view s);
std::vector<tile_shape> parse_tiles(std::string_view comma_separated);
/// The tiles the bench/tests can instantiate (each is a C++ template instantiation).
const std::vector<tile_shape>& supported_tiles();

/// "1x1", "2x1" or "1x2": CTAs of a cluster along program_id 0 x 1 (tessel::options::cluster).
std::array<int, 2> parse_cluster(std::string_view s);
std::string cluster_str(const std::array<int, 2>& c);

/// "auto", "none", "32", "64" or "128": the operands' shared-memory swizzle
/// (tessel::options::swizzle: 0, tessel::swizzle_none, 32, 64, 128).
int parse_swizzle(std::string_view s);
std::string swizzle_str(int swizzle);

/// "auto", "dp" (data-parallel) or "sk" (stream-K for the last wave): tessel::options::decomposition.
tessel::decomposition parse_decomposition(std::string_view s);
std::string decomposition_str(tessel::decomposition d);

struct gemm_shape {
  std::int64_t m = 0, n = 0, k = 0;
  std::string str() const;  ///< "MxNxK"
};
/// "MxNxK" (e.g. "4096x14336x4096") or a single "S" for S^3.
gemm_shape parse_shape(std::string_view s);
std::vector<gemm_shape> parse_shapes(std::string_view comma_separated);

// ---- compile and launch ----------------------------------------------------------------------

enum class gemm_variant { plain, bias_relu };

/// ts::jit of examples::gemm<bm, bn, bk> (plain) or examples::gemm_bias_relu<bm, bn, bk>.
/// Throws tessel::error when tessel cannot build it, usage_error for an unsupported tile.
tessel::kernel jit_gemm(gemm_variant v, const tile_shape& t, const tessel::options& o);

/// A ts::autotune candidate: examples::gemm<bm, bn, bk> (plain) or examples::gemm_bias_relu, compiled
/// with `o` when the tuner needs it, over one program instance per tile of C (ts::tile_grid).
tessel::tune_candidate gemm_candidate(gemm_variant v, const tile_shape& t, const tessel::options& o);

/// One program instance per BM x BN tile of C.
tessel::grid gemm_grid(const tile_shape& t, std::int64_t M, std::int64_t N);

/// Launches a plain GEMM kernel: C (M x N, row-major, rows `ldc` elements apart; 0: N) = A (M x K)
/// @ B (N x K)^T, A and B viewed with `layout`'s strides (default: both K-contiguous, row-major).
/// `swap`: the same C computed as C^T = B @ A^T, the kernel's first operand being B and its output
/// the N x M column-major view of C (swap-AB: with few rows of A, the tile's BN covers M, the
/// narrow side, and its BM covers N; docs/small-m.md). The grid is then one instance per
/// t.bm x t.bn tile of C^T.
void launch_gemm(tessel::kernel& k, const tile_shape& t, void* stream, const void* A, const void* B, void* C,
                 std::int64_t M, std::int64_t N, std::int64_t K, gemm_layout layout = {}, std::int64_t ldc = 0,
                 bool swap = false);
/// The same launch through a tuner over plain GEMM candidates (gemm_candidate): the winner of
/// the shape's bucket, tuning on its first launch.
void launch_gemm(const tessel::autotuner& tuner, void* stream, const void* A, const void* B, void* C, std::int64_t M,
                 std::int64_t N, std::int64_t K, gemm_layout layout = {}, std::int64_t ldc = 0);
/// Launches a gemm_bias_relu kernel (bias: N elements).
void launch_gemm_bias_relu(tessel::kernel& k, const tile_shape& t, void* stream, const void* A, const void* B,
                           const void* bias, void* C, std::int64_t M, std::int64_t N, std::int64_t K,
                           std::int64_t ldc = 0);

}  // namespace tessel_bench

#include <iosfwd>

namespace tessel_bench {
/// After ts::jit(..., {.dump_dir = dir}), which wrote every stage there: lists every file under `dir`
/// on `os` ("wrote <path> (<n> bytes)"), or says there is none. Returns the number of files listed.
int report_dump_dir(tessel::kernel& k, const std::string& dir, std::ostream& os);
// ---- the examples' driver ---------------------------------------------------------------------

class cli;

/// The GPU an example runs on: device 0 (its line printed), its NVML probe and a non-blocking
/// stream, destroyed with it.
struct example_gpu {
  example_gpu();
  ~example_gpu();
  example_gpu(const example_gpu&) = delete;
  example_gpu& operator=(const example_gpu&) = delete;
  device_info dev;
  nvml_probe nvml;
  cudaStream_t stream = nullptr;
};
/// The example's GPU, or nullptr after printing "no GPU found (<why>): compiled only".
std::unique_ptr<example_gpu> open_example_gpu();

/// What an example adds to check_and_time beyond C: its other outputs to verify and further
/// candidates to time (compare_config::verify, ::also_time), and where to put the report when it
/// computes something of its own from it.
struct check_extras {
  std::function<bool(std::string& lines)> verify;
  std::vector<named_launch> also_time;
  compare_report* report = nullptr;
};

/// Checks `launch` against the problem's f32 reference and times it against `cublas` in the same
/// process (compare_with_cublas with --iters, --repeats and --warmup-ms of `args`), then prints the
/// report. Returns 1 after printing `failed` when the check failed, else 0.
int check_and_time(const cli& args, bool check, const launch_fn& launch, const output_launch_fn& check_launch,
                   gemm_problem& p, const lt_gemm& cublas, lt_context& lt, cudaStream_t stream,
                   const nvml_probe* nvml, const device_info& dev, const char* failed,
                   const check_extras& extras = {});

/// The compile options the GEMM examples share, from `args`: --stages (default `default_stages`),
/// --decomposition, --cluster, --raster-group (their names are in kExampleOptions); the schedule
/// and the dump directory as given.
tessel::options example_options(const cli& args, tessel::schedule s, const std::string& dump_dir,
                                int default_stages = 0);
/// The examples' timing from `args`: --iters (launches per timed batch, default 20), --repeats
/// (default 10), --warmup-ms (default 1000).
timing_config example_timing(const cli& args);
/// The valued options example_options reads (add them to the example's cli list).
inline constexpr const char* kExampleOptions[] = {"stages", "decomposition", "cluster", "raster-group"};
/// Times `compile`, then prints "  kernel: <what><BM,BN,BK> schedule=... stages=... cluster=...
/// raster_group=... decomposition=...   traced + compiled in X s" and lists `o.dump_dir`'s files.
tessel::kernel compile_example(const std::string& what, const tile_shape& t, const tessel::options& o,
                               const std::function<tessel::kernel()>& compile);
/// The tiles the fused-kernel examples instantiate (and 64x128, 64x64 for small M): ts::jit of K<128, 256>, K<128, 192> or K<128, 128> (K one
/// of the examples' kernel templates, <BM, BN, BK = 64>); a usage_error naming --tile otherwise.
[[noreturn]] void unsupported_example_tile(const tile_shape& t);
template <template <int, int, int> class K>
tessel::kernel jit_example_tile(const tile_shape& t, const tessel::options& o) {
  if (t == tile_shape{128, 256, 64}) return tessel::jit(K<128, 256, 64>{}, o);
  if (t == tile_shape{128, 128, 64}) return tessel::jit(K<128, 128, 64>{}, o);
  if (t == tile_shape{128, 192, 64}) return tessel::jit(K<128, 192, 64>{}, o);
  if (t == tile_shape{192, 128, 64}) return tessel::jit(K<192, 128, 64>{}, o);
  if (t == tile_shape{256, 192, 64}) return tessel::jit(K<256, 192, 64>{}, o);
  if (t == tile_shape{256, 128, 64}) return tessel::jit(K<256, 128, 64>{}, o);
  if (t == tile_shape{64, 128, 64}) return tessel::jit(K<64, 128, 64>{}, o);  // small M (docs/small-m.md)
  if (t == tile_shape{64, 64, 64}) return tessel::jit(K<64, 64, 64>{}, o);
  unsupported_example_tile(t);
}
/// An example's main: runs `body`; a usage_error prints it and `usage` (exit status 2), a
/// tessel::error or any other exception prints it after `program` (exit status 1).
int example_main(const char* program, const char* usage, const std::function<int()>& body);

}  // namespace tessel_bench
