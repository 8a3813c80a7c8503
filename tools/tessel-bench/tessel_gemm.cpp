// tessel_gemm.cpp - see tessel_gemm.hpp.
#include "tessel_gemm.hpp"

#include "02_gemm/gemm.hpp"
#include "03_gemm_bias_relu/gemm_bias_relu.hpp"
#include "cli.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace ts = tessel;

namespace tessel_bench {

namespace {
struct schedule_spelling {
  const char* name;
  ts::schedule s;
};
constexpr schedule_spelling kSchedules[] = {
    {"auto", ts::schedule::automatic},
    {"automatic", ts::schedule::automatic},
    {"tma", ts::schedule::tma},
    {"multistage", ts::schedule::multistage},
    {"warp_specialized", ts::schedule::warp_specialized},
    {"ws", ts::schedule::warp_specialized},
    {"cooperative", ts::schedule::cooperative},
    {"pingpong", ts::schedule::pingpong},
};
}  // namespace

ts::schedule parse_schedule(std::string_view name) {
  for (const auto& sp : kSchedules)
    if (name == sp.name) return sp.s;
  throw usage_error("unknown schedule '" + std::string(name) +
                    "' (expected tma, multistage, warp_specialized, cooperative, pingpong or auto)");
}

std::vector<ts::schedule> parse_schedules(std::string_view csv) {
  std::vector<ts::schedule> out;
  for (const auto& s : cli::split(csv)) out.push_back(parse_schedule(s));
  if (out.empty()) throw usage_error("empty schedule list");
  return out;
}

const char* schedule_name(ts::schedule s) { return ts::to_string(s); }

std::string tile_shape::str() const {
  std::string s = std::to_string(bm) + "x" + std::to_string(bn);
  if (bk != 64) s += "x" + std::to_string(bk);
  return s;
}

const std::vector<tile_shape>& supported_tiles() {
  static const std::vector<tile_shape> tiles = {{128, 256, 64}, {128, 192, 64}, {128, 128, 64}, {256, 192, 64}, {256, 128, 64}, {192, 128, 64},
                                                {128, 64, 64}, {64, 256, 64}, {64, 128, 64}, {64, 64, 64},
                                                // narrow tiles: the few rows of M as wgmma's N with --swap
                                                {64, 32, 64}, {64, 16, 64}, {64, 8, 64},
                                                // tiles of fewer than 64 rows: tessel-swap-operands computes
                                                // their transpose (docs/small-m.md)
                                                {16, 64, 64}, {32, 64, 64}, {8, 64, 64}, {16, 128, 64}, {32, 128, 64},
                                                // BK 32: multistage only
                                                {128, 128, 32}, {128, 256, 32}, {256, 128, 32}};
  return tiles;
}

tile_shape parse_tile(std::string_view s) {
  auto parts = cli::split(s, 'x');
  if (parts.size() != 2 && parts.size() != 3) throw usage_error("tile '" + std::string(s) + "': expected BMxBN[xBK]");
  tile_shape t;
  // parse_i32: int(parse_i64(...)) would wrap 4294967424x256 to the supported 128x256.
  const std::string what = "tile '" + std::string(s) + "'";
  t.bm = cli::parse_i32(parts[0], what);
  t.bn = cli::parse_i32(parts[1], what);
  if (parts.size() == 3) t.bk = cli::parse_i32(parts[2], what);
  for (const auto& st : supported_tiles())
    if (st == t) return t;
  std::string list;
  for (const auto& st : supported_tiles()) list += (list.empty() ? "" : ", ") + st.str();
  throw usage_error("tile " + t.str() + " is not instantiated here (supported: " + list + ")");
}

std::vector<tile_shape> parse_tiles(std::string_view csv) {
  std::vector<tile_shape> out;
  for (const auto& s : cli::split(csv)) out.push_back(parse_tile(s));
  if (out.empty()) throw usage_error("empty tile list");
  return out;
}

std::array<int, 2> parse_cluster(std::string_view s) {
  auto parts = cli::split(s, 'x');
  if (parts.size() != 2) throw usage_error("cluster '" + std::string(s) + "': expected MxN (1x1, 2x1 or 1x2)");
  const std::string what = "cluster '" + std::string(s) + "'";
  return {cli::parse_i32(parts[0], what), cli::parse_i32(parts[1], what)};
}

std::string cluster_str(const std::array<int, 2>& c) { return std::to_string(c[0]) + "x" + std::to_string(c[1]); }

int parse_swizzle(std::string_view s) {
  if (s == "auto") return 0;
  if (s == "none") return tessel::swizzle_none;
  if (s == "32") return 32;
  if (s == "64") return 64;
  if (s == "128") return 128;
  throw usage_error("swizzle '" + std::string(s) + "': expected auto, none, 32, 64 or 128");
}

std::string swizzle_str(int swizzle) {
  if (swizzle == 0) return "auto";
  if (swizzle == tessel::swizzle_none) return "none";
  return std::to_string(swizzle);
}

tessel::decomposition parse_decomposition(std::string_view s) {
  if (s == "auto") return tessel::decomposition::automatic;
  if (s == "dp") return tessel::decomposition::data_parallel;
  if (s == "sk") return tessel::decomposition::stream_k;
  throw usage_error("decomposition '" + std::string(s) + "': expected auto, dp (data-parallel) or sk (stream-K)");
}

std::string decomposition_str(tessel::decomposition d) {
  switch (d) {
  case tessel::decomposition::automatic: return "auto";
  case tessel::decomposition::data_parallel: return "dp";
  case tessel::decomposition::stream_k: return "sk";
  }
  return "auto";
}

std::string gemm_shape::str() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

gemm_shape parse_shape(std::string_view s) {
  auto parts = cli::split(s, 'x');
  gemm_shape g;
  if (parts.size() == 1) {
    g.m = g.n = g.k = cli::parse_i64(parts[0], "shape '" + std::string(s) + "'");
  } else if (parts.size() == 3) {
    const std::string what = "shape '" + std::string(s) + "'";
    g.m = cli::parse_i64(parts[0], what);
    g.n = cli::parse_i64(parts[1], what);
    g.k = cli::parse_i64(parts[2], what);
  } else {
    throw usage_error("shape '" + std::string(s) + "': expected MxNxK");
  }
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) throw usage_error("shape '" + std::string(s) + "': sizes must be positive");
  return g;
}

std::vector<gemm_shape> parse_shapes(std::string_view csv) {
  std::vector<gemm_shape> out;
  for (const auto& s : cli::split(csv)) out.push_back(parse_shape(s));
  if (out.empty()) throw usage_error("empty shape list");
  return out;
}

namespace {
template <int BM, int BN, int BK>
ts::kernel jit_tile(gemm_variant v, const ts::options& o) {
  if (v == gemm_variant::plain) return ts::jit(examples::gemm<BM, BN, BK>{}, o);
  return ts::jit(examples::gemm_bias_relu<BM, BN, BK>{}, o);
}
template <int BM, int BN, int BK>
ts::tune_candidate candidate_tile(gemm_variant v, const ts::options& o) {
  if (v == gemm_variant::plain) return ts::candidate(examples::gemm<BM, BN, BK>{}, o, ts::tile_grid(2, BM, BN));
  return ts::candidate(examples::gemm_bias_relu<BM, BN, BK>{}, o, ts::tile_grid(3, BM, BN));
}
/// Calls make.template operator()<BM, BN, BK>() for the instantiated tile `t`.
template <class Make>
auto with_tile(const tile_shape& t, Make make) {
  if (t == tile_shape{128, 256, 64}) return make.template operator()<128, 256, 64>();
  if (t == tile_shape{128, 192, 64}) return make.template operator()<128, 192, 64>();
  if (t == tile_shape{128, 128, 64}) return make.template operator()<128, 128, 64>();
  if (t == tile_shape{256, 192, 64}) return make.template operator()<256, 192, 64>();
  if (t == tile_shape{256, 128, 64}) return make.template operator()<256, 128, 64>();
  if (t == tile_shape{192, 128, 64}) return make.template operator()<192, 128, 64>();
  if (t == tile_shape{128, 64, 64}) return make.template operator()<128, 64, 64>();
  if (t == tile_shape{64, 256, 64}) return make.template operator()<64, 256, 64>();
  if (t == tile_shape{64, 128, 64}) return make.template operator()<64, 128, 64>();
  if (t == tile_shape{64, 64, 64}) return make.template operator()<64, 64, 64>();
  if (t == tile_shape{64, 32, 64}) return make.template operator()<64, 32, 64>();
  if (t == tile_shape{64, 16, 64}) return make.template operator()<64, 16, 64>();
  if (t == tile_shape{64, 8, 64}) return make.template operator()<64, 8, 64>();
  if (t == tile_shape{16, 64, 64}) return make.template operator()<16, 64, 64>();
  if (t == tile_shape{32, 64, 64}) return make.template operator()<32, 64, 64>();
  if (t == tile_shape{8, 64, 64}) return make.template operator()<8, 64, 64>();
  if (t == tile_shape{16, 128, 64}) return make.template operator()<16, 128, 64>();
  if (t == tile_shape{32, 128, 64}) return make.template operator()<32, 128, 64>();
  if (t == tile_shape{128, 128, 32}) return make.template operator()<128, 128, 32>();
  if (t == tile_shape{128, 256, 32}) return make.template operator()<128, 256, 32>();
  if (t == tile_shape{256, 128, 32}) return make.template operator()<256, 128, 32>();
  throw usage_error("tile " + t.str() + " is not instantiated in tessel_gemm.cpp");
}
}  // namespace

ts::kernel jit_gemm(gemm_variant v, const tile_shape& t, const ts::options& o) {
  return with_tile(t, [&]<int BM, int BN, int BK>() { return jit_tile<BM, BN, BK>(v, o); });
}

ts::tune_candidate gemm_candidate(gemm_variant v, const tile_shape& t, const ts::options& o) {
  return with_tile(t, [&]<int BM, int BN, int BK>() { return candidate_tile<BM, BN, BK>(v, o); });
}

ts::grid gemm_grid(const tile_shape& t, std::int64_t M, std::int64_t N) {
  return ts::grid{unsigned((M + t.bm - 1) / t.bm), unsigned((N + t.bn - 1) / t.bn)};
}

void launch_gemm(ts::kernel& k, const tile_shape& t, void* stream, const void* A, const void* B, void* C,
                 std::int64_t M, std::int64_t N, std::int64_t K, gemm_layout layout, std::int64_t ldc, bool swap) {
  const auto sa = layout.a_strides(M, K), sb = layout.b_strides(N, K);
  if (swap) {  // C^T (N x M, column-major: element (n, m) at m * ldc + n) = B @ A^T
    k.launch(stream, gemm_grid(t, N, M), ts::view<ts::bf16>(B, {N, K}, {sb[0], sb[1]}),
             ts::view<ts::bf16>(A, {M, K}, {sa[0], sa[1]}), ts::view<ts::bf16>(C, {N, M}, {1, ldc ? ldc : N}));
    return;
  }
  k.launch(stream, gemm_grid(t, M, N), ts::view<ts::bf16>(A, {M, K}, {sa[0], sa[1]}),
           ts::view<ts::bf16>(B, {N, K}, {sb[0], sb[1]}), ts::view<ts::bf16>(C, {M, N}, {ldc ? ldc : N, 1}));
}

void launch_gemm(const ts::autotuner& tuner, void* stream, const void* A, const void* B, void* C, std::int64_t M,
                 std::int64_t N, std::int64_t K, gemm_layout layout, std::int64_t ldc) {
  const auto sa = layout.a_strides(M, K), sb = layout.b_strides(N, K);
  tuner.launch(stream, ts::view<ts::bf16>(A, {M, K}, {sa[0], sa[1]}), ts::view<ts::bf16>(B, {N, K}, {sb[0], sb[1]}),
               ts::view<ts::bf16>(C, {M, N}, {ldc ? ldc : N, 1}));
}

void launch_gemm_bias_relu(ts::kernel& k, const tile_shape& t, void* stream, const void* A, const void* B,
                           const void* bias, void* C, std::int64_t M, std::int64_t N, std::int64_t K,
                           std::int64_t ldc) {
  k.launch(stream, gemm_grid(t, M, N), ts::view<ts::bf16>(A, {M, K}), ts::view<ts::bf16>(B, {N, K}),
           ts::view<ts::bf16>(bias, {N}), ts::view<ts::bf16>(C, {M, N}, {ldc ? ldc : N, 1}));
}

}  // namespace tessel_bench

#include <filesystem>
#include <ostream>

namespace tessel_bench {

int report_dump_dir(ts::kernel&, const std::string& dir, std::ostream& os) {
  namespace fs = std::filesystem;
  // ts::jit with options::dump_dir writes every stage there itself, or throws (runtime::writeStages):
  // this only lists them, with no fallback of its own to write kernel::stage() texts.
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  if (files.empty()) os << "note: nothing under " << dir << "\n";
  for (const auto& f : files) {
    std::error_code ec;
    os << "wrote " << f.string() << " (" << fs::file_size(f, ec) << " bytes)\n";
  }
  return int(files.size());
}

}  // namespace tessel_bench

namespace tessel_bench {

example_gpu::example_gpu() : dev(query_device(0)), nvml(dev) {
  std::printf("  device: %s\n", describe(dev).c_str());
  TB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
}

example_gpu::~example_gpu() {
  if (stream) cudaStreamDestroy(stream);
}

std::unique_ptr<example_gpu> open_example_gpu() {
  std::string why;
  if (!tessel::gpu_available(&why)) {
    std::printf("no GPU found (%s): compiled only\n", why.c_str());
    return nullptr;
  }
  return std::make_unique<example_gpu>();
}

int check_and_time(const cli& args, bool check, const launch_fn& launch, const output_launch_fn& check_launch,
                   gemm_problem& p, const lt_gemm& cublas, lt_context& lt, cudaStream_t stream,
                   const nvml_probe* nvml, const device_info& dev, const char* failed, const check_extras& extras) {
  compare_config cfg;
  cfg.check = check;
  cfg.timing.batch = args.i32("iters", 20);
  cfg.timing.repeats = args.i32("repeats", 10);
  cfg.timing.warmup_ms = args.f64("warmup-ms", 1000);
  cfg.verify = extras.verify;
  cfg.also_time = extras.also_time;
  compare_report r = compare_with_cublas(launch, check_launch, p, cublas, lt, cfg, stream, nvml);
  std::cout << format_report(r, "tessel", cfg, nvml, dev);
  if (extras.report) *extras.report = r;
  if (r.check_ok) return 0;
  std::printf("FAILED: %s\n", failed);
  return 1;
}

ts::options example_options(const cli& args, ts::schedule s, const std::string& dump_dir, int default_stages) {
  ts::options o{.schedule = s, .stages = args.i32("stages", default_stages), .dump_dir = dump_dir};
  o.decomposition = parse_decomposition(args.str("decomposition", "auto"));
  o.cluster = parse_cluster(args.str("cluster", "1x1"));
  o.raster_group = args.i32("raster-group", 0);
  return o;
}

timing_config example_timing(const cli& args) {
  timing_config cfg;
  cfg.batch = args.i32("iters", 20);
  cfg.repeats = args.i32("repeats", 10);
  cfg.warmup_ms = args.f64("warmup-ms", 1000);
  return cfg;
}

ts::kernel compile_example(const std::string& what, const tile_shape& t, const ts::options& o,
                           const std::function<ts::kernel()>& compile) {
  auto t0 = std::chrono::steady_clock::now();
  ts::kernel k = compile();
  std::printf("  kernel: %s<%d,%d,%d> schedule=%s stages=%s cluster=%s raster_group=%d decomposition=%s   traced + "
              "compiled in %.2f s\n",
              what.c_str(), t.bm, t.bn, t.bk, schedule_name(o.schedule),
              o.stages ? std::to_string(o.stages).c_str() : "auto", cluster_str(o.cluster).c_str(), o.raster_group,
              decomposition_str(o.decomposition).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!o.dump_dir.empty()) report_dump_dir(k, o.dump_dir, std::cout);
  return k;
}

void unsupported_example_tile(const tile_shape& t) {
  throw usage_error("--tile " + t.str() + ": this example instantiates 128x256, 128x192, 192x128, 128x128, 256x192, 256x128, 64x128 and 64x64");
}

int example_main(const char* program, const char* usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n\n%s", program, e.what(), usage);
    return 2;
  } catch (const tessel::error& e) {
    std::fprintf(stderr, "%s: tessel error: %s\n", program, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace tessel_bench
