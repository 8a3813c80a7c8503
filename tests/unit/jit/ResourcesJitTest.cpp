//===- ResourcesJitTest.cpp - kernel::resources, no GPU ----------------------===//
//
// kernel::resources() reports what ptxas said about the kernel ts::jit compiled (registers,
// spills, stack per thread) and its launch configuration (threads, dynamic shared memory,
// cluster, persistence, schedule). Its ptxas figures must be the ones of the kernel's own
// ptxas.log, for kernels that spill and kernels that do not.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "02_gemm/gemm.hpp"
#include "reduce_kernels.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using namespace ts::literals;

namespace {

struct scale_add {
  static constexpr auto BLOCK = 1024_c;
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * BLOCK;
    Y.store({o}, X.load({o}, BLOCK) * 2.0f + Y.load({o}, BLOCK));
  }
};

class ResourcesJit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
};

/// The figure before `what` on ptxas's "Function properties" lines of `log` ("12 bytes spill
/// stores"), or on its "Used N registers" line.
int figure(const std::string& log, const std::string& what) {
  size_t at = log.find(what);
  if (at == std::string::npos) return -1;
  size_t end = log.find_last_not_of(' ', at - 1) + 1, begin = log.find_last_of(' ', end - 1) + 1;
  return std::stoi(log.substr(begin, end - begin));
}

TEST_F(ResourcesJit, PtxasFiguresAndLaunchConfiguration) {
  struct expected {
    ts::schedule schedule;
    const char* name;
    unsigned threads;
    bool persistent;
  };
  for (expected e : {expected{ts::schedule::tma, "tma", 256, false},
                     expected{ts::schedule::multistage, "multistage", 128, false},
                     expected{ts::schedule::warp_specialized, "warp_specialized", 384, false},
                     expected{ts::schedule::cooperative, "cooperative", 384, true},
                     expected{ts::schedule::pingpong, "pingpong", 384, true}}) {
    SCOPED_TRACE(e.name);
    ts::kernel k = ts::jit(examples::gemm<128, 128>{}, {.schedule = e.schedule});
    ts::kernel_resources r = k.resources();
    const std::string log = k.stage("ptxas.log");
    EXPECT_EQ(r.schedule, e.name);
    EXPECT_EQ(r.registers, figure(log, " registers"));
    EXPECT_GT(r.registers, 0);
    EXPECT_EQ(r.spill_stores, figure(log, " bytes spill stores"));
    EXPECT_EQ(r.spill_loads, figure(log, " bytes spill loads"));
    EXPECT_EQ(r.stack_frame, figure(log, " bytes stack frame"));
    EXPECT_EQ(r.threads, e.threads);
    EXPECT_GT(r.shared_bytes, 2u * (128 + 128) * 64 * 2);  // at least two stages of A and B
    EXPECT_EQ(r.cluster, (std::array<unsigned, 3>{1, 1, 1}));
    EXPECT_EQ(r.persistent, e.persistent);
  }
  ts::kernel c = ts::jit(examples::gemm<128, 128>{}, {.schedule = ts::schedule::cooperative, .cluster = {2, 1}});
  EXPECT_EQ(c.resources().cluster, (std::array<unsigned, 3>{2, 1, 1}));
}

TEST_F(ResourcesJit, SpillsAreReported) {
  // Two outputs of one pingpong epilogue at 128 x 128: ptxas spills (docs/design-notes.md, the
  // fourteenth session); the figures must be the log's, not 0.
  ts::kernel k = ts::jit(tessel_test::gemm_bias_gelu_two_outputs<128, 192>{}, {.schedule = ts::schedule::pingpong});
  ts::kernel_resources r = k.resources();
  const std::string log = k.stage("ptxas.log");
  ASSERT_THAT(log, HasSubstr("bytes spill stores"));
  EXPECT_EQ(r.spill_stores, figure(log, " bytes spill stores"));
  EXPECT_EQ(r.spill_loads, figure(log, " bytes spill loads"));
  EXPECT_GT(r.spill_stores, 0);
}

TEST_F(ResourcesJit, ElementwiseKernel) {
  ts::kernel k = ts::jit(scale_add{});
  ts::kernel_resources r = k.resources();
  EXPECT_EQ(r.schedule, "");
  EXPECT_GT(r.registers, 0);
  EXPECT_EQ(r.spill_stores, 0);
  EXPECT_FALSE(r.persistent);
}

}  // namespace
