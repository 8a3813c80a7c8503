//===- DualJitTest.cpp - dual GEMMs through the JIT, no GPU ----------------===//
//
// A dual GEMM (two ts::dot sharing the A tile, tests/support/dual_kernels.hpp)
// compiles to a cubin in every schedule that can hold its two accumulators:
// one wgmma m64n(2 BN)k16 per k16 step, each B tile its own TMA loads, no
// spills. What cannot be built is a tessel::error at ts::jit naming the rule
// (schedule multistage, a pingpong tile too large for two accumulators, BN >
// 128, three dots, dots not sharing A). The number of dots in a loop is known
// only when the program is traced, so these are ts::jit errors, not
// static_asserts. No GPU is needed.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "dual_kernels.hpp"
#include "jit_error.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

class DualJit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_FALLBACK", "quiet"};
};

using tessel_test::jit_error;

void expectDual(const ts::kernel& k, int accN) {
  EXPECT_THAT(k.stage("schedule-mma"), HasSubstr("{accumulators = 2 : i64}"));
  std::string ptx = k.stage("ptx");
  EXPECT_THAT(ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n" + std::to_string(accN) + "k16.f32.bf16.bf16"));
  EXPECT_THAT(ptx, Not(HasSubstr("wgmma.mma_async.sync.aligned.m64n" + std::to_string(accN / 2) + "k16")));
  EXPECT_THAT(k.stage("ptxas.log"), HasSubstr(" 0 bytes spill stores, 0 bytes spill loads"));
}

struct config {
  const char* name;
  ts::options options;
};

TEST_F(DualJit, SwigluInEveryScheduleThatHoldsTwoAccumulators) {
  const config wide[] = {
      {"tma", {.schedule = ts::schedule::tma}},
      {"warp_specialized", {.schedule = ts::schedule::warp_specialized}},
      {"cooperative", {.schedule = ts::schedule::cooperative}},
      {"cooperative data-parallel",
       {.schedule = ts::schedule::cooperative, .decomposition = ts::decomposition::data_parallel}},
      {"cooperative 2x1", {.schedule = ts::schedule::cooperative, .cluster = {2, 1}}},
      {"cooperative 1x2", {.schedule = ts::schedule::cooperative, .cluster = {1, 2}}},
      {"cooperative swizzle 64", {.schedule = ts::schedule::cooperative, .swizzle = 64}},
      {"cooperative swizzle 32", {.schedule = ts::schedule::cooperative, .swizzle = 32}},
  };
  for (const config& c : wide) {
    SCOPED_TRACE(c.name);
    ts::kernel k = ts::jit(tessel_test::swiglu<128, 128>{}, c.options);
    expectDual(k, 256);
  }
  // pingpong holds a whole tile's two accumulators per consumer: 64 x 128.
  for (ts::decomposition d : {ts::decomposition::automatic, ts::decomposition::data_parallel}) {
    ts::kernel k = ts::jit(tessel_test::swiglu<64, 128>{}, {.schedule = ts::schedule::pingpong, .decomposition = d});
    expectDual(k, 256);
  }
  // A narrower tile: N = 2 x 64.
  ts::kernel k = ts::jit(tessel_test::swiglu<128, 64>{}, {.schedule = ts::schedule::cooperative});
  expectDual(k, 128);
}

TEST_F(DualJit, AutomaticPicksAScheduleThatHoldsBothAccumulators) {
  // schedule::automatic (AutoSchedule.cpp): 2 x BN columns per consumer.
  ts::kernel wide = ts::jit(tessel_test::swiglu<128, 128>{}, {});
  EXPECT_THAT(wide.stage("select-schedule"), HasSubstr("kind = cooperative"));
  expectDual(wide, 256);
  ts::kernel narrow = ts::jit(tessel_test::swiglu<64, 128>{}, {});
  EXPECT_THAT(narrow.stage("select-schedule"), HasSubstr("kind = pingpong"));
  expectDual(narrow, 256);
}

TEST_F(DualJit, EveryEpilogueOutputAndNMajorWeights) {
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::tma}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(tessel_test::dual_outputs<128, 128>{}, {.schedule = s});
    expectDual(k, 256);
    EXPECT_THAT(k.stage("ptx"), HasSubstr(".max.s32"));  // the row amax
  }
  ts::kernel pp = ts::jit(tessel_test::dual_outputs<64, 128>{}, {.schedule = ts::schedule::pingpong});
  expectDual(pp, 256);
  ts::kernel nm = ts::jit(tessel_test::swiglu_n_major<128, 128>{}, {.schedule = ts::schedule::cooperative});
  expectDual(nm, 256);
  EXPECT_THAT(nm.stage("insert-async-copies"), HasSubstr("mn_major"));
}

TEST_F(DualJit, AResidualGoesThroughSharedMemory) {
  // tessel-lower-epilogue rules 6 and 7 beside two accumulators: cooperative and warp_specialized
  // 128 x 128 chunk by chunk (the dual ring leaves no room for whole tiles), pingpong 64 x 128 in
  // whole tiles; tma reads R from memory.
  // (The GPU test, DualGemm.ResidualThroughSharedMemory, runs every configuration below.)
  const struct {
    const char* name;
    ts::options options;
    int bm;
    const char* path;
  } cases[] = {
      {"cooperative", {.schedule = ts::schedule::cooperative}, 128, "tma_chunk"},
      {"cooperative data-parallel",
       {.schedule = ts::schedule::cooperative, .decomposition = ts::decomposition::data_parallel}, 128, "tma_chunk"},
      {"cooperative 2x1", {.schedule = ts::schedule::cooperative, .cluster = {2, 1}}, 128, "tma_chunk"},
      {"cooperative 1x2", {.schedule = ts::schedule::cooperative, .cluster = {1, 2}}, 128, "tma_chunk"},
      {"cooperative swizzle 64", {.schedule = ts::schedule::cooperative, .swizzle = 64}, 128, "tma_chunk"},
      {"warp_specialized", {.schedule = ts::schedule::warp_specialized}, 128, "tma_chunk"},
      {"pingpong", {.schedule = ts::schedule::pingpong}, 64, "tma_smem"},
      {"pingpong data-parallel",
       {.schedule = ts::schedule::pingpong, .decomposition = ts::decomposition::data_parallel}, 64, "tma_smem"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ts::kernel k = c.bm == 64 ? ts::jit(tessel_test::swiglu_residual<64, 128>{}, c.options)
                              : ts::jit(tessel_test::swiglu_residual<128, 128>{}, c.options);
    expectDual(k, 256);
    EXPECT_THAT(k.stage("lower-epilogue"), HasSubstr(std::string("{hopper.prefetch = \"") + c.path + "\"}"));
    EXPECT_THAT(k.stage("ptx"), HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
  }
  ts::kernel tma = ts::jit(tessel_test::swiglu_residual<128, 128>{}, {.schedule = ts::schedule::tma});
  EXPECT_THAT(tma.stage("lower-epilogue"), Not(HasSubstr("hopper.prefetch")));
}

TEST_F(DualJit, SchedulesThatCannotHoldTwoAccumulators) {
  EXPECT_THAT(jit_error(tessel_test::swiglu<128, 128>{}, {.schedule = ts::schedule::multistage}),
              HasSubstr("error: schedule 'multistage' cannot hold the two accumulators of a dual GEMM: use "
                        "'cooperative' or 'pingpong' (or 'tma', 'warp_specialized')"));
  EXPECT_THAT(jit_error(tessel_test::swiglu<128, 128>{}, {.schedule = ts::schedule::pingpong}),
              HasSubstr("error: schedule 'pingpong' keeps both accumulators of a whole tile per consumer "
                        "warpgroup: BM x BN must be at most 64 x 128 for a dual GEMM, got 128 x 128 (use BM "
                        "= 64, or schedule 'cooperative')"));
  EXPECT_THAT(jit_error(tessel_test::swiglu<128, 256>{}, {.schedule = ts::schedule::cooperative}),
              HasSubstr("error: a dual GEMM computes both dots with one wgmma of N = 2 x BN <= 256 (its two "
                        "accumulators side by side): BN must be at most 128, got 256"));
  EXPECT_THAT(jit_error(tessel_test::swiglu<256, 64>{}, {.schedule = ts::schedule::cooperative}),
              HasSubstr("error: schedule 'cooperative' with BM = 256 cannot hold a dual GEMM (two row blocks of "
                        "two accumulators per consumer warpgroup): use BM <= 128, or BM <= 192 with BN <= 96 "
                        "(rule 3b)"));
  // Rule 3b: three consumers and the producer (512 threads) leave ptxas 128 registers per thread,
  // too few beside BN = 128's two accumulators (ptxas failed with C7602 before the rule).
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::cooperative})
    EXPECT_THAT(jit_error(tessel_test::swiglu<192, 128>{}, {.schedule = s}),
                HasSubstr(std::string("error: schedule '") + ts::to_string(s) +
                          "' with BM = 192 runs 3 consumer warpgroups and a producer: 512 threads, which leave ptxas "
                          "128 registers per thread; the two accumulators of BN = 128 take 128 of them: at most 96 "
                          "(BN <= 96), or BM <= 128"));
  EXPECT_EQ(jit_error(tessel_test::swiglu<192, 64>{}, {.schedule = ts::schedule::warp_specialized}), "");
}

/// Three dots on one A.
struct three_dots {
  static constexpr auto BM = ts::c<128>, BN = ts::c<64>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W2,
                  ts::tensor<ts::bf16, 2> W3, ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto x = ts::zeros<ts::f32>(BM, BN), y = ts::zeros<ts::f32>(BM, BN), z = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      x += ts::dot(a, W1.load({n, k}, BN, BK).T());
      y += ts::dot(a, W2.load({n, k}, BN, BK).T());
      z += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(x + y + z));
  }
};

/// Two dots with different A tiles.
struct two_a {
  static constexpr auto BM = ts::c<128>, BN = ts::c<128>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> A2, ts::tensor<ts::bf16, 2> W,
                  ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto x = ts::zeros<ts::f32>(BM, BN), y = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      x += ts::dot(A.load({m, k}, BM, BK), W.load({n, k}, BN, BK).T());
      y += ts::dot(A2.load({m, k}, BM, BK), W.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(x * y));
  }
};

TEST_F(DualJit, ProgramsThatAreNotADualGemm) {
  EXPECT_THAT(jit_error(three_dots{}, {.schedule = ts::schedule::cooperative}),
              HasSubstr("error: 'tessel.dot' op a kernel may hold one tessel.dot (one GEMM mainloop), or two "
                        "that share the A tile (a dual GEMM)"));
  EXPECT_THAT(jit_error(two_a{}, {.schedule = ts::schedule::cooperative}),
              HasSubstr("error: 'tessel.dot' op the two dots of a dual GEMM must share the A tile (one tile "
                        "variable: auto a = A.load(...); ts::dot(a, ...) twice)"));
}

TEST_F(DualJit, EmptyKIsAClearError) {
  // K == 0 takes the multistage variant (TMA cannot describe an empty tensor), which cannot hold
  // two accumulators: a tessel::error naming it, the process survives (docs/dual-gemm.md).
  ts::kernel k = ts::jit(tessel_test::swiglu<128, 128>{}, {.schedule = ts::schedule::cooperative});
  const void* fake = reinterpret_cast<const void*>(0x7f0000100000);
  const std::string what = tessel_test::launch_error(
      k, ts::grid{2, 1}, ts::view<ts::bf16>(fake, {256, 0}), ts::view<ts::bf16>(fake, {128, 0}),
      ts::view<ts::bf16>(fake, {128, 0}), ts::view<ts::bf16>(fake, {256, 128}));
  std::printf("%s\n", what.c_str());
  EXPECT_THAT(what, HasSubstr("(schedule cooperative): argument 0 has size 0 along dimension 1 (K == 0 for a "
                              "GEMM's operands), and TMA cannot describe an empty tensor: the launch needs the "
                              "schedule multistage variant, which cannot be built for this kernel:\n"));
  EXPECT_THAT(what, HasSubstr("schedule 'multistage' cannot hold the two accumulators of a dual GEMM"));
}

}  // namespace
