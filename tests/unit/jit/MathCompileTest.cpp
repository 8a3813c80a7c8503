//===- MathCompileTest.cpp - every DSL math function compiles to a cubin ---===//
//
// Each public math function (tests/support/math_functions.hpp) in an
// elementwise kernel and in the GEMM epilogue of each of the five schedules,
// through the whole JIT (trace, passes, LLVM's NVPTX backend, ptxas). No GPU
// is needed. Before tessel-legalize-math, tanh and gelu aborted the process
// (`LLVM ERROR: Cannot select ... ftanh`) and exp, log, sigmoid and silu
// ended it (`no libcall available for fexp`). The GPU numerics of the same
// kernels are tests/gpu/math_test.cpp.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "math_functions.hpp"
#include "scoped_env.hpp"
#include "text_count.hpp"

namespace ts = tessel;
using tessel_test::math_case;
using ::testing::HasSubstr;
using ::testing::Not;
using tessel_test::count_of;

namespace {

/// The PTX instruction a function's fast path must show (empty: none to check).
std::string fastPath(const std::string& fn) {
  if (fn == "exp" || fn == "exp2" || fn == "sigmoid" || fn == "silu") return "ex2.approx.f32";
  if (fn == "log") return "lg2.approx.f32";
  if (fn == "tanh" || fn == "gelu") return "tanh.approx.f32";
  return "";
}

class MathCompile : public ::testing::TestWithParam<math_case> {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
};

TEST_P(MathCompile, ElementwiseKernel) {
  const math_case& c = GetParam();
  ts::kernel k;
  ASSERT_NO_THROW(k = c.jit_elementwise({})) << c.name;
  std::string ptx = k.stage("ptx");
  if (!fastPath(c.name).empty()) {
    EXPECT_THAT(ptx, HasSubstr(fastPath(c.name))) << c.name;
    // The multi-function unit in the machine code (kernel::stage("sass"): cuobjdump of the
    // cubin, where the toolkit has cuobjdump: the GPU machine's does, CI's may not).
    std::string sass;
    try {
      sass = k.stage("sass");
    } catch (const ts::error& e) {
      EXPECT_THAT(e.what(), HasSubstr("stage 'sass' needs cuobjdump from the CUDA toolkit"));
    }
    if (!sass.empty()) EXPECT_THAT(sass, HasSubstr("MUFU.")) << c.name;
  }
  EXPECT_THAT(ptx, Not(HasSubstr(".extern .func"))) << c.name << ": calls a library function";
}

TEST_P(MathCompile, GemmEpilogueOfEverySchedule) {
  const math_case& c = GetParam();
  for (ts::schedule s : tessel_test::all_schedules()) {
    SCOPED_TRACE(c.name + " in the epilogue of " + ts::to_string(s));
    ts::options o;
    o.schedule = s;
    o.stages = s == ts::schedule::multistage ? 3 : 4;
    ts::kernel k;
    ASSERT_NO_THROW(k = c.jit_gemm(o));
    std::string ptx = k.stage("ptx");
    if (!fastPath(c.name).empty()) EXPECT_THAT(ptx, HasSubstr(fastPath(c.name)));
    EXPECT_THAT(ptx, Not(HasSubstr(".extern .func")));
  }
}

// options::fp_contract (on by default, as nvcc's --fmad=true): GELU's multiply-add pairs become
// fma.rn.f32, per element two fma and three mul around tanh.approx (Tracer.cpp writes the formula
// for it), next to the test's own scaling of the accumulator (one mul); off, every multiply and
// add is rounded on its own (mul.rn / add.rn, which ptxas keeps): six mul and two add.
TEST(FpContract, GeluFusesMultiplyAddsUnlessTurnedOff) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  const math_case* gelu = nullptr;
  for (const math_case& c : tessel_test::math_cases())
    if (c.name == "gelu") gelu = &c;
  ASSERT_NE(gelu, nullptr);
  ts::options o;
  o.schedule = ts::schedule::tma;  // no stream-K partial sums among the adds
  std::string fused = gelu->jit_gemm(o).stage("ptx");
  const int elements = count_of(fused, "tanh.approx.f32");
  ASSERT_GT(elements, 0);
  EXPECT_EQ(count_of(fused, "fma.rn.f32"), 2 * elements);
  EXPECT_EQ(count_of(fused, "mul.f32"), 4 * elements);
  EXPECT_EQ(count_of(fused, "mul.rn.f32") + count_of(fused, "add.rn.f32") + count_of(fused, "add.f32"), 0);
  o.fp_contract = false;
  std::string unfused = gelu->jit_gemm(o).stage("ptx");
  EXPECT_EQ(count_of(unfused, "tanh.approx.f32"), elements);
  EXPECT_EQ(count_of(unfused, "fma.rn.f32"), 0);
  EXPECT_EQ(count_of(unfused, "mul.rn.f32"), 6 * elements);
  EXPECT_EQ(count_of(unfused, "add.rn.f32"), 2 * elements);
}

INSTANTIATE_TEST_SUITE_P(AllFunctions, MathCompile, ::testing::ValuesIn(tessel_test::math_cases()),
                         [](const ::testing::TestParamInfo<math_case>& i) { return i.param.name; });

}  // namespace
