// tessel-latency: JIT latency, stage by stage, and the host overhead of a cached launch
// (issue 14 item 3; docs/benchmarks.md records its runs).
//
// For each configuration (schedule:tile, the example GEMM examples::gemm<BM, BN, 64>, bf16), each
// of --runs repetitions spawns this binary twice with a fresh, empty TESSEL_CACHE_DIR:
//   cold   a new process's first ts::jit: trace, MLIR passes, LLVM, ptxas (every step's time
//          from kernel::compile_timings, the rest is trace, process-wide MLIR/LLVM setup and
//          bookkeeping), then the disk cache store;
//   hit    a new process, same cache directory: ts::jit from the disk cache; then the in-memory
//          hit (ts::jit again in that process: the median of 2000 calls) and, with a GPU, the
//          host time of a cached launch (median over batches of back-to-back launches of a
//          1024^3 GEMM, whose GPU time is shorter than the launch's host time... or else it
//          says so): the same arguments every time (the cached launch), then C alternating
//          between two buffers (every launch takes the full path); then the driver floor:
//          cuLaunchKernelEx alone, no tessel code, for a kernel with the same parameter list and
//          launch shape (launch_floor.h), so that the cached launch's host time splits into
//          tessel's part and the driver's.
// No GPU is needed except for the launch part, which then prints that it was skipped.
//
//   tessel-latency [--configs cooperative:128x256,multistage:128x256,...] [--runs N]

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cli.h"
#include "launch_floor.h"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
namespace fs = std::filesystem;

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct config {
  ts::schedule schedule;
  tb::tile_shape tile;
  std::string name;
};

config parse_config(const std::string& s) {
  auto colon = s.find(':');
  if (colon == std::string::npos) throw tb::usage_error("--configs: '" + s + "' is not schedule:BMxBN");
  try {
    return {tb::parse_schedule(s.substr(0, colon)), tb::parse_tile(s.substr(colon + 1)), s};
  } catch (const tb::usage_error& e) {
    throw tb::usage_error("--configs: " + std::string(e.what()));
  }
}

constexpr const char* kUsage =
    "usage: tessel-latency [--configs schedule:BMxBN,...] [--runs N]\n"
    "  cold ts::jit (new process, empty disk cache) stage by stage, disk-cache hit in a new\n"
    "  process, in-memory hit, and (with a GPU) the host time of a cached launch.\n"
    "  --configs  the configurations, comma-separated (default "
    "cooperative:128x256,multistage:128x256,pingpong:128x128,tma:128x128,auto:128x256)\n"
    "  --runs N   repetitions per configuration, N >= 1 (default 3)\n";

/// Child: one phase in this process. Prints "STEP <name> <ms>" and "RESULT <what> <value>".
int child(const config& c, const std::string& phase) {
  ts::options o;
  o.schedule = c.schedule;
  auto t0 = clock_type::now();
  ts::kernel k = tb::jit_gemm(tb::gemm_variant::plain, c.tile, o);
  const double jit_ms = ms_since(t0);
  double steps = 0;
  for (const auto& [what, ms] : k.compile_timings()) {
    std::printf("STEP %s\t%.2f\n", what.c_str(), ms);
    steps += ms;
  }
  std::printf("STEP trace, setup, rest\t%.2f\n", jit_ms - steps);
  std::printf("RESULT %s_ms %.2f\n", phase.c_str(), jit_ms);
  if (phase != "hit") return 0;

  // In-memory hit: ts::jit of the same functor and options again.
  std::vector<double> us;
  for (int i = 0; i < 2000; ++i) {
    auto t = clock_type::now();
    ts::kernel again = tb::jit_gemm(tb::gemm_variant::plain, c.tile, o);
    us.push_back(ms_since(t) * 1000);
  }
  std::printf("RESULT memory_hit_us %.2f\n", median(us));

  std::string why;
  if (!ts::gpu_available(&why)) {
    std::printf("RESULT launch_us skipped (no GPU: %s)\n", why.c_str());
    return 0;
  }
  const std::int64_t M = 1024, N = 1024, K = 1024;
  void *A = nullptr, *B = nullptr, *C = nullptr, *C2 = nullptr;
  if (cudaMalloc(&A, M * K * 2) || cudaMalloc(&B, N * K * 2) || cudaMalloc(&C, M * N * 2) ||
      cudaMalloc(&C2, M * N * 2)) {
    std::printf("RESULT launch_us skipped (cudaMalloc failed)\n");
    return 0;
  }
  cudaMemset(A, 0, M * K * 2);
  cudaMemset(B, 0, N * K * 2);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int i = 0; i < 20; ++i) tb::launch_gemm(k, c.tile, s, A, B, C, M, N, K);  // variants, modules, workspace
  cudaStreamSynchronize(s);
  // GPU time of one launch, to say whether the host time below is the host's.
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  for (int i = 0; i < 100; ++i) tb::launch_gemm(k, c.tile, s, A, B, C, M, N, K);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float gpu_ms = 0;
  cudaEventElapsedTime(&gpu_ms, e0, e1);
  std::vector<double> per_launch;
  for (int batch = 0; batch < 15; ++batch) {
    const int n = 100;
    auto t = clock_type::now();
    for (int i = 0; i < n; ++i) tb::launch_gemm(k, c.tile, s, A, B, C, M, N, K);
    per_launch.push_back(ms_since(t) * 1000 / n);
    cudaStreamSynchronize(s);
  }
  std::printf("RESULT launch_us %.2f\n", median(per_launch));
  // The full path: C alternates between two buffers, so no launch repeats the previous one's
  // arguments (the cached launch never applies): every check, pointer query and TMA encode.
  std::vector<double> full;
  for (int batch = 0; batch < 15; ++batch) {
    const int n = 100;
    auto t = clock_type::now();
    for (int i = 0; i < n; ++i) tb::launch_gemm(k, c.tile, s, A, B, i % 2 ? C2 : C, M, N, K);
    full.push_back(ms_since(t) * 1000 / n);
    cudaStreamSynchronize(s);
  }
  std::printf("RESULT full_launch_us %.2f\n", median(full));
  std::printf("RESULT gpu_us_per_launch %.2f\n", gpu_ms * 1000 / 100);
  cudaFree(A);
  cudaFree(B);
  cudaFree(C);
  cudaFree(C2);
  // After everything above, so that it cannot change what they measure.
  const tb::driver_floor floor = tb::time_driver_launch_floor(s, gpu_ms * 1000 / 100);
  if (floor.pointers_us >= 0) std::printf("RESULT floor_pointers_us %.2f\n", floor.pointers_us);
  if (floor.packed_us >= 0) std::printf("RESULT floor_packed_us %.2f\n", floor.packed_us);
  if (floor.legacy_us >= 0) std::printf("RESULT floor_legacy_us %.2f\n", floor.legacy_us);
  if (floor.idle_us >= 0) std::printf("RESULT floor_idle_us %.2f\n", floor.idle_us);
  if (!floor.note.empty()) std::printf("FLOOR_NOTE %s\n", floor.note.c_str());
  return 0;
}

/// Runs this binary as a child with TESSEL_CACHE_DIR=dir; returns its stdout.
std::string spawn(const std::string& self, const std::vector<std::string>& args, const std::string& cache_dir) {
  const fs::path out = fs::path(cache_dir) / "child.out";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "TESSEL_CACHE_DIR=", 17) != 0 && std::strncmp(*e, "TESSEL_DISABLE_CACHE=", 21) != 0)
      env_strings.push_back(*e);
  env_strings.push_back("TESSEL_CACHE_DIR=" + cache_dir);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {self};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), envp.data()) != 0)
    throw std::runtime_error("cannot spawn " + self);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  FILE* f = std::fopen(out.c_str(), "r");
  std::string text;
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("child " + args[1] + " " + args[3] + " failed:\n" + text);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string configs = "cooperative:128x256,multistage:128x256,pingpong:128x128,tma:128x128,auto:128x256";
  int runs = 3;
  std::string child_config, phase;
  std::vector<config> list;
  // Parsed inside a try, strictly: a bad argument is a usage error (exit status 2, the usage), never
  // an uncaught exception (abort) nor a count that atoi made up ("abc", "-5": one run, silently).
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      auto value = [&] {
        if (i + 1 >= args.size()) throw tb::usage_error(args[i] + " needs a value");
        return args[++i];
      };
      if (args[i] == "--configs") {
        configs = value();
      } else if (args[i] == "--runs") {
        const std::string n = value();
        runs = tb::cli::parse_i32(n, "--runs");
        if (runs < 1) throw tb::usage_error("--runs: " + n + " runs: expected at least 1");
      } else if (args[i] == "--child") {
        child_config = value();
      } else if (args[i] == "--phase") {
        phase = value();
      } else if (args[i] == "--help" || args[i] == "-h") {
        std::printf("%s", kUsage);
        return 0;
      } else {
        throw tb::usage_error("unknown argument '" + args[i] + "'");
      }
    }
    if (child_config.empty()) {
      for (const auto& c : tb::cli::split(configs)) list.push_back(parse_config(c));
      if (list.empty())
        throw tb::usage_error("--configs: no configuration in '" + configs + "' (expected schedule:BMxBN,...)");
    }
  } catch (const tb::usage_error& e) {
    std::fprintf(stderr, "tessel-latency: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    if (!child_config.empty()) return child(parse_config(child_config), phase);

    const std::string self = fs::read_symlink("/proc/self/exe").string();
    std::string ptxas;
    std::printf("tessel-latency: %d run(s) per configuration; each run: a new process with an empty "
                "TESSEL_CACHE_DIR (cold), then a new process on that cache (hit)\n", runs);
    for (const config& c : list) {
      std::map<std::string, std::vector<double>> steps;
      std::vector<std::string> order;
      std::map<std::string, std::vector<double>> results;
      std::string launch_note, floor_note;
      for (int r = 0; r < runs; ++r) {
        char tmpl[] = "/tmp/tessel-latency-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        const std::string dir = tmpl;
        for (const char* ph : {"cold", "hit"}) {
          std::string out = spawn(self, {"--child", c.name, "--phase", ph}, dir);
          size_t pos = 0;
          while (pos < out.size()) {
            size_t end = out.find('\n', pos);
            if (end == std::string::npos) end = out.size();
            std::string line = out.substr(pos, end - pos);
            pos = end + 1;
            if (line.rfind("FLOOR_NOTE ", 0) == 0) {
              floor_note = line.substr(11);
            } else if (line.rfind("STEP ", 0) == 0 && std::string(ph) == "cold") {
              auto tab = line.rfind('\t');
              std::string name = line.substr(5, tab - 5);
              if (!steps.count(name)) order.push_back(name);
              steps[name].push_back(std::atof(line.c_str() + tab + 1));
            } else if (line.rfind("RESULT ", 0) == 0) {
              auto sp = line.find(' ', 7);
              std::string key = line.substr(7, sp - 7), val = line.substr(sp + 1);
              if (val.rfind("skipped", 0) == 0) launch_note = val;
              else results[key].push_back(std::atof(val.c_str()));
            }
          }
        }
        fs::remove_all(dir);
      }
      std::printf("\n%s (bf16 examples::gemm<%d, %d, 64>), median of %d:\n", c.name.c_str(), c.tile.bm, c.tile.bn,
                  runs);
      std::printf("  cold ts::jit, new process        %8.1f ms  (runs:", median(results["cold_ms"]));
      for (double v : results["cold_ms"]) std::printf(" %.1f", v);
      std::printf(")\n");
      for (const auto& name : order) std::printf("    %-34s %8.2f ms\n", name.c_str(), median(steps[name]));
      std::printf("  disk-cache hit, new process      %8.2f ms\n", median(results["hit_ms"]));
      std::printf("  in-memory hit (ts::jit again)    %8.2f us\n", median(results["memory_hit_us"]));
      if (results.count("launch_us"))
        std::printf("  cached launch, host              %8.2f us per launch (GPU %.2f us per launch)\n"
                    "  launch with new arguments, host  %8.2f us per launch (every check, pointer query, TMA encode)\n",
                    median(results["launch_us"]), median(results["gpu_us_per_launch"]),
                    median(results["full_launch_us"]));
      if (results.count("floor_pointers_us")) {
        std::printf("  cuLaunchKernelEx alone, host     %8.2f us per launch (no tessel code; the same 23 parameters "
                    "and launch shape",
                    median(results["floor_pointers_us"]));
        if (results.count("floor_packed_us"))
          std::printf("; as one packed buffer %.2f us", median(results["floor_packed_us"]));
        std::printf(")\n");
        if (results.count("floor_legacy_us"))
          std::printf("  cuLaunchKernel alone, host       %8.2f us per launch (the older entry point, same "
                      "parameters)\n", median(results["floor_legacy_us"]));
        if (results.count("floor_idle_us"))
          std::printf("  cuLaunchKernelEx, idle GPU       %8.2f us per launch (kernels that return at once: no "
                      "launch waits behind a busy queue)\n", median(results["floor_idle_us"]));
      }
      if (!floor_note.empty()) std::printf("  driver floor: %s\n", floor_note.c_str());
      if (!results.count("launch_us"))
        std::printf("  cached launch, host              %s\n", launch_note.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel-latency: %s\n", e.what());
    return 1;
  }
  return 0;
}
