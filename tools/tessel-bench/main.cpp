// tessel-bench - tessel GEMM kernels against cuBLASLt, in the same process, interleaved.
//
// For each shape: random bf16 inputs (uniform [-1,1), no zeros) in rotated buffer sets (together
// more than 2x L2), one f32 cuBLASLt reference; for each (schedule, tile, stages): compile the
// examples/02_gemm kernel, verify it once (C in padded rows inside a sentinel-filled buffer and
// poisoned with NaN first: nothing outside C may change, every element of C must be written, and
// the relative Frobenius error vs the reference must be small), then time it and cuBLASLt (bf16 out, f32 compute) alternately, with CUDA events
// around batches of launches, and report the median of the repeats, TFLOP/s, the ratio and the
// SM clock read (NVML) while the batches ran. docs/benchmarks.md describes the method.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_summary.h"
#include "bench_util.h"
#include "cli.h"
#include "parallel.h"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kDefaultShapes =
    "8192x8192x8192,4096x4096x4096,2048x2048x2048,4096x14336x4096,4096x4096x14336,8192x28672x8192,"
    "16384x8192x1024,128x8192x8192,4000x4000x4000,3000x5000x2000";

constexpr const char* kUsage = R"(usage: tessel-bench [options]
  --shapes LIST       comma-separated MxNxK (C = A(MxK) @ B(NxK)^T), or S for SxSxS
                      (default: 8192^3, 4096^3, 2048^3, 4096x14336x4096, 4096x4096x14336,
                       8192x28672x8192, 16384x8192x1024, 128x8192x8192, 4000^3, 3000x5000x2000)
  --schedules LIST    tma,multistage,warp_specialized,cooperative,pingpong,auto   (default tma)
  --tiles LIST        BMxBN[xBK] tiles: 128x256,128x192,128x128,256x192,256x128,192x128,128x64,64x256,64x128,64x64 (BK 64), and for
                      multistage also 128x128x32,128x256x32,256x128x32; fewer than 64 rows, computed
                      transposed (docs/small-m.md): 8x64,16x64,32x64,16x128,32x128; for --swap yes:
                      64x8,64x16,64x32   (default 128x256,128x128)
  --stages LIST       pipeline depths, 0 = tessel's choice, -1 = as many as fit   (default 4;
                      for auto: 0, what a user gets)
  --clusters LIST     CTA clusters 1x1,2x1,1x2 (cooperative and pingpong only)    (default 1x1)
  --layouts LIST      operand layouts TN,NN,NT,TT, BLAS-style (letter 1: A, letter 2: B):
                      TN = A (MxK) and B (NxK) K-contiguous; N for A = M-contiguous,
                      T for B = N-contiguous; cuBLASLt runs the same layout    (default TN)
  --decompositions L  auto (tessel's choice: stream-K for cooperative / pingpong 1x1, else whole
                      tiles), and for those dp (whole tiles), sk (stream-K)     (default auto)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's (8) (default 0)
  --swizzle S         operand swizzle for every configuration: auto,none,32,64,128 (default auto)
  --json FILE         also write every result (all samples) as JSON
  --iters N           launches per timed batch (raised so that a batch lasts >= 1 ms)   (default 20)
  --repeats R         timed batches per kernel (at least; raised until each kernel
                      is timed for 400 ms, at most 50); the median is reported  (default 7)
  --warmup-ms T       untimed warm-up per configuration                         (default 500)
  --cooldown-ms T     pause between shapes                                      (default 200)
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms, keep the fastest (default 1)
  --no-check          skip the correctness check
  --autotune          per shape, one more row: ts::autotune over every configuration above (its
                      winner, chosen on the shape by the tuner's own timing and numerical check,
                      or read from the disk cache when an earlier run saved it), timed like
                      the others; the status column says which won and whether it was timed
  --dump-dir DIR      write each kernel's compilation stages to DIR/<schedule>_<tile>_s<stages>/
  --compile-threads N compile the configurations N at a time, 0 = one per hardware thread, at most 16
                      (default 0)
  --swap LIST         no: C = A @ B^T with tiles BM (of M) x BN (of N); yes: the same C computed as
                      C^T = B @ A^T into C's column-major N x M view, tiles BM (of N) x BN (of M)
                      (swap-AB for few rows of M: --tiles 64x16 --swap yes)   (default no)
  --seed S            random inputs seed                                        (default 1)
Exit status: 0 when every configuration compiled, ran and matched cuBLASLt; 1 otherwise; 2 on usage errors.
)";

struct config {
  ts::schedule schedule;
  tb::tile_shape tile;
  int stages;
  std::array<int, 2> cluster{1, 1};
  ts::decomposition decomposition = ts::decomposition::automatic;
  bool swap = false;  ///< launched as C^T = B @ A^T (tb::launch_gemm's `swap`): the tile's BM covers N
  /// The compiled kernel's name (a swapped configuration launches the same kernel).
  std::string name() const {
    std::string n = std::string(tb::schedule_name(schedule)) + "_" + tile.str() + "_s" + (stages == ts::stages_max ? std::string("max") : std::to_string(stages));
    if (cluster[0] * cluster[1] > 1) n += "_c" + tb::cluster_str(cluster);
    if (decomposition != ts::decomposition::automatic) n += "_" + tb::decomposition_str(decomposition);
    return n;
  }
  /// The schedule column: "cooperative", "cooperative/2x1", "cooperative:dp".
  std::string label() const {
    std::string n = tb::schedule_name(schedule);
    if (cluster[0] * cluster[1] > 1) n += "/" + tb::cluster_str(cluster);
    if (decomposition != ts::decomposition::automatic) n += ":" + tb::decomposition_str(decomposition);
    if (swap) n += ":swap";
    return n;
  }
};

struct compiled {
  std::optional<ts::kernel> kernel;
  std::string error;
  double seconds = 0;
};

struct row {
  tb::gemm_shape shape;
  tb::gemm_layout layout;
  config cfg;
  std::string status = "ok";  // ok | FAIL | compile error | launch error
  std::string error;
  bool autotuned = false;    // the --autotune row: cfg is its winner's
  std::string autotune_note;  // "winner <label>, timed|cached"
  tb::compare_report rep;
  std::string cublas_algo;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o;
}

std::string json_num(double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string json_timing(const tb::timing& t, double tflops) {
  std::ostringstream os;
  os << "{\"median_ms\":" << json_num(t.median_ms) << ",\"min_ms\":" << json_num(t.min_ms)
     << ",\"max_ms\":" << json_num(t.max_ms) << ",\"tflops\":" << json_num(tflops) << ",\"batch\":" << t.batch
     << ",\"sm_mhz\":" << t.median_sm_mhz << ",\"power_w\":" << t.median_power_w
     << ",\"enqueue_us\":" << json_num(t.enqueue_us) << ",\"samples_ms\":[";
  for (std::size_t i = 0; i < t.samples_ms.size(); ++i) os << (i ? "," : "") << json_num(t.samples_ms[i]);
  os << "]}";
  return os.str();
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char b[64];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

void print_header() {
  std::printf("%-18s %-20s %-8s %2s %11s %11s %7s %9s %11s  %s\n", "shape (MxNxK)", "schedule", "tile", "st",
              "tessel TF/s", "cuBLAS TF/s", "ratio", "rel_err", "SM MHz t/c", "status");
}

void print_row(const row& r) {
  const auto& rep = r.rep;
  std::string clocks = "n/a";
  if (rep.timed && (rep.candidate.median_sm_mhz || rep.cublas.median_sm_mhz))
    clocks = std::to_string(rep.candidate.median_sm_mhz) + "/" + std::to_string(rep.cublas.median_sm_mhz);
  char err[32] = "-";
  if (rep.checked) std::snprintf(err, sizeof err, "%.2e", rep.candidate_check.rel_err);
  std::printf("%-18s %-20s %-8s %2d %11s %11s %7s %9s %11s  %s%s%s%s\n", r.shape.str().c_str(),
              ((r.autotuned ? std::string("autotune") : r.cfg.label()) +
               (r.layout == tb::gemm_layout{} ? "" : " " + r.layout.str()))
                  .c_str(),
              r.cfg.tile.str().c_str(), r.cfg.stages,
              rep.timed ? tb::fmt(rep.candidate_tflops, 1).c_str() : "-",
              rep.timed ? tb::fmt(rep.cublas_tflops, 1).c_str() : "-", rep.timed ? tb::fmt(rep.ratio, 3).c_str() : "-",
              err, clocks.c_str(), r.status.c_str(),
              r.autotune_note.empty() ? "" : (" (" + r.autotune_note + ")").c_str(), r.error.empty() ? "" : ": ",
              r.error.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    tb::cli args(argc, argv,
                 {"shapes", "schedules", "tiles", "stages", "clusters", "decompositions", "layouts", "raster-group", "swizzle", "json", "iters", "repeats", "warmup-ms", "cooldown-ms",
                  "cublas-algos", "dump-dir", "seed", "compile-threads", "swap"},
                 {"no-check", "autotune", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    // The list parsers (tessel_gemm.hpp) are shared with the examples' singular --tile, --cluster...:
    // their messages get the flag here.
    auto parse_flag = [&](const char* flag, auto parse) {
      try {
        return parse();
      } catch (const tb::usage_error& e) {
        throw tb::usage_error(std::string(flag) + ": " + e.what());
      }
    };
    const auto shapes = parse_flag("--shapes", [&] { return tb::parse_shapes(args.str("shapes", kDefaultShapes)); });
    const auto schedules = parse_flag("--schedules", [&] { return tb::parse_schedules(args.str("schedules", "tma")); });
    const auto tiles = parse_flag("--tiles", [&] { return tb::parse_tiles(args.str("tiles", "128x256,128x128")); });
    std::vector<int> stage_list;
    for (const auto& s : tb::cli::split(args.str("stages", "4"))) stage_list.push_back(tb::cli::parse_i32(s, "--stages"));
    if (stage_list.empty()) throw tb::usage_error("empty --stages list");
    const std::string json_path = args.str("json", "");
    const std::string dump_dir = args.str("dump-dir", "");
    const double cooldown_ms = args.f64("cooldown-ms", 200);
    tb::compare_config cmp;
    cmp.check = !args.flag("no-check");
    cmp.timing.batch = args.i32("iters", 20);
    cmp.timing.repeats = args.i32("repeats", 7);
    cmp.timing.warmup_ms = args.f64("warmup-ms", 500);
    if (cmp.timing.repeats < 1 || cmp.timing.batch < 1) throw tb::usage_error("--iters and --repeats must be >= 1");
    const int cublas_algos = args.i32("cublas-algos", 1);
    // Read here, not in options_of: that runs on the compile threads, where a usage_error would escape.
    const int raster_group = args.i32("raster-group", 0);
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));

    std::vector<std::array<int, 2>> clusters;
    for (const auto& c : tb::cli::split(args.str("clusters", "1x1")))
      clusters.push_back(parse_flag("--clusters", [&] { return tb::parse_cluster(c); }));
    if (clusters.empty()) throw tb::usage_error("empty --clusters list");
    std::vector<ts::decomposition> decompositions;
    for (const auto& d : tb::cli::split(args.str("decompositions", "auto")))
      decompositions.push_back(parse_flag("--decompositions", [&] { return tb::parse_decomposition(d); }));
    if (decompositions.empty()) throw tb::usage_error("empty --decompositions list");
    const int swizzle = parse_flag("--swizzle", [&] { return tb::parse_swizzle(args.str("swizzle", "auto")); });
    std::vector<tb::gemm_layout> layouts;
    for (const auto& l : tb::cli::split(args.str("layouts", "TN"))) {
      try {
        layouts.push_back(tb::gemm_layout::parse(l));
      } catch (const std::invalid_argument& e) {
        throw tb::usage_error(std::string("--layouts: ") + e.what());
      }
    }
    if (layouts.empty()) throw tb::usage_error("empty --layouts list");

    std::vector<bool> swaps;
    for (const auto& w : tb::cli::split(args.str("swap", "no"))) {
      if (w != "no" && w != "yes") throw tb::usage_error("--swap: expected a list of no and yes, got '" + w + "'");
      swaps.push_back(w == "yes");
    }
    if (swaps.empty()) throw tb::usage_error("empty --swap list");

    std::vector<config> configs;
    for (auto s : schedules)
      for (const auto& t : tiles)
        for (int st : stage_list)
          for (const auto& cl : clusters)
            for (auto d : decompositions)
              for (bool sw : swaps) {
                // Clusters are for the persistent schedules; 1x1 runs everywhere. Stream-K and
                // data-parallel are choices of cooperative / pingpong 1x1 only (auto runs everywhere).
                if (cl[0] * cl[1] > 1 && s != ts::schedule::cooperative && s != ts::schedule::pingpong) continue;
                if (d != ts::decomposition::automatic && ((s != ts::schedule::cooperative && s != ts::schedule::pingpong) || cl[0] * cl[1] > 1)) continue;
                // Without --stages, `auto` runs with what a user gets by default (stages 0: tessel's
                // choice, which the automatic rule may deepen for memory-bound launches).
                configs.push_back({s, t, s == ts::schedule::automatic && !args.has("stages") ? 0 : st, cl, d, sw});
              }
    // Every combination filtered out: say which rule did it rather than compile and time nothing
    // ("compiled 0 configurations", exit 0, looked like a run that passed).
    if (configs.empty()) {
      auto persistent = [](ts::schedule s) { return s == ts::schedule::cooperative || s == ts::schedule::pingpong; };
      bool any_persistent = false, any_1x1 = false, any_auto_decomposition = false;
      for (auto s : schedules) any_persistent = any_persistent || persistent(s);
      for (const auto& cl : clusters) any_1x1 = any_1x1 || cl[0] * cl[1] == 1;
      for (auto d : decompositions) any_auto_decomposition = any_auto_decomposition || d == ts::decomposition::automatic;
      std::string why = "--schedules " + args.str("schedules", "tma") + " with --clusters " + args.str("clusters", "1x1") +
                        " and --decompositions " + args.str("decompositions", "auto") + " leave no configuration";
      if (!any_1x1 && !any_persistent) why += "; clusters other than 1x1 need --schedules cooperative or pingpong";
      if (!any_auto_decomposition)
        why += "; --decompositions dp and sk (stream-K) need --schedules cooperative or pingpong with --clusters 1x1 "
               "(or add auto)";
      throw tb::usage_error(why);
    }

    // Compile every configuration once (no GPU needed); reused for every shape.
    std::map<std::string, compiled> kernels;
    bool any_error = false;
    const bool autotune = args.flag("autotune");
    auto options_of = [&](const config& c) {
      return ts::options{.schedule = c.schedule, .stages = c.stages, .cluster = c.cluster, .swizzle = swizzle,
                         .raster_group = raster_group, .decomposition = c.decomposition};
    };
    // On several threads (ts::jit is thread-safe); the lines come in the configurations' order.
    std::vector<const config*> todo;
    for (const auto& c : configs)
      if (kernels.emplace(c.name(), compiled{}).second) todo.push_back(&c);
    const std::int64_t compile_threads = args.i64("compile-threads", 0);
    if (compile_threads < 0) throw tb::usage_error("--compile-threads must be >= 0 (0: one per hardware thread)");
    const std::size_t threads = tb::job_threads(todo.size(), std::size_t(compile_threads));
    const auto all0 = std::chrono::steady_clock::now();
    tb::parallel_for(todo.size(), threads, [&](std::size_t i) {
      const config& c = *todo[i];
      compiled& k = kernels.at(c.name());
      ts::options o = options_of(c);
      o.dump_dir = dump_dir.empty() ? std::string() : dump_dir + "/" + c.name();
      auto t0 = std::chrono::steady_clock::now();
      try {
        k.kernel.emplace(tb::jit_gemm(tb::gemm_variant::plain, c.tile, o));
      } catch (const std::exception& e) {
        k.error = e.what();
      }
      k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    for (const config* c : todo) {
      const compiled& k = kernels.at(c->name());
      any_error = any_error || !k.kernel;
      std::printf("compile %-32s %s (%.2f s)\n", c->name().c_str(), k.kernel ? "ok" : ("FAILED: " + k.error).c_str(),
                  k.seconds);
    }
    std::printf("compiled %zu configuration%s in %.2f s on %zu thread%s\n", todo.size(), todo.size() == 1 ? "" : "s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - all0).count(), threads,
                threads == 1 ? "" : "s");

    std::string why;
    if (!ts::gpu_available(&why)) {
      std::printf("no GPU found (%s): compiled only\n", why.c_str());
      return any_error ? 1 : 0;
    }

    tb::device_info dev = tb::query_device(0);
    tb::nvml_probe nvml(dev);
    std::printf("device: %s\n", tb::describe(dev).c_str());
    if (nvml.available())
      std::printf("NVML: SM clock %u MHz, %u W, %u C (idle, before the run)\n", nvml.sm_clock_mhz(),
                  nvml.power_mw() / 1000, nvml.temperature_c());
    else
      std::printf("NVML: %s; the SM clock is not read (max SM clock %d MHz)\n", nvml.why().c_str(),
                  dev.max_sm_clock_mhz);
    std::printf("method: uniform [-1,1) bf16, rotated buffer sets > 2x L2, checked once with C in padded rows inside "
                "a sentinel-filled buffer and poisoned with NaN, "
                "batches of >= %d launches (>= 1 ms), median of >= %d batches (>= %.0f ms per kernel), interleaved with "
                "cuBLASLt (bf16 out, f32 compute)\n\n",
                cmp.timing.batch, cmp.timing.repeats, cmp.timing.min_total_ms);

    cudaStream_t stream = nullptr;
    TB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    tb::lt_context lt;
    std::vector<row> rows;
    bool fatal = false;
    print_header();
    for (std::size_t si = 0; si < shapes.size() * layouts.size(); ++si) {
      const auto& sh = shapes[si / layouts.size()];
      const tb::gemm_layout layout = layouts[si % layouts.size()];
      std::optional<tb::gemm_problem> p;
      std::optional<tb::lt_gemm> cublas;
      std::string shape_error;
      try {
        p.emplace(sh.m, sh.n, sh.k, false, dev, seed + si / layouts.size(), 3, 24ull << 30, stream);
        p->layout = layout;
        cublas.emplace(lt, sh.m, sh.n, sh.k, tb::out_type::bf16, tb::epilogue::none, nullptr, cublas_algos, layout);
        tb::select_fastest_algo(*cublas, *p, stream, &nvml);
      } catch (const std::exception& e) {
        shape_error = e.what();
      }
      for (const auto& c : configs) {
        row r;
        r.shape = sh;
        r.layout = layout;
        r.cfg = c;
        compiled& k = kernels[c.name()];
        if (!shape_error.empty()) {
          r.status = "setup error";
          r.error = shape_error;
        } else if (!k.kernel) {
          r.status = "compile error";
          r.error = k.error;
        } else {
          r.cublas_algo = cublas->algo_description();
          tb::launch_fn launch = [&](int i, cudaStream_t s) {
            tb::launch_gemm(*k.kernel, c.tile, s, p->A(i), p->B(i), p->C(i), sh.m, sh.n, sh.k, layout, 0, c.swap);
          };
          tb::output_launch_fn check_launch = [&](void* C, std::int64_t ldc, cudaStream_t s) {
            tb::launch_gemm(*k.kernel, c.tile, s, p->A(0), p->B(0), C, sh.m, sh.n, sh.k, layout, ldc, c.swap);
          };
          try {
            r.rep = tb::compare_with_cublas(launch, check_launch, *p, *cublas, lt, cmp, stream, &nvml);
            if (!r.rep.check_ok) {
              r.status = "FAIL";
              r.error = "wrong result: " + r.rep.candidate_check.str();
              if (!r.rep.guard.ok()) r.error += "; " + r.rep.guard.str();
            }
          } catch (const ts::error& e) {
            r.status = "launch error";
            r.error = e.what();
          } catch (const tb::cuda_error& e) {
            // A CUDA error (e.g. an illegal address) is sticky: the context is unusable, stop here.
            r.status = "CUDA error";
            r.error = e.what();
            fatal = true;
          }
        }
        if (r.status != "ok") any_error = true;
        print_row(r);
        rows.push_back(std::move(r));
        if (fatal) break;
      }
      if (autotune && !fatal && shape_error.empty()) {
        // ts::autotune over the configurations that compiled; its first launch (the check's)
        // tunes on this shape, or reads the choice an earlier run saved in the disk cache.
        row r;
        r.shape = sh;
        r.layout = layout;
        r.autotuned = true;
        std::vector<ts::tune_candidate> candidates;
        std::vector<config> candidate_configs;
        for (const auto& c : configs)
          if (!c.swap && kernels[c.name()].kernel) {  // the tuner launches C = A @ B^T only
            candidates.push_back(tb::gemm_candidate(tb::gemm_variant::plain, c.tile, options_of(c)).named(c.name()));
            candidate_configs.push_back(c);
          }
        try {
          if (candidates.empty()) throw ts::error("no configuration compiled");
          ts::autotuner tuner = ts::autotune("tessel-bench gemm", std::move(candidates));
          tb::launch_fn launch = [&](int i, cudaStream_t s) {
            tb::launch_gemm(tuner, s, p->A(i), p->B(i), p->C(i), sh.m, sh.n, sh.k, layout);
          };
          tb::output_launch_fn check_launch = [&](void* C, std::int64_t ldc, cudaStream_t s) {
            tb::launch_gemm(tuner, s, p->A(0), p->B(0), C, sh.m, sh.n, sh.k, layout, ldc);
          };
          r.cublas_algo = cublas->algo_description();
          r.rep = tb::compare_with_cublas(launch, check_launch, *p, *cublas, lt, cmp, stream, &nvml);
          const ts::tune_decision d = tuner.last_decision();
          r.cfg = candidate_configs.at(d.winner);
          int timed = 0;
          for (const auto& c : d.candidates) timed += c.ok;
          // A cached decision timed nothing in this process: say where the winner came from.
          r.autotune_note = "winner " + d.label + ", " +
                            (d.source == ts::tune_source::timed
                                 ? "timed here, " + std::to_string(timed) + "/" + std::to_string(d.candidates.size()) +
                                       " candidates timed"
                                 : ts::to_string(d.source) + std::string(" (no timing in this process)"));
          if (!r.rep.check_ok) {
            r.status = "FAIL";
            r.error = "wrong result: " + r.rep.candidate_check.str();
          }
        } catch (const ts::error& e) {
          r.status = "launch error";
          r.error = e.what();
        } catch (const tb::cuda_error& e) {
          r.status = "CUDA error";
          r.error = e.what();
          fatal = true;
        }
        if (r.status != "ok") any_error = true;
        print_row(r);
        rows.push_back(std::move(r));
      }
      if (fatal) {
        std::printf("stopping: the CUDA context is unusable after a CUDA error\n");
        break;
      }
      if (cooldown_ms > 0 && si + 1 < shapes.size())
        std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(cooldown_ms)));
    }
    cudaStreamDestroy(stream);

    if (!nvml.available())
      std::printf("\nSM clock: not read (%s); max SM clock %d MHz (cudaDevAttrClockRate)\n", nvml.why().c_str(),
                  dev.max_sm_clock_mhz);
    else
      std::printf("\nSM MHz t/c: median NVML SM clock while the tessel / cuBLAS batches ran\n");

    // The best configuration per shape and the geometric mean of those ratios.
    std::vector<tb::ratio_entry> entries;
    auto shape_key = [](const row& r) {
      return r.shape.str() + (r.layout == tb::gemm_layout{} ? "" : " " + r.layout.str());
    };
    auto config_key = [](const row& r) {
      return (r.autotuned ? "autotune: " : "") + r.cfg.label() + " " + r.cfg.tile.str() + " s" +
             std::to_string(r.cfg.stages);
    };
    for (const auto& r : rows)
      if (r.status == "ok" && r.rep.timed) entries.push_back({shape_key(r), config_key(r), r.rep.ratio});
    const tb::bench_summary summary = tb::summarize(entries);
    if (!summary.best.empty()) {
      std::printf("\nbest tessel configuration per shape (ratio to cuBLASLt):\n");
      for (const auto& b : summary.best)
        std::printf("  %-22s %-36s %7.3f\n", b.shape.c_str(), b.config.c_str(), b.ratio);
      std::printf("  geomean over %zu shapes %.3f, lowest %.3f\n", summary.best.size(), summary.geomean,
                  summary.lowest);
    }

    if (!json_path.empty()) {
      std::ofstream js(json_path);
      std::string cmdline;
      for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
      js << "{\n\"tool\":\"tessel-bench\",\"date\":\"" << now_iso() << "\",\"command\":\"" << json_escape(cmdline)
         << "\",\n\"device\":{\"name\":\"" << json_escape(dev.name) << "\",\"cc\":\"" << dev.cc_major << dev.cc_minor
         << "\",\"sms\":" << dev.sms << ",\"l2_bytes\":" << dev.l2_bytes
         << ",\"max_sm_clock_mhz\":" << dev.max_sm_clock_mhz << ",\"nvml\":" << (nvml.available() ? "true" : "false")
         << "},\n\"method\":{\"batch_min\":" << cmp.timing.batch << ",\"repeats\":" << cmp.timing.repeats
         << ",\"min_total_ms\":" << json_num(cmp.timing.min_total_ms) << ",\"warmup_ms\":" << json_num(cmp.timing.warmup_ms) << ",\"check\":" << (cmp.check ? "true" : "false")
         << ",\"tol\":" << json_num(cmp.tol) << "},\n\"results\":[\n";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        js << " {\"m\":" << r.shape.m << ",\"n\":" << r.shape.n << ",\"k\":" << r.shape.k << ",\"schedule\":\""
           << tb::schedule_name(r.cfg.schedule) << "\",\"tile\":\"" << r.cfg.tile.str() << "\",\"stages\":" << r.cfg.stages
           << ",\"cluster\":\"" << tb::cluster_str(r.cfg.cluster) << "\",\"decomposition\":\""
           << tb::decomposition_str(r.cfg.decomposition) << "\",\"swap\":" << (r.cfg.swap ? "true" : "false")
           << ",\"label\":\"" << json_escape(r.autotuned ? "autotune " + r.cfg.label() : r.cfg.label())
           << "\",\"layout\":\"" << r.layout.str() << "\""
           << (r.autotuned ? ",\"autotune\":\"" + json_escape(r.autotune_note) + "\"" : std::string())
           << ",\"status\":\"" << json_escape(r.status) << "\",\"error\":\"" << json_escape(r.error) << "\"";
        if (r.rep.checked)
          js << ",\"rel_err\":" << json_num(r.rep.candidate_check.rel_err)
             << ",\"nonfinite\":" << r.rep.candidate_check.nonfinite
             << ",\"guard\":\"" << json_escape(r.rep.guard.str()) << "\""
             << ",\"cublas_rel_err\":" << json_num(r.rep.cublas_check.rel_err);
        if (r.rep.timed)
          js << ",\"ratio\":" << json_num(r.rep.ratio) << ",\n  \"tessel\":" << json_timing(r.rep.candidate, r.rep.candidate_tflops)
             << ",\n  \"cublas\":" << json_timing(r.rep.cublas, r.rep.cublas_tflops) << ",\"cublas_algo\":\""
             << json_escape(r.cublas_algo) << "\"";
        js << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
      }
      js << "],\n\"best_per_shape\":[";
      for (std::size_t i = 0; i < summary.best.size(); ++i)
        js << (i ? "," : "") << "{\"shape\":\"" << json_escape(summary.best[i].shape) << "\",\"config\":\""
           << json_escape(summary.best[i].config) << "\",\"ratio\":" << json_num(summary.best[i].ratio) << "}";
      js << "],\"geomean\":" << json_num(summary.geomean) << ",\"lowest\":" << json_num(summary.lowest) << "}\n";
      std::printf("wrote %s\n", json_path.c_str());
    }
    return any_error ? 1 : 0;
  } catch (const tb::usage_error& e) {
    std::fprintf(stderr, "tessel-bench: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel-bench: error: %s\n", e.what());
    return 1;
  }
}
