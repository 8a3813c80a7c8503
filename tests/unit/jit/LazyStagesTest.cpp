//===- LazyStagesTest.cpp - stages made on demand equal the recorded ones -===//
//
// ts::jit without a dump directory or TESSEL_VERBOSE records only the traced stage
// (01-tessel.mlir); kernel::stage makes the others on demand by compiling that text again with
// the same options (CompiledKernel::restage). They must be the very bytes a compile that
// records them writes: for several schedules, every stage of a kernel compiled lazily is
// compared with the dump of the same kernel compiled with a dump directory.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "file_text.hpp"
#include "scoped_env.hpp"
#include "02_gemm/gemm.hpp"
#include "03_gemm_bias_relu/gemm_bias_relu.hpp"

namespace ts = tessel;
namespace fs = std::filesystem;

namespace {

const char* const kStages[] = {"01-tessel.mlir",
                               "02-select-schedule.mlir",
                               "03-materialize-tile-scheduler.mlir",
                               "04-insert-async-copies.mlir",
                               "05-warp-specialize.mlir",
                               "06-schedule-mma.mlir",
                               "07-lower-epilogue.mlir",
                               "08-allocate-resources.mlir",
                               "09-lower-to-nvvm.mlir",
                               "10-convert-hopper-to-nvvm.mlir",
                               "11-convert-to-llvm.mlir",
                               "12-kernel.ll",
                               "13-kernel.opt.ll",
                               "14-kernel.ptx"};

class LazyStages : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env dumpEnv{"TESSEL_DUMP_DIR", std::nullopt};
  tessel_test::scoped_env verboseEnv{"TESSEL_VERBOSE", std::nullopt};
  fs::path dir;

  void SetUp() override {
    dir = fs::temp_directory_path() / ("tessel-lazy-stages-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// `lazy` (no dump) and `eager` (dumped into dir) are the same kernel compiled both ways.
  void expectSameStages(ts::kernel& lazy, ts::kernel& eager) {
    for (const char* stage : kStages) {
      const std::string dumped = tessel_test::file_text(dir / stage);
      ASSERT_FALSE(dumped.empty()) << stage << " was not dumped";
      EXPECT_TRUE(lazy.stage(stage) == dumped) << stage << " made on demand differs from the recorded one";
      EXPECT_TRUE(eager.stage(stage) == dumped) << stage;
    }
    // The names kernel::stage documents go through the same texts.
    EXPECT_EQ(lazy.stage("lower-to-nvvm"), tessel_test::file_text(dir / "09-lower-to-nvvm.mlir"));
    EXPECT_EQ(lazy.stage("opt.ll"), tessel_test::file_text(dir / "13-kernel.opt.ll"));
    EXPECT_EQ(lazy.stage("ptx"), eager.stage("ptx"));
    EXPECT_EQ(lazy.stage("cubin").size(), eager.stage("cubin").size());
  }

  template <class F>
  void check(F functor, ts::options o) {
    // One ts::jit call site: its source position is part of the traced program.
    auto jit = [&](const ts::options& x) { return ts::jit(functor, x); };
    ts::kernel lazy = jit(o);
    ts::options dumped = o;
    dumped.dump_dir = dir.string();
    ts::kernel eager = jit(dumped);
    expectSameStages(lazy, eager);
  }
};

TEST_F(LazyStages, Cooperative128x256) {
  check(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::cooperative});
}

TEST_F(LazyStages, Multistage128x256) {
  check(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::multistage});
}

TEST_F(LazyStages, PingpongStreamK) {
  check(examples::gemm<128, 128, 64>{},
        {.schedule = ts::schedule::pingpong, .decomposition = ts::decomposition::stream_k});
}

TEST_F(LazyStages, TmaBiasReluSwizzle64Stages3) {
  check(examples::gemm_bias_relu<128, 128, 64>{}, {.schedule = ts::schedule::tma, .stages = 3, .swizzle = 64});
}

TEST_F(LazyStages, CooperativeCluster2x1) {
  check(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::cooperative, .cluster = {2, 1}});
}

TEST_F(LazyStages, Automatic) { check(examples::gemm<128, 256, 64>{}, {}); }

}  // namespace
