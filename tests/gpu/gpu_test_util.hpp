// gpu_test_util.hpp - shared pieces of the GPU tests: skipping without a GPU, one device/cuBLASLt
// context per process, a per-test watchdog (a hang becomes a failure), a CPU reference on sampled
// elements.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"

namespace tessel_gpu_test {

/// Why there is no usable GPU ("" when there is one). Decided once per process.
const std::string& no_gpu_reason();

/// First statement of every GPU test.
#define TESSEL_REQUIRE_GPU()                                                   \
  do {                                                                         \
    if (!::tessel_gpu_test::no_gpu_reason().empty())                           \
      GTEST_SKIP() << "no GPU: " << ::tessel_gpu_test::no_gpu_reason();        \
  } while (0)

const tessel_bench::device_info& device();
tessel_bench::lt_context& cublas();

/// Installs a listener that ends the process with status 124 and the test's name when one test
/// runs longer than $TESSEL_GPU_TEST_TIMEOUT_S seconds (default `default_s`).
void install_watchdog(double default_s);

/// One element C[m][n] of the GEMM of a problem's set 0, recomputed on the CPU in double from the
/// bf16 inputs (bias + relu when the problem has a bias).
struct sample {
  std::int64_t m, n;
  double want;     ///< CPU value
  double got;      ///< tested bf16 value
  double ref_f32;  ///< the cuBLASLt f32 reference at the same place
};
/// Samples the corners, tile edges (for tile bm x bn) and random positions of C(0).
std::vector<sample> cpu_samples(const tessel_bench::gemm_problem& p, const float* ref_f32, int bm, int bn,
                                int n_random = 24, std::uint64_t seed = 7);
/// Absolute tolerance for one bf16-output element of a K-long dot product of uniform[-1,1) values.
double sample_tol(double want, std::int64_t K);

}  // namespace tessel_gpu_test
