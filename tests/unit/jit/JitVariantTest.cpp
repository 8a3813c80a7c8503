//===- JitVariantTest.cpp - launch-time variants through the real compiler --===//
//
// ts::jit a GEMM, then launch it with arguments that need a variant. No GPU
// is needed: the variant is chosen and compiled before the launch looks for a
// GPU, so the launch then fails with "no GPU" here (or, on a GPU machine, on
// the fake device addresses) - after the note has been printed and the
// variant dumped. What the variant is made of is read back from the dump.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "file_text.hpp"
#include "scoped_env.hpp"
#include "02_gemm/gemm.hpp"
#include "transposed_kernels.hpp"

namespace ts = tessel;
namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

using ScopedEnv = tessel_test::scoped_env;

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

constexpr std::int64_t M = 256, N = 128, K = 512;

class JitVariants : public ::testing::Test {
protected:
  ScopedEnv fresh{"TESSEL_DISABLE_CACHE", "1"};
  ScopedEnv policy{"TESSEL_FALLBACK", std::nullopt};
  ScopedEnv dumpEnv{"TESSEL_DUMP_DIR", std::nullopt};
  fs::path dir;

  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("tessel-jit-variants-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  ts::kernel jit(ts::schedule s, bool verbose = false, int swizzle = 0) {
    return ts::jit(examples::gemm<128, 128, 64>{},
                   {.schedule = s, .stages = 3, .swizzle = swizzle, .dump_dir = dir.string(), .verbose = verbose});
  }

  /// Launches; the launch must throw (no GPU, or fake addresses on a GPU). Returns stderr.
  std::string launch(ts::kernel& k, ts::tensor_arg a, ts::tensor_arg b, ts::tensor_arg c,
                     std::string* error = nullptr) {
    ::testing::internal::CaptureStderr();
    std::string what;
    try {
      k.launch(nullptr, ts::grid{2, 1}, a, b, c);
    } catch (const ts::error& e) {
      what = e.what();
    }
    std::string err = ::testing::internal::GetCapturedStderr();
    std::printf("%s  (launch: %s)\n", err.c_str(), what.c_str());
    EXPECT_NE(what, "") << "the launch with fake addresses did not throw";
    if (error) *error = what;
    return err;
  }

  ts::tensor_arg A(std::uintptr_t addr = 0x7f0000100000) { return ts::view<ts::bf16>(fake(addr), {M, K}); }
  ts::tensor_arg B() { return ts::view<ts::bf16>(fake(0x7f0000200000), {N, K}); }
  ts::tensor_arg C() { return ts::view<ts::bf16>(fake(0x7f0000300000), {M, N}); }
};

TEST_F(JitVariants, MisalignedOperandCompilesTheMultistageVariantOnceWithANote) {
  ts::kernel k = jit(ts::schedule::tma);
  std::string error;
  std::string err = launch(k, A(0x7f0000100002), B(), C(), &error);
  EXPECT_THAT(err, HasSubstr("tessel: note: kernel '" + k.name() + "' (schedule tma) argument 0: data address "
                             "0x7f0000100002 is not 16-byte aligned (TMA requires a 16-byte aligned base "
                             "address); launching the schedule multistage variant instead"));
  // What stopped the launch afterwards is the missing GPU (or the fake address), not the rule.
  EXPECT_THAT(error, Not(HasSubstr("16-byte aligned")));
  std::string scheduled = tessel_test::file_text(dir / "variant-multistage" / "02-select-schedule.mlir");
  EXPECT_THAT(scheduled, HasSubstr("#tessel.schedule<kind = multistage"));
  EXPECT_TRUE(fs::exists(dir / "variant-multistage" / "14-kernel.ptx"));
  EXPECT_THAT(tessel_test::file_text(dir / "02-select-schedule.mlir"), HasSubstr("kind = tma"));  // the eager kernel's dump

  // Once per kernel and reason; the variant is not compiled again (its dump is not rewritten).
  fs::remove_all(dir / "variant-multistage");
  EXPECT_EQ(launch(k, A(0x7f0000100006), B(), C()), "");
  EXPECT_FALSE(fs::exists(dir / "variant-multistage"));
}

TEST_F(JitVariants, CachedKernelsDumpVariantsWhereTheirCallerAsked) {
  // With the in-memory cache on, the same kernel jitted with two dump directories: the variant of
  // the second one is dumped into the second directory, not the first.
  ScopedEnv cached{"TESSEL_DISABLE_CACHE", std::nullopt};
  auto jitTo = [](const fs::path& d) {
    return ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma, .stages = 3, .dump_dir = d.string()});
  };
  ts::kernel first = jitTo(dir / "first");
  ts::kernel second = jitTo(dir / "second");
  ts::kernel again = jitTo(dir / "second");  // a cache hit: dumps its stages again
  launch(second, A(0x7f0000100002), B(), C());
  EXPECT_TRUE(fs::exists(dir / "second" / "variant-multistage" / "02-select-schedule.mlir"));
  EXPECT_FALSE(fs::exists(dir / "first" / "variant-multistage"));
  EXPECT_TRUE(fs::exists(dir / "first" / "02-select-schedule.mlir"));
}

TEST_F(JitVariants, FallbackDropsTheTmaSwizzle) {
  // options::swizzle is for TMA-fed tiles; multistage has its own XOR swizzle and rejects one.
  ts::kernel k = jit(ts::schedule::tma, /*verbose=*/false, /*swizzle=*/64);
  std::string error;
  std::string err = launch(k, A(0x7f0000100002), B(), C(), &error);
  EXPECT_THAT(err, HasSubstr("launching the schedule multistage variant instead"));
  EXPECT_THAT(error, Not(HasSubstr("fallback to schedule multistage failed")));
  EXPECT_THAT(tessel_test::file_text(dir / "variant-multistage" / "02-select-schedule.mlir"), HasSubstr("#tessel.schedule<kind = multistage"));
}

TEST_F(JitVariants, OddLeadingDimensionFallsBackForWarpSpecialized) {
  ts::kernel k = jit(ts::schedule::warp_specialized);
  std::string err = launch(k, ts::view<ts::bf16>(fake(0x7f0000100000), {M, K - 1}, {K - 1, 1}),
                           ts::view<ts::bf16>(fake(0x7f0000200000), {N, K - 1}, {K - 1, 1}), C());
  EXPECT_THAT(err, HasSubstr("(schedule warp_specialized) argument 0: stride of dimension 0 is 511 elements = "
                             "1022 bytes, not a multiple of 16 bytes"));
  EXPECT_TRUE(fs::exists(dir / "variant-multistage" / "02-select-schedule.mlir"));
}

TEST_F(JitVariants, ColumnMajorOperandGetsALayoutVariant) {
  ts::kernel k = jit(ts::schedule::tma, /*verbose=*/true);
  std::string err = launch(k, ts::view<ts::bf16>(fake(0x7f0000100000), {M, K}, {1, M}), B(), C());
  EXPECT_THAT(err, HasSubstr("tessel: compiling variant 'tma-L0__' of '" + k.name() +
                             "' (argument 0 contiguous along dimension 0)"));
  std::string traced = tessel_test::file_text(dir / "variant-tma-L0__" / "01-tessel.mlir");
  EXPECT_THAT(traced, HasSubstr("tessel.contiguous_dim = 0 : i64"));
  if (err.find("tessel: note:") != std::string::npos) {
    // The lowering loads A K-contiguous only: TMA's unit-stride rule fails, multistage runs it.
    EXPECT_THAT(err, HasSubstr("argument 0: innermost stride (dimension 1) must be 1, got 256"));
    EXPECT_THAT(tessel_test::file_text(dir / "variant-multistage-L0__" / "01-tessel.mlir"),
                HasSubstr("tessel.contiguous_dim = 0 : i64"));
    EXPECT_THAT(err, HasSubstr("launching variant 'multistage-L0__'"));
  } else {
    EXPECT_THAT(err, HasSubstr("launching variant 'tma-L0__'"));
  }
}

TEST_F(JitVariants, ColumnMajorOutputNeedsNoFallback) {
  ts::kernel k = jit(ts::schedule::cooperative);
  std::string err = launch(k, A(), B(), ts::view<ts::bf16>(fake(0x7f0000300000), {M, N}, {1, M}));
  EXPECT_THAT(err, Not(HasSubstr("tessel: note")));
  EXPECT_THAT(tessel_test::file_text(dir / "variant-cooperative-L__0" / "01-tessel.mlir"), HasSubstr("tessel.contiguous_dim = 0 : i64"));
  EXPECT_FALSE(fs::exists(dir / "variant-multistage"));
}

// Swap-AB as a user writes it for a few rows of A (docs/small-m.md; tessel-bench --swap yes):
// C (M x N) computed as C^T = B A^T with a 64 x BN tile, the BN <= 32 rows of A being wgmma's N,
// into C's column-major N x M view. For every TMA-fed schedule and BN = 8, 16, 32, the launch
// compiles the column-major-output variant with the deepest ring, no fallback; it stores from
// registers with C's strides (tests/gpu/gemm_test.cpp, SwapAbGemm, runs them).
class SwappedOperands : public JitVariants {
protected:
  template <int BN>
  void check(ts::schedule s) {
    constexpr std::int64_t m = 16, n = 1024;
    const fs::path sub = dir / (std::string(ts::to_string(s)) + "_" + std::to_string(BN));
    ts::kernel k = ts::jit(examples::gemm<64, BN, 64>{}, {.schedule = s, .stages = ts::stages_max, .dump_dir = sub.string()});
    ::testing::internal::CaptureStderr();
    std::string what;
    try {
      k.launch(nullptr, ts::grid{unsigned(n / 64), 1}, ts::view<ts::bf16>(fake(0x7f0000200000), {n, K}),
               ts::view<ts::bf16>(fake(0x7f0000100000), {m, K}),
               ts::view<ts::bf16>(fake(0x7f0000300000), {n, m}, {1, n}));
    } catch (const ts::error& e) {
      what = e.what();
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    SCOPED_TRACE(sub.filename().string());
    EXPECT_NE(what, "") << "the launch with fake addresses did not throw";
    EXPECT_THAT(err, Not(HasSubstr("tessel: note")));
    const std::string tag = std::string(ts::to_string(s)) + "-L__0";
    const fs::path variant = sub / ("variant-" + tag);
    EXPECT_THAT(tessel_test::file_text(variant / "01-tessel.mlir"), HasSubstr("tessel.contiguous_dim = 0 : i64"));
    const std::string epilogue = tessel_test::file_text(variant / "07-lower-epilogue.mlir");
    EXPECT_THAT(epilogue, HasSubstr("shape [64, " + std::to_string(BN) + ", 16]"));
    // Stores from registers with C's strides (tma's pairs of registers, the others' registers), not
    // TMA stores.
    EXPECT_THAT(epilogue, ContainsRegex("\\{hopper.store = \"register(s|_pairs)\"\\} : tensor<64x" + std::to_string(BN) +
                                        "xbf16>"));
    EXPECT_TRUE(fs::exists(variant / "14-kernel.ptx"));
  }
};

TEST_F(SwappedOperands, WriteTheColumnMajorViewOfCInEveryTmaSchedule) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong}) {
    check<8>(s);
    check<16>(s);
    check<32>(s);
  }
}

// The same inside the compiler (tessel-swap-operands): the user's 16 x 64 tile, grid and views;
// the kernel computes the 64 x 16 transpose and writes each fragment element across the
// diagonal, from registers, in every TMA schedule and under `automatic`.
TEST_F(SwappedOperands, TheCompilerComputesTilesOfFewerThan64RowsTransposed) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong, ts::schedule::automatic}) {
    const fs::path sub = dir / ("short_" + std::string(ts::to_string(s)));
    ts::kernel k = ts::jit(examples::gemm<16, 64, 64>{}, {.schedule = s, .dump_dir = sub.string()});
    SCOPED_TRACE(sub.filename().string());
    EXPECT_THAT(tessel_test::file_text(sub / "02-select-schedule.mlir"), HasSubstr("tile = [64, 16, 64]"));
    const std::string epilogue = tessel_test::file_text(sub / "07-lower-epilogue.mlir");
    EXPECT_THAT(epilogue, ContainsRegex("tessel.trans %[0-9]+ : tensor<64x16xf32> -> tensor<16x64xf32>"));
    EXPECT_THAT(epilogue, HasSubstr("{hopper.store = \"registers\"} : tensor<16x64xbf16>"));
  }
}

// A user's acc.T() (tessel_test::gemm_store_transposed): registers in every schedule, not the
// TMA-store staging nor tma's paired columns (tests/gpu/gemm_test.cpp, TransposedStoreGemm, runs
// them).
TEST_F(SwappedOperands, AStoreOfTheTransposedAccumulatorGoesThroughRegisters) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::cooperative, ts::schedule::pingpong,
                         ts::schedule::multistage}) {
    const std::string path = s == ts::schedule::multistage ? "fragments" : "registers";
    const fs::path sub = dir / ("acc_t_" + std::string(ts::to_string(s)));
    ts::kernel k = ts::jit(tessel_test::gemm_store_transposed<128, 128>{}, {.schedule = s, .dump_dir = sub.string()});
    SCOPED_TRACE(sub.filename().string());
    EXPECT_THAT(tessel_test::file_text(sub / "07-lower-epilogue.mlir"),
                HasSubstr("{hopper.store = \"" + path + "\"} : tensor<128x128xbf16>"));
    if (s == ts::schedule::pingpong)
      continue;  // 128 x 256 does not fit pingpong's consumers
    const fs::path wide = dir / ("acc_t_wide_" + std::string(ts::to_string(s)));
    ts::jit(tessel_test::gemm_store_transposed<128, 256>{}, {.schedule = s, .dump_dir = wide.string()});
    EXPECT_THAT(tessel_test::file_text(wide / "07-lower-epilogue.mlir"),
                HasSubstr("{hopper.store = \"" + path + "\"} : tensor<256x128xbf16>"));
  }
}

TEST_F(JitVariants, ErrorPolicyRefusesWithTheArgumentAndTheRule) {
  ScopedEnv strict{"TESSEL_FALLBACK", "error"};
  ts::kernel k = jit(ts::schedule::pingpong);
  std::string error;
  std::string err = launch(k, A(), ts::view<ts::bf16>(fake(0x7f0000200008), {N, K}), C(), &error);
  EXPECT_EQ(err, "");
  EXPECT_THAT(error, HasSubstr("tessel: kernel '" + k.name() + "' (schedule pingpong) argument 1: data address "
                               "0x7f0000200008 is not 16-byte aligned"));
  EXPECT_THAT(error, HasSubstr("TESSEL_FALLBACK=error forbids falling back to schedule multistage"));
  EXPECT_FALSE(fs::exists(dir / "variant-multistage"));
}

//===----------------------------------------------------------------------===//
// kernel::prepare: the launch's choice without the launch (and without a GPU)
//===----------------------------------------------------------------------===//

/// prepare(...), with what it printed on stderr.
ts::launch_choice prepare(const ts::kernel& k, ts::tensor_arg a, ts::tensor_arg b, ts::tensor_arg c, std::string* err) {
  ::testing::internal::CaptureStderr();
  std::optional<ts::launch_choice> choice;
  try {
    choice = k.prepare(ts::grid{2, 1}, a, b, c);
  } catch (...) {
    *err = ::testing::internal::GetCapturedStderr();
    throw;
  }
  *err = ::testing::internal::GetCapturedStderr();
  return *choice;
}

TEST_F(JitVariants, PrepareWithDefaultLayoutsChoosesTheKernelTsJitCompiled) {
  ts::kernel k = jit(ts::schedule::pingpong);
  const std::uint64_t built = ts::detail::kernels_built();
  std::string err;
  ts::launch_choice c = prepare(k, A(), B(), C(), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.variant, "");
  EXPECT_FALSE(c.fallback);
  const ts::kernel_resources r = k.resources();
  EXPECT_EQ(c.resources.schedule, "pingpong");
  EXPECT_EQ(c.resources.registers, r.registers);
  EXPECT_EQ(c.resources.threads, r.threads);
  EXPECT_EQ(c.resources.shared_bytes, r.shared_bytes);
  EXPECT_TRUE(c.resources.persistent);
  EXPECT_EQ(ts::detail::kernels_built(), built);
}

TEST_F(JitVariants, PrepareCompilesTheFallbackOnceAndTheLaunchReusesIt) {
  ts::kernel k = jit(ts::schedule::tma);
  const std::uint64_t built = ts::detail::kernels_built();
  std::string err;
  ts::launch_choice c = prepare(k, A(0x7f0000100002), B(), C(), &err);
  EXPECT_EQ(err, "tessel: note: kernel '" + k.name() + "' (schedule tma) argument 0: data address 0x7f0000100002 is "
                 "not 16-byte aligned (TMA requires a 16-byte aligned base address); launching the schedule "
                 "multistage variant instead (TESSEL_FALLBACK=quiet silences this note, TESSEL_FALLBACK=error makes "
                 "it an error)\n");
  EXPECT_EQ(c.variant, "multistage");
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.resources.schedule, "multistage");
  EXPECT_EQ(c.resources.threads, 128u);
  EXPECT_GT(c.resources.registers, 0);
  EXPECT_FALSE(c.resources.persistent);
  EXPECT_EQ(ts::detail::kernels_built(), built + 1);
  EXPECT_TRUE(fs::exists(dir / "variant-multistage" / "02-select-schedule.mlir"));

  // The launch with arguments of the same layout and alignment finds the variant compiled: no
  // compile, no dump, no second note.
  fs::remove_all(dir / "variant-multistage");
  EXPECT_EQ(launch(k, A(0x7f0000100002), B(), C()), "");
  EXPECT_EQ(ts::detail::kernels_built(), built + 1);
  EXPECT_FALSE(fs::exists(dir / "variant-multistage"));
  // And preparing it again builds nothing either.
  EXPECT_EQ(prepare(k, A(0x7f0000100006), B(), C(), &err).variant, "multistage");
  EXPECT_EQ(ts::detail::kernels_built(), built + 1);
}

TEST_F(JitVariants, PrepareNamesALayoutVariant) {
  ts::kernel k = jit(ts::schedule::cooperative);
  std::string err;
  ts::launch_choice c = prepare(k, A(), B(), ts::view<ts::bf16>(fake(0x7f0000300000), {M, N}, {1, M}), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.variant, "cooperative-L__0");
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.resources.schedule, "cooperative");
  EXPECT_TRUE(fs::exists(dir / "variant-cooperative-L__0" / "01-tessel.mlir"));
}

TEST_F(JitVariants, PrepareThrowsWhatTheLaunchThrows) {
  ts::kernel k = jit(ts::schedule::pingpong);
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const ts::error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // A rule of the arguments (a rank), and a rule under TESSEL_FALLBACK=error: the same message.
  const ts::tensor_arg wrongRank = ts::view<ts::bf16>(fake(0x7f0000200000), {N * K});
  const std::string rank = message([&] { k.prepare(ts::grid{2, 1}, A(), wrongRank, C()); });
  EXPECT_THAT(rank, HasSubstr("tessel: kernel '" + k.name() + "' argument 1: "));
  EXPECT_EQ(message([&] { k.launch(nullptr, ts::grid{2, 1}, A(), wrongRank, C()); }), rank);

  ScopedEnv strict{"TESSEL_FALLBACK", "error"};
  const ts::tensor_arg misaligned = ts::view<ts::bf16>(fake(0x7f0000200008), {N, K});
  const std::string rule = message([&] { k.prepare(ts::grid{2, 1}, A(), misaligned, C()); });
  EXPECT_THAT(rule, HasSubstr("TESSEL_FALLBACK=error forbids falling back to schedule multistage"));
  EXPECT_EQ(message([&] { k.launch(nullptr, ts::grid{2, 1}, A(), misaligned, C()); }), rule);
}

}  // namespace

TEST(JitOptions, OneStageIsRejectedWithTheRule) {
  // A one-stage ring would deadlock (a stage is released one k-step late): a clear compile error
  // naming the rule, for every TMA-fed schedule, and the process goes on.
  ScopedEnv fresh{"TESSEL_DISABLE_CACHE", "1"};
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong}) {
    std::string what;
    try {
      ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = s, .stages = 1});
    } catch (const ts::error& e) {
      what = e.what();
    }
    EXPECT_THAT(what, HasSubstr("needs at least 2 stages (a stage is released one k-step late), got 1"));
  }
}

TEST(JitOptions, AnExplicitPtxasThatIsMissingIsAnError) {
  // TESSEL_PTXAS names the ptxas to run: when it names none, ts::jit says so instead of leaving
  // the kernel without a cubin for the driver to JIT.
  ScopedEnv fresh{"TESSEL_DISABLE_CACHE", "1"};
  ScopedEnv ptxas{"TESSEL_PTXAS", "/nonexistent/ptxas"};
  std::string what;
  try {
    ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma});
  } catch (const ts::error& e) {
    what = e.what();
  }
  EXPECT_EQ(what,
            "tessel: kernel 'examples_gemm_128_128_64': $TESSEL_PTXAS=/nonexistent/ptxas is not an executable file "
            "(TESSEL_PTXAS names the ptxas to run; unset it to look in $CUDA_HOME/bin, $CUDA_PATH/bin, "
            "/usr/local/cuda/bin and PATH)");
}
