//===- ReduceJitTest.cpp - epilogue reductions through the JIT, no GPU ----===//
//
// GEMM epilogues with reductions (docs/reductions.md) and with two outputs
// compile to a cubin in every schedule (and with stream-K, the persistent
// schedules' default); each reduction becomes shuffles and atomics in the
// PTX. A reduction in a kernel without a dot is a tessel::error. No GPU is
// needed.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jit_error.hpp"
#include "reduce_kernels.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

class ReduceJit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
};

const ts::schedule kSchedules[] = {ts::schedule::tma, ts::schedule::multistage,
                                   ts::schedule::warp_specialized, ts::schedule::cooperative,
                                   ts::schedule::pingpong};

TEST_F(ReduceJit, RowAndColumnReductionsInEverySchedule) {
  for (ts::schedule s : kSchedules) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(tessel_test::gemm_bias_reduce<128, 128>{}, {.schedule = s});
    std::string ir = k.stage("lower-epilogue");
    EXPECT_THAT(ir, HasSubstr("hopper.store = \"reduce_atomic\""));
    std::string ptx = k.stage("ptx");
    EXPECT_THAT(ptx, HasSubstr("shfl.sync.bfly.b32"));
    EXPECT_THAT(ptx, HasSubstr(".add.f32"));   // the row sum
    EXPECT_THAT(ptx, HasSubstr(".max.s32"));   // amax, max of x >= 0
    EXPECT_THAT(ptx, HasSubstr(".min.u32"));   // max of x < 0
  }
}

TEST_F(ReduceJit, DataParallelAndStreamK) {
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::pingpong})
    for (ts::decomposition d : {ts::decomposition::data_parallel, ts::decomposition::stream_k}) {
      SCOPED_TRACE(ts::to_string(s) + std::string(d == ts::decomposition::stream_k ? " stream-K" : " data-parallel"));
      ts::kernel k = ts::jit(tessel_test::gemm_bias_reduce<128, 128>{}, {.schedule = s, .decomposition = d});
      EXPECT_THAT(k.stage("lower-epilogue"),
                  HasSubstr(d == ts::decomposition::stream_k ? "fixup \"stream_k\"" : "fixup \"none\""));
      EXPECT_THAT(k.stage("ptx"), HasSubstr(".min.u32"));
    }
}

TEST_F(ReduceJit, RowAmaxTileShapes) {
  for (ts::schedule s : kSchedules) {
    SCOPED_TRACE(ts::to_string(s));
    if (s != ts::schedule::pingpong) {  // pingpong: tiles up to 128 x 128
      ts::kernel a = ts::jit(tessel_test::gemm_row_amax<128, 256>{}, {.schedule = s});
      EXPECT_THAT(a.stage("ptx"), HasSubstr(".max.s32"));
    }
    ts::kernel b = ts::jit(tessel_test::gemm_row_amax<64, 64>{}, {.schedule = s});
    EXPECT_THAT(b.stage("ptx"), HasSubstr(".max.s32"));
  }
}

TEST_F(ReduceJit, TwoOutputsInEverySchedule) {
  for (ts::schedule s : kSchedules) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(tessel_test::gemm_bias_gelu_two_outputs<128, 128>{}, {.schedule = s});
    EXPECT_THAT(k.stage("ptx"), HasSubstr(".entry"));
  }
}

// Kernels without a dot reduce through shared memory (Epilogue.cpp): they compile to a cubin with
// one dynamic shared f32 slot per row (column) of each reduction.
TEST_F(ReduceJit, ElementwiseKernelsReduce) {
  ts::kernel k = ts::jit(tessel_test::elementwise_row_sum{});
  EXPECT_EQ(k.resources().shared_bytes, 64u * 4);
  ts::kernel stats = ts::jit(tessel_test::elementwise_row_stats{});
  const ts::kernel_resources r = stats.resources();
  EXPECT_EQ(r.shared_bytes, (64u + 64u + 128u) * 4);
  EXPECT_EQ(r.threads, 128u);
  EXPECT_EQ(r.spill_stores, 0);
  const std::string ptx = stats.stage("ptx");
  EXPECT_THAT(ptx, HasSubstr("red.shared.add.f32"));
  EXPECT_THAT(ptx, HasSubstr("red.shared.max.s32"));
  EXPECT_THAT(ptx, HasSubstr("red.shared.min.u32"));
  EXPECT_THAT(ptx, HasSubstr("atom.global.add.f32"));
}

TEST_F(ReduceJit, GemmWhoseAccumulatorIsUnusedIsAnError) {
  // Before: the canonicalizer removed the mainloop and the error said "not in kernels without a
  // ts::dot" of a kernel that has one.
  const std::string e = tessel_test::jit_error(tessel_test::gemm_reducing_the_wrong_tile{}, {});
  EXPECT_THAT(e, HasSubstr("tessel: scheduling failed (kernel '"));
  EXPECT_THAT(e, HasSubstr("reduce_kernels.hpp:"));
  EXPECT_THAT(e, HasSubstr(": error: the result of ts::dot is never used: no store of the kernel reads "
                           "the accumulator, so the mainloop computes nothing the kernel writes (store "
                           "the accumulator, or an expression of it, after the loop)\n"));
  EXPECT_THAT(e, Not(HasSubstr("IR reproducer")));
}

} // namespace
