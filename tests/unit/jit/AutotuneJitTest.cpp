//===- AutotuneJitTest.cpp - ts::autotune through libtessel, without a GPU --===//
//
// What the DSL side of the tuner does before it needs a GPU: candidates are
// labelled from their functor and options, compile lazily (ts::autotune
// compiles nothing), are identified by their traced program (not by where they
// were written), must take the same arguments; TESSEL_AUTOTUNE=0 compiles only
// the first candidate that compiles; a launch that must tune without a GPU
// says so. The tune itself: tests/unit/runtime/{Autotune,Tuner}Test.cpp (no
// GPU) and tests/gpu/autotune_test.cpp (the H200).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "02_gemm/gemm.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using namespace ts::literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::ThrowsMessage;

namespace {

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

/// examples::gemm with C scaled by a member: another program for another value.
struct scaled_gemm {
  float alpha = 1.0f;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 128_c, 64_c).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc * alpha));
  }
};

struct vector_add {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 1024_c;
    Y.store({o}, X.load({o}, 1024_c) + Y.load({o}, 1024_c));
  }
};

ts::tune_candidate pingpong128() {
  return ts::candidate(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::pingpong}, ts::tile_grid(2, 128, 128));
}
ts::tune_candidate cooperative256(int stages = 0) {
  return ts::candidate(examples::gemm<128, 256, 64>{}, {.schedule = ts::schedule::cooperative, .stages = stages},
                       ts::tile_grid(2, 128, 256));
}

void launchGemm(const ts::autotuner& t, std::int64_t M, std::int64_t N, std::int64_t K) {
  t.launch(nullptr, ts::view<ts::bf16>(fake(0x100000), {M, K}), ts::view<ts::bf16>(fake(0x200000), {N, K}),
           ts::view<ts::bf16>(fake(0x300000), {M, N}));
}

TEST(AutotuneJit, CandidatesAreLabelledFromTheirFunctorAndOptions) {
  EXPECT_EQ(pingpong128().label(), "examples_gemm_128_128_64 pingpong");
  EXPECT_EQ(cooperative256(3).label(), "examples_gemm_128_256_64 cooperative s3");
  ts::tune_candidate c = ts::candidate(examples::gemm<128, 256, 64>{},
                                       {.schedule = ts::schedule::pingpong,
                                        .cluster = {2, 1},
                                        .swizzle = 64,
                                        .raster_group = 4,
                                        .decomposition = ts::decomposition::data_parallel},
                                       ts::tile_grid(2, 128, 256));
  EXPECT_EQ(c.label(), "examples_gemm_128_256_64 pingpong c2x1 sw64 r4 dp");
  EXPECT_EQ(std::move(c).named("mine").label(), "mine");
}

TEST(AutotuneJit, NothingCompilesUntilTheFirstLaunch) {
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  const std::uint64_t before = ts::detail::kernels_built();
  ts::autotuner t = ts::autotune("lazy", {pingpong128(), cooperative256()});
  EXPECT_TRUE(t);
  EXPECT_EQ(ts::detail::kernels_built(), before);
  EXPECT_EQ(t.last_decision().source, ts::tune_source::none);
  EXPECT_THAT([&] { t.last_kernel(); }, ThrowsMessage<ts::error>("tessel: autotuner: no launch yet, so no kernel"));
}

TEST(AutotuneJit, TheProgramIdentifiesACandidateNotItsSourceLine) {
  auto id = [](const ts::tune_candidate& c) { return c.spec().identity(); };
  const std::string a = id(pingpong128());
  const std::string b = id(ts::candidate(examples::gemm<128, 128, 64>{}, {}, ts::tile_grid(2, 128, 128)));
  EXPECT_EQ(a, b) << "another line, other options: the same program";
  EXPECT_THAT(a, ::testing::MatchesRegex("[0-9a-f]{32}"));
  EXPECT_NE(id(cooperative256()), a) << "another tile is another program";
  EXPECT_NE(id(ts::candidate(scaled_gemm{2.0f}, {}, ts::tile_grid(2, 128, 128))),
            id(ts::candidate(scaled_gemm{3.0f}, {}, ts::tile_grid(2, 128, 128))))
      << "a functor's data members are part of its program";
}

TEST(AutotuneJit, CandidatesMustTakeTheSameArguments) {
  EXPECT_THAT([] { ts::autotune("mixed", {pingpong128(), ts::candidate(vector_add{}, {}, ts::tile_grid(1, 1024, 1))}); },
              ThrowsMessage<ts::error>("tessel: autotune 'mixed': candidate 1 ('vector_add auto') takes (f32[1] f32[1]) "
                                       "but candidate 0 ('examples_gemm_128_128_64 pingpong') takes (bf16[2] bf16[2] "
                                       "bf16[2]); every candidate must take the same arguments"));
  EXPECT_THAT([] { ts::autotune("twice", {pingpong128(), pingpong128()}); },
              ThrowsMessage<ts::error>("tessel: autotune 'twice': candidates 0 and 1 are both labelled "
                                       "'examples_gemm_128_128_64 pingpong'; labels must be unique (rename one with "
                                       ".named(\"...\"))"));
}

TEST(AutotuneJit, TileGridCoversTheOutput) {
  ts::kernel_arg c = ts::view<ts::bf16>(fake(0x300000), {1000, 300});
  ts::kernel_arg batched = ts::view<ts::bf16>(fake(0x300000), {5, 129, 256});
  ts::grid g = ts::tile_grid(0, 128, 256)(ts::launch_args(&c, 1));
  EXPECT_EQ(g.x, 8u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(g.z, 1u);
  g = ts::tile_grid(0, 128, 256)(ts::launch_args(&batched, 1));
  EXPECT_EQ(g.x, 2u);
  EXPECT_EQ(g.y, 1u);
  EXPECT_EQ(g.z, 5u);
  EXPECT_THAT([&] { ts::tile_grid(2, 128, 256)(ts::launch_args(&c, 1)); },
              ThrowsMessage<ts::error>("ts::tile_grid: argument 2 of the launch must be a tensor of rank 2 or 3 (1 "
                                       "arguments given)"));
  EXPECT_THAT([] { ts::tile_grid(0, 0, 256); },
              ThrowsMessage<ts::error>("ts::tile_grid: the argument index must be >= 0 and the tile extents >= 1, got "
                                       "arg 0, tile 0x256"));
}

TEST(AutotuneJit, WithoutAGpuTheFirstLaunchSaysWhyItCannotTune) {
  std::string why;
  if (ts::gpu_available(&why))
    GTEST_SKIP() << "a GPU is available: tests/gpu/autotune_test.cpp tunes on it";
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  ts::autotuner t = ts::autotune("gemm", {pingpong128(), cooperative256()});
  EXPECT_THAT([&] { launchGemm(t, 256, 256, 512); },
              ThrowsMessage<ts::error>("tessel: autotune 'gemm': no GPU: " + why));
  EXPECT_EQ(t.last_decision().source, ts::tune_source::none);
}

TEST(AutotuneJit, TheFirstLaunchChecksItsArgumentsBeforeDeciding) {
  // As kernel::launch does, and before a candidate's grid function reads the arguments or a tune
  // copies the outputs: a wrong count, dtype or size is the argument's error (not "no GPU"), and
  // an empty output needs nothing, no GPU either, and decides nothing.
  tessel_test::scoped_env on{"TESSEL_AUTOTUNE", nullptr};
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  ts::autotuner t = ts::autotune("checked", {pingpong128(), cooperative256()});
  const ts::tensor_arg a = ts::view<ts::bf16>(fake(0x100000), {256, 512});
  const ts::tensor_arg b = ts::view<ts::bf16>(fake(0x200000), {256, 512});
  EXPECT_THAT([&] { t.launch(nullptr, a, b); },
              ThrowsMessage<ts::error>("tessel: kernel 'examples_gemm_128_128_64': expected 3 arguments, got 2"));
  EXPECT_THAT([&] { t.launch(nullptr, a, b, ts::view<ts::f32>(fake(0x300000), {256, 256})); },
              ThrowsMessage<ts::error>(::testing::StrEq("tessel: kernel 'examples_gemm_128_128_64' argument 2: expected dtype bf16, got f32")));
  EXPECT_THAT([&] { t.launch(nullptr, a, ts::view<ts::bf16>(fake(0x200000), {256, 500}), ts::view<ts::bf16>(fake(0x300000), {256, 256})); },
              ThrowsMessage<ts::error>(HasSubstr("must be equal")));
  EXPECT_NO_THROW(launchGemm(t, 0, 256, 512));  // M = 0: nothing to write
  EXPECT_EQ(t.last_decision().source, ts::tune_source::none);
}

TEST(AutotuneJit, AutotuneOffCompilesOnlyTheFirstCandidateThatCompiles) {
  if (ts::gpu_available())
    GTEST_SKIP() << "the launch would reach the GPU with fake addresses";
  tessel_test::scoped_env off{"TESSEL_AUTOTUNE", "0"};
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  // stages = 1 does not compile (a one-stage ring never refills): the second candidate is used.
  ts::autotuner t = ts::autotune(
      "off", {ts::candidate(examples::gemm<128, 128, 64>{}, {.schedule = ts::schedule::tma, .stages = 1},
                            ts::tile_grid(2, 128, 128)),
              cooperative256(), pingpong128()});
  const std::uint64_t before = ts::detail::kernels_built();
  EXPECT_THAT([&] { launchGemm(t, 256, 256, 512); }, ThrowsMessage<ts::error>(HasSubstr("no GPU")));
  EXPECT_EQ(ts::detail::kernels_built(), before + 2) << "the first (failed) and the second candidate";
  ts::tune_decision d = t.last_decision();
  EXPECT_EQ(d.source, ts::tune_source::disabled);
  EXPECT_EQ(d.winner, 1u);
  EXPECT_EQ(d.label, "examples_gemm_128_256_64 cooperative");
  EXPECT_EQ(d.bucket, "bf16[256,512] bf16[256,512] bf16[256,256]");
  EXPECT_EQ(t.last_kernel().name(), "examples_gemm_128_256_64");
  EXPECT_THAT(t.last_kernel().stage("select-schedule"), HasSubstr("cooperative"));
}

}  // namespace
