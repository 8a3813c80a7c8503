//===- TunerTest.cpp - the tuner ts::autotune returns, on a fake driver ----===//
//
// detail::tuner_impl end to end under FakeGpu.h (kernels computed on the host,
// a virtual GPU clock): the first launch of a bucket compiles, checks, times,
// restores the outputs and launches the winner once; the choice is saved in
// the disk cache and a second tuner (and a second process:
// tessel_autotune_helper) reads it without timing and compiles only the
// winner; TESSEL_AUTOTUNE=0 / force; another bucket tunes again; a corrupt
// entry is a miss with one warning; in-place outputs; the reset callback; a
// capturing stream; the candidate list's rules. No GPU is used, also on a
// machine that has one.
//
//===----------------------------------------------------------------------===//

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "FakeGpu.h"
#include "TestSupport.h"
#include "run_command.hpp"
#include "tessel/Runtime/Autotune.h"
#include "tessel/Runtime/DiskCache.h"

using namespace tessel;
using namespace tessel::testing;
namespace fake = tessel::testing::fakegpu;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace fs = std::filesystem;

namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class Tuner : public ::testing::Test {
protected:
  std::string dir;
  ScopedEnv verbose{"TESSEL_VERBOSE", std::nullopt};
  ScopedEnv debug{"TESSEL_DEBUG", std::nullopt};
  ScopedEnv mode{"TESSEL_AUTOTUNE", std::nullopt};
  ScopedEnv disable{"TESSEL_DISABLE_CACHE", std::nullopt};
  std::optional<ScopedEnv> cacheDir;
  fake::Scope gpu;  // after the environment, before every tuner (tuners unload through it)
  std::vector<float> x, y;
  std::vector<int> compiles = std::vector<int>(4, 0);
  tune_options opts;

  void SetUp() override {
    char tmpl[] = "/tmp/tessel-tuner-test-XXXXXX";
    dir = mkdtemp(tmpl);
    cacheDir.emplace("TESSEL_CACHE_DIR", dir + "/cache");
    runtime::resetTuneWarningsForTesting();
    fake::state().kernels = {{"slow", {2.0, 2.0f}}, {"fast", {1.0, 2.0f}}, {"wrong", {0.5, 3.0f}},
                             {"acc-a", {1.0, 2.0f, true}}, {"acc-b", {3.0, 2.0f, true}}};
    opts.timing.warmup_ms = 5;
    opts.timing.min_total_ms = 0;
    opts.timing.repeats = 3;
    opts.progress = tune_progress::never;
    resize(1000);
  }
  void TearDown() override { fs::remove_all(dir); }

  void resize(std::int64_t n) {
    x.resize(n);
    for (std::int64_t i = 0; i < n; ++i)
      x[i] = float(i % 17) - 8.0f;
    y.assign(n, std::numeric_limits<float>::quiet_NaN());  // poisoned: every element must be written
  }
  std::shared_ptr<detail::tuner_impl> make(const std::vector<std::string>& names, const std::string& name = "t") {
    std::vector<detail::candidate_spec> c;
    for (std::size_t i = 0; i < names.size(); ++i)
      c.push_back(fake::candidate(names[i], &compiles[i]));
    return detail::make_tuner(name, c, opts);
  }
  void launch(detail::tuner_impl& t) {
    std::vector<kernel_arg> args = {fake::view(x.data(), std::int64_t(x.size())),
                                    fake::view(y.data(), std::int64_t(y.size()))};
    detail::tuner_launch(t, nullptr, args);
  }
  /// Y == factor * X (+ base) everywhere.
  void expectResult(float factor, float base = 0) {
    for (std::size_t i = 0; i < x.size(); ++i)
      if (y[i] != factor * x[i] + base) {
        ADD_FAILURE() << "Y[" << i << "] = " << y[i] << ", expected " << factor * x[i] + base;
        return;
      }
  }
  int timedBatches() const { return fake::state().elapsedQueries; }
};

TEST_F(Tuner, TimesChecksSavesAndLaunchesTheWinnerOnce) {
  auto t = make({"slow", "fast", "wrong"});
  ::testing::internal::CaptureStderr();
  launch(*t);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tessel autotune: t: dropped 'wrong': disagrees with 'slow': argument 1: relative error 5.0e-01 > "
                 "1.0e-02 over 1000 elements\n");
  tune_decision d = detail::tuner_last_decision(*t);
  EXPECT_EQ(d.source, tune_source::timed);
  EXPECT_EQ(d.winner, 1u);
  EXPECT_EQ(d.label, "fast");
  EXPECT_EQ(d.reference, 0u);
  EXPECT_EQ(d.bucket, "f32[1024] f32[1024]");
  EXPECT_TRUE(d.candidates[0].ok && d.candidates[1].ok && !d.candidates[2].ok);
  EXPECT_DOUBLE_EQ(d.candidates[0].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(d.candidates[1].median_ms, 1.0);
  EXPECT_THAT(d.entry, ::testing::StartsWith(dir + "/cache/"));
  EXPECT_THAT(d.entry, ::testing::EndsWith(".tune"));
  EXPECT_TRUE(fs::exists(d.entry)) << d.entry;
  expectResult(2.0f);  // the winner's result, on the poisoned output
  EXPECT_EQ(fake::state().allocs, fake::state().frees) << "the saved output is freed";
  EXPECT_EQ(fake::state().allocs, 1);
  EXPECT_EQ(fake::state().hostFuncs, timedBatches()) << "one gate per timed batch";
  EXPECT_THAT(compiles, ElementsAre(1, 1, 1, 0));

  // The same bucket: the winner, nothing timed.
  const int launchesBefore = fake::state().launches["fast"], batches = timedBatches();
  resize(900);  // 900 rounds up to 1024 too
  launch(*t);
  EXPECT_EQ(fake::state().launches["fast"], launchesBefore + 1);
  EXPECT_EQ(timedBatches(), batches);
  expectResult(2.0f);
}

TEST_F(Tuner, ASecondTunerReadsTheSavedChoiceAndCompilesOnlyTheWinner) {
  launch(*make({"slow", "fast"}));
  compiles.assign(4, 0);
  auto kernels = fake::state().kernels;
  fake::state() = fake::State();
  fake::state().kernels = kernels;
  resize(1000);
  auto t = make({"slow", "fast"});
  launch(*t);
  tune_decision d = detail::tuner_last_decision(*t);
  EXPECT_EQ(d.source, tune_source::cached);
  EXPECT_EQ(d.label, "fast");
  EXPECT_DOUBLE_EQ(d.candidates[0].median_ms, 2.0) << "the saved timings come with the choice";
  EXPECT_EQ(d.tune_ms, 0);
  EXPECT_EQ(timedBatches(), 0);
  EXPECT_EQ(fake::state().eventRecords, 0);
  EXPECT_THAT(compiles, ElementsAre(0, 1, 0, 0)) << "only the winner compiles";
  EXPECT_EQ(fake::state().launches["fast"], 1);
  EXPECT_EQ(fake::state().launches["slow"], 0);
  expectResult(2.0f);
}

TEST_F(Tuner, AnotherBucketAnotherNameOrAnotherCandidateSetTunesAgain) {
  launch(*make({"slow", "fast"}));
  resize(1025);  // 2048
  auto t = make({"slow", "fast"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
  EXPECT_EQ(detail::tuner_last_decision(*t).bucket, "f32[2048] f32[2048]");
  t = make({"slow", "fast"}, "other name");
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
  t = make({"fast", "slow"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
  EXPECT_EQ(detail::tuner_last_decision(*t).winner, 0u);
  t = make({"slow", "fast"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::cached);
}

TEST_F(Tuner, InPlaceOutputsAreRestoredBeforeEachRunAndTheFinalLaunch) {
  // Y += 2 X: without the saved copy every check run, warm-up and timed launch would add up.
  std::fill(y.begin(), y.end(), 1.0f);
  auto t = make({"acc-a", "acc-b"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).label, "acc-a");
  EXPECT_GT(fake::state().launches["acc-a"], 10);
  expectResult(2.0f, 1.0f);
}

TEST_F(Tuner, StridedOutputsAreComparedElementByElementAndTheirPaddingKept) {
  // Y: 5 x 7 in rows of 10; the padding holds -7 and must keep it. "off" leaves one element NaN,
  // (3, 6): the check names it by its position in the logical tensor, and 56 = 2 X[3][6].
  fake::state().kernels = {{"a", {1.0, 2.0f}}, {"b", {2.0, 2.0f}}, {"off", {0.5, 2.0f, false, 3, 6}}};
  const std::int64_t rows = 5, cols = 7, ld = 10;
  std::vector<float> X(rows * cols), Y(rows * ld, -7.0f);
  for (std::size_t i = 0; i < X.size(); ++i)
    X[i] = float(i) + 1;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      Y[r * ld + c] = std::numeric_limits<float>::quiet_NaN();
  auto t = detail::make_tuner("t", {fake::candidate("a", nullptr, true), fake::candidate("off", nullptr, true),
                                    fake::candidate("b", nullptr, true)},
                              opts);
  auto view2d = [](const float* p, std::int64_t r, std::int64_t c, std::int64_t stride) {
    kernel_arg a = fake::view(p, r);
    a.rank = 2;
    a.sizes = {r, c, 0};
    a.strides = {stride, 1, 0};
    return a;
  };
  std::vector<kernel_arg> args = {view2d(X.data(), rows, cols, cols), view2d(Y.data(), rows, cols, ld)};
  ::testing::internal::CaptureStderr();
  detail::tuner_launch(*t, nullptr, args);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tessel autotune: t: dropped 'off': disagrees with 'a': argument 1: 1 of 35 elements are NaN or Inf "
                 "where the reference is finite, or the other way round (first at [3, 6]: nan here, 56 in the "
                 "reference)\n");
  tune_decision d = detail::tuner_last_decision(*t);
  EXPECT_EQ(d.bucket, "f32[8,8] f32[8,8]");
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < ld; ++c)
      ASSERT_EQ(Y[r * ld + c], c < cols ? 2.0f * X[r * cols + c] : -7.0f) << r << ", " << c;
}

TEST_F(Tuner, TheResetCallbackReplacesTheSavedCopy) {
  int resets = 0;
  opts.reset = [&](void* stream) {
    EXPECT_EQ(stream, nullptr) << "the launch's stream";
    ++resets;
    std::fill(y.begin(), y.end(), 0.0f);
  };
  auto t = make({"acc-a", "acc-b"});
  launch(*t);
  EXPECT_EQ(resets, 3) << "before each checked run (2) and before the final launch";
  EXPECT_EQ(fake::state().allocs, 0) << "nothing copied aside";
  expectResult(2.0f);
}

TEST_F(Tuner, AutotuneOffLaunchesTheFirstCandidateThatCompilesAndSavesNothing) {
  ScopedEnv off{"TESSEL_AUTOTUNE", "0"};
  auto t = make({"slow", "fast"});
  launch(*t);
  tune_decision d = detail::tuner_last_decision(*t);
  EXPECT_EQ(d.source, tune_source::disabled);
  EXPECT_EQ(d.label, "slow");
  EXPECT_EQ(d.entry, "");
  EXPECT_EQ(timedBatches(), 0);
  EXPECT_THAT(compiles, ElementsAre(1, 0, 0, 0));
  expectResult(2.0f);
  EXPECT_FALSE(fs::exists(dir + "/cache")) << "nothing saved";
}

TEST_F(Tuner, ForceTunesAgainAndReplacesTheChoice) {
  launch(*make({"slow", "fast"}));
  fake::state().kernels["slow"].ms = 0.25;  // the machine changed its mind
  {
    ScopedEnv force{"TESSEL_AUTOTUNE", "force"};
    auto t = make({"slow", "fast"});
    launch(*t);
    EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
    EXPECT_EQ(detail::tuner_last_decision(*t).label, "slow");
  }
  auto t = make({"slow", "fast"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::cached);
  EXPECT_EQ(detail::tuner_last_decision(*t).label, "slow");
}

TEST_F(Tuner, ACorruptEntryIsTunedAgainWithOneWarning) {
  auto first = make({"slow", "fast"});
  launch(*first);
  const std::string entry = detail::tuner_last_decision(*first).entry;
  std::string data = readAll(entry);
  data[data.size() / 2] ^= 0x20;
  std::ofstream(entry, std::ios::binary) << data;
  ::testing::internal::CaptureStderr();
  auto t = make({"slow", "fast"});
  launch(*t);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tessel: warning: ignoring the autotune entry " + entry +
                     " (checksum mismatch); tuning again and replacing it\n");
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
  t = make({"slow", "fast"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::cached) << "the entry was replaced";
}

TEST_F(Tuner, WithoutTheDiskCacheEveryTunerTunes) {
  ScopedEnv off{"TESSEL_DISABLE_CACHE", "1"};
  launch(*make({"slow", "fast"}));
  auto t = make({"slow", "fast"});
  launch(*t);
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::timed);
  EXPECT_EQ(detail::tuner_last_decision(*t).entry, "");
  EXPECT_FALSE(fs::exists(dir + "/cache"));
}

TEST_F(Tuner, TheGateHoldsTheStreamUntilTheBatchIsEnqueued) {
  // Host functions run on threads of their own, as under the driver: every launch of a timed
  // batch is enqueued while the batch's gate still holds the stream.
  fake::state().asyncHostFuncs = true;
  launch(*make({"slow", "fast"}));
  EXPECT_GT(fake::state().batchLaunches, 0);
  EXPECT_EQ(fake::state().batchLaunchesUnheld, 0);
  EXPECT_EQ(fake::state().hostFuncsDone.load(), fake::state().hostFuncs) << "every gate opened";
  expectResult(2.0f);
}

TEST_F(Tuner, DebugModeTimesWithoutTheGate) {
  ScopedEnv on{"TESSEL_DEBUG", "1"};
  launch(*make({"slow", "fast"}));
  EXPECT_GT(timedBatches(), 0);
  EXPECT_EQ(fake::state().hostFuncs, 0);
  EXPECT_GT(fake::state().batchLaunches, 0);
}

TEST_F(Tuner, ACapturingStreamIsAnError) {
  fake::state().capturing = true;
  auto t = make({"slow", "fast"});
  EXPECT_THAT([&] { launch(*t); },
              ThrowsMessage<tessel::error>(
                  "tessel: autotune 't': the stream is capturing a CUDA graph, and the first launch of a shape "
                  "bucket tunes (it synchronizes and times the candidates); launch once before the capture, or set "
                  "TESSEL_AUTOTUNE=0"));
  EXPECT_EQ(detail::tuner_last_decision(*t).source, tune_source::none);
}

TEST_F(Tuner, AFailedTunePutsTheOutputsBack) {
  fake::state().kernels["wrong"].factor = -2.0f;
  std::fill(y.begin(), y.end(), 7.0f);
  auto t = make({"fast", "wrong"});  // two candidates that disagree: no winner
  EXPECT_THAT([&] { launch(*t); }, ThrowsMessage<tessel::error>(HasSubstr("no candidate agrees with at least half")));
  for (float v : y)
    ASSERT_EQ(v, 7.0f);
  EXPECT_EQ(fake::state().allocs, fake::state().frees);
}

TEST_F(Tuner, AGridFunctionThatThrowsDropsItsCandidate) {
  detail::candidate_spec bad = fake::candidate("wrong");
  bad.grid_of = [](launch_args) -> grid { throw tessel::error("ts::tile_grid: argument 5 of the launch must be a tensor"); };
  auto t = detail::make_tuner("t", {fake::candidate("slow"), bad, fake::candidate("fast")}, opts);
  ::testing::internal::CaptureStderr();
  launch(*t);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "tessel autotune: t: dropped 'wrong': failed to run: ts::tile_grid: argument 5 of the launch must be a "
            "tensor\n");
  EXPECT_EQ(detail::tuner_last_decision(*t).label, "fast");
}

TEST_F(Tuner, TheCandidateListIsChecked) {
  auto spec = [](const std::string& name) { return fake::candidate(name); };
  EXPECT_THAT([&] { detail::make_tuner("", {spec("fast")}, {}); },
              ThrowsMessage<tessel::error>(
                  "tessel: autotune: the tuner's name must not be empty (it is part of the saved choice's key)"));
  EXPECT_THAT([&] { detail::make_tuner("t", {}, {}); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': no candidates"));
  EXPECT_THAT([&] { detail::make_tuner("t", {spec("fast"), spec("slow"), spec("fast")}, {}); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': candidates 0 and 2 are both labelled 'fast'; labels "
                                           "must be unique (rename one with .named(\"...\"))"));
  detail::candidate_spec other = spec("slow");
  other.signature = "bf16[2] bf16[2] bf16[2]";
  EXPECT_THAT([&] { detail::make_tuner("t", {spec("fast"), other}, {}); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': candidate 1 ('slow') takes (bf16[2] bf16[2] bf16[2]) "
                                           "but candidate 0 ('fast') takes (f32[1] f32[1]); every candidate must take "
                                           "the same arguments"));
  tune_options bad;
  bad.rtol = std::nan("");
  EXPECT_THAT([&] { detail::make_tuner("t", {spec("fast")}, bad); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': tune_options::rtol = nan: must be finite and >= 0"));
  bad = {};
  bad.timing.repeats = 0;
  EXPECT_THAT([&] { detail::make_tuner("t", {spec("fast")}, bad); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': tune_timing::repeats = 0: must be >= 1"));
  bad = {};
  bad.compile_threads = -1;
  EXPECT_THAT([&] { detail::make_tuner("t", {spec("fast")}, bad); },
              ThrowsMessage<tessel::error>("tessel: autotune 't': tune_options::compile_threads = -1: must be >= 0 "
                                           "(0: one per hardware thread)"));
}

//===----------------------------------------------------------------------===//
// Across processes: tessel_autotune_helper (autotune_helper.cpp)
//===----------------------------------------------------------------------===//

/// The helper next to this test binary (the build tree and the GPU bundle both put it there).
std::string helperPath() {
  return (fs::read_symlink("/proc/self/exe").parent_path() / "tessel_autotune_helper").string();
}

using HelperRun = tessel_test::command_result;

HelperRun runHelper(const std::string& cacheDir, const std::string& env = "") {
  const std::string cmd = "env -u TESSEL_DISABLE_CACHE -u TESSEL_AUTOTUNE -u TESSEL_VERBOSE TESSEL_CACHE_DIR='" +
                          cacheDir + "' " + env + " '" + helperPath() + "' 2>&1";
  return tessel_test::run_command(cmd);
}

TEST_F(Tuner, ASecondProcessReusesTheChoiceWithoutTiming) {
  ASSERT_TRUE(fs::exists(helperPath())) << helperPath();
  const std::string cache = dir + "/cache";
  HelperRun first = runHelper(cache);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("helper: source timed winner fast"));
  EXPECT_THAT(first.output, ::testing::MatchesRegex("(.|\n)*timed-batches [1-9][0-9]* compiled 2 (.|\n)*"));
  EXPECT_THAT(first.output, HasSubstr("result ok"));

  HelperRun second = runHelper(cache);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_THAT(second.output,
              HasSubstr("helper: source cached winner fast timed-batches 0 compiled 1 launches 1 result ok"));

  HelperRun forced = runHelper(cache, "TESSEL_AUTOTUNE=force");
  EXPECT_THAT(forced.output, HasSubstr("helper: source timed winner fast"));

  // A damaged entry: the next process warns once, tunes and replaces it.
  std::vector<runtime::CacheEntryFile> none = runtime::listCacheEntries(cache);
  EXPECT_TRUE(none.empty()) << "autotune entries are not kernel cache entries";
  std::string entry;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".tune")
      entry = e.path().string();
  ASSERT_FALSE(entry.empty());
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << "tessel-autotune 1\n";
  HelperRun damaged = runHelper(cache);
  EXPECT_THAT(damaged.output, HasSubstr("tessel: warning: ignoring the autotune entry " + entry +
                                        " (truncated: 18 bytes, shorter than the header); tuning again and "
                                        "replacing it\n"));
  EXPECT_THAT(damaged.output, HasSubstr("helper: source timed winner fast"));
  EXPECT_THAT(runHelper(cache).output, HasSubstr("helper: source cached winner fast"));
}

}  // namespace
