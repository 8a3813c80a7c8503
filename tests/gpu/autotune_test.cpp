// autotune_test.cpp - ts::autotune on the GPU (docs/autotune.md):
//   * a bf16 GEMM (examples/02_gemm) over pingpong 128x128, cooperative 128x256 and tma 128x256, on
//     random [-1, 1) inputs with M and N not multiples of the tiles; C sits in padded rows inside a
//     sentinel-filled buffer and is NaN-poisoned: the tuned launch must write every element, match
//     the cuBLASLt f32 reference (relative Frobenius error < 1e-2) and leave the guards intact. The
//     decision is `timed`, every candidate checked and timed; a second launch of the bucket runs the
//     winner; a second tuner object in the process reads the saved choice (`cached`);
//   * a second process (this binary again, AutotuneChild.ReusesTheSavedChoice) with the same
//     TESSEL_CACHE_DIR reuses the choice: `cached`, nothing timed, only the winner compiled, and a
//     correct result;
//   * a candidate that computes something else (2 A B^T) is dropped by the numerical check even
//     when it would be fastest, with its one-line reason;
//   * in-place outputs: a GEMM with a row sum (reduce_into, integer inputs, exact): after a tune of
//     dozens of launches the vector holds the sum of exactly one launch (the tuner restores it).
// Each test uses its own fresh TESSEL_CACHE_DIR.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "02_gemm/gemm.hpp"
#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
namespace fs = std::filesystem;
using namespace ts::literals;
using tessel_gpu_test::cublas;
using tessel_gpu_test::device;

namespace {

constexpr std::int64_t kM = 1000, kN = 1500, kK = 512;
constexpr std::uint64_t kSeed = 14005;

/// A fresh cache directory for one test, removed afterwards.
struct fresh_cache {
  std::string dir;
  std::unique_ptr<tessel_test::scoped_env> env;
  fresh_cache() {
    char tmpl[] = "/tmp/tessel-autotune-gpu-XXXXXX";
    dir = mkdtemp(tmpl);
    env = std::make_unique<tessel_test::scoped_env>("TESSEL_CACHE_DIR", dir.c_str());
  }
  ~fresh_cache() {
    env.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

/// C = 2 A B^T: a wrong GEMM for the numerical check to catch.
template <int BM_, int BN_>
struct doubled_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = 64_c;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc * 2.0f));
  }
};

/// C = bf16(A B^T), rowsum[i] += sum_j (A B^T)[i, j]: an output combined into, not overwritten.
template <int BM_, int BN_>
struct gemm_row_sum {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = 64_c;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C,
                  ts::tensor<ts::f32, 1> rowsum) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
    rowsum.reduce_into({m}, ts::sum(acc, ts::axis<1>));
  }
};

/// Short timing: the tests check the mechanism, not the last percent.
ts::tune_options quick() {
  ts::tune_options o;
  o.timing.warmup_ms = 50;
  o.timing.min_total_ms = 50;
  o.progress = ts::tune_progress::always;
  return o;
}

/// The three bf16 GEMM candidates of the issue.
ts::autotuner gemm_tuner() {
  return ts::autotune(
      "autotune_test_gemm",
      {ts::candidate(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128)),
       ts::candidate(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::cooperative},
                     ts::tile_grid(2, 128, 256)),
       ts::candidate(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::tma}, ts::tile_grid(2, 128, 256))},
      quick());
}

/// One tuned launch of `t` on problem `p` into a fresh, NaN-poisoned, guarded C; checks the guards
/// and the result against the cuBLASLt f32 reference.
void launch_and_check(const ts::autotuner& t, tb::gemm_problem& p, const std::string& what) {
  tb::guarded_output out(tb::guarded_matrix(p.M, p.N, tb::padded_ld(p.N)));
  out.reset();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::int64_t ldc = out.layout().row_stride;
  ASSERT_NO_THROW(t.launch(nullptr, ts::view<ts::bf16>(p.A(0), {p.M, p.K}), ts::view<ts::bf16>(p.B(0), {p.N, p.K}),
                           ts::view<ts::bf16>(out.data(), {p.M, p.N}, {ldc, 1})))
      << what;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what << ": " << cudaGetErrorString(cudaGetLastError());
  tb::guard_report g = out.check();
  EXPECT_TRUE(g.ok()) << what << ": " << g.str();
  out.copy_to_dense(p.C(0));
  tb::compare_stats st = p.check_set0(cublas());
  EXPECT_TRUE(st.ok(1e-2)) << what << ": " << st.str();
}

void print_decision(const ts::tune_decision& d) {
  std::printf("autotune: source %s, winner '%s', bucket %s, %.0f ms\n", ts::to_string(d.source), d.label.c_str(),
              d.bucket.c_str(), d.tune_ms);
  for (const ts::tune_result& r : d.candidates)
    std::printf("  %-45s %s\n", r.label.c_str(),
                r.ok ? (tb::fmt(r.median_ms, 4) + " ms (min " + tb::fmt(r.min_ms, 4) + ", max " + tb::fmt(r.max_ms, 4) +
                        ", " + std::to_string(r.samples) + " batches of " + std::to_string(r.batch) + ")")
                           .c_str()
                     : ("dropped: " + r.dropped).c_str());
}

TEST(Autotune, Bf16GemmPicksACheckedWinnerAndSavesIt) {
  TESSEL_REQUIRE_GPU();
  fresh_cache cache;
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  tb::gemm_problem p(kM, kN, kK, false, device(), kSeed, 1, 0, nullptr);
  p.reference(cublas());

  ts::autotuner t = gemm_tuner();
  ASSERT_NO_FATAL_FAILURE(launch_and_check(t, p, "tuned launch"));
  ts::tune_decision d = t.last_decision();
  print_decision(d);
  EXPECT_EQ(d.source, ts::tune_source::timed);
  EXPECT_EQ(d.bucket, "bf16[1024,512] bf16[2048,512] bf16[1024,2048]");
  ASSERT_EQ(d.candidates.size(), 3u);
  for (const ts::tune_result& r : d.candidates) {
    EXPECT_TRUE(r.ok) << r.label << ": " << r.dropped;
    EXPECT_GT(r.median_ms, 0) << r.label;
    EXPECT_GE(r.samples, 5) << r.label;
  }
  for (const ts::tune_result& r : d.candidates)
    EXPECT_LE(d.candidates[d.winner].median_ms, r.median_ms) << "the winner is the fastest";
  EXPECT_TRUE(fs::exists(d.entry)) << d.entry;
  EXPECT_EQ(d.entry.rfind(cache.dir + "/", 0), 0u) << d.entry;
  EXPECT_GT(d.tune_ms, 0);

  // The same bucket again: the winner, no new decision.
  ASSERT_NO_FATAL_FAILURE(launch_and_check(t, p, "second launch"));
  EXPECT_EQ(t.last_decision().source, ts::tune_source::timed);
  EXPECT_EQ(t.last_decision().tune_ms, d.tune_ms);

  // A new tuner over the same candidates: the saved choice.
  ts::autotuner again = gemm_tuner();
  ASSERT_NO_FATAL_FAILURE(launch_and_check(again, p, "second tuner"));
  ts::tune_decision c = again.last_decision();
  EXPECT_EQ(c.source, ts::tune_source::cached);
  EXPECT_EQ(c.winner, d.winner);
  EXPECT_EQ(c.tune_ms, 0);
  EXPECT_EQ(c.candidates[d.winner].median_ms, d.candidates[d.winner].median_ms) << "the saved timings";
}

// The second half of ASecondProcessReusesTheChoiceWithoutTiming, run by it in another process
// (AUTOTUNE_TEST_CHILD=1); skipped otherwise.
TEST(AutotuneChild, ReusesTheSavedChoice) {
  if (!std::getenv("AUTOTUNE_TEST_CHILD"))
    GTEST_SKIP() << "run by Autotune.ASecondProcessReusesTheChoiceWithoutTiming in a second process";
  TESSEL_REQUIRE_GPU();
  tb::gemm_problem p(kM, kN, kK, false, device(), kSeed, 1, 0, nullptr);
  p.reference(cublas());
  const std::uint64_t before = ts::detail::kernels_built();
  ts::autotuner t = gemm_tuner();
  ASSERT_NO_FATAL_FAILURE(launch_and_check(t, p, "child launch"));
  ts::tune_decision d = t.last_decision();
  print_decision(d);
  EXPECT_EQ(d.source, ts::tune_source::cached);
  EXPECT_EQ(d.tune_ms, 0);
  EXPECT_EQ(ts::detail::kernels_built() - before, 1u) << "only the winner is compiled (from the disk cache)";
  std::printf("child: source %s winner %s kernels built %llu\n", ts::to_string(d.source), d.label.c_str(),
              static_cast<unsigned long long>(ts::detail::kernels_built() - before));
}

TEST(Autotune, ASecondProcessReusesTheChoiceWithoutTiming) {
  TESSEL_REQUIRE_GPU();
  fresh_cache cache;
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  tb::gemm_problem p(kM, kN, kK, false, device(), kSeed, 1, 0, nullptr);
  p.reference(cublas());
  ts::autotuner t = gemm_tuner();
  ASSERT_NO_FATAL_FAILURE(launch_and_check(t, p, "first process"));
  ASSERT_EQ(t.last_decision().source, ts::tune_source::timed);
  const std::string winner = t.last_decision().label;

  const std::string self = fs::read_symlink("/proc/self/exe").string();
  // (Not sharded: a sharded parent's GTEST_* variables would leave the child's one test to
  // another shard.)
  const std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX -u GTEST_SHARD_STATUS_FILE "
                          "AUTOTUNE_TEST_CHILD=1 TESSEL_CACHE_DIR='" + cache.dir + "' '" + self +
                          "' --gtest_filter=AutotuneChild.ReusesTheSavedChoice 2>&1";
  std::printf("second process: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;)
    output.append(buf, n);
  const int status = pclose(pipe);
  std::printf("%s", output.c_str());
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("child: source cached winner " + winner + " kernels built 1"), std::string::npos) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test."), std::string::npos) << output;
  EXPECT_EQ(output.find("tessel autotune: autotune_test_gemm "), std::string::npos)
      << "the second process printed tuning progress:\n" << output;
}

TEST(Autotune, AWrongCandidateIsDroppedByTheCheck) {
  TESSEL_REQUIRE_GPU();
  fresh_cache cache;
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  tb::gemm_problem p(kM, kN, kK, false, device(), kSeed + 1, 1, 0, nullptr);
  p.reference(cublas());
  ts::autotuner t = ts::autotune(
      "autotune_test_wrong",
      {ts::candidate(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128)),
       ts::candidate(doubled_gemm<128, 128>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128))
           .named("doubled"),
       ts::candidate(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::cooperative},
                     ts::tile_grid(2, 128, 256))},
      quick());
  ASSERT_NO_FATAL_FAILURE(launch_and_check(t, p, "tuned launch"));
  ts::tune_decision d = t.last_decision();
  print_decision(d);
  EXPECT_FALSE(d.candidates[1].ok);
  EXPECT_EQ(d.candidates[1].dropped.rfind("disagrees with 'examples_gemm_128_128_64 pingpong': argument 2: relative "
                                          "error 1.0e+00 > 1.0e-02 over 1500000 elements",
                                          0),
            0u)
      << d.candidates[1].dropped;
  EXPECT_NE(d.winner, 1u);
  EXPECT_TRUE(d.candidates[0].ok && d.candidates[2].ok);
}

TEST(Autotune, InPlaceOutputsHoldOneLaunchOfTheWinner) {
  TESSEL_REQUIRE_GPU();
  fresh_cache cache;
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  const std::int64_t M = 333, N = 400, K = 192;
  // Integer inputs in [-2, 2]: every partial sum is an integer below 2^24, so the row sums are
  // exact whatever the order of the atomic adds.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-2, 2);
  std::vector<std::uint16_t> a(M * K), b(N * K);
  for (auto& x : a) x = tb::float_to_bf16(float(small(rng)));
  for (auto& x : b) x = tb::float_to_bf16(float(small(rng)));
  std::vector<double> rowsum(M, 0);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc += double(tb::bf16_to_float(a[m * K + k])) * tb::bf16_to_float(b[n * K + k]);
      rowsum[m] += acc;
    }
  tb::device_buffer da(M * K * 2), db(N * K * 2), dc(M * N * 2), dsum(M * 4);
  ASSERT_EQ(cudaMemcpy(da.get(), a.data(), a.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.get(), b.data(), b.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  tb::poison_nan(dc.get(), dc.bytes());
  ASSERT_EQ(cudaMemset(dsum.get(), 0, dsum.bytes()), cudaSuccess);  // the identity of sum

  ts::autotuner t = ts::autotune(
      "autotune_test_rowsum",
      {ts::candidate(gemm_row_sum<128, 128>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128)),
       ts::candidate(gemm_row_sum<128, 128>{}, {.schedule = ts::schedule::cooperative}, ts::tile_grid(2, 128, 128)),
       ts::candidate(gemm_row_sum<128, 128>{}, {.schedule = ts::schedule::tma}, ts::tile_grid(2, 128, 128))},
      quick());
  ASSERT_NO_THROW(t.launch(nullptr, ts::view<ts::bf16>(da.get(), {M, K}), ts::view<ts::bf16>(db.get(), {N, K}),
                           ts::view<ts::bf16>(dc.get(), {M, N}), ts::view<ts::f32>(dsum.get(), {M})));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ts::tune_decision d = t.last_decision();
  print_decision(d);
  EXPECT_EQ(d.source, ts::tune_source::timed);
  for (const ts::tune_result& r : d.candidates) EXPECT_TRUE(r.ok) << r.label << ": " << r.dropped;
  std::vector<float> got(M);
  ASSERT_EQ(cudaMemcpy(got.data(), dsum.get(), M * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  int bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    if (double(got[m]) != rowsum[m] && bad++ < 5)
      ADD_FAILURE() << "rowsum[" << m << "] = " << got[m] << ", one launch gives " << rowsum[m];
  EXPECT_EQ(bad, 0) << bad << " row sums differ from one launch's (the tune's launches added up?)";
}

}  // namespace
