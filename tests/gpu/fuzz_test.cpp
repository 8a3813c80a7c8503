// fuzz_test.cpp - the seeded GEMM fuzzer on the GPU (DESIGN.md §9). fuzz_case.hpp generates the
// cases, fuzz_kernels.hpp compiles and views them.
//
// Each case: the kernel of its configuration (compiled once per process; a run compiles all it
// needs up front, in parallel), integer inputs (A, B in {-2, -1, 1, 2}, bias in {-1, 0, 1}; the
// unused elements of the operand buffers NaN; a residual R in {-1, 0, 1}, row- or column-major,
// NaN between its rows; the reductions' vectors guarded too, starting at 0 and -inf), C inside a
// sentinel-filled buffer and poisoned with
// NaN (bench_util.h, guarded_output), one launch. Then nothing outside C may have changed, A, B
// and the bias neither, and every element of C must equal the CPU reference exactly: the sums are
// integers below 2^24, exact in f32 in any order, and the CPU rounds them to bf16 as the kernel
// does.
//
// Two ways to run it:
//   tessel_fuzz_tests [gtest flags]   GoogleTest (label gpu, bundle/run-gpu-tests):
//                                     GpuFuzz.ShortRun, the first 200 cases of seed 1, and
//                                     GuardedOutput.*, rows of C whose end is not 16-byte aligned
//                                     (M = 1, N = 17 in rows of 24, ...) in every schedule
//   tessel_fuzz_tests --seed S [--first I] [--cases N] [--case I] [--progress FILE]
//                                     the fuzzer (scripts/gpu-fuzz drives long runs): prints each
//                                     failing case with the command that reruns it alone
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_util.h"
#include "cli.h"
#include "fuzz_case.hpp"
#include "fuzz_kernels.hpp"
#include "gpu_test_util.hpp"
#include "kernel_cache.hpp"
#include "parallel.h"
#include "scoped_env.hpp"

namespace tb = tessel_bench;
using namespace tessel_fuzz;

namespace tessel_fuzz {
void PrintTo(const fuzz_case& c, std::ostream* os) { *os << c.str(); }  // gtest parameters
}  // namespace tessel_fuzz

namespace {

constexpr std::uint64_t kShortSeed = 1;
constexpr int kShortCases = 200;
constexpr double kCaseTimeoutS = 60;     // one launch (and the variant it may compile) and its sync
constexpr std::uint16_t kInputPad = 0x7fc0;  // NaN in operand buffers outside the matrices

// ---- one case -------------------------------------------------------------------------------

struct outcome {
  std::string failure;  ///< "" when the case passed
  bool fatal = false;   ///< a CUDA error: the context is unusable
};

/// Ends the process (status 124) when a case's launch does not finish in time: a hang.
class case_watchdog {
public:
  explicit case_watchdog(double limit_s) : limit_s_(limit_s), thread_([this] { loop(); }) {}
  ~case_watchdog() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void start(const fuzz_case& c) {
    std::lock_guard<std::mutex> g(mu_);
    what_ = "seed " + std::to_string(c.seed) + " case " + std::to_string(c.index) + ": " + c.str();
    start_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  void stop() {
    std::lock_guard<std::mutex> g(mu_);
    running_ = false;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(500));
      if (running_ && std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > limit_s_) {
        std::printf("FAIL %s\n  hung: the launch did not finish in %.0f s\nSTOPPED\n", what_.c_str(), limit_s_);
        std::fflush(stdout);
        std::_Exit(124);
      }
    }
  }
  double limit_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  bool running_ = false, stop_ = false;
  std::thread thread_;
};

/// Compiles the kernels of `configs` that are not cached yet, on every core (each trace and
/// compile has its own MLIR context), and caches them (kernel_cache.hpp).
void precompile(const std::vector<fuzz_config>& configs) {
  std::set<std::string> keys;
  std::vector<fuzz_config> todo;
  for (const auto& c : configs)
    if (keys.insert(c.kernel_key()).second) todo.push_back(c);
  std::vector<std::optional<ts::kernel>> kernels(todo.size());
  std::vector<std::string> errors(todo.size());
  tb::parallel_for(todo.size(), tb::job_threads(todo.size()), [&](std::size_t i) {
    try {
      kernels[i] = jit_kernel(todo[i]);
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  });
  for (std::size_t i = 0; i < todo.size(); ++i)
    tessel_gpu_test::cached(todo[i].kernel_key(), [&]() -> ts::kernel {
      if (!kernels[i]) throw ts::error(errors[i]);
      return *kernels[i];
    });
}

/// Compiles, on every core, the launch-time variants (layout variants, the multistage fallback)
/// that cases first .. first+count-1 will launch (kernel::prepare with fake_launch_args: no GPU).
/// Without it each variant compiled at its first case's launch, one after another: most of the
/// first thousand cases' time (run 104). A failure here is left for the case to report.
void prepare_variants(const std::vector<fuzz_config>& pool, std::uint64_t seed, std::int64_t first,
                      std::int64_t count) {
  // The kernels first, on this thread (the cache is a plain map; precompile filled it).
  std::vector<fuzz_case> cases;
  std::vector<const ts::kernel*> kernels;
  for (std::int64_t i = first; i < first + count; ++i) {
    cases.push_back(make_case(pool, seed, std::uint64_t(i)));
    kernels.push_back(tessel_gpu_test::cached(cases.back().cfg.kernel_key(), [&] { return jit_kernel(cases.back().cfg); })
                          .kernel.get());
  }
  tb::parallel_for(cases.size(), tb::job_threads(cases.size()), [&](std::size_t j) {
    const fuzz_case& c = cases[j];
    if (!kernels[j]) return;
    try {
      kernels[j]->prepare(launch_grid(c), fake_launch_args(c));
    } catch (const std::exception&) {
    }
  });
}

std::uint16_t bf16_of(int v) { return tb::float_to_bf16(float(v)); }

/// A case's inputs: A and B values in {-2, -1, 1, 2} (32 per 64-bit draw), bias in {-1, 0, 1}.
class input_values {
public:
  explicit input_values(const fuzz_case& c) : r_(c.seed ^ 0x5eed5eed5eed5eedull, c.index) {}
  int operand() {
    constexpr int kValues[] = {-2, -1, 1, 2};
    if (left_ == 0) word_ = r_.next(), left_ = 32;
    const int v = kValues[word_ & 3];
    word_ >>= 2;
    --left_;
    return v;
  }
  int bias() { return int(r_.below(3)) - 1; }

private:
  rng r_;
  std::uint64_t word_ = 0;
  int left_ = 0;
};

/// The strided bf16 buffer of `batch` matrices of rows x inner elements (element (z, r, i) at
/// z * batch_stride + r * ld + i), NaN elsewhere.
std::vector<std::uint16_t> pad_buffer(std::int64_t batch, std::int64_t batch_stride, std::int64_t rows,
                                      std::int64_t ld, std::int64_t inner) {
  return std::vector<std::uint16_t>(std::size_t((batch - 1) * batch_stride + (rows - 1) * ld + inner), kInputPad);
}

tb::device_buffer upload(const std::vector<std::uint16_t>& h) {
  tb::device_buffer d(h.size() * 2);
  TB_CUDA(cudaMemcpy(d.get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

bool unchanged(const tb::device_buffer& d, const std::vector<std::uint16_t>& h) {
  std::vector<std::uint16_t> now(h.size());
  TB_CUDA(cudaMemcpy(now.data(), d.get(), h.size() * 2, cudaMemcpyDeviceToHost));
  return now == h;
}

outcome run_case(const fuzz_case& c, case_watchdog& watchdog) {
  tessel_gpu_test::cached_kernel& ck = tessel_gpu_test::cached(c.cfg.kernel_key(), [&] { return jit_kernel(c.cfg); });
  if (!ck.kernel) return {"compile error: " + ck.error};
  const fuzz_config& f = c.cfg;
  const std::int64_t Z = c.batch, M = c.m, N = c.n, K = c.k;

  // Integer inputs: the logical matrices (z, row, k) and their strided bf16 buffers.
  input_values values(c);
  std::vector<std::int8_t> a(std::size_t(Z * M * K)), b(std::size_t(Z * N * K)), bias(static_cast<std::size_t>(N));
  std::vector<std::uint16_t> ha = pad_buffer(Z, c.batch_a, c.a_rows(), c.lda, f.a_k_major ? K : M),
                             hb = pad_buffer(Z, c.batch_b, c.b_rows(), c.ldb, f.b_k_major ? K : N),
                             hbias(static_cast<std::size_t>(N));
  for (std::int64_t z = 0; z < Z; ++z)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t kk = 0; kk < K; ++kk) {
        const int v = values.operand();
        a[std::size_t((z * M + i) * K + kk)] = std::int8_t(v);
        ha[std::size_t(z * c.batch_a + (f.a_k_major ? i * c.lda + kk : kk * c.lda + i))] = bf16_of(v);
      }
  for (std::int64_t z = 0; z < Z; ++z)
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t kk = 0; kk < K; ++kk) {
        const int v = values.operand();
        b[std::size_t((z * N + j) * K + kk)] = std::int8_t(v);
        hb[std::size_t(z * c.batch_b + (f.b_k_major ? j * c.ldb + kk : kk * c.ldb + j))] = bf16_of(v);
      }
  for (std::int64_t j = 0; j < N; ++j) {
    bias[std::size_t(j)] = std::int8_t(values.bias());
    hbias[std::size_t(j)] = bf16_of(bias[std::size_t(j)]);
  }
  // The residual (f.residual): element (i, j) at i * ldr + j, or j * ldr + i column-major, one
  // element past a 16-byte boundary when !r_aligned (TMA's rules then fail for it).
  std::vector<std::int8_t> res;
  std::vector<std::uint16_t> hr;
  const std::int64_t r_skip = c.r_aligned ? 0 : 1;
  if (f.residual) {
    res.resize(std::size_t(M * N));
    hr = pad_buffer(1, 0, c.r_col_major ? N : M, c.ldr, c.r_col_major ? M : N);
    hr.insert(hr.begin(), std::size_t(r_skip), kInputPad);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const int v = values.bias();
        res[std::size_t(i * N + j)] = std::int8_t(v);
        hr[std::size_t(r_skip + (c.r_col_major ? j * c.ldr + i : i * c.ldr + j))] = bf16_of(v);
      }
    hr.insert(hr.end(), 64, kInputPad);  // an over-read past R's last element reads NaN
  } else {
    hr.assign(1, kInputPad);
  }
  tb::device_buffer dA = upload(ha), dB = upload(hb), dBias = upload(hbias), dR = upload(hr);
  tb::guarded_output out(tb::guarded_matrix(M, N, c.ldc, 2, c.c_aligned, Z, f.batched ? c.batch_c : 0));
  out.reset();
  // The reductions' vectors (f.reductions), in guards: amax starts at 0, colmax at -inf.
  std::optional<tb::guarded_output> amax_out, colmax_out;
  if (f.reductions) {
    amax_out.emplace(tb::guarded_matrix(1, M, M, 4));
    colmax_out.emplace(tb::guarded_matrix(1, N, N, 4));
    amax_out->reset();
    colmax_out->reset();
    const std::vector<float> zeros(std::size_t(M), 0.0f), lows(std::size_t(N), -INFINITY);
    TB_CUDA(cudaMemcpy(amax_out->data(), zeros.data(), zeros.size() * 4, cudaMemcpyHostToDevice));
    TB_CUDA(cudaMemcpy(colmax_out->data(), lows.data(), lows.size() * 4, cudaMemcpyHostToDevice));
  }

  std::string launch_error;
  watchdog.start(c);
  try {
    ck.kernel->launch(nullptr, launch_grid(c),
                      launch_args(c, dA.get(), dB.get(), dBias.get(), out.data(),
                                  static_cast<const std::uint16_t*>(dR.get()) + r_skip,
                                  amax_out ? amax_out->data() : nullptr, colmax_out ? colmax_out->data() : nullptr));
  } catch (const ts::error& e) {
    launch_error = e.what();
  }
  const cudaError_t sync = cudaDeviceSynchronize();
  watchdog.stop();
  if (sync != cudaSuccess)
    return {std::string("CUDA error: ") + cudaGetErrorName(sync) + ": " + cudaGetErrorString(sync) +
                (launch_error.empty() ? "" : " (launch: " + launch_error + ")"),
            true};
  if (!launch_error.empty()) return {"launch: " + launch_error};

  std::string why;
  if (const tb::guard_report g = out.check(); !g.ok()) why += "C: " + g.str() + "\n";
  if (!unchanged(dA, ha)) why += "A's buffer changed\n";
  if (!unchanged(dB, hb)) why += "B's buffer changed\n";
  if (!unchanged(dBias, hbias)) why += "the bias changed\n";
  if (!unchanged(dR, hr)) why += "R's buffer changed\n";
  std::int64_t wrong = 0;
  // The reductions' references: over every matrix of the batch, of the f32 accumulator.
  std::vector<float> want_amax(f.reductions ? std::size_t(M) : 0, 0.0f),
      want_colmax(f.reductions ? std::size_t(N) : 0, -INFINITY);
  for (std::int64_t z = 0; z < Z; ++z)
    for (std::int64_t i = 0; i < M; ++i) {
      const std::int8_t* ar = &a[std::size_t((z * M + i) * K)];
      for (std::int64_t j = 0; j < N; ++j) {
        const std::int8_t* br = &b[std::size_t((z * N + j) * K)];
        std::int32_t s = 0;
        for (std::int64_t kk = 0; kk < K; ++kk) s += std::int32_t(ar[kk]) * std::int32_t(br[kk]);
        if (f.bias_relu) s = std::max(s + bias[std::size_t(j)], 0);
        if (f.residual) s += res[std::size_t(i * N + j)];
        if (f.reductions) {
          want_amax[std::size_t(i)] = std::max(want_amax[std::size_t(i)], float(std::abs(s)));
          want_colmax[std::size_t(j)] = std::max(want_colmax[std::size_t(j)], float(s));
        }
        const std::uint16_t want = tb::float_to_bf16(float(s)), got = std::uint16_t(out.bits(z, i, j));
        if (tb::bf16_to_float(got) == tb::bf16_to_float(want)) continue;
        if (wrong++ < 5) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "C[%lld][%lld][%lld] = %g (0x%04x), want %g\n", (long long)z, (long long)i,
                        (long long)j, double(tb::bf16_to_float(got)), unsigned(got), double(tb::bf16_to_float(want)));
          why += buf;
        }
      }
    }
  if (wrong) why += std::to_string(wrong) + " of " + std::to_string(Z * M * N) + " elements of C are wrong\n";
  if (f.reductions) {
    for (auto [name, vec, want] : {std::tuple{"amax", &*amax_out, &want_amax}, std::tuple{"colmax", &*colmax_out, &want_colmax}}) {
      // Both start written (0, -inf): "unwritten" cannot happen; the guards must hold.
      if (const tb::guard_report g = vec->check(); g.clobbered) why += std::string(name) + ": " + g.str() + "\n";
      std::int64_t bad = 0;
      for (std::size_t e = 0; e < want->size(); ++e) {
        const std::uint32_t bits = vec->bits(0, 0, std::int64_t(e));
        float got;
        std::memcpy(&got, &bits, 4);
        if (got == (*want)[e]) continue;
        if (bad++ < 5) {
          char buf[120];
          std::snprintf(buf, sizeof buf, "%s[%zu] = %g, want %g\n", name, e, double(got), double((*want)[e]));
          why += buf;
        }
      }
      if (bad) why += std::to_string(bad) + " of " + std::to_string(want->size()) + " elements of " + name + " are wrong\n";
    }
  }
  if (!why.empty()) why.pop_back();
  return {why};
}

/// run_case, with an exception (a failing CUDA call of the test itself) as the case's failure.
outcome run_checked(const fuzz_case& c, case_watchdog& watchdog) {
  try {
    return run_case(c, watchdog);
  } catch (const std::exception& e) {
    watchdog.stop();
    return {std::string("error: ") + e.what(), cudaDeviceSynchronize() != cudaSuccess};
  }
}

std::string rerun(const fuzz_case& c) {
  return "gpu-fuzz --seed " + std::to_string(c.seed) + " --case " + std::to_string(c.index) + " (scripts/ or the bundle)";
}

std::vector<fuzz_config> configs_of(const std::vector<fuzz_config>& pool, std::uint64_t seed, std::int64_t first,
                                    std::int64_t count) {
  std::vector<fuzz_config> out;
  for (std::int64_t i = first; i < first + count; ++i) out.push_back(make_case(pool, seed, std::uint64_t(i)).cfg);
  return out;
}

}  // namespace

// ---- GoogleTest -------------------------------------------------------------------------------

TEST(GpuFuzz, ShortRun) {
  TESSEL_REQUIRE_GPU();
  tessel_test::scoped_env quiet("TESSEL_FALLBACK", "quiet");
  const auto pool = config_pool(kShortSeed);
  precompile(configs_of(pool, kShortSeed, 0, kShortCases));
  prepare_variants(pool, kShortSeed, 0, kShortCases);
  case_watchdog watchdog(kCaseTimeoutS);
  for (int i = 0; i < kShortCases; ++i) {
    const fuzz_case c = make_case(pool, kShortSeed, std::uint64_t(i));
    const outcome o = run_checked(c, watchdog);
    if (o.failure.empty()) continue;
    ADD_FAILURE() << "seed " << c.seed << " case " << c.index << ": " << c.str() << "\n"
                  << o.failure << "\nrerun: " << rerun(c);
    ASSERT_FALSE(o.fatal) << "the CUDA context is unusable: stopping";
  }
}

namespace {

/// Rows of C whose end is not 16-byte aligned (M = 1: C is one such row), every schedule with
/// 128x128 tiles, and cooperative (128x256) and pingpong with a 1x2 cluster and the fused
/// epilogue. Each shape with C dense (ldc = N), in rows padded to the next 16-byte boundary (a
/// TMA-store epilogue must stop at N, not at the boundary: 17 in rows of 24), and in rows that are
/// not 16-byte multiples. A and B in 16-byte rows: the TMA schedules run themselves, no fallback.
std::vector<fuzz_case> guard_cases() {
  struct shape {
    std::int64_t m, n, k;
  };
  constexpr shape kShapes[] = {{1, 17, 64}, {1, 1, 120}, {1, 513, 255}, {1, 255, 513}, {7, 9, 64}, {3, 17, 64}};
  std::vector<fuzz_config> configs;
  for (ts::schedule s : kSchedules) {
    fuzz_config f;
    f.schedule = s;
    f.stages = 3;
    configs.push_back(f);
  }
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::pingpong}) {
    fuzz_config f;
    f.schedule = s;
    f.bn = s == ts::schedule::cooperative ? 256 : 128;
    f.stages = 3;
    f.cluster = {1, 2};
    f.bias_relu = true;
    configs.push_back(f);
  }
  std::vector<fuzz_case> out;
  for (const fuzz_config& f : configs)
    for (const shape& s : kShapes)
      for (std::int64_t ldc : {s.n, detail::round_up(s.n, 8), tb::misaligned_ld(s.n)}) {
        fuzz_case c;
        c.index = out.size();
        c.cfg = f;
        c.m = s.m, c.n = s.n, c.k = s.k;
        c.lda = c.ldb = detail::round_up(s.k, 8);
        c.ldc = ldc;
        out.push_back(c);
      }
  return out;
}

std::string guard_case_name(const ::testing::TestParamInfo<fuzz_case>& info) {
  const fuzz_case& c = info.param;
  std::string s = std::string(ts::to_string(c.cfg.schedule)) + (c.cfg.cluster[1] == 2 ? "_c1x2" : "") +
                  (c.cfg.bias_relu ? "_bias_relu_" : "_") + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                  std::to_string(c.k) + "_ldc" + std::to_string(c.ldc);
  return s;
}

}  // namespace

class GuardedOutput : public ::testing::TestWithParam<fuzz_case> {};

TEST_P(GuardedOutput, WritesExactlyC) {
  TESSEL_REQUIRE_GPU();
  tessel_test::scoped_env no_fallback("TESSEL_FALLBACK", "error");
  case_watchdog watchdog(kCaseTimeoutS);
  const outcome o = run_checked(GetParam(), watchdog);
  EXPECT_EQ(o.failure, "") << GetParam().str();
}

INSTANTIATE_TEST_SUITE_P(RowEnds, GuardedOutput, ::testing::ValuesIn(guard_cases()), guard_case_name);

// ---- the fuzzer ---------------------------------------------------------------------------------

namespace {

constexpr const char* kUsage = R"(usage: tessel_fuzz_tests --seed S [--first I] [--cases N] [--progress FILE]
       tessel_fuzz_tests --seed S --case I
Runs cases I .. I+N-1 of seed S (default: 0 .. 999) and prints each failing case with the command
that reruns it. --progress FILE: the index of the case about to run is written there (for
scripts/gpu-fuzz, which resumes after a crash). Without --seed/--case/--cases/--first/--progress
this is a GoogleTest binary (gtest flags).
Exit status: 0 every case passed; 1 some failed; 2 usage; 3 a CUDA error made the context unusable
(the last FAIL is the case); 4 no GPU; 124 a launch hung (the last FAIL is the case).
)";

int fuzz_main(int argc, char** argv) {
  try {
    tb::cli args(argc, argv, {"seed", "first", "cases", "case", "progress"}, {"help"});
    if (args.flag("help")) {
      std::printf("%s", kUsage);
      return 0;
    }
    const std::uint64_t seed = std::uint64_t(args.i64("seed", 1));
    std::int64_t first = args.i64("first", 0), count = args.i64("cases", 1000);
    if (args.has("case")) first = args.i64("case", 0), count = 1;
    if (first < 0 || count < 1) throw tb::usage_error("--first must be >= 0 and --cases >= 1");
    const std::string progress = args.str("progress", "");
    if (!tessel_gpu_test::no_gpu_reason().empty()) {
      std::printf("gpu-fuzz: no GPU (%s)\n", tessel_gpu_test::no_gpu_reason().c_str());
      return 4;
    }
    setenv("TESSEL_FALLBACK", "quiet", /*overwrite=*/0);

    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
    const auto pool = config_pool(seed);
    const auto configs = configs_of(pool, seed, first, count);
    std::printf("gpu-fuzz: seed %llu, cases %lld..%lld, %zu configurations (%s)\n", (unsigned long long)seed,
                (long long)first, (long long)(first + count - 1), pool.size(),
                tessel_gpu_test::device().name.c_str());
    precompile(configs);
    prepare_variants(pool, seed, first, count);
    std::printf("gpu-fuzz: kernels and their launch-time variants compiled in %.1f s\n", seconds());
    std::fflush(stdout);

    case_watchdog watchdog(kCaseTimeoutS);
    std::vector<std::int64_t> failed;
    for (std::int64_t i = first; i < first + count; ++i) {
      if (!progress.empty()) std::ofstream(progress, std::ios::trunc) << i << "\n";
      const fuzz_case c = make_case(pool, seed, std::uint64_t(i));
      const outcome o = run_checked(c, watchdog);
      if (!o.failure.empty()) {
        failed.push_back(i);
        std::string detail = o.failure;
        for (std::size_t p = 0; (p = detail.find('\n', p)) != std::string::npos; p += 3) detail.replace(p, 1, "\n  ");
        std::printf("FAIL seed %llu case %lld: %s\n  %s\n  rerun: %s\n", (unsigned long long)seed, (long long)i,
                    c.str().c_str(), detail.c_str(), rerun(c).c_str());
        if (o.fatal) {
          std::printf("STOPPED: the CUDA context is unusable\n");
          std::fflush(stdout);
          return 3;
        }
      }
      if ((i - first + 1) % 1000 == 0)
        std::printf("gpu-fuzz: %lld/%lld cases, %zu failed, %.1f s\n", (long long)(i - first + 1), (long long)count,
                    failed.size(), seconds());
      std::fflush(stdout);
    }
    std::printf("gpu-fuzz: seed %llu: %lld cases in %.1f s, %zu failed", (unsigned long long)seed, (long long)count,
                seconds(), failed.size());
    for (std::size_t j = 0; j < failed.size() && j < 50; ++j) std::printf("%s%lld", j ? " " : ": ", (long long)failed[j]);
    std::printf("\n");
    return failed.empty() ? 0 : 1;
  } catch (const tb::usage_error& e) {
    std::fprintf(stderr, "tessel_fuzz_tests: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessel_fuzz_tests: error: %s\n", e.what());
    return 1;
  }
}

bool fuzz_mode(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* o : {"--seed", "--first", "--cases", "--case", "--progress"})
      if (std::strncmp(argv[i], o, std::strlen(o)) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (fuzz_mode(argc, argv)) return fuzz_main(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (!tessel_gpu_test::no_gpu_reason().empty())
    std::printf("note: no GPU (%s): the GPU tests will be skipped\n", tessel_gpu_test::no_gpu_reason().c_str());
  tessel_gpu_test::install_watchdog(600);
  return RUN_ALL_TESTS();
}
