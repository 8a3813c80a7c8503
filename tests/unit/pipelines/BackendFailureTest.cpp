//===- BackendFailureTest.cpp - no backend failure ends the process -------===//
//
// A construct the NVPTX backend cannot select, driven through the whole
// compile pipeline (compileModule: passes, LLVM, NVPTX), must come back as a
// tessel::error naming the kernel and its location, with an IR reproducer on
// disk; and LLVM must still work afterwards in the same process. Before
// Target/PTX.cpp's guard, LLVM aborted the process (exit 134).
//
//===----------------------------------------------------------------------===//

#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Target/PTX.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "file_text.hpp"
#include "scoped_env.hpp"

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

namespace {

/// An elementwise tessel kernel applying `op` (a math op name) to a 256-element tile.
std::string kernelText(const std::string& name, const std::string& op) {
  return "module {\n"
         "  func.func @" + name + "(%arg0: !tessel.ref<1 x f32>, %arg1: !tessel.ref<1 x f32>) "
         "attributes {tessel.kernel} {\n"
         "    %0 = tessel.program_id 0\n"
         "    %c256 = arith.constant 256 : index\n"
         "    %1 = arith.muli %0, %c256 : index\n"
         "    %2 = tessel.load %arg0[%1] : !tessel.ref<1 x f32> -> tensor<256xf32>\n"
         "    %3 = " + op + " %2 : tensor<256xf32> loc(\"user_kernel.cpp\":42:7)\n"
         "    tessel.store %3, %arg1[%1] : tensor<256xf32>, !tessel.ref<1 x f32>\n"
         "    return\n"
         "  } loc(\"user_kernel.cpp\":30:1)\n"
         "}\n";
}

class BackendFailure : public ::testing::Test {
protected:
  tessel_test::scoped_env dumpEnv{"TESSEL_DUMP_DIR", std::nullopt};
  fs::path dir;
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;

  void SetUp() override {
    dir = fs::temp_directory_path() / ("tessel-backend-failure-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    tessel::registerAllDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  void TearDown() override { fs::remove_all(dir); }

  /// compileModule on `text`; returns the tessel::error's message ("" if none was thrown).
  std::string compileError(const std::string& text, tessel::CompileMode mode = {}) {
    mlir::OwningOpRef<mlir::ModuleOp> m = mlir::parseSourceString<mlir::ModuleOp>(text, ctx.get());
    EXPECT_TRUE(m) << "the test's IR does not parse";
    if (!m) return {};
    tessel::options o;
    o.dump_dir = dir.string();
    try {
      tessel::compileModule(*m, o, mode);
    } catch (const tessel::error& e) {
      return e.what();
    }
    return {};
  }
};

TEST_F(BackendFailure, UnselectableOpIsAnErrorWithLocationAndReproducer) {
  std::string what = compileError(kernelText("sine", "math.sin"));
  EXPECT_EQ(what,
            "tessel: PTX generation failed (kernel 'sine'):\n"
            "user_kernel.cpp:30:1: error: LLVM's NVPTX backend failed: Cannot select: f32 = fsin\n"
            "IR reproducer: " + (dir / "failed-sine").string() + "/\n");
  // The reproducer: every stage so far and the failing step's input, with locations.
  EXPECT_TRUE(fs::exists(dir / "failed-sine" / "01-tessel.mlir"));
  EXPECT_TRUE(fs::exists(dir / "failed-sine" / "11-convert-to-llvm.mlir"));
  std::string input = tessel_test::file_text(dir / "failed-sine" / "failing-step-input.mlir");
  EXPECT_THAT(input, HasSubstr("llvm.intr.sin"));
  EXPECT_THAT(input, HasSubstr("user_kernel.cpp"));
  EXPECT_FALSE(fs::exists(dir / "failed-sine" / "sine.ptx")) << "no PTX was made";
}

// Compiled without recording the stages (ts::jit without a dump): the failure compiles the
// traced text again recording them, so the error and the reproducer are the same.
TEST_F(BackendFailure, WithoutRecordedStagesTheReproducerIsTheSame) {
  tessel::CompileMode lazy;
  lazy.recordStages = false;
  std::string what = compileError(kernelText("sine", "math.sin"), lazy);
  EXPECT_EQ(what,
            "tessel: PTX generation failed (kernel 'sine'):\n"
            "user_kernel.cpp:30:1: error: LLVM's NVPTX backend failed: Cannot select: f32 = fsin\n"
            "IR reproducer: " + (dir / "failed-sine").string() + "/\n");
  EXPECT_TRUE(fs::exists(dir / "failed-sine" / "01-tessel.mlir"));
  EXPECT_TRUE(fs::exists(dir / "failed-sine" / "11-convert-to-llvm.mlir"));
  EXPECT_THAT(tessel_test::file_text(dir / "failed-sine" / "failing-step-input.mlir"), HasSubstr("llvm.intr.sin"));
  // And a kernel that compiles is unaffected.
  EXPECT_EQ(compileError(kernelText("fine", "math.exp"), lazy), "");
}

TEST_F(BackendFailure, LlvmStillWorksAfterwardsAndAgain) {
  for (int round = 0; round < 3; ++round) {
    EXPECT_THAT(compileError(kernelText("pow_like", "math.cos")),
                HasSubstr("LLVM's NVPTX backend failed: Cannot select: f32 = fcos"))
        << "round " << round;
    // A correct kernel in the same process, after the longjmp out of LLVM.
    EXPECT_EQ(compileError(kernelText("fine", "math.exp")), "") << "round " << round;
  }
}

// The error-diagnostic path (no libcall) through translateToPTX alone.
TEST_F(BackendFailure, MissingLibcallIsAnErrorNotAnExit) {
  const char* text = R"(
    llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      %y = llvm.intr.exp(%x) : (f32) -> f32
      llvm.store %y, %p : f32, !llvm.ptr<1>
      llvm.return
    } loc("lib.cpp":7:1)
  )";
  mlir::OwningOpRef<mlir::ModuleOp> m = mlir::parseSourceString<mlir::ModuleOp>(text, ctx.get());
  ASSERT_TRUE(m);
  std::string diag;
  mlir::ScopedDiagnosticHandler h(ctx.get(), [&](mlir::Diagnostic& d) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << d.getLocation() << ": " << d;
    diag += s;
    return mlir::success();
  });
  EXPECT_TRUE(mlir::failed(mlir::tessel::translateToPTX(*m, {})));
  EXPECT_THAT(diag, StartsWith("loc(\"lib.cpp\":7:1): LLVM's NVPTX backend failed: no libcall "
                               "available for fexp; Cannot select: "));
}

}  // namespace
