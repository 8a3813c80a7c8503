//===- ScalarJitTest.cpp - ts::scalar kernels through the JIT, no GPU -----===//
//
// A kernel with runtime scalar parameters (docs/scalars.md) compiles in every
// schedule and as an elementwise kernel, with the scalars as .f32 / .u32 PTX
// parameters; a launch with a wrong kind of value is a tessel::error naming the
// argument and the rule (asserted verbatim), raised before any GPU is looked
// for, and the process goes on. No GPU is needed.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scalar_kernels.hpp"
#include "scoped_env.hpp"
#include "temp_dir.hpp"

namespace ts = tessel;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const void *fake(std::uintptr_t a) { return reinterpret_cast<const void *>(a); }

template <class... Args>
std::string launchError(const ts::kernel &k, ts::grid g, const Args &...args) {
  try {
    k.launch(nullptr, g, args...);
  } catch (const ts::error &e) {
    return e.what();
  }
  return "";
}

class ScalarJit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_FALLBACK", "quiet"};
  ts::tensor_arg mat(std::uintptr_t addr, std::int64_t r, std::int64_t c) {
    return ts::view<ts::bf16>(fake(addr), {r, c});
  }
};

TEST_F(ScalarJit, CompilesInEverySchedule) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::multistage, ts::schedule::warp_specialized,
                         ts::schedule::cooperative, ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(tessel_test::gemm_alpha_beta<128, 128>{}, {.schedule = s});
    std::string ptx = k.stage("ptx");
    // A (ptr, 2 sizes, 2 strides) and B are parameters 0-9; alpha and beta follow as f32 values.
    EXPECT_THAT(ptx, HasSubstr(".param .f32 " + k.name() + "_param_10,"));
    EXPECT_THAT(ptx, HasSubstr(".param .f32 " + k.name() + "_param_11,"));
    EXPECT_THAT(k.stage("lower-to-nvvm"), HasSubstr("\"scalar:2\", \"scalar:3\""));
  }
  ts::kernel ew = ts::jit(tessel_test::scale_shift{});
  EXPECT_THAT(ew.stage("ptx"), HasSubstr(".param .f32 " + ew.name() + "_param_3,"));
  EXPECT_THAT(ew.stage("ptx"), HasSubstr(".param .u32 " + ew.name() + "_param_4,"));
}

TEST_F(ScalarJit, TheC0TileGoesThroughSharedMemoryWholeOrChunkByChunk) {
  // tessel-lower-epilogue rules 6 and 7, in the warp-specialized schedules: a 128 x 128 C0 tile
  // fits beside the ring (each consumer loads its rows into shared memory with TMA, the epilogue
  // reads them with ldmatrix); 128 x 192 and cooperative 256 x 128 ones do not: they are loaded
  // chunk by chunk into the staging buffers (after an L2 prefetch of their chunks). Rule 8 (L2
  // only) is left to f32 operands (lit lower-epilogue C0-L2). tma and multistage have no
  // producer warp and read C0 from memory.
  const std::string prefetch = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile";
  const std::string ldmatrix = "ldmatrix.sync.aligned.m8n8.x4.shared.b16";
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::cooperative, ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(tessel_test::gemm_alpha_beta<128, 128>{}, {.schedule = s});
    EXPECT_THAT(k.stage("lower-epilogue"), HasSubstr("{hopper.prefetch = \"tma_smem\"}"));
    EXPECT_THAT(k.stage("lower-to-nvvm"), HasSubstr("\"tmaoperand:4:64x64:128\""));
    EXPECT_THAT(k.stage("ptx"), Not(HasSubstr(prefetch)));
    EXPECT_THAT(k.stage("ptx"), HasSubstr(ldmatrix));
    ts::kernel wide = ts::jit(tessel_test::gemm_alpha_beta<128, 192>{}, {.schedule = s});
    EXPECT_THAT(wide.stage("lower-epilogue"), HasSubstr("{hopper.prefetch = \"tma_chunk\"}"));
    EXPECT_THAT(wide.stage("lower-to-nvvm"), HasSubstr("\"tmaoperand:4:64x64:128\""));
    EXPECT_THAT(wide.stage("ptx"), HasSubstr(prefetch));
    EXPECT_THAT(wide.stage("ptx"), HasSubstr(ldmatrix));
  }
  ts::kernel tall = ts::jit(tessel_test::gemm_alpha_beta<256, 128>{}, {.schedule = ts::schedule::cooperative});
  EXPECT_THAT(tall.stage("lower-epilogue"), HasSubstr("{hopper.prefetch = \"tma_chunk\"}"));
  EXPECT_THAT(tall.stage("ptx"), HasSubstr(ldmatrix));
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::multistage}) {
    const std::string ptx = ts::jit(tessel_test::gemm_alpha_beta<128, 128>{}, {.schedule = s}).stage("ptx");
    EXPECT_THAT(ptx, Not(HasSubstr(prefetch)));
    EXPECT_THAT(ptx, Not(HasSubstr("tmaoperand")));
  }
}

TEST_F(ScalarJit, OneKernelPerProgramNotPerValue) {
  tessel_test::scoped_env cached{"TESSEL_DISABLE_CACHE", nullptr};
  const tessel_test::temp_dir dir("tessel-scalar-cache");
  tessel_test::scoped_env cacheDir{"TESSEL_CACHE_DIR", dir.path.c_str()};
  const std::uint64_t before = ts::detail::kernels_built();
  ts::kernel a = ts::jit(tessel_test::scale_shift{}, {.dump_dir = ""});
  const std::uint64_t afterFirst = ts::detail::kernels_built();
  EXPECT_LE(afterFirst, before + 1);
  // The values are launch arguments: a second jit of the same program is an in-memory cache hit.
  ts::kernel b = ts::jit(tessel_test::scale_shift{}, {.dump_dir = ""});
  EXPECT_EQ(ts::detail::kernels_built(), afterFirst);
  // Launches with any values pass the scalar checks (arguments 1 and 2) and stop at the GPU check:
  // no GPU, or (with one) the fake pointer of argument 0; nothing is built.
  auto X = ts::view<ts::f32>(fake(0x7f0000100000), {4096}), Y = ts::view<ts::f32>(fake(0x7f0000200000), {4096});
  for (float alpha : {0.5f, -3.0f})
    EXPECT_THAT(launchError(a, ts::grid{4}, X, alpha, 7, Y),
                AllOf(Not(HasSubstr("argument 1")), Not(HasSubstr("argument 2"))));
  EXPECT_EQ(ts::detail::kernels_built(), afterFirst);
}

TEST_F(ScalarJit, LaunchErrorsNameTheArgumentAndTheRule) {
  ts::kernel k = ts::jit(tessel_test::gemm_alpha_beta<128, 128>{}, {.schedule = ts::schedule::tma});
  const std::string head = "tessel: kernel '" + k.name() + "' argument ";
  auto A = mat(0x7f0000100000, 256, 128), B = mat(0x7f0000200000, 256, 128);
  auto D = mat(0x7f0000300000, 256, 256), C = mat(0x7f0000400000, 256, 256);
  const ts::grid g{2, 2};
  // An integer for an f32 scalar: not converted (an argument-order slip would otherwise pass).
  EXPECT_EQ(launchError(k, g, A, B, 2, 0.5f, D, C),
            head + "2: expected a floating-point value for ts::scalar<ts::f32>, got the integer 2; write it as a "
                   "float (2.0f): integers are not converted");
  // A tensor where a scalar is expected, and a scalar where a tensor is expected.
  EXPECT_EQ(launchError(k, g, A, B, 1.5f, D, D, C),
            head + "3: expected a scalar value for ts::scalar<ts::f32>, got a tensor; pass a float (1.5f) or "
                   "ts::value(x)");
  EXPECT_EQ(launchError(k, g, A, B, 1.5f, 0.5f, 1.0f, C),
            head + "4: expected a tensor (rank 2, bf16), got a scalar value; pass a ts::view");
  // A double that f32 cannot hold.
  EXPECT_EQ(launchError(k, g, A, B, 1e300, 0.5f, D, C),
            head + "2: the value 1e+300 for ts::scalar<ts::f32> is outside the f32 range (|x| <= 3.40282e+38)");
  // Doubles in range are rounded to f32 like a C++ conversion: accepted (the launch then fails
  // only for want of a GPU or because the fake pointers are not device memory).
  EXPECT_THAT(launchError(k, g, A, B, 1.5, ts::value(-0.25), D, C), Not(HasSubstr("argument 2")));
  EXPECT_THAT(launchError(k, g, A, B, 1.5, ts::value(-0.25), D, C), Not(HasSubstr("argument 3")));

  ts::kernel ew = ts::jit(tessel_test::scale_shift{});
  const std::string ewHead = "tessel: kernel '" + ew.name() + "' argument ";
  auto X = ts::view<ts::f32>(fake(0x7f0000100000), {4096}), Y = ts::view<ts::f32>(fake(0x7f0000200000), {4096});
  EXPECT_EQ(launchError(ew, ts::grid{4}, X, 0.5f, 2.5f, Y),
            ewHead + "2: expected an integer value for ts::scalar<ts::i32>, got the floating-point value 2.5; pass "
                     "an integer (floating-point values are not converted)");
  EXPECT_EQ(launchError(ew, ts::grid{4}, X, 0.5f, std::int64_t(1) << 40, Y),
            ewHead + "2: the value 1099511627776 for ts::scalar<ts::i32> is outside the i32 range (-2147483648 .. "
                     "2147483647)");
  EXPECT_EQ(launchError(ew, ts::grid{4}, X, 0.5f, 3u, X, Y),
            "tessel: kernel '" + ew.name() + "': expected 4 arguments, got 5");
  // The process goes on: the same kernel still takes valid scalars (up to the GPU check, or with a
  // GPU the fake pointer of argument 0).
  EXPECT_THAT(launchError(ew, ts::grid{4}, X, 0.5f, -3, Y),
              AllOf(Not(HasSubstr("argument 1")), Not(HasSubstr("argument 2"))));
}

} // namespace
