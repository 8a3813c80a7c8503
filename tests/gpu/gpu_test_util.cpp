// gpu_test_util.cpp - see gpu_test_util.hpp.
#include "gpu_test_util.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace tb = tessel_bench;

namespace tessel_gpu_test {

const std::string& no_gpu_reason() {
  static const std::string why = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      std::string s = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
      (void)cudaGetLastError();
      return s;
    }
    if (n == 0) return std::string("no CUDA device");
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return std::string("cannot query device 0");
    if (p.major != 9) return "device 0 is sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", not sm_90";
    return std::string();
  }();
  return why;
}

const tb::device_info& device() {
  static const tb::device_info d = tb::query_device(0);
  return d;
}

tb::lt_context& cublas() {
  static tb::lt_context ctx;
  return ctx;
}

namespace {
class watchdog : public ::testing::EmptyTestEventListener {
public:
  explicit watchdog(double limit_s) : limit_s_(limit_s), thread_([this] { loop(); }) {}
  ~watchdog() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void OnTestStart(const ::testing::TestInfo& t) override {
    std::lock_guard<std::mutex> g(mu_);
    name_ = std::string(t.test_suite_name()) + "." + t.name();
    start_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> g(mu_);
    running_ = false;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(500));
      if (running_ && std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > limit_s_) {
        std::fprintf(stderr, "\n[  TIMEOUT ] %s ran longer than %.0f s (a hang, e.g. a missing mbarrier arrive?)\n",
                     name_.c_str(), limit_s_);
        std::fflush(stderr);
        std::fflush(stdout);
        std::_Exit(124);
      }
    }
  }
  double limit_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
  bool running_ = false, stop_ = false;
  std::thread thread_;
};
}  // namespace

void install_watchdog(double default_s) {
  double s = default_s;
  if (const char* e = std::getenv("TESSEL_GPU_TEST_TIMEOUT_S")) s = std::atof(e) > 0 ? std::atof(e) : default_s;
  ::testing::UnitTest::GetInstance()->listeners().Append(new watchdog(s));
}

double sample_tol(double want, std::int64_t K) {
  // bf16 output rounding (relative 2^-9) with margin, plus f32 accumulation over K terms whose
  // sum has a standard deviation of sqrt(K)/3. A wrong element is off by about sqrt(K)/3.
  return 1e-2 * std::fabs(want) + 2e-3 * std::sqrt(double(K)) / 3.0 + 1e-6;
}

std::vector<sample> cpu_samples(const tb::gemm_problem& p, const float* ref_f32, int bm, int bn, int n_random,
                                std::uint64_t seed) {
  std::set<std::pair<std::int64_t, std::int64_t>> where;
  auto add = [&](std::int64_t m, std::int64_t n) {
    if (m >= 0 && m < p.M && n >= 0 && n < p.N) where.insert({m, n});
  };
  const std::int64_t M = p.M, N = p.N;
  for (std::int64_t m : {std::int64_t(0), M - 1, std::int64_t(bm) - 1, std::int64_t(bm), M / 2, (M / bm) * bm,
                         (M / bm) * bm - 1})
    for (std::int64_t n : {std::int64_t(0), N - 1, std::int64_t(bn) - 1, std::int64_t(bn), N / 2, (N / bn) * bn,
                           (N / bn) * bn - 1, std::int64_t(63), std::int64_t(64)})
      add(m, n);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n_random; ++i) add(std::int64_t(rng() % std::uint64_t(M)), std::int64_t(rng() % std::uint64_t(N)));

  std::vector<std::uint16_t> arow(std::size_t(p.K)), brow(std::size_t(p.K));
  std::uint16_t c = 0, bias = 0;
  float r = 0;
  std::vector<sample> out;
  TB_CUDA(cudaDeviceSynchronize());
  for (auto [m, n] : where) {
    TB_CUDA(cudaMemcpy(arow.data(), static_cast<const std::uint16_t*>(p.A(0)) + m * p.K, std::size_t(p.K) * 2,
                       cudaMemcpyDeviceToHost));
    TB_CUDA(cudaMemcpy(brow.data(), static_cast<const std::uint16_t*>(p.B(0)) + n * p.K, std::size_t(p.K) * 2,
                       cudaMemcpyDeviceToHost));
    TB_CUDA(cudaMemcpy(&c, static_cast<const std::uint16_t*>(p.C(0)) + m * N + n, 2, cudaMemcpyDeviceToHost));
    TB_CUDA(cudaMemcpy(&r, ref_f32 + m * N + n, 4, cudaMemcpyDeviceToHost));
    double acc = 0;
    for (std::int64_t k = 0; k < p.K; ++k) acc += double(tb::bf16_to_float(arow[k])) * double(tb::bf16_to_float(brow[k]));
    if (p.with_bias()) {
      TB_CUDA(cudaMemcpy(&bias, static_cast<const std::uint16_t*>(p.bias(0)) + n, 2, cudaMemcpyDeviceToHost));
      acc = std::max(acc + double(tb::bf16_to_float(bias)), 0.0);
    }
    out.push_back({m, n, acc, double(tb::bf16_to_float(c)), double(r)});
  }
  return out;
}

}  // namespace tessel_gpu_test
