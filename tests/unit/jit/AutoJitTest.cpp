//===- AutoJitTest.cpp - schedule::automatic through the real compiler -------===//
//
// ts::jit with schedule::automatic compiles the rule's choice for a large K eagerly; a launch
// whose K makes the rule pick another configuration compiles that variant once (before the
// launch looks for a GPU, so this runs here; the launch then fails with "no GPU" or, on a GPU,
// on the fake addresses). A second launch of the same shape does not compile again.
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jit_error.hpp"
#include "scoped_env.hpp"
#include "triangular_kernels.hpp"
#include "02_gemm/gemm.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

std::string launchStderr(ts::kernel& k, std::int64_t M, std::int64_t N, std::int64_t K) {
  ::testing::internal::CaptureStderr();
  try {
    k.launch(nullptr, ts::grid{unsigned(M / 128), unsigned(N / 128)}, ts::view<ts::bf16>(fake(0x100000), {M, K}),
             ts::view<ts::bf16>(fake(0x200000), {N, K}), ts::view<ts::bf16>(fake(0x300000), {M, N}));
  } catch (const ts::error&) {
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("%s", err.c_str());
  return err;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(AutoJit, ShortKLaunchesThePingpongWholeTileVariantOnceAndLargeKTheEagerKernel) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  ::testing::internal::CaptureStderr();
  ts::kernel k = ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::automatic, .verbose = true});
  std::string jitLog = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(jitLog, HasSubstr("schedule auto: tile 128x128x64, compiling pingpong now"));
  EXPECT_THAT(k.stage("select-schedule"), HasSubstr("pingpong"));

  // K = 4096: the eager choice, no variant.
  std::string big = launchStderr(k, 256, 256, 4096);
  EXPECT_THAT(big, Not(HasSubstr("compiling variant")));
  // K = 1024 (16 k-iterations) on 128 tiles (at least half the GPU, a last wave 97% full):
  // pingpong with whole tiles, compiled once (R3).
  std::string first = launchStderr(k, 2048, 1024, 1024);
  EXPECT_THAT(first, HasSubstr("compiling variant 'pingpong-dp'"));
  EXPECT_THAT(first, HasSubstr("R3: pingpong, whole tiles"));
  std::string second = launchStderr(k, 2048, 1024, 1024) + launchStderr(k, 1024, 2048, 512);
  EXPECT_EQ(count(second, "compiling variant"), 0) << "a cached launch compiled again";
  EXPECT_THAT(second, HasSubstr("launching variant 'pingpong-dp'"));
  // The same K on 4 tiles: the stream-K plan fills the idle SMs, the eager kernel.
  std::string small = launchStderr(k, 256, 256, 1024);
  EXPECT_THAT(small, Not(HasSubstr("variant 'pingpong-dp'")));
}

/// The examples' GEMM with its tiles' axes given by `Grid` (docs/small-m.md, R6's M and N).
template <int BM_, int BN_, int Grid>
struct gemm_on_grid {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    using namespace ts::literals;
    // Grid 1: M along program_id 1, N along 0. Grid 2: one axis over all tiles (128 along N).
    auto t = ts::program_id(0);
    auto m = Grid == 1 ? ts::program_id(1) * BM : (t / 128_c) * BM;
    auto n = Grid == 1 ? t * BN : (t % 128_c) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

std::string launchOnGrid(ts::kernel& k, ts::grid g, std::int64_t M, std::int64_t N, std::int64_t K) {
  ::testing::internal::CaptureStderr();
  try {
    k.launch(nullptr, g, ts::view<ts::bf16>(fake(0x100000), {M, K}), ts::view<ts::bf16>(fake(0x200000), {N, K}),
             ts::view<ts::bf16>(fake(0x300000), {M, N}));
  } catch (const ts::error&) {
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("%s", err.c_str());
  return err;
}

// R6: a decode launch (16 x 8192 x 8192 on 64x64 tiles) takes pingpong with whole tiles and the
// deepest ring, read off the grid axes the loads' offsets name; a grid that linearises the tiles
// does not say which extent is M, and keeps the other rules.
TEST(AutoJit, DecodeLaunchesTakeTheDeepestRingOnTheirGridsAxes) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", "1"};
  const ts::options o{.schedule = ts::schedule::automatic};
  ts::kernel k = ts::jit(examples::gemm<64, 64, 64>{}, o);
  std::string log = launchOnGrid(k, ts::grid{1, 128}, 16, 8192, 8192);
  EXPECT_THAT(log, HasSubstr("R6: low arithmetic intensity (about 63 flops per byte of A and B on 1 x 128 tiles of 64x64)"));
  EXPECT_THAT(log, HasSubstr("compiling variant 'pingpong-dp-smax'"));
  EXPECT_THAT(log, HasSubstr("the deepest ring that fits"));

  ts::kernel swapped = ts::jit(gemm_on_grid<64, 64, 1>{}, o);
  log = launchOnGrid(swapped, ts::grid{128, 1}, 16, 8192, 8192);
  EXPECT_THAT(log, HasSubstr("on 1 x 128 tiles of 64x64"));
  EXPECT_THAT(log, HasSubstr("compiling variant 'pingpong-dp-smax'"));

  ts::kernel linear = ts::jit(gemm_on_grid<64, 64, 2>{}, o);
  log = launchOnGrid(linear, ts::grid{128, 1}, 16, 8192, 8192);
  EXPECT_THAT(log, Not(HasSubstr("R6")));
  EXPECT_THAT(log, Not(HasSubstr("smax")));
}

// A 16-row tile is computed as its 64 x 16 transpose (tessel-swap-operands): the rules see that
// tile, with M and N on the axes the swapped operands' offsets name, and R6 takes the decode launch.
TEST(AutoJit, ShortTilesAreRuledAsTheTransposeTheyCompute) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", "1"};
  ts::kernel k = ts::jit(examples::gemm<16, 64, 64>{}, {.schedule = ts::schedule::automatic});
  std::string log = launchOnGrid(k, ts::grid{1, 128}, 16, 8192, 8192);
  EXPECT_THAT(log, HasSubstr("R6: low arithmetic intensity"));
  EXPECT_THAT(log, HasSubstr("on 128 x 1 tiles of 64x16"));
  EXPECT_THAT(log, HasSubstr("the deepest ring that fits, whole tiles (>= 64 tiles along N) (N: the program's, the "
                             "transposed tile's M)"));
  EXPECT_THAT(log, HasSubstr("compiling variant 'pingpong-dp-smax'"));
}

// A k-loop whose trip count depends on the tile (a triangular GEMM): automatic takes
// warp_specialized (R8); cooperative and pingpong build it with whole tiles (no stream-K) and
// refuse stream-K and clusters verbatim; multistage computes the count from the tile's rastered
// program ids.
TEST(AutoJit, TripCountsPerTile) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", "1"};
  ::testing::internal::CaptureStderr();
  ts::kernel k = ts::jit(tessel_test::gemm_triangular<128, 128>{}, {.schedule = ts::schedule::automatic});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("R8: the mainloop's trip count depends on the tile: warp_specialized (one tile per CTA)"));
  EXPECT_THAT(k.stage("select-schedule"), HasSubstr("kind = warp_specialized"));
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel p = ts::jit(tessel_test::gemm_triangular<128, 128>{}, {.schedule = s});
    EXPECT_THAT(p.stage("select-schedule"), HasSubstr(std::string("kind = ") + ts::to_string(s)));
    EXPECT_THAT(p.stage("select-schedule"), Not(HasSubstr("stream_k")));
    EXPECT_THAT(p.stage("ptxas.log"), HasSubstr(" 0 bytes spill stores, 0 bytes spill loads"));
    EXPECT_THAT(tessel_test::jit_error(tessel_test::gemm_triangular<128, 128>{},
                                       {.schedule = s, .decomposition = ts::decomposition::stream_k}),
                HasSubstr("triangular_kernels.hpp:20:28: error: the mainloop's bounds depend on the tile (they read a "
                          "program_id): decomposition stream-k splits the k-iterations of tiles that must all have "
                          "one trip count; use data-parallel"));
    EXPECT_THAT(tessel_test::jit_error(tessel_test::gemm_triangular<128, 128>{}, {.schedule = s, .cluster = {2, 1}}),
                HasSubstr("triangular_kernels.hpp:20:28: error: the mainloop's bounds depend on the tile (they read a "
                          "program_id): cluster 2x1 walks one k-range for the two tiles of a pair; use cluster 1x1"));
  }
  ts::kernel ms = ts::jit(tessel_test::gemm_triangular<128, 128>{}, {.schedule = ts::schedule::multistage});
  EXPECT_THAT(ms.stage("select-schedule"), HasSubstr("kind = multistage"));
}

TEST(AutoJit, WideTileIsCooperative) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", "1"};  // (variants are logged only then)
  ts::kernel k = ts::jit(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::automatic});
  EXPECT_THAT(k.stage("select-schedule"), HasSubstr("cooperative"));
  std::string log = launchStderr(k, 256, 512, 1024);
  EXPECT_THAT(log, Not(HasSubstr("compiling variant")));
}

TEST(AutoJit, ThirtyTwoWideKTilesAreMultistage) {
  // BK = 32 with bf16 (64-byte rows): only multistage builds it (R9); before R9 automatic asked
  // for pingpong and failed, naming a schedule the user never picked.
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", "1"};  // (variants are logged only then)
  ::testing::internal::CaptureStderr();
  ts::kernel k = ts::jit(examples::gemm<128, 128, 32>{}, {.schedule = ts::schedule::automatic});
  const std::string jitLog = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(jitLog, HasSubstr("compiling multistage now (R9: BK = 32 (64-byte rows): multistage"));
  EXPECT_THAT(k.stage("select-schedule"), HasSubstr("kind = multistage"));
  const std::string log = launchStderr(k, 256, 512, 1024);
  EXPECT_THAT(log, Not(HasSubstr("compiling variant")));
  // The user's decomposition stays theirs: stream-K, which multistage cannot run, is refused.
  EXPECT_THAT(tessel_test::jit_error(examples::gemm<128, 128, 32>{}, {.decomposition = ts::decomposition::stream_k}),
              HasSubstr("decomposition stream-k needs schedule 'cooperative' or 'pingpong' with a 1x1 cluster, got "
                        "'multistage'"));
}

TEST(AutoJit, InMemoryHitReturnsTheSameKernelWithoutCompiling) {
  tessel_test::scoped_env cache{"TESSEL_DISABLE_CACHE", std::nullopt};
  tessel_test::scoped_env dump{"TESSEL_DUMP_DIR", std::nullopt};
  tessel_test::scoped_env verbose{"TESSEL_VERBOSE", std::nullopt};
  ts::kernel a = ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma, .stages = 3});
  ::testing::internal::CaptureStderr();
  ts::kernel b = ts::jit(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma, .stages = 3});
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log, "");
  EXPECT_EQ(a.stage("ptx"), b.stage("ptx"));
  // The same compile record: the second ts::jit compiled nothing.
  EXPECT_EQ(a.compile_timings(), b.compile_timings());
  for (const auto& [step, ms] : a.compile_timings()) std::printf("  %-32s %8.2f ms\n", step.c_str(), ms);
}

}  // namespace
