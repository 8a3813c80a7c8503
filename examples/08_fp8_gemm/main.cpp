// 08_fp8_gemm - C = bf16(scale * A @ B^T) with fp8 e4m3 operands (f32 accumulation: wgmma
// m64nNk32), JIT-compiled by tessel for one of the TMA-fed schedules, checked against cuBLASLt's
// fp8 GEMM (CUDA_R_8F_E4M3 inputs, f32 output, the "TN" layout; no scale pointers) and against
// the CPU in double on sampled elements, then timed against cuBLASLt's fp8 GEMM with a bf16 output
// (its N best heuristic algorithms) in the same process. `--out e4m3` stores an e4m3 output
// instead (a quantized result: scale = 1 / 2^ceil(log2 K) keeps it in range); it is checked against
// the CPU only and timed alone (cuBLASLt's fp8-output GEMM needs scale pointers this example does
// not set up). `--rowwise` scales by one f32 per row of A and of B instead (fp8_gemm_rowwise: PyTorch's
// rowwise `_scaled_mm`, random scales in [2^-10, 2^-4]); cuBLASLt has no such epilogue, so its
// per-tensor fp8 GEMM is timed beside it (doing less), and the check is the CPU's.
//
//   tessel-fp8-gemm [--schedule cooperative] [--m 8192 --n 8192 --k 8192] [--tile 128x256]
//                   [--out bf16|e4m3] [--stages 0] [--decomposition auto|dp|sk] [--cluster 1x1]
//                   [--dump-dir DIR] [--no-run] [--iters 20] [--repeats 10] [--cublas-algos 1]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cli.h"
#include "fp8_gemm.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr const char* kUsage = R"(usage: tessel-fp8-gemm [options]
  --schedule NAME     tma | warp_specialized | cooperative | pingpong | auto   (default cooperative)
                      (multistage has no fp8: mma.sync's fp8 shapes are not built)
  --m M --n N --k K   problem size, C (MxN) = A (MxK) @ B (NxK)^T                        (default 8192 each)
  --tile BMxBN        128x256, 128x192, 128x128, (cooperative) 256x128, or for small M  (default 128x256;
                      64x128 and 64x64; BK = 128                                        pingpong: 128x192)
  --out T             bf16 (timed against cuBLASLt) or e4m3 (a quantized output)       (default bf16)
  --rowwise           scale by sa[m] * sb[n] (f32 vectors) instead of one scalar
  --stages S          shared-memory pipeline depth, 0 = tessel's choice, -1 = as many as fit (default 0)
  --decomposition D   auto, dp (whole tiles) or sk (stream-K)                              (default auto)
  --cluster MxN       CTA cluster 1x1, 2x1 or 1x2 (cooperative and pingpong)              (default 1x1)
  --raster-group G    rows of tiles per grouped-raster group, 0 = tessel's default          (default 0)
  --cublas-algos N    time cuBLASLt's N best heuristic algorithms, report the fastest      (default 1)
  --dump-dir DIR      write every compilation stage to DIR
  --no-run            trace + compile only (no GPU needed); DIR defaults to ./tessel-fp8-gemm-dump
  --iters N / --repeats R / --warmup-ms T / --check / --no-check / --seed S   as in tessel-gemm
)";

template <class TC, template <class, int, int> class K>
ts::kernel jit_tile(int bm, int bn, const ts::options& o) {
  if (bm == 128 && bn == 256) return ts::jit(K<TC, 128, 256>{}, o);
  if (bm == 128 && bn == 192) return ts::jit(K<TC, 128, 192>{}, o);
  if (bm == 128 && bn == 128) return ts::jit(K<TC, 128, 128>{}, o);
  if (bm == 256 && bn == 128) return ts::jit(K<TC, 256, 128>{}, o);
  if (bm == 64 && bn == 128) return ts::jit(K<TC, 64, 128>{}, o);
  if (bm == 64 && bn == 64) return ts::jit(K<TC, 64, 64>{}, o);
  throw tb::usage_error("--tile: this example instantiates 128x256, 128x192, 128x128, 256x128, 64x128 and 64x64");
}
template <class TC, int BM, int BN>
using per_tensor = examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, TC, BM, BN>;

}  // namespace

int main(int argc, char** argv) {
  return tb::example_main("tessel-fp8-gemm", kUsage, [&]() -> int {
    std::set<std::string> valued = {"schedule", "m", "n", "k", "tile", "out", "dump-dir", "iters", "repeats",
                                    "warmup-ms", "cublas-algos", "seed"};
    valued.insert(std::begin(tb::kExampleOptions), std::end(tb::kExampleOptions));
    tb::cli args(argc, argv, valued, {"no-run", "check", "no-check", "rowwise", "help"});
    if (args.flag("help")) {
      std::cout << kUsage;
      return 0;
    }
    const ts::schedule schedule = tb::parse_schedule(args.str("schedule", "cooperative"));
    const std::int64_t M = args.i64("m", 8192), N = args.i64("n", 8192), K = args.i64("k", 8192);
    if (M <= 0 || N <= 0 || K <= 0) throw tb::usage_error("--m/--n/--k must be positive");
    if (K % 16 != 0) throw tb::usage_error("--k: fp8 rows of A and B must be 16-byte multiples for TMA (K % 16 == 0)");
    const std::string tile_s = args.str("tile", schedule == ts::schedule::pingpong ? "128x192" : "128x256");
    int bm = 0, bn = 0;
    if (std::sscanf(tile_s.c_str(), "%dx%d", &bm, &bn) != 2) throw tb::usage_error("--tile: expected BMxBN, got " + tile_s);
    const std::string out = args.str("out", "bf16");
    if (out != "bf16" && out != "e4m3") throw tb::usage_error("--out: bf16 or e4m3, got " + out);
    const bool fp8_out = out == "e4m3";
    const bool rowwise = args.flag("rowwise");
    const bool no_run = args.flag("no-run");
    const bool check = !args.flag("no-check");
    const std::string dump_dir = args.str("dump-dir", no_run ? "tessel-fp8-gemm-dump" : "");
    const ts::options opts = tb::example_options(args, schedule, dump_dir, /*default_stages=*/0);
    const float scale = fp8_out ? std::ldexp(1.0f, -int(std::ceil(std::log2(double(K))))) : 1.0f;

    if (rowwise)
      std::printf("tessel-fp8-gemm: C[%lldx%lld] = %s(A[%lldx%lld] @ B[%lldx%lld]^T * sa[m] * sb[n])   e4m3 in, f32 "
                  "accumulate\n",
                  (long long)M, (long long)N, out.c_str(), (long long)M, (long long)K, (long long)N, (long long)K);
    else
      std::printf("tessel-fp8-gemm: C[%lldx%lld] = %s(%g * A[%lldx%lld] @ B[%lldx%lld]^T)   e4m3 in, f32 accumulate\n",
                  (long long)M, (long long)N, out.c_str(), scale, (long long)M, (long long)K, (long long)N,
                  (long long)K);
    ts::kernel k = tb::compile_example(rowwise ? "fp8_gemm_rowwise" : "fp8_gemm", tb::tile_shape{bm, bn, 128}, opts, [&] {
      if (rowwise)
        return fp8_out ? jit_tile<ts::f8e4m3, examples::fp8_gemm_rowwise>(bm, bn, opts)
                       : jit_tile<ts::bf16, examples::fp8_gemm_rowwise>(bm, bn, opts);
      return fp8_out ? jit_tile<ts::f8e4m3, per_tensor>(bm, bn, opts) : jit_tile<ts::bf16, per_tensor>(bm, bn, opts);
    });
    if (no_run) return 0;

    const std::unique_ptr<tb::example_gpu> gpu = tb::open_example_gpu();
    if (!gpu) return 0;
    cudaStream_t stream = gpu->stream;

    // Rotated sets of A, B and C (more than 2x L2 in all), random e4m3 codes of magnitude 1/8..4.
    const std::size_t c_bytes = std::size_t(M * N) * (fp8_out ? 1 : 2);
    const std::size_t set_bytes = std::size_t(M * K + N * K) + c_bytes;
    const int sets = tb::rotation_sets(set_bytes, gpu->dev.l2_bytes, 3, 24ull << 30);
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    std::vector<tb::device_buffer> A, B, C;
    std::vector<std::uint8_t> a0, b0;
    for (int i = 0; i < sets; ++i) {
      std::vector<std::uint8_t> a = tb::random_fp8(std::size_t(M * K), seed * 1000 + 2 * i, tb::fp8_kind::e4m3);
      std::vector<std::uint8_t> b = tb::random_fp8(std::size_t(N * K), seed * 1000 + 2 * i + 1, tb::fp8_kind::e4m3);
      A.emplace_back(a.size());
      B.emplace_back(b.size());
      C.emplace_back(c_bytes);
      TB_CUDA(cudaMemcpy(A.back().get(), a.data(), a.size(), cudaMemcpyHostToDevice));
      TB_CUDA(cudaMemcpy(B.back().get(), b.data(), b.size(), cudaMemcpyHostToDevice));
      if (i == 0) a0 = std::move(a), b0 = std::move(b);
    }
    std::printf("  data:   random e4m3 codes, |x| in [1/8, 4), %d rotated A/B/C sets of %.1f MB\n", sets,
                double(set_bytes) / 1e6);

    // --rowwise: random scales in [2^-10, 2^-4] (an e4m3 output stays in range for K <= 2^14).
    std::vector<float> sa(std::size_t(rowwise ? M : 0)), sb(std::size_t(rowwise ? N : 0));
    {
      std::mt19937 rng{static_cast<unsigned>(seed)};
      std::uniform_real_distribution<float> u(-10, -4);
      for (float& s : sa) s = std::exp2(u(rng));
      for (float& s : sb) s = std::exp2(u(rng));
    }
    tb::device_buffer dsa(std::max<std::size_t>(4, sa.size() * 4)), dsb(std::max<std::size_t>(4, sb.size() * 4));
    if (rowwise) {
      TB_CUDA(cudaMemcpy(dsa.get(), sa.data(), sa.size() * 4, cudaMemcpyHostToDevice));
      TB_CUDA(cudaMemcpy(dsb.get(), sb.data(), sb.size() * 4, cudaMemcpyHostToDevice));
    }
    const ts::grid grid{unsigned(ts::cdiv(M, std::int64_t(bm))), unsigned(ts::cdiv(N, std::int64_t(bn)))};
    // Launch on set i, C at `c` with rows `ldc` apart.
    auto launch_c = [&](int i, void* c, std::int64_t ldc, cudaStream_t s) {
      const ts::tensor_arg a = ts::view<ts::f8e4m3>(A[i % sets].get(), {M, K});
      const ts::tensor_arg b = ts::view<ts::f8e4m3>(B[i % sets].get(), {N, K});
      const ts::tensor_arg cv = fp8_out ? ts::view<ts::f8e4m3>(c, {M, N}, {ldc, 1}) : ts::view<ts::bf16>(c, {M, N}, {ldc, 1});
      if (rowwise)
        k.launch(s, grid, a, b, ts::view<ts::f32>(dsa.get(), {M}), ts::view<ts::f32>(dsb.get(), {N}), cv);
      else
        k.launch(s, grid, a, b, cv, scale);
    };
    auto launch_into = [&](int i, void* c, cudaStream_t s) { launch_c(i, c, N, s); };

    tb::lt_context lt;
    bool ok = true;
    if (check) {
      // Set 0 into a guarded, NaN-poisoned C with padded rows.
      const int eb = fp8_out ? 1 : 2;
      tb::guarded_output g(tb::guarded_matrix(M, N, tb::padded_ld(N, eb), eb));
      g.reset(stream);
      const std::int64_t ld = tb::padded_ld(N, eb);
      launch_c(0, g.data(), ld, stream);
      const tb::guard_report gr = g.check(stream);
      std::printf("  guards: %s\n", gr.str().c_str());
      ok = ok && gr.ok();
      if (!fp8_out && !rowwise) {
        // cuBLASLt's fp8 GEMM with an f32 output: the reference of the whole matrix.
        tb::lt_gemm ref(lt, M, N, K, tb::out_type::f32, tb::epilogue::none, nullptr, 1, {}, tb::in_type::e4m3);
        tb::device_buffer ref_c(std::size_t(M * N) * 4);
        ref.run(A[0].get(), B[0].get(), ref_c.get(), stream);
        g.copy_to_dense(C[0].get(), stream);
        const tb::compare_stats st = tb::compare_bf16_f32(C[0].get(), ref_c.as<float>(), std::size_t(M * N), stream);
        std::printf("  check vs cuBLASLt fp8 (f32 out): %s -> %s (tol 1e-2)\n", st.str().c_str(),
                    st.ok(1e-2) ? "PASS" : "FAIL");
        ok = ok && st.ok(1e-2);
      }
      // Sampled elements against the CPU in double: tolerance as tests/gpu/fp8_test.cpp.
      std::mt19937_64 rng(seed);
      int bad = 0;
      for (int s = 0; s < 256; ++s) {
        const std::int64_t r = s == 0 ? 0 : s == 1 ? M - 1 : std::int64_t(rng() % std::uint64_t(M));
        const std::int64_t c = s == 0 ? 0 : s == 1 ? N - 1 : std::int64_t(rng() % std::uint64_t(N));
        double sum = 0, abs_sum = 0;
        for (std::int64_t kk = 0; kk < K; ++kk) {
          const double p = tb::fp8_to_double(a0[std::size_t(r * K + kk)], tb::fp8_kind::e4m3) *
                           tb::fp8_to_double(b0[std::size_t(c * K + kk)], tb::fp8_kind::e4m3);
          sum += p;
          abs_sum += std::fabs(p);
        }
        const double sc = rowwise ? double(sa[std::size_t(r)]) * double(sb[std::size_t(c)]) : double(scale);
        const double want = sum * sc;
        const std::uint32_t w = g.bits(0, r, c);
        const double got = fp8_out ? tb::fp8_to_double(std::uint8_t(w), tb::fp8_kind::e4m3)
                                   : double(tb::bf16_to_float(std::uint16_t(w)));
        const double tol = abs_sum * sc * std::ldexp(1.0, -10) + std::fabs(want) * 1e-6 +
                           std::fabs(want) * (fp8_out ? std::ldexp(1.0, -4) * 1.01 : std::ldexp(1.0, -8)) +
                           (fp8_out ? std::ldexp(1.0, -10) : 0);
        if (!(std::fabs(got - want) <= tol) && bad++ < 4)
          std::printf("  C[%lld][%lld] = %.9g, CPU reference %.9g (tol %.3g)\n", (long long)r, (long long)c, got, want,
                      tol);
      }
      std::printf("  CPU check (256 sampled elements, double): %d bad -> %s\n", bad, bad ? "FAIL" : "PASS");
      ok = ok && bad == 0;
    }

    std::vector<tb::named_launch> cands = {{"tessel", [&](int i, cudaStream_t s) { launch_into(i, C[i % sets].get(), s); }}};
    std::unique_ptr<tb::lt_gemm> cublas;
    if (!fp8_out) {
      cublas = std::make_unique<tb::lt_gemm>(lt, M, N, K, tb::out_type::bf16, tb::epilogue::none, nullptr,
                                             int(args.i64("cublas-algos", 1)), tb::gemm_layout{}, tb::in_type::e4m3);
      for (int a = 0; a < cublas->num_algos(); ++a) {
        cublas->select_algo(a);
        std::printf("  cuBLASLt algo %d: %s\n", a, cublas->algo_description().c_str());
      }
      for (int a = 0; a < cublas->num_algos(); ++a)
        cands.push_back({"cuBLASLt algo " + std::to_string(a), [&, a](int i, cudaStream_t s) {
                           cublas->select_algo(a);
                           cublas->run(A[i % sets].get(), B[i % sets].get(), C[i % sets].get(), s);
                         }});
    }
    tb::timing_config tc;
    tc.batch = int(args.i64("iters", 20));
    tc.repeats = int(args.i64("repeats", 10));
    tc.warmup_ms = double(args.i64("warmup-ms", 1000));
    std::vector<tb::launch_fn> fns;
    for (auto& c : cands) fns.push_back(c.launch);
    const std::vector<tb::timing> t = tb::time_interleaved(fns, tc, stream, &gpu->nvml);
    const double flops = 2.0 * double(M) * double(N) * double(K);
    int best = 1;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      std::printf("  %-16s %9.4f ms  %7.1f TFLOP/s  SM %u MHz  %u W\n", cands[i].name.c_str(), t[i].median_ms,
                  tb::tflops(flops, t[i].median_ms), t[i].median_sm_mhz, t[i].median_power_w);
      if (i > 0 && t[i].median_ms < t[best].median_ms) best = int(i);
    }
    if (cands.size() > 1)
      std::printf("  ratio (best cuBLASLt fp8 time / tessel time): %.3f\n", t[best].median_ms / t[0].median_ms);
    if (!ok) {
      std::printf("tessel fp8 result does not match the reference\n");
      return 1;
    }
    return 0;
  });
}
