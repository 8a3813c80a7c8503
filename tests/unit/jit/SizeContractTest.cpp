//===- SizeContractTest.cpp - the traced program's shape relations --------===//
//
// ts::jit derives from the traced program which argument dimensions must
// agree (A's K and B's K, C's rows and A's rows, the bias and B's rows) and
// checks them at launch, before it looks for a GPU: a mismatch is a
// tessel::error naming both arguments and dimensions, and the K == 0 GEMM is
// launched (multistage variant) rather than skipped. No GPU is needed.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "02_gemm/gemm.hpp"
#include "03_gemm_bias_relu/gemm_bias_relu.hpp"
#include "file_text.hpp"
#include "jit_error.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

// Every launch here throws (a contract, or no GPU / fake addresses); launch_error returns the message.
using tessel_test::launch_error;

class SizeContracts : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_FALLBACK", "quiet"};
  ts::kernel gemm = ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::cooperative});
  ts::tensor_arg mat(std::uintptr_t addr, std::int64_t r, std::int64_t c) {
    return ts::view<ts::bf16>(fake(addr), {r, c});
  }
};

TEST_F(SizeContracts, MismatchedKNamesBothArguments) {
  // A: 192 x 128, B: 64 x 64 (K = 64), C: 192 x 64 (the issue's report: it ran over min(K_A, K_B)).
  std::string what = launch_error(gemm, ts::grid{2, 1}, mat(0x7f0000100000, 192, 128), mat(0x7f0000200000, 64, 64),
                                 mat(0x7f0000300000, 192, 64));
  EXPECT_THAT(what, HasSubstr("tessel: kernel '" + gemm.name() +
                              "': argument 1 dimension 1 has size 64 but argument 0 dimension 1 has size 128; "
                              "they must be equal: the program reads or writes both at the same offsets with the "
                              "same tile extent ("));
  EXPECT_THAT(what, ContainsRegex("02_gemm/gemm.hpp:[0-9]+:[0-9]+ and .*02_gemm/gemm.hpp:[0-9]+:[0-9]+\\)$"));
}

TEST_F(SizeContracts, OutputMustMatchTheOperands) {
  std::string rows = launch_error(gemm, ts::grid{2, 1}, mat(0x7f0000100000, 192, 128),
                                 mat(0x7f0000200000, 64, 128), mat(0x7f0000300000, 191, 64));
  EXPECT_THAT(rows, HasSubstr("argument 2 dimension 0 has size 191 but argument 0 dimension 0 has size 192"));
  std::string cols = launch_error(gemm, ts::grid{2, 1}, mat(0x7f0000100000, 192, 128),
                                 mat(0x7f0000200000, 64, 128), mat(0x7f0000300000, 192, 65));
  EXPECT_THAT(cols, HasSubstr("argument 2 dimension 1 has size 65 but argument 1 dimension 0 has size 64"));
}

TEST_F(SizeContracts, BiasLengthMustMatchN) {
  ts::kernel k = ts::jit(examples::gemm_bias_relu<128, 128, 64>{}, {.schedule = ts::schedule::tma});
  std::string what = launch_error(k, ts::grid{2, 1}, mat(0x7f0000100000, 192, 128), mat(0x7f0000200000, 64, 128),
                                 ts::view<ts::bf16>(fake(0x7f0000400000), {63}), mat(0x7f0000300000, 192, 64));
  EXPECT_THAT(what, HasSubstr("argument 2 dimension 0 has size 63 but argument 1 dimension 0 has size 64"));
}

TEST_F(SizeContracts, ConsistentArgumentsGetPastTheContracts) {
  std::string what = launch_error(gemm, ts::grid{2, 1}, mat(0x7f0000100000, 192, 128),
                                 mat(0x7f0000200000, 64, 128), mat(0x7f0000300000, 192, 64));
  EXPECT_THAT(what, Not(HasSubstr("must be equal")));
}

TEST_F(SizeContracts, EmptyProblems) {
  // M == 0 with a grid built from it (cdiv(0, 128) == 0): nothing to do, no error, no GPU needed.
  EXPECT_EQ(launch_error(gemm, ts::grid{0, 1}, mat(0, 0, 128), mat(0x7f0000200000, 64, 128), mat(0, 0, 64)), "");
  // K == 0 with ts::view's strides: launched (C gets the epilogue of a zero accumulator) through the
  // multistage variant, so it gets as far as the GPU (absent here, or fake addresses there).
  std::string what = launch_error(gemm, ts::grid{2, 1}, mat(0, 192, 0), mat(0, 64, 0), mat(0x7f0000300000, 192, 64));
  EXPECT_THAT(what, Not(HasSubstr("stride")));
  EXPECT_THAT(what, Not(HasSubstr("must be equal")));
  EXPECT_NE(what, "") << "a K == 0 GEMM must be launched, not skipped";
}

}  // namespace

namespace {

/// ts::jit's error for a GEMM with `o` ("" if none). It calls ts::jit itself rather than through
/// tessel_test::jit_error: option errors point at the ts::jit call, which the test below expects
/// in this file.
std::string jitError(const ts::options& o) {
  try {
    ts::jit(examples::gemm<128, 128, 64>{}, o);
  } catch (const ts::error& e) {
    return e.what();
  }
  return "";
}

TEST(OptionErrors, TwoLinesAtTheUsersSourceWithoutIR) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_VERBOSE", std::nullopt};
  const std::string head = "tessel: scheduling failed \\(kernel 'examples_gemm_128_128_64'\\):\n";
  // The location of the user's ts::jit call (in jitError above), where the options are given.
  const std::string at = "^" + head + ".*tests/unit/jit/SizeContractTest\\.cpp:[0-9]+:[0-9]+: error: ";
  struct Case {
    ts::options o;
    std::string message;
  };
  std::vector<Case> cases = {
      {{.schedule = ts::schedule::cooperative, .cluster = {0, 1}},
       "option cluster = \\{0, 1\\} is not supported: use \\{1, 1\\}, \\{2, 1\\} or \\{1, 2\\}"},
      {{.schedule = ts::schedule::cooperative, .cluster = {2, 2}},
       "option cluster = \\{2, 2\\} is not supported: use \\{1, 1\\}, \\{2, 1\\} or \\{1, 2\\}"},
      {{.schedule = ts::schedule::tma, .swizzle = 48},
       "option swizzle = 48 is not one of 0 \\(automatic\\), 128, 64, 32, -1 \\(none\\)"},
      {{.schedule = ts::schedule::tma, .raster_group = -1},
       "option raster-group \\(options::raster_group\\) must be in \\[0, 1024\\] \\(0: the default, 8, or 16 for tiles of at most 64 rows\\), got -1"},
      // Options that a schedule cannot take are the options' errors too (not the dot's).
      {{.schedule = ts::schedule::multistage, .cluster = {2, 1}},
       "cluster 2x1 needs a persistent schedule \\(cooperative or pingpong\\), got 'multistage'"},
      {{.schedule = ts::schedule::warp_specialized, .cluster = {2, 1}},
       "cluster 2x1 needs a persistent schedule \\(cooperative or pingpong\\), got 'warp_specialized'"},
      {{.schedule = ts::schedule::tma, .decomposition = ts::decomposition::stream_k},
       "decomposition stream-k needs schedule 'cooperative' or 'pingpong' with a 1x1 cluster, got 'tma' with "
       "cluster 1x1"},
      {{.schedule = ts::schedule::multistage, .decomposition = ts::decomposition::stream_k},
       "decomposition stream-k needs schedule 'cooperative' or 'pingpong' with a 1x1 cluster, got 'multistage'"},
      {{.schedule = ts::schedule::tma, .stages = -2},
       "stages must be at least 2, 0 \\(tessel's choice\\) or -1 \\(as many as fit\\), got -2"},
      {{.schedule = ts::schedule::cooperative, .stages = 1},
       "schedule 'cooperative' needs at least 2 stages \\(a stage is released one k-step late\\), got 1"},
      {{.schedule = ts::schedule::multistage, .stages = 1}, "schedule 'multistage' needs at least 2 stages, got 1"},
      {{.schedule = ts::schedule::multistage, .swizzle = 64},
       "schedule 'multistage' has its own XOR swizzle for ldmatrix: option swizzle must be 0 \\(automatic\\), got 64"},
      // A value that is no enumerator (a cast) is rejected like an unknown schedule, not taken as auto.
      {{.schedule = ts::schedule::cooperative, .decomposition = static_cast<ts::decomposition>(7)},
       "unknown decomposition 'ts::decomposition\\(7\\)' \\(expected auto, data-parallel or stream-k\\)"},
      {{.schedule = static_cast<ts::schedule>(9)},
       "unknown schedule 'ts::schedule\\(9\\)' \\(expected tma, multistage, warp_specialized, cooperative, pingpong "
       "or auto\\)"},
  };
  for (const Case& c : cases) {
    std::string what = jitError(c.o);
    EXPECT_THAT(what, ::testing::MatchesRegex(at + c.message + "\n")) << what;
    EXPECT_THAT(what, Not(HasSubstr("func.func"))) << "the IR is printed only under TESSEL_VERBOSE";
    EXPECT_THAT(what, Not(HasSubstr("reproducer"))) << "a user error is not a compiler failure";
  }
}

using tessel_test::jit_error;

/// Stores acc + acc.T(): each thread holds its own fragment, not the element across the diagonal.
struct acc_plus_transpose {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::f32, 2> C) const {
    auto m = ts::program_id(0) * ts::c<128>, n = ts::program_id(1) * ts::c<128>;
    auto acc = ts::zeros<ts::f32>(ts::c<128>, ts::c<128>);
    for (auto k : ts::range(0, A.size(1), ts::c<64>))
      acc += ts::dot(A.load({m, k}, ts::c<128>, ts::c<64>), B.load({n, k}, ts::c<128>, ts::c<64>).T());
    C.store({m, n}, acc + acc.T());
  }
};

// The program's fault, found when it is scheduled: the user's line, no IR reproducer (it came as
// "planning the kernel failed (tessel-lower-epilogue)" with a reproducer before).
TEST(ProgramErrors, AnEpilogueReadingTheAccumulatorBothWaysIsTheUsersError) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_VERBOSE", std::nullopt};
  const std::string what = jit_error(acc_plus_transpose{}, {.schedule = ts::schedule::pingpong});
  EXPECT_THAT(what, ::testing::StartsWith("tessel: scheduling failed (kernel '"));
  EXPECT_THAT(what, HasSubstr("SizeContractTest.cpp:"));
  EXPECT_THAT(what, HasSubstr("error: this store reads the accumulator both as is and transposed (acc.T()): each "
                              "thread holds its own fragment of the tile, not the element across the diagonal; "
                              "store the two separately"));
  EXPECT_THAT(what, Not(HasSubstr("reproducer")));
  EXPECT_THAT(what, Not(HasSubstr("transpose of the program's"))) << "no remark about a swapped tile";
}

// Tile rules are reported at the user's dot (examples/02_gemm/gemm.hpp), with the numbers that
// hold for the tile: what fits, not a default.
TEST(TileErrors, AtTheUsersDotWithWhatFits) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_VERBOSE", std::nullopt};
  const std::string at = "examples/02_gemm/gemm\\.hpp:[0-9]+:[0-9]+: error: ";
  EXPECT_THAT(jit_error(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong, .stages = 7}),
              ::testing::MatchesRegex("^tessel: scheduling failed \\(kernel 'examples_gemm_128_128_64'\\):\n.*" + at +
                                      "7 stages of 32768 bytes do not fit in shared memory \\(at most 6 beside "
                                      "the epilogue's staging buffers\\)\n"));
  EXPECT_EQ(jit_error(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong, .stages = 6}), "");
  EXPECT_THAT(jit_error(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::pingpong}),
              ::testing::MatchesRegex("^tessel: scheduling failed \\(kernel 'examples_gemm_128_256_64'\\):\n.*" + at +
                                      "schedule 'pingpong' keeps a whole tile per consumer warpgroup, \\(BM / 64\\) "
                                      "x BN / 2 f32 registers per thread: at most 192 \\(128 x 192, 192 x 128, 64 x "
                                      "256\\), got 128 x 256\n"));
  EXPECT_EQ(jit_error(examples::gemm<128, 192, 64>{}, {.schedule = ts::schedule::pingpong}), "");
  // Cooperative 256-row tiles: two consumers of 128 rows, BN <= 192, 3 stages of 56 KiB.
  EXPECT_THAT(jit_error(examples::gemm<256, 256, 64>{}, {.schedule = ts::schedule::cooperative}),
              ::testing::MatchesRegex("^tessel: scheduling failed \\(kernel 'examples_gemm_256_256_64'\\):\n.*" + at +
                                      "schedule 'cooperative' with BM = 256 keeps 128 rows per consumer "
                                      "warpgroup, BN f32 registers per thread: BN must be at most 192, got 256\n"));
  EXPECT_THAT(jit_error(examples::gemm<256, 192, 64>{}, {.schedule = ts::schedule::cooperative, .stages = 4}),
              ::testing::MatchesRegex("^tessel: scheduling failed \\(kernel 'examples_gemm_256_192_64'\\):\n.*" + at +
                                      "4 stages of 57344 bytes do not fit in shared memory \\(at most 3 beside "
                                      "the epilogue's staging buffers\\)\n"));
  EXPECT_THAT(jit_error(examples::gemm<256, 128, 64>{}, {.schedule = ts::schedule::warp_specialized}),
              ::testing::MatchesRegex("^tessel: scheduling failed \\(kernel 'examples_gemm_256_128_64'\\):\n.*" + at +
                                      "schedule 'warp_specialized' needs BM <= 192 \\(one consumer warpgroup per "
                                      "64 rows\\), got 256\n"));
  EXPECT_EQ(jit_error(examples::gemm<256, 192, 64>{}, {.schedule = ts::schedule::cooperative}), "");
}

}  // namespace

namespace {

// TESSEL_DUMP_DIR holds one folder per kernel and options, so that the kernels of one process do
// not overwrite each other's stages (options::dump_dir is the caller's folder for one kernel).
TEST(DumpDir, OneSubfolderPerKernelAndOptions) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessel-dump-subfolders-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env dump{"TESSEL_DUMP_DIR", dir.string()};
  ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma});
  ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong, .stages = 3, .cluster = {2, 1}});
  ts::jit(examples::gemm_bias_relu<128, 128, 64>{}, {.schedule = ts::schedule::cooperative,
                                                     .decomposition = ts::decomposition::data_parallel});
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(dir)) folders.push_back(e.path().filename().string());
  EXPECT_THAT(folders, ::testing::UnorderedElementsAre("examples_gemm_128_128_64.tma",
                                                       "examples_gemm_128_128_64.pingpong.s3.c2x1",
                                                       "examples_gemm_bias_relu_128_128_64.cooperative.data-parallel"));
  for (const std::string& f : folders) {
    EXPECT_TRUE(fs::exists(dir / f / "02-select-schedule.mlir")) << f;
    EXPECT_TRUE(fs::exists(dir / f / "14-kernel.ptx")) << f;
  }
  fs::remove_all(dir);
}

/// One functor type, two programs: the factor is a data member, baked into each.
struct scaled_copy {
  float factor;
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * ts::c<64>;
    Y.store({o}, X.load({o}, ts::c<64>) * factor);
  }
};

TEST(DumpDir, TwoProgramsOfOneNameDoNotShareAFolder) {
  // Before, scaled_copy{3} and scaled_copy{5} both dumped into <name>.auto/: the second
  // overwrote the first's stages. Now the second program takes <name>.auto.p<hash>; the same
  // program again takes its folder again, and a swizzle_none folder says so (.swnone, not .sw-1).
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tessel-dump-programs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env dump{"TESSEL_DUMP_DIR", dir.string()};
  const ts::kernel three = ts::jit(scaled_copy{3.0f});
  ts::jit(scaled_copy{5.0f});
  ts::jit(scaled_copy{3.0f});
  ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma, .swizzle = ts::swizzle_none});
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(dir)) folders.push_back(e.path().filename().string());
  const std::string plain = three.name() + ".auto";
  EXPECT_THAT(folders, ::testing::UnorderedElementsAre(plain, ::testing::MatchesRegex(plain + "\\.p[0-9a-f]{8}"),
                                                       "examples_gemm_128_128_64.tma.swnone"));
  for (const std::string& f : folders)
    if (f.rfind(plain, 0) == 0) {
      const std::string ptx = tessel_test::file_text(dir / f / "14-kernel.ptx");
      // 3.0f is 0f40400000, 5.0f 0f40A00000 in PTX.
      EXPECT_THAT(ptx, HasSubstr(f == plain ? "0f40400000" : "0f40A00000")) << f;
    }
  fs::remove_all(dir);
}

}  // namespace
