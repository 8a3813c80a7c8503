// 01_vector_add - the smallest tessel program: Y = 2 X + Y on 1-d f32 tensors, one 1024-element
// tile per program instance. The last tile runs past the end of the tensors: tessel's boundary
// semantics (out-of-bounds loads read zero, out-of-bounds stores are dropped) handle it, and this
// example checks that the elements behind the end were not touched.
//
//   tessel-vector-add [--n 1000003] [--dump-dir DIR] [--no-run]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <tessel/tessel.hpp>

#include "bench_util.h"
#include "cli.h"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
using namespace ts::literals;

struct vector_add {
  static constexpr auto BLOCK = 1024_c;

  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * BLOCK;
    Y.store({o}, X.load({o}, BLOCK) * 2.0f + Y.load({o}, BLOCK));
  }
};

int main(int argc, char** argv) {
  try {
    tb::cli args(argc, argv, {"n", "dump-dir", "seed"}, {"no-run", "help"});
    if (args.flag("help")) {
      std::cout << "usage: tessel-vector-add [--n N] [--dump-dir DIR] [--no-run] [--seed S]\n";
      return 0;
    }
    const std::int64_t n = args.i64("n", 1000003);
    if (n <= 0) throw tb::usage_error("--n must be positive");
    const bool no_run = args.flag("no-run");
    const std::string dump_dir = args.str("dump-dir", no_run ? "tessel-vector-add-dump" : "");

    ts::kernel k = ts::jit(vector_add{}, {.dump_dir = dump_dir});
    std::printf("tessel-vector-add: Y = 2 X + Y, n = %lld, tiles of 1024\n", (long long)n);
    if (!dump_dir.empty()) tb::report_dump_dir(k, dump_dir, std::cout);
    if (no_run) return 0;

    std::string why;
    if (!ts::gpu_available(&why)) {
      std::printf("no GPU found (%s): compiled only\n", why.c_str());
      return 0;
    }

    // Guard elements behind the end of Y must survive the partial last tile.
    constexpr std::int64_t guard = 4096;
    tb::device_buffer x(std::size_t(n) * 4), y(std::size_t(n + guard) * 4);
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    tb::fill_uniform_f32(x.as<float>(), std::size_t(n), seed * 2 + 1);
    tb::fill_uniform_f32(y.as<float>(), std::size_t(n + guard), seed * 2 + 2);
    std::vector<float> hx(static_cast<std::size_t>(n)), hy(static_cast<std::size_t>(n + guard));
    TB_CUDA(cudaDeviceSynchronize());
    TB_CUDA(cudaMemcpy(hx.data(), x.get(), x.bytes(), cudaMemcpyDeviceToHost));
    TB_CUDA(cudaMemcpy(hy.data(), y.get(), y.bytes(), cudaMemcpyDeviceToHost));

    k.launch(nullptr, ts::grid{unsigned(ts::cdiv(n, std::int64_t(1024)))}, ts::view<ts::f32>(x.get(), {n}),
             ts::view<ts::f32>(y.get(), {n}));
    TB_CUDA(cudaDeviceSynchronize());

    std::vector<float> out(std::size_t(n + guard));
    TB_CUDA(cudaMemcpy(out.data(), y.get(), y.bytes(), cudaMemcpyDeviceToHost));
    std::int64_t bad = 0, bad_guard = 0;
    double max_err = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      float want = 2.0f * hx[i] + hy[i];
      double err = std::fabs(double(out[i]) - double(want));
      max_err = std::max(max_err, err);
      if (!(err <= 1e-6 * std::max(1.0, std::fabs(double(want))))) {
        if (bad < 5) std::printf("  mismatch at %lld: got %g, want %g\n", (long long)i, out[i], want);
        ++bad;
      }
    }
    for (std::int64_t i = n; i < n + guard; ++i) bad_guard += out[i] != hy[i];
    std::printf("  %lld/%lld elements wrong (max abs err %.3g), %lld guard elements behind the end modified\n",
                (long long)bad, (long long)n, max_err, (long long)bad_guard);
    if (bad || bad_guard) {
      std::printf("FAILED\n");
      return 1;
    }
    std::printf("PASSED\n");
    return 0;
  } catch (const tb::usage_error& e) {
    std::fprintf(stderr, "tessel-vector-add: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel-vector-add: error: %s\n", e.what());
    return 1;
  }
}
