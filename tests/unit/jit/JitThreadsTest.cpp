//===- JitThreadsTest.cpp - ts::jit on several threads at once -------------===//
//
// ts::jit may run on several threads at once (README, "Compiling many kernels"; the autotuner,
// tessel-bench and the GPU fuzzer compile that way): each compile has its own MLIR context and
// its own ptxas process. Kernels of several schedules compiled on four threads at once must be
// the very kernels a serial compile makes: every stage dumped, the PTX and the cubin, byte for
// byte. The disk cache is off, so that each compile really compiles.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "02_gemm/gemm.hpp"
#include "03_gemm_bias_relu/gemm_bias_relu.hpp"
#include "file_text.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
namespace fs = std::filesystem;

namespace {

/// Every file of a dump directory, by name.
std::vector<std::pair<std::string, std::string>> files(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "ptxas.log")
      out.emplace_back(fs::relative(e.path(), dir).string(), tessel_test::file_text(e.path()));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JitThreads, KernelsCompiledAtOnceMatchASerialCompile) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env dumpEnv{"TESSEL_DUMP_DIR", std::nullopt};
  const fs::path dir = fs::temp_directory_path() / ("tessel-jit-threads-" + std::to_string(::getpid()));
  fs::remove_all(dir);

  // One call site per functor type: the source position is part of the traced program.
  auto gemm = [](ts::options o) { return ts::jit(examples::gemm<128, 128, 64>{}, o); };
  auto bias = [](ts::options o) { return ts::jit(examples::gemm_bias_relu<128, 256, 64>{}, o); };
  const std::vector<std::pair<std::function<ts::kernel(ts::options)>, ts::options>> jobs = {
      {gemm, {.schedule = ts::schedule::pingpong}},
      {gemm, {.schedule = ts::schedule::multistage}},
      {bias, {.schedule = ts::schedule::cooperative}},
      {gemm, {.schedule = ts::schedule::tma, .stages = 3}},
  };
  auto compile = [&](std::size_t i, const std::string& run) {
    ts::options o = jobs[i].second;
    o.dump_dir = (dir / run / std::to_string(i)).string();
    jobs[i].first(o);
  };

  for (std::size_t i = 0; i < jobs.size(); ++i)
    compile(i, "serial");
  std::vector<std::string> errors(jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        compile(i, "threads");
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (std::thread& t : threads)
    t.join();

  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(i));
    EXPECT_EQ(errors[i], "");
    const auto serial = files(dir / "serial" / std::to_string(i));
    const auto parallel = files(dir / "threads" / std::to_string(i));
    ASSERT_EQ(serial.size(), parallel.size());
    bool ptx = false, cubin = false;
    for (std::size_t f = 0; f < serial.size(); ++f) {
      EXPECT_EQ(serial[f].first, parallel[f].first);
      EXPECT_TRUE(serial[f].second == parallel[f].second) << serial[f].first << " differs";
      ptx = ptx || serial[f].first.ends_with(".ptx");
      cubin = cubin || serial[f].first.ends_with(".cubin");
    }
    EXPECT_TRUE(ptx && cubin) << "the dump holds the PTX and the cubin";
  }
  fs::remove_all(dir);
}

}  // namespace
