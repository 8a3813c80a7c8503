//===- GroupedJitTest.cpp - grouped GEMMs through the JIT, no GPU ---------===//
//
// The grouped GEMMs of examples/09_grouped_gemm (a group per row tile, read
// from an i32 table with ts::tensor::at; W of rank 3, its group the leading
// offset) compile to cubins in every schedule: the plain GEMM, the SwiGLU
// experts (a dual GEMM) and DeepSeek-V3's block-scaled fp8 experts. In the
// TMA-fed schedules the weights come through 3-d boxes. The masked layout
// (decode: a trip count per tile that may be 0) compiles in every schedule
// that allows one, without spills or ptxas performance warnings; a 2x1 cluster, which
// would multicast one B tile to row tiles of different groups, is an error at
// ts::jit, verbatim. No GPU is needed (the numerics: tests/gpu/grouped_test.cpp).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "09_grouped_gemm/grouped_gemm.hpp"
#include "jit_error.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

class GroupedJit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
};

struct config {
  const char* name;
  ts::options options;
};

void expectGrouped(const ts::kernel& k, bool tmaFed) {
  const std::string ptx = k.stage("ptx");
  // The group read: a predicated 4-byte load of the table.
  EXPECT_THAT(ptx, HasSubstr("ld.global.b32"));
  if (tmaFed)
    EXPECT_THAT(ptx, HasSubstr("cp.async.bulk.tensor.3d.shared::cluster.global"));  // W[g] boxes
  EXPECT_THAT(k.stage("ptxas.log"), HasSubstr(" 0 bytes spill stores, 0 bytes spill loads"));
}

TEST_F(GroupedJit, GemmInEverySchedule) {
  const config all[] = {
      {"tma", {.schedule = ts::schedule::tma}},
      {"multistage", {.schedule = ts::schedule::multistage}},
      {"warp_specialized", {.schedule = ts::schedule::warp_specialized}},
      {"cooperative", {.schedule = ts::schedule::cooperative}},
      {"cooperative stream-k", {.schedule = ts::schedule::cooperative, .decomposition = ts::decomposition::stream_k}},
      {"cooperative 1x2", {.schedule = ts::schedule::cooperative, .cluster = {1, 2}}},
      {"pingpong", {.schedule = ts::schedule::pingpong}},
      {"pingpong 1x2", {.schedule = ts::schedule::pingpong, .cluster = {1, 2}}},
      {"automatic", {}},
  };
  for (const config& c : all) {
    SCOPED_TRACE(c.name);
    ts::kernel k;
    ASSERT_NO_THROW(k = ts::jit(examples::grouped_gemm<128, 128>{}, c.options));
    expectGrouped(k, c.options.schedule != ts::schedule::multistage);
  }
}

// The masked layout: the k-loop's bound reads the group's row count (a trip count per tile that
// may be 0, tessel-select-schedule rule 9): every schedule that allows one, whole tiles and a 1x1
// cluster.
TEST_F(GroupedJit, MaskedGemmInEverySchedule) {
  const config all[] = {
      {"tma", {.schedule = ts::schedule::tma}},
      {"multistage", {.schedule = ts::schedule::multistage}},
      {"warp_specialized", {.schedule = ts::schedule::warp_specialized}},
      {"cooperative", {.schedule = ts::schedule::cooperative}},
      {"pingpong", {.schedule = ts::schedule::pingpong}},
      {"automatic", {}},
  };
  for (const config& c : all) {
    SCOPED_TRACE(c.name);
    ts::kernel k;
    ASSERT_NO_THROW(k = ts::jit(examples::grouped_gemm_masked<64, 128>{}, c.options));
    expectGrouped(k, c.options.schedule != ts::schedule::multistage);
    // No performance warning: the tma schedule used to get C7515 (wgmma serialized) here.
    EXPECT_THAT(k.stage("ptxas.log"), Not(HasSubstr("C75")));
  }
}

/// What expectExperts checks beyond expectGrouped.
struct expert_checks {
  std::string wgmma;                                           ///< in Wide's PTX ("": not checked)
  bool no_perf_warnings = false;                               ///< no ptxas C75xx warning, any kernel
  std::vector<ts::schedule> narrow = {ts::schedule::pingpong};  ///< the schedules of Narrow
};

/// Expert kernel `Wide` in cooperative, warp_specialized and automatic; `Narrow` (64x128) in
/// `want.narrow`.
template <class Wide, class Narrow>
void expectExperts(const expert_checks& want) {
  const config all[] = {
      {"cooperative", {.schedule = ts::schedule::cooperative}},
      {"warp_specialized", {.schedule = ts::schedule::warp_specialized}},
      {"automatic", {}},
  };
  auto check = [&](const ts::kernel& k, bool wide) {
    expectGrouped(k, true);
    if (wide && !want.wgmma.empty())
      EXPECT_THAT(k.stage("ptx"), HasSubstr(want.wgmma));
    if (want.no_perf_warnings)
      EXPECT_THAT(k.stage("ptxas.log"), Not(HasSubstr("C75")));
  };
  for (const config& c : all) {
    SCOPED_TRACE(c.name);
    ts::kernel k;
    ASSERT_NO_THROW(k = ts::jit(Wide{}, c.options));
    check(k, true);
  }
  for (ts::schedule s : want.narrow) {
    SCOPED_TRACE(std::string("narrow ") + ts::to_string(s));
    ts::kernel k;
    ASSERT_NO_THROW(k = ts::jit(Narrow{}, {.schedule = s}));
    check(k, false);
  }
}

// The SwiGLU experts in the masked layout: a dual GEMM (one wgmma of N = 2 x BN) whose trip count
// may be 0.
TEST_F(GroupedJit, MaskedSwigluExperts) {
  expectExperts<examples::grouped_swiglu_masked<64, 128>, examples::grouped_swiglu_masked<64, 128>>(
      {.wgmma = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", .no_perf_warnings = true});
}

// The fp8 experts in the masked layout: the scaled mainloop (k-steps in pairs) with a trip count per
// tile that may be 0.
TEST_F(GroupedJit, MaskedFp8BlockwiseExperts) {
  using examples::grouped_fp8_blockwise_masked;
  expectExperts<grouped_fp8_blockwise_masked<128, 128>, grouped_fp8_blockwise_masked<64, 128>>(
      {.no_perf_warnings = true, .narrow = {ts::schedule::pingpong, ts::schedule::automatic}});
}

TEST_F(GroupedJit, SwigluExpertsAreOneDualGemm) {
  expectExperts<examples::grouped_swiglu<128, 128>, examples::grouped_swiglu<64, 128>>(
      {.wgmma = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"});
}

TEST_F(GroupedJit, Fp8BlockwiseExperts) {
  expectExperts<examples::grouped_fp8_blockwise<128, 128>, examples::grouped_fp8_blockwise<64, 128>>(
      {.wgmma = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"});
}

TEST_F(GroupedJit, APairAlongMCannotShareTheWeightsTile) {
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    const std::string e = tessel_test::jit_error(examples::grouped_gemm<128, 128>{}, {.schedule = s, .cluster = {2, 1}});
    EXPECT_THAT(e, HasSubstr("tessel: scheduling failed (kernel 'examples_grouped_gemm_128_128_64'):"));
    EXPECT_THAT(e, HasSubstr("grouped_gemm.hpp:39:52: error: cluster 2x1 multicasts B's tile to the two CTAs of a "
                             "pair along program_id(0), but its offsets depend on program_id(0): the two CTAs would "
                             "need different tiles (use cluster 1x2 or 1x1)"));
  }
}

}  // namespace
