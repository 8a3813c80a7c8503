// parallel.h - run independent jobs (kernel compiles) on several threads.
//
// ts::jit may run on several threads at once: each compile has its own MLIR context and its own
// ptxas process (README, "Compiling many kernels"). tessel-bench and the GPU fuzzer compile all
// their configurations up front this way; the autotuner does the same inside libtessel
// (tune_options::compile_threads).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace tessel_bench {

/// The threads to use for `jobs` jobs when the user asked for `requested` (0: one per hardware
/// thread, at most 16, the autotuner's default cap: a compile peaks at about 110 MB with its
/// ptxas): at least 1, at most `jobs`.
inline std::size_t job_threads(std::size_t jobs, std::size_t requested = 0) {
  const std::size_t k =
      requested ? requested : std::min<std::size_t>(16, std::max(1u, std::thread::hardware_concurrency()));
  return std::max<std::size_t>(1, std::min(k, jobs));
}

/// Calls `job(i)` for i = 0..jobs-1, each once, on `threads` threads (the calling thread alone
/// for 1); returns when every job has returned. A job must not throw (catch and record instead):
/// an exception leaving a worker would end the process.
template <class Job>
void parallel_for(std::size_t jobs, std::size_t threads, Job&& job) {
  if (threads <= 1) {
    for (std::size_t i = 0; i < jobs; ++i) job(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (std::size_t i; (i = next++) < jobs;) job(i);
    });
  for (std::thread& w : workers) w.join();
}

}  // namespace tessel_bench
