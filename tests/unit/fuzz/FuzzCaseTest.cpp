//===- FuzzCaseTest.cpp - the GEMM fuzzer's case generator, without a GPU -===//
//
// tests/gpu/fuzz_case.hpp: a case is a pure function of (seed, index); over 2000 cases of a seed
// every schedule, operand layout, epilogue and option value appears, and so do M = 1, K = 1 and
// dimensions above 1024; every case keeps the rules its configuration promises; and every
// configuration of a pool compiles (ts::jit to a cubin, plus the launch-time layout variant of its
// operands, without a fallback); and the launch-time variants of the GPU run's first 1,000 cases
// are chosen and compiled without an error (kernel::prepare, as gpu-fuzz prepares them).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "fuzz_case.hpp"
#include "fuzz_kernels.hpp"
#include "parallel.h"
#include "scoped_env.hpp"

namespace tf = tessel_fuzz;
namespace ts = tessel;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

constexpr std::uint64_t kSeeds[] = {1, 2, 3, 20260101};
constexpr int kCases = 2000;

}  // namespace

TEST(FuzzCase, IsAPureFunctionOfSeedAndIndex) {
  for (std::uint64_t seed : kSeeds) {
    const auto pool = tf::config_pool(seed);
    for (std::uint64_t i = 0; i < 300; ++i) {
      const std::string s = tf::make_case(seed, i).str();
      EXPECT_EQ(s, tf::make_case(seed, i).str());
      EXPECT_EQ(s, tf::make_case(pool, seed, i).str());
    }
  }
  int same = 0;
  for (std::uint64_t i = 0; i < 300; ++i) same += tf::make_case(1, i).str() == tf::make_case(2, i).str();
  EXPECT_LT(same, 10) << "seeds 1 and 2 give the same cases";
}

TEST(FuzzCase, PoolsHoldEveryScheduleLayoutAndEpilogueOnce) {
  for (std::uint64_t seed : kSeeds) {
    std::set<std::string> triples;
    for (const auto& c : tf::config_pool(seed))
      triples.insert(std::string(tessel::to_string(c.schedule)) + c.layout() +
                     (c.bias_relu ? "+" : c.residual ? "r" : c.reductions ? "m" : "-"));
    EXPECT_EQ(triples.size(), std::size_t(tf::kBaseEntries)) << "seed " << seed;
    EXPECT_EQ(triples.size(), std::size(tf::kSchedules) * 4 * 4);
    EXPECT_EQ(tf::config_pool(seed).size(), std::size_t(tf::kPoolSize));
  }
}

TEST(FuzzCase, CoversEveryOptionAndTheEdgeShapes) {
  for (std::uint64_t seed : kSeeds) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<std::string, std::set<std::string>> seen;
    int m1 = 0, n1 = 0, k1 = 0, large = 0, one_k_tile = 0, wraps = 0, misaligned_c = 0, row_end = 0;
    for (int i = 0; i < kCases; ++i) {
      const tf::fuzz_case c = tf::make_case(seed, std::uint64_t(i));
      const tf::fuzz_config& f = c.cfg;
      seen["schedule"].insert(tessel::to_string(f.schedule));
      seen["layout"].insert(f.layout());
      seen["epilogue"].insert(f.bias_relu ? "bias_relu" : f.residual ? "residual" : f.reductions ? "reductions" : "plain");
      EXPECT_LE(int(f.bias_relu) + int(f.residual) + int(f.reductions), 1);
      if (f.residual) {
        seen["residual layout"].insert(c.r_col_major ? "col" : "row");
        seen["residual alignment"].insert(c.r_aligned ? "aligned" : "+1");
        seen["residual rows"].insert(c.ldr == (c.r_col_major ? c.m : c.n) ? "dense" : c.ldr % 8 ? "odd" : "padded");
        EXPECT_FALSE(f.bias_relu);
        EXPECT_GE(c.ldr, c.r_col_major ? c.m : c.n);
      }
      seen["tile"].insert(std::to_string(f.bm) + "x" + std::to_string(f.bn) + "x" + std::to_string(f.bk));
      seen["stages"].insert(std::to_string(f.stages));
      seen["cluster"].insert(std::to_string(f.cluster[0]) + "x" + std::to_string(f.cluster[1]));
      seen["decomposition"].insert(tf::decomposition_str(f.decomposition));
      seen["swizzle"].insert(std::to_string(f.swizzle));
      seen["batched"].insert(f.batched ? "yes" : "no");
      seen["strides"].insert(f.tma_strides ? "tma" : "free");
      m1 += c.m == 1;
      n1 += c.n == 1;
      k1 += c.k == 1;
      large += std::max({c.m, c.n, c.k}) > 1024;
      one_k_tile += c.k == f.bk;
      wraps += c.k >= 2 * f.stages * f.bk;
      misaligned_c += !c.c_aligned;
      row_end += c.ldc > c.n && c.ldc % 8 == 0 && c.n % 8 != 0;
    }
    EXPECT_EQ(seen["schedule"].size(), 5u);
    EXPECT_EQ(seen["layout"].size(), 4u);
    EXPECT_EQ(seen["epilogue"].size(), 4u);
    EXPECT_EQ(seen["residual layout"].size(), 2u);
    EXPECT_EQ(seen["residual alignment"].size(), 2u);
    EXPECT_EQ(seen["residual rows"].size(), 3u);
    EXPECT_EQ(seen["tile"], (std::set<std::string>{"128x128x32", "128x128x64", "128x256x64", "16x64x64", "32x128x64",
                                                   "8x64x64"}));
    EXPECT_EQ(seen["stages"], (std::set<std::string>{"2", "3", "4"}));
    EXPECT_EQ(seen["cluster"], (std::set<std::string>{"1x1", "2x1", "1x2"}));
    EXPECT_EQ(seen["decomposition"], (std::set<std::string>{"auto", "dp", "sk"}));
    EXPECT_EQ(seen["swizzle"], (std::set<std::string>{"0", "-1", "32", "64", "128"}));
    EXPECT_EQ(seen["batched"].size(), 2u);
    EXPECT_EQ(seen["strides"].size(), 2u);
    for (int count : {m1, n1, k1, large, one_k_tile, wraps, misaligned_c, row_end}) EXPECT_GT(count, 20);
  }
}

TEST(FuzzCase, CasesKeepTheRulesOfTheirConfiguration) {
  for (std::uint64_t seed : kSeeds) {
    for (const tf::fuzz_config& f : tf::config_pool(seed)) {
      SCOPED_TRACE(f.str());
      const bool cluster = f.cluster[0] * f.cluster[1] > 1;
      EXPECT_TRUE(!cluster || f.persistent()) << "clusters need cooperative or pingpong";
      EXPECT_TRUE(f.decomposition == ts::decomposition::automatic || (f.persistent() && !cluster));
      EXPECT_TRUE(f.stages >= 2 && f.stages <= 4);
      if (f.schedule == ts::schedule::multistage) {
        EXPECT_EQ(f.swizzle, 0) << "multistage has its own swizzle";
      } else {
        EXPECT_EQ(f.bk, 64) << "BK * 2 bytes must be 128";
      }
      if (f.schedule == ts::schedule::pingpong) EXPECT_LE(f.bm * f.bn, 128 * 128);
      if (f.bm < 64) {  // computed transposed: where tessel-swap-operands applies (docs/small-m.md)
        EXPECT_NE(f.schedule, ts::schedule::multistage);
        EXPECT_TRUE(f.a_k_major && f.b_k_major && !cluster && !f.batched && f.tma_strides);
      }
    }
    for (int i = 0; i < kCases; ++i) {
      const tf::fuzz_case c = tf::make_case(seed, std::uint64_t(i));
      SCOPED_TRACE(c.str());
      const tf::fuzz_config& f = c.cfg;
      EXPECT_TRUE(c.m >= 1 && c.n >= 1 && c.k >= 1 && std::max({c.m, c.n, c.k}) <= 3000);
      EXPECT_LE(c.batch * c.m * c.n * c.k, tf::kMaxMacs);
      if (!f.batched) EXPECT_EQ(c.batch, 1);
      EXPECT_GE(c.lda, f.a_k_major ? c.k : c.m);
      EXPECT_GE(c.ldb, f.b_k_major ? c.k : c.n);
      EXPECT_GE(c.ldc, c.n);
      if (f.tma_strides) {
        EXPECT_EQ(c.lda % 8, 0);
        EXPECT_EQ(c.ldb % 8, 0);
      }
      if (f.batched) {
        EXPECT_GE(c.batch_a, c.a_rows() * c.lda);
        EXPECT_GE(c.batch_b, c.b_rows() * c.ldb);
        EXPECT_GE(c.batch_c, c.m * c.ldc);
        if (f.tma_strides) EXPECT_EQ((c.batch_a % 8) + (c.batch_b % 8), 0);
      }
    }
  }
}

// ts::jit of every configuration of seed 1's pool, then a launch on fake, TMA-conforming addresses:
// the launch compiles the layout variant its operands need (before it looks for a GPU; dumped
// under variant-<tag>/) and then fails for want of a GPU (or on the fake addresses), not for the
// configuration.
TEST(FuzzCase, EveryConfigurationOfAPoolCompiles) {
  tessel_test::scoped_env no_fallback("TESSEL_FALLBACK", "error");
  const fs::path root = fs::temp_directory_path() / ("tessel-fuzz-case-" + std::to_string(::getpid()));
  std::set<std::string> done;
  for (const tf::fuzz_config& f : tf::config_pool(1)) {
    if (!done.insert(f.str()).second) continue;
    SCOPED_TRACE(f.str());
    const fs::path dir = root / std::to_string(done.size());
    tessel_test::scoped_env dump("TESSEL_DUMP_DIR", dir.string().c_str());
    ts::kernel k;
    ASSERT_NO_THROW(k = tf::jit_kernel(f));
    tf::fuzz_case c;
    c.cfg = f;
    c.batch = f.batched ? 2 : 1;
    c.m = c.n = c.k = c.lda = c.ldb = c.ldc = c.ldr = 256;
    c.batch_a = c.batch_b = c.batch_c = 256 * 256;
    auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
    ::testing::internal::CaptureStderr();
    std::string error;
    try {
      k.launch(nullptr, tf::launch_grid(c),
               tf::launch_args(c, fake(0x7f0000100000), fake(0x7f0000200000), fake(0x7f0000300000),
                               fake(0x7f0000400000), fake(0x7f0000500000), fake(0x7f0000600000),
                               fake(0x7f0000700000)));
    } catch (const ts::error& e) {
      error = e.what();
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "") << "a note: the layout variant failed?";
    EXPECT_NE(error, "") << "the launch on fake addresses did not throw";
    // It must have passed the argument checks (count, ranks, dtypes, sizes: launch_args matches
    // the kernel) and failed only for want of a GPU, or on the fake addresses with one.
    EXPECT_TRUE(error.find(": no GPU: ") != std::string::npos ||
                error.find("is not CUDA device memory") != std::string::npos)
        << error;
    EXPECT_THAT(error, Not(HasSubstr("TESSEL_FALLBACK")));
    EXPECT_THAT(error, Not(HasSubstr("variant")));
    int variants = 0;
    // (TESSEL_DUMP_DIR holds one subfolder per kernel and options; the variants are inside it.)
    for (const auto& e : fs::recursive_directory_iterator(dir))
      variants += e.is_directory() && e.path().filename().string().rfind("variant-", 0) == 0;
    EXPECT_EQ(variants, f.layout() == "TN" ? 0 : 1) << "layout variants compiled";
  }
  fs::remove_all(root);
}


TEST(FuzzCase, TheVariantsOfTheGpuRunsFirstCasesCompile) {
  // The launch-time variants (layout variants and multistage fallbacks) of the first cases that
  // `bundle/pending fuzz` runs (seed 1), prepared as gpu-fuzz prepares them (kernel::prepare at
  // fake addresses with the real buffers' alignment, on every core): each must be chosen and
  // compiled without an error. Cases 0..999 need 274 of the 429 kernels and variants of cases
  // 0..4999 (all of them take about 280 s on one core here).
  tessel_test::scoped_env quiet("TESSEL_FALLBACK", "quiet");
  constexpr int kPrepared = 1000;
  const auto pool = tf::config_pool(1);
  std::map<std::string, ts::kernel> kernels;
  std::vector<tf::fuzz_case> cases;
  for (int i = 0; i < kPrepared; ++i) {
    cases.push_back(tf::make_case(pool, 1, std::uint64_t(i)));
    kernels.emplace(cases.back().cfg.kernel_key(), ts::kernel());
  }
  std::vector<std::string> keys;
  for (auto& [key, k] : kernels) keys.push_back(key);
  std::vector<std::string> errors(std::max(keys.size(), cases.size()));
  auto config_of = [&](const std::string& key) {
    for (const tf::fuzz_case& c : cases)
      if (c.cfg.kernel_key() == key) return c.cfg;
    return tf::fuzz_config{};
  };
  tessel_bench::parallel_for(keys.size(), tessel_bench::job_threads(keys.size()), [&](std::size_t i) {
    try {
      ts::kernel k = tf::jit_kernel(config_of(keys[i]));
      kernels.at(keys[i]) = k;  // distinct elements of a map that no thread resizes
    } catch (const std::exception& e) {
      errors[i] = keys[i] + ": " + e.what();
    }
  });
  for (const std::string& e : errors) ASSERT_EQ(e, "");
  std::vector<ts::launch_choice> choices(cases.size());
  tessel_bench::parallel_for(cases.size(), tessel_bench::job_threads(cases.size()), [&](std::size_t i) {
    try {
      choices[i] = kernels.at(cases[i].cfg.kernel_key()).prepare(tf::launch_grid(cases[i]), tf::fake_launch_args(cases[i]));
    } catch (const std::exception& e) {
      errors[i] = "case " + std::to_string(i) + " " + cases[i].str() + ": " + e.what();
    }
  });
  std::set<std::string> variants;
  int fallbacks = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(errors[i], "");
    variants.insert(cases[i].cfg.kernel_key() + " " + choices[i].variant);
    fallbacks += choices[i].fallback;
  }
  std::printf("%zu kernels, %zu kernels and variants, %d fallback launches\n", kernels.size(), variants.size(), fallbacks);
}
