// disk_cache_helper - a separate process for DiskCacheJitTest: jits one kernel through libtessel
// (the on-disk cache as the environment configures it) and says how long ts::jit took.
//
//   tessel_disk_cache_helper <add|add-elsewhere|scale|gemm|fp8> [--threads T] [--kernels N] [--misaligned-launch]
//                            [--debug] [--stages S] [--schedule tma|multistage|...] [--swizzle W]
//                            [--raster R] [--cluster 2x1] [--decomposition dp|sk] [--dump DIR]
//
// Prints "helper: jit <kernel> <ms> ms" per ts::jit (N kernels: the program with N different
// constants, in order), then exits 0; "helper: error: ..." and 1 when a jit throws.
// --misaligned-launch launches the kernel (a GEMM) with an A one element off its 16-byte
// alignment, so that the launch compiles the schedule multistage variant before it fails for
// want of a GPU (or on the fake addresses, on a GPU machine).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tessel/tessel.hpp>

#include "02_gemm/gemm.hpp"
#include "08_fp8_gemm/fp8_gemm.hpp"

namespace ts = tessel;
using namespace ts::literals;

namespace {

struct add {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c) * 2.0f + Y.load({o}, 1024_c));
  }
};

/// `add` with another constant per instance: another program, the same functor type.
struct scale {
  float factor = 3.0f;
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c) * factor + Y.load({o}, 1024_c));
  }
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <add|scale|gemm|fp8> [options]\n", argv[0]);
    return 2;
  }
  const std::string program = argv[1];
  ts::options o;
  int threads = 1, kernels = 1;
  bool misaligned = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--kernels") kernels = std::atoi(next().c_str());
    else if (a == "--misaligned-launch") misaligned = true;
    else if (a == "--debug") o.debug = true;
    else if (a == "--stages") o.stages = std::atoi(next().c_str());
    else if (a == "--swizzle") o.swizzle = std::atoi(next().c_str());
    else if (a == "--raster") o.raster_group = std::atoi(next().c_str());
    else if (a == "--cluster") o.cluster = next() == "2x1" ? std::array<int, 2>{2, 1} : std::array<int, 2>{1, 2};
    else if (a == "--decomposition")
      o.decomposition = next() == "sk" ? ts::decomposition::stream_k : ts::decomposition::data_parallel;
    else if (a == "--dump") o.dump_dir = next();
    else if (a == "--schedule") {
      std::string s = next();
      o.schedule = s == "tma" ? ts::schedule::tma
                 : s == "multistage" ? ts::schedule::multistage
                 : s == "warp_specialized" ? ts::schedule::warp_specialized
                 : s == "cooperative" ? ts::schedule::cooperative
                 : s == "pingpong" ? ts::schedule::pingpong
                                  : ts::schedule::automatic;
    } else {
      std::fprintf(stderr, "helper: unknown option %s\n", a.c_str());
      return 2;
    }
  }

  auto jitOne = [&](int n) {
    auto t0 = std::chrono::steady_clock::now();
    ts::kernel k;
    if (program == "add")
      k = ts::jit(add{}, o);
    else if (program == "add-elsewhere")  // the same program from another call site (other locations)
      k = ts::jit(add{}, o);
    else if (program == "scale")
      k = ts::jit(scale{3.0f + float(n)}, o);
    else if (program == "fp8")  // e4m3 A, e5m2 B: the dtypes after `index` in the enum
      k = ts::jit(examples::fp8_gemm<ts::f8e4m3, ts::f8e5m2, ts::bf16, 128, 128>{}, o);
    else
      k = ts::jit(examples::gemm<128, 128, 64>{}, o);
    std::printf("helper: jit %s %.2f ms\n", k.name().c_str(), msSince(t0));
    return k;
  };
  try {
    if (threads > 1) {
      std::vector<std::thread> pool;
      std::vector<std::string> errors(threads);
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          try {
            jitOne(0);
          } catch (const std::exception& e) {
            errors[t] = e.what();
          }
        });
      for (std::thread& t : pool) t.join();
      for (const std::string& e : errors)
        if (!e.empty()) throw ts::error(e);
      return 0;
    }
    ts::kernel k;
    for (int n = 0; n < kernels; ++n) k = jitOne(n);
    if (misaligned) {
      constexpr std::int64_t M = 256, N = 128, K = 512;
      auto at = [](std::uintptr_t a) { return reinterpret_cast<const void*>(a); };
      try {
        k.launch(nullptr, ts::grid{2, 1}, ts::view<ts::bf16>(at(0x7f0000100002), {M, K}),
                 ts::view<ts::bf16>(at(0x7f0000200000), {N, K}), ts::view<ts::bf16>(at(0x7f0000300000), {M, N}));
      } catch (const ts::error& e) {
        std::printf("helper: launch: %s\n", e.what());
      }
    }
  } catch (const std::exception& e) {
    std::printf("helper: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
