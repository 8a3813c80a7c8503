//===- AutotuneTest.cpp - ts::autotune's core, without a GPU ---------------===//
//
// runtime::tune against a scripted TuneBackend with a virtual clock: which
// candidate wins, the timing method (warm-up, calibrated batch, rotation,
// median), dropped candidates (compile, run, numerical check) with their
// lines, the choice of the reference, progress lines; the numerical check
// itself (compareOutputs); the key (shape bucket, device, tolerance,
// programs) and the saved entry (round trip, every corruption a miss with one
// warning, an unwritable directory). The same with the CUDA driver's tuner
// against a fake driver, and across processes: TunerTest.cpp.
//
//===----------------------------------------------------------------------===//

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/Autotune.h"
#include "tessel/Runtime/DiskCache.h"
#include "temp_dir.hpp"

using namespace tessel;
using namespace tessel::runtime;
using namespace tessel::testing;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::ThrowsMessage;

namespace fs = std::filesystem;

namespace {

// A new field of tune_result must be saved by encodeTuneEntry and read by decodeTuneEntry.
static_assert(fieldCount<tune_result>() == 8, "tune_result changed: save the new field in the autotune entry");

/// One scripted candidate.
struct Script {
  std::string label;
  double ms = 1.0;            ///< per launch
  std::vector<double> noise;  ///< added to the per-launch time of timed batch k (k-th call), cycling
  float scale = 1.0f;         ///< its output: scale * (1, 2, 3, 4, 5, 6)
  std::string compileError;   ///< prepare() throws this
  std::string runError;       ///< run() throws this
  int nanAt = -1;             ///< this output element is left NaN
};

class ScriptedBackend : public TuneBackend {
public:
  explicit ScriptedBackend(std::vector<Script> s) : s_(std::move(s)), runs(s_.size()), launches(s_.size()),
                                                     batches(s_.size()) {}
  std::size_t size() const override { return s_.size(); }
  std::string label(std::size_t i) const override { return s_[i].label; }
  void prepare(std::size_t i) override {
    ++prepared;  // atomic: tune() compiles on several threads
    if (!s_[i].compileError.empty())
      throw tessel::error(s_[i].compileError);
  }
  void begin(const std::vector<std::size_t>& compiled) override { begun = compiled; }
  TuneOutputs run(std::size_t i) override {
    ++runs[i];
    if (!s_[i].runError.empty())
      throw tessel::error(s_[i].runError);
    TuneOutput o;
    o.arg = 2;
    o.type = dtype::f32;
    o.sizes = {2, 3};
    o.bytes.resize(6 * 4);
    for (int k = 0; k < 6; ++k) {
      float v = k == s_[i].nanAt ? std::numeric_limits<float>::quiet_NaN() : s_[i].scale * float(k + 1);
      std::memcpy(o.bytes.data() + 4 * k, &v, 4);
    }
    clock += s_[i].ms;
    return {o};
  }
  void launch(std::size_t i, int n) override {
    launches[i] += n;
    clock += n * s_[i].ms;
  }
  void synchronize() override { ++syncs; }
  double timeBatch(std::size_t i, int n) override {
    const Script& s = s_[i];
    const double extra = s.noise.empty() ? 0 : s.noise[batches[i].size() % s.noise.size()];
    batches[i].push_back(n);
    order.push_back(i);
    const double ms = n * (s.ms + extra);
    clock += ms;
    return ms;
  }
  void finish(std::size_t winner) override { finished = static_cast<int>(winner); }
  double nowMs() const override { return clock; }

  std::vector<Script> s_;
  double clock = 0;
  std::atomic<int> prepared{0};
  int syncs = 0, finished = -1;
  std::vector<std::size_t> begun;
  std::vector<int> runs, launches;
  std::vector<std::vector<int>> batches;  ///< per candidate, the size of each timed batch
  std::vector<std::size_t> order;         ///< candidates in the order their batches were timed
};

struct Printed {
  std::vector<std::string> lines;
  std::string all() const {
    std::string s;
    for (const std::string& l : lines)
      s += l + "\n";
    return s;
  }
};

TuneSettings settings(Printed& p, tune_progress progress = tune_progress::never) {
  TuneSettings s;
  s.name = "gemm";
  s.bucket = "bf16[1024,1024]";
  s.progress = progress;
  s.timing.warmup_ms = 10;
  s.timing.min_total_ms = 0;
  s.print = [&p](const std::string& line) { p.lines.push_back(line); };
  return s;
}

class Autotune : public ::testing::Test {
protected:
  ScopedEnv verbose{"TESSEL_VERBOSE", std::nullopt};
  Printed printed;
};

TEST_F(Autotune, PicksTheSmallestMedianAndLaunchesItLast) {
  ScriptedBackend b({{"a", 2.0}, {"b", 1.0}, {"c", 1.5}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 1u);
  EXPECT_EQ(b.finished, 1);
  EXPECT_EQ(out.reference, 0u);
  EXPECT_THAT(b.begun, ElementsAre(0, 1, 2));
  ASSERT_EQ(out.candidates.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(out.candidates[i].ok) << i;
    EXPECT_EQ(out.candidates[i].dropped, "");
    EXPECT_EQ(b.runs[i], 1) << "each candidate runs once for the check";
  }
  EXPECT_DOUBLE_EQ(out.candidates[0].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(out.candidates[1].median_ms, 1.0);
  EXPECT_DOUBLE_EQ(out.candidates[2].median_ms, 1.5);
  EXPECT_THAT(printed.lines, IsEmpty()) << printed.all();
}

TEST_F(Autotune, TiesGoToTheEarlierCandidate) {
  ScriptedBackend b({{"a", 1.0}, {"b", 1.0}});
  EXPECT_EQ(tune(b, settings(printed)).winner, 0u);
}

TEST_F(Autotune, TimingFollowsTheBenchMethod) {
  // Calibration: the fastest launch is 1/128 ms, so a batch of 1 ms is 128 launches; the slowest
  // (1/32 ms) times 4 ms per batch, so 10 ms in total need 3 repeats (more than repeats = 2).
  ScriptedBackend b({{"a", 1.0 / 64}, {"b", 1.0 / 128}, {"c", 1.0 / 32}});
  tune_timing t;
  t.warmup_ms = 1.0;
  t.batch = 10;
  t.min_batch_ms = 1.0;
  t.max_batch = 256;
  t.repeats = 2;
  t.min_total_ms = 10;
  t.max_repeats = 30;
  std::vector<int> rounds;
  std::vector<CandidateTiming> r =
      timeInterleaved(b, {0, 1, 2}, t, [&](int round, int total) { rounds.push_back(round * 100 + total); });
  // Warm-up: rounds of 4 launches each until 1 ms passed: 0.21875 ms per round, so 5 rounds.
  EXPECT_THAT(b.launches, ElementsAre(20, 20, 20));
  // Calibration batches of max(4, min(10, 20)) = 10 launches, then 3 repeats of 128.
  for (std::size_t c = 0; c < 3; ++c)
    EXPECT_THAT(b.batches[c], ElementsAre(10, 128, 128, 128)) << c;
  // Rotation: round r starts with candidate r % 3.
  EXPECT_THAT(b.order, ElementsAre(0, 1, 2, 0, 1, 2, 1, 2, 0, 2, 0, 1));
  EXPECT_THAT(rounds, ElementsAre(103, 203, 303));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].batch, 128);
  EXPECT_EQ(r[1].samplesMs.size(), 3u);
  EXPECT_DOUBLE_EQ(r[2].medianMs, 1.0 / 32);
}

TEST_F(Autotune, TheBatchIsCappedAndTheRepeatsBounded) {
  ScriptedBackend b({{"a", 0.0001}, {"b", 0.0001}});
  tune_timing t;
  t.warmup_ms = 0;
  t.max_batch = 50;
  t.repeats = 3;
  t.min_total_ms = 1e9;
  t.max_repeats = 7;
  std::vector<CandidateTiming> r = timeInterleaved(b, {0, 1}, t);
  EXPECT_EQ(r[0].batch, 50);
  EXPECT_EQ(r[0].samplesMs.size(), 7u);
  EXPECT_THAT(b.launches, ElementsAre(0, 0)) << "no warm-up with warmup_ms = 0";
}

TEST_F(Autotune, TheMedianIgnoresOutliers) {
  // Per-launch times of the 5 timed batches: 1 + {9, 0, 0, 0.5, 0} (the calibration batch
  // takes the first noise value, so the repeats see 0, 0, 0.5, 0, 9).
  Script a{"a", 1.0, {9, 0, 0, 0.5, 0, 9}};
  ScriptedBackend b({a, {"b", 1.2}});
  tune_timing t;
  t.warmup_ms = 0;
  t.repeats = 5;
  t.min_total_ms = 0;
  std::vector<CandidateTiming> r = timeInterleaved(b, {0, 1}, t);
  EXPECT_DOUBLE_EQ(r[0].medianMs, 1.0);
  EXPECT_DOUBLE_EQ(r[0].minMs, 1.0);
  EXPECT_DOUBLE_EQ(r[0].maxMs, 10.0);
  ScriptedBackend again({a, {"b", 1.2}});
  EXPECT_EQ(tune(again, settings(printed)).winner, 0u) << "one slow batch does not lose the tune";
}

TEST_F(Autotune, ACandidateThatDoesNotCompileIsDroppedWithOneLine) {
  Script bad{"b", 0.5};
  bad.compileError = "tessel: kernel 'gemm_128_512_64': BN 512 exceeds 256\n  at gemm.hpp:12:3";
  ScriptedBackend b({{"a", 1.0}, bad, {"c", 2.0}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 0u);
  EXPECT_FALSE(out.candidates[1].ok);
  EXPECT_EQ(out.candidates[1].dropped, "does not compile: kernel 'gemm_128_512_64': BN 512 exceeds 256");
  EXPECT_THAT(b.begun, ElementsAre(0, 2));
  EXPECT_EQ(b.runs[1], 0);
  EXPECT_THAT(printed.lines, ElementsAre("tessel autotune: gemm: dropped 'b': does not compile: kernel "
                                         "'gemm_128_512_64': BN 512 exceeds 256"));
}

TEST_F(Autotune, ACandidateThatFailsToRunIsDropped) {
  Script bad{"a", 0.5};
  bad.runError = "tessel: kernel 'k': cuLaunchKernelEx failed: CUDA_ERROR_INVALID_VALUE";
  ScriptedBackend b({bad, {"b", 1.0}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 1u);
  EXPECT_EQ(out.reference, 1u) << "the first candidate that runs is the reference";
  EXPECT_EQ(out.candidates[0].dropped, "failed to run: kernel 'k': cuLaunchKernelEx failed: CUDA_ERROR_INVALID_VALUE");
  EXPECT_THAT(printed.lines, ElementsAre("tessel autotune: gemm: dropped 'a': failed to run: kernel 'k': "
                                         "cuLaunchKernelEx failed: CUDA_ERROR_INVALID_VALUE"));
}

TEST_F(Autotune, ACandidateThatDisagreesIsDroppedEvenWhenFastest) {
  Script wrong{"fast-but-wrong", 0.1};
  wrong.scale = 1.5f;
  ScriptedBackend b({{"a", 1.0}, wrong, {"c", 0.9}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 2u);
  EXPECT_EQ(out.candidates[1].dropped,
            "disagrees with 'a': argument 2: relative error 5.0e-01 > 1.0e-02 over 6 elements");
  EXPECT_TRUE(b.batches[1].empty()) << "a dropped candidate is not timed";
  EXPECT_THAT(printed.lines, ElementsAre("tessel autotune: gemm: dropped 'fast-but-wrong': disagrees with 'a': "
                                         "argument 2: relative error 5.0e-01 > 1.0e-02 over 6 elements"));
}

TEST_F(Autotune, AnUnwrittenElementIsADisagreement) {
  Script lazy{"lazy", 0.1};
  lazy.nanAt = 4;
  ScriptedBackend b({{"a", 1.0}, lazy, {"c", 2.0}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 0u);
  EXPECT_EQ(out.candidates[1].dropped,
            "disagrees with 'a': argument 2: 1 of 6 elements are NaN or Inf where the reference is finite, or the "
            "other way round (first at [1, 1]: nan here, 5 in the reference)");
}

TEST_F(Autotune, AWrongReferenceIsOutvoted) {
  // The first candidate is wrong; the two others agree: the second becomes the reference and
  // the first is dropped. Every candidate ran again for the second comparison.
  Script wrong{"a", 0.1};
  wrong.scale = 2.0f;
  ScriptedBackend b({wrong, {"b", 1.0}, {"c", 0.5}});
  tune_progress always = tune_progress::always;
  TuneOutcome out = tune(b, settings(printed, always));
  EXPECT_EQ(out.reference, 1u);
  EXPECT_EQ(out.winner, 2u);
  EXPECT_EQ(out.candidates[0].dropped,
            "disagrees with 'b': argument 2: relative error 1.0e+00 > 1.0e-02 over 6 elements");
  EXPECT_THAT(b.runs, ElementsAre(2, 2, 2));
  EXPECT_THAT(printed.all(), HasSubstr("tessel autotune: gemm the reference is 'b' (it agrees with 1 of 2; 'a' did not)"));
}

TEST_F(Autotune, TwoCandidatesThatDisagreeAreAnError) {
  Script wrong{"b", 0.1};
  wrong.scale = -1.0f;
  ScriptedBackend b({{"a", 1.0}, wrong});
  EXPECT_THAT([&] { tune(b, settings(printed)); },
              ThrowsMessage<tessel::error>(
                  "tessel: autotune 'gemm': no candidate agrees with at least half of the others, so none can be "
                  "trusted ('b' vs 'a': argument 2: relative error 2.0e+00 > 1.0e-02 over 6 elements)"));
  EXPECT_EQ(b.finished, -1);
}

TEST_F(Autotune, NoCandidateCompilesIsAnError) {
  Script a{"a"}, c{"c"};
  a.compileError = "tessel: one";
  c.compileError = "tessel: two\nmore";
  ScriptedBackend b({a, c});
  EXPECT_THAT([&] { tune(b, settings(printed)); },
              ThrowsMessage<tessel::error>("tessel: autotune 'gemm': no candidate compiled ('a': does not compile: "
                                           "one; 'c': does not compile: two)"));
  EXPECT_TRUE(b.begun.empty());
}

TEST_F(Autotune, ASingleCandidateIsTimedAndWins) {
  ScriptedBackend b({{"only", 3.0}});
  TuneOutcome out = tune(b, settings(printed));
  EXPECT_EQ(out.winner, 0u);
  EXPECT_TRUE(out.candidates[0].ok);
  EXPECT_DOUBLE_EQ(out.candidates[0].median_ms, 3.0);
}

TEST_F(Autotune, ProgressAppearsOnceTheTuneIsLong) {
  // 3 ms per launch: warm-up, calibration and timing pass a second of the virtual clock while
  // timing, so the automatic setting starts printing there, announcing the tune first.
  ScriptedBackend slow({{"a", 3.0}, {"b", 2.0}});
  TuneSettings s = settings(printed, tune_progress::automatic);
  s.timing.min_total_ms = 2000;
  TuneOutcome out = tune(slow, s);
  ASSERT_GE(printed.lines.size(), 3u) << printed.all();
  EXPECT_EQ(printed.lines[0], "tessel autotune: gemm: tuning 2 candidates for bf16[1024,1024]");
  EXPECT_THAT(printed.lines[1], HasSubstr("tessel autotune: gemm timed round "));
  EXPECT_THAT(printed.lines.back(), HasSubstr("tessel autotune: gemm [bf16[1024,1024]]: 'b' wins, 2.0000 ms per launch "
                                              "(next 'a' 3.0000 ms); 2 timed, 0 dropped, "));
  EXPECT_EQ(out.winner, 1u);

  Printed quick;
  ScriptedBackend fast({{"a", 0.001}, {"b", 0.002}});
  tune(fast, settings(quick, tune_progress::automatic));
  EXPECT_THAT(quick.lines, IsEmpty()) << "a short tune prints nothing";
}

TEST_F(Autotune, ProgressAlwaysCountsTheCandidates) {
  ScriptedBackend b({{"a", 1.0}, {"b", 2.0}, {"c", 3.0}});
  tune(b, settings(printed, tune_progress::always));
  const std::string all = printed.all();
  EXPECT_THAT(all, HasSubstr("tessel autotune: gemm: tuning 3 candidates for bf16[1024,1024]\n"));
  EXPECT_THAT(all, HasSubstr("tessel autotune: gemm 2/3: compiled 'b'\n"));
  EXPECT_THAT(all, HasSubstr("tessel autotune: gemm 1/3: ran 'a' (the reference)\n"));
  EXPECT_THAT(all, HasSubstr("tessel autotune: gemm 3/3: ran 'c' (agrees)\n"));
  EXPECT_THAT(all, HasSubstr("'a' wins, 1.0000 ms per launch (next 'b' 2.0000 ms); 3 timed, 0 dropped"));
}

TEST_F(Autotune, VerboseShowsProgress) {
  ScopedEnv on{"TESSEL_VERBOSE", "1"};
  ScriptedBackend b({{"a", 0.001}});
  tune(b, settings(printed, tune_progress::automatic));
  EXPECT_THAT(printed.all(), HasSubstr("tessel autotune: gemm: tuning 1 candidate for bf16[1024,1024]"));
}

/// A backend whose compiles meet: each prepare() waits (10 s at most) until `width` compiles have
/// been inside at once, and candidate 0 then waits until every other candidate compiled, so that
/// it finishes last. Records the most compiles seen inside at once and the threads they ran on.
class MeetingBackend : public ScriptedBackend {
public:
  MeetingBackend(std::vector<Script> s, int width) : ScriptedBackend(std::move(s)), width_(width) {}
  void prepare(std::size_t i) override {
    std::unique_lock<std::mutex> lock(mutex_);
    threads.push_back(std::this_thread::get_id());
    started.push_back(i);
    most = std::max(most, ++inside_);
    met_ = met_ || inside_ >= width_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return met_; });
    if (i == 0 && width_ > 1)
      cv_.wait_for(lock, std::chrono::seconds(10), [&] { return finished_ + 1 == size(); });
    --inside_;
    ++finished_;
    cv_.notify_all();
    lock.unlock();
    ScriptedBackend::prepare(i);
  }
  int most = 0;
  std::vector<std::thread::id> threads;
  std::vector<std::size_t> started;

private:
  int width_, inside_ = 0;
  std::size_t finished_ = 0;
  bool met_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
};

TEST_F(Autotune, CandidatesCompileAtOnceAndReportInTheirOrder) {
  Script bad{"c", 1.0};
  bad.compileError = "tessel: does not fit";
  MeetingBackend b({{"a", 2.0}, {"b", 1.0}, bad, {"d", 3.0}}, 3);
  TuneSettings s = settings(printed, tune_progress::always);
  s.compileThreads = 3;
  TuneOutcome out = tune(b, s);
  EXPECT_EQ(b.most, 3) << "three compiles at once, never four";
  EXPECT_EQ(b.prepared, 4);
  EXPECT_EQ(std::count(b.threads.begin(), b.threads.end(), std::this_thread::get_id()), 0)
      << "the calling thread reports, the workers compile";
  EXPECT_THAT(b.begun, ElementsAre(0, 1, 3));
  EXPECT_EQ(out.winner, 1u);
  EXPECT_EQ(out.candidates[2].dropped, "does not compile: does not fit");
  // 'a' finished compiling last, yet every line keeps the candidates' order.
  ASSERT_GE(printed.lines.size(), 5u) << printed.all();
  EXPECT_THAT(std::vector<std::string>(printed.lines.begin(), printed.lines.begin() + 5),
              ElementsAre("tessel autotune: gemm: tuning 4 candidates for bf16[1024,1024]",
                          "tessel autotune: gemm 1/4: compiled 'a'", "tessel autotune: gemm 2/4: compiled 'b'",
                          "tessel autotune: gemm: dropped 'c': does not compile: does not fit",
                          "tessel autotune: gemm 4/4: compiled 'd'"));
}

TEST_F(Autotune, OneCompileThreadCompilesInOrderOnTheCallingThread) {
  MeetingBackend b({{"a", 2.0}, {"b", 1.0}, {"c", 3.0}}, 1);
  TuneSettings s = settings(printed);
  s.compileThreads = 1;
  EXPECT_EQ(tune(b, s).winner, 1u);
  EXPECT_EQ(b.most, 1);
  EXPECT_THAT(b.started, ElementsAre(0, 1, 2));
  EXPECT_THAT(b.threads, ElementsAre(std::this_thread::get_id(), std::this_thread::get_id(),
                                     std::this_thread::get_id()));
}

TEST_F(Autotune, AnotherExceptionEndsTheTuneOnceEveryCompileFinished) {
  class Throwing : public ScriptedBackend {
  public:
    using ScriptedBackend::ScriptedBackend;
    void prepare(std::size_t i) override {
      ScriptedBackend::prepare(i);
      if (i == 1)
        throw std::runtime_error("out of memory");
    }
  } b({{"a"}, {"b"}, {"c"}, {"d"}});
  TuneSettings s = settings(printed);
  s.compileThreads = 2;
  EXPECT_THAT([&] { tune(b, s); }, ThrowsMessage<std::runtime_error>("out of memory"));
  EXPECT_EQ(b.prepared, 4) << "the other compiles ran to their end";
  EXPECT_TRUE(b.begun.empty());
}

TEST_F(Autotune, CompileThreadsAreCheckedAndBounded) {
  EXPECT_EQ(compileThreads("g", 4, 2), 2u) << "never more threads than candidates";
  EXPECT_EQ(compileThreads("g", 1, 9), 1u);
  EXPECT_EQ(compileThreads("g", 0, 1000),
            std::min(kMaxCompileThreads, std::size_t(std::max(1u, std::thread::hardware_concurrency()))))
      << "one per hardware thread, at most 16";
  EXPECT_EQ(compileThreads("g", 40, 1000), 40u) << "the cap is the default's only";
  EXPECT_THAT([] { compileThreads("g", -2, 3); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_options::compile_threads = -2: must be >= 0 "
                                           "(0: one per hardware thread)"));
  ScriptedBackend b({{"a"}});
  TuneSettings s = settings(printed);
  s.compileThreads = -1;
  EXPECT_THAT([&] { tune(b, s); }, ThrowsMessage<tessel::error>(HasSubstr("compile_threads = -1: must be >= 0")));
  EXPECT_EQ(b.prepared, 0);
}

TEST_F(Autotune, TimingSettingsAreChecked) {
  auto check = [](auto change) {
    tune_timing t;
    change(t);
    validateTiming("g", t);
  };
  EXPECT_THAT([&] { check([](tune_timing& t) { t.batch = 0; }); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_timing::batch = 0: must be >= 1"));
  EXPECT_THAT([&] { check([](tune_timing& t) { t.max_batch = 2000; }); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_timing::max_batch = 2000: must be 1..1000 (a "
                                           "batch waits behind a gate in the launch queue)"));
  EXPECT_THAT([&] { check([](tune_timing& t) { t.batch = 300; }); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_timing::batch = 300: must be <= max_batch"));
  EXPECT_THAT([&] { check([](tune_timing& t) { t.warmup_ms = -1; }); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_timing::warmup_ms = -1: must be >= 0"));
  EXPECT_THAT([&] { check([](tune_timing& t) { t.max_repeats = 2; }); },
              ThrowsMessage<tessel::error>("tessel: autotune 'g': tune_timing::max_repeats = 2: must be >= repeats"));
  EXPECT_NO_THROW(check([](tune_timing&) {}));
}

//===----------------------------------------------------------------------===//
// compareOutputs
//===----------------------------------------------------------------------===//

TuneOutput f32Output(std::vector<float> v, std::vector<std::int64_t> sizes = {}) {
  TuneOutput o;
  o.arg = 1;
  o.type = dtype::f32;
  o.sizes = sizes.empty() ? std::vector<std::int64_t>{std::int64_t(v.size())} : sizes;
  o.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  return o;
}

TEST(AutotuneCheck, RelativeFrobeniusError) {
  TuneOutputs ref{f32Output({3, 4})};  // norm 5
  EXPECT_EQ(compareOutputs(ref, {f32Output({3, 4})}, 0), std::nullopt);
  EXPECT_EQ(compareOutputs(ref, {f32Output({3.03f, 4.04f})}, 1e-2), std::nullopt);  // 0.05 / 5 = 1e-2
  EXPECT_EQ(compareOutputs(ref, {f32Output({3.1f, 4})}, 1e-2),
            "argument 1: relative error 2.0e-02 > 1.0e-02 over 2 elements");
  EXPECT_EQ(compareOutputs({f32Output({0, 0})}, {f32Output({0, 1e-30f})}, 1),
            "argument 1: relative error inf (the reference is all zeros) > 1.0e+00 over 2 elements");
}

TEST(AutotuneCheck, NonFiniteElementsMustMatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compareOutputs({f32Output({nan, inf, 1})}, {f32Output({nan, inf, 1})}, 0), std::nullopt)
      << "NaN where the reference has NaN agrees (e.g. a NaN input)";
  EXPECT_EQ(compareOutputs({f32Output({1, inf, 2, 3}, {2, 2})}, {f32Output({1, -inf, 2, nan}, {2, 2})}, 1),
            "argument 1: 2 of 4 elements are NaN or Inf where the reference is finite, or the other way round "
            "(first at [0, 1]: -inf here, inf in the reference)");
}

TEST(AutotuneCheck, HalfPrecisionOutputsAreRead) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc500), -5.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(f8e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(f8e4m3ToFloat(0x7e), 448.0f);                   // the largest finite e4m3
  EXPECT_EQ(f8e4m3ToFloat(0x81), -std::ldexp(1.0f, -9));    // the smallest subnormal, negative
  EXPECT_TRUE(std::isnan(f8e4m3ToFloat(0x7f)));
  EXPECT_EQ(f8e5m2ToFloat(0x3c), 1.0f);
  EXPECT_EQ(f8e5m2ToFloat(0x7b), 57344.0f);                 // the largest finite e5m2
  EXPECT_EQ(f8e5m2ToFloat(0x7c), std::numeric_limits<float>::infinity());
  TuneOutput a, b;
  a.arg = b.arg = 0;
  a.type = b.type = dtype::bf16;
  a.sizes = b.sizes = {2};
  a.bytes = std::string("\x80\x3f\x00\x40", 4);  // 1, 2
  b.bytes = std::string("\x80\x3f\x40\x40", 4);  // 1, 3
  EXPECT_EQ(compareOutputs({a}, {b}, 0.5), std::nullopt);
  EXPECT_EQ(compareOutputs({a}, {b}, 0.4), "argument 0: relative error 4.5e-01 > 4.0e-01 over 2 elements");
}

TEST(AutotuneCheck, OutputsMustHaveTheSameShapes) {
  EXPECT_EQ(compareOutputs({f32Output({1, 2, 3, 4}, {2, 2})}, {f32Output({1, 2, 3, 4}, {4, 1})}, 1),
            "argument 1: f32[4,1] (argument 1), the reference has f32[2,2]");
  EXPECT_EQ(compareOutputs({f32Output({1})}, {}, 1), "0 outputs, the reference has 1");
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

TEST(AutotuneKey, BucketsRoundEachDimensionUpToAPowerOfTwo) {
  EXPECT_EQ(roundUpPow2(0), 0);
  EXPECT_EQ(roundUpPow2(1), 1);
  EXPECT_EQ(roundUpPow2(3), 4);
  EXPECT_EQ(roundUpPow2(1024), 1024);
  EXPECT_EQ(roundUpPow2(1025), 2048);
  std::vector<tensor_arg> args = gemmArgs();  // A 256x512, B 512x128, C 256x128
  EXPECT_EQ(shapeBucket(args), "bf16[256,512] bf16[512,128] f32[256,128]");
  std::vector<tensor_arg> other = args;
  other[0].sizes[0] = other[2].sizes[0] = 200;  // M = 200: the same bucket
  EXPECT_EQ(shapeBucket(other), shapeBucket(args));
  other[0].sizes[0] = other[2].sizes[0] = 257;  // M = 257: the next one
  EXPECT_EQ(shapeBucket(other), "bf16[512,512] bf16[512,128] f32[512,128]");
}

TEST(AutotuneKey, BucketsSeparateLayoutsAlignmentAndScalars) {
  std::vector<tensor_arg> args = gemmArgs();
  args[1] = tensor2d(dtype::bf16, fakeAddress(0x7f0000200000), 512, 128, 1, 512);  // column-major B
  args[2].data = fakeAddress(0x7f0000300004);                                       // C off 16 bytes
  tensor_arg alpha;
  alpha.kind = arg_kind::floating;
  alpha.floating = 2.5;
  tensor_arg n;
  n.kind = arg_kind::integer;
  args.push_back(alpha);
  args.push_back(n);
  EXPECT_EQ(shapeBucket(args), "bf16[256,512] bf16[512,128]@0 f32[256,128]!a16 f i");
}

TEST(AutotuneKey, EveryPartChangesTheKey) {
  const std::vector<CandidateIdentity> ids = {{"a pingpong", "schedule=pingpong;", "0123"},
                                              {"b tma", "schedule=tma;", "4567"}};
  const std::string device = deviceKey("NVIDIA H200", 9, 0, 132);
  EXPECT_EQ(device, "NVIDIA H200 sm_90 sms=132");
  const std::string key = tuneKey("gemm", ids, 1e-2, "bf16[1024]", device, "tessel=0.1\n");
  std::vector<std::string> variants = {
      tuneKey("gemm2", ids, 1e-2, "bf16[1024]", device, "tessel=0.1\n"),
      tuneKey("gemm", ids, 1e-3, "bf16[1024]", device, "tessel=0.1\n"),
      tuneKey("gemm", ids, 1e-2, "bf16[2048]", device, "tessel=0.1\n"),
      tuneKey("gemm", ids, 1e-2, "bf16[1024]", deviceKey("NVIDIA H100 80GB HBM3", 9, 0, 132), "tessel=0.1\n"),
      tuneKey("gemm", ids, 1e-2, "bf16[1024]", deviceKey("NVIDIA H200", 9, 0, 66), "tessel=0.1\n"),
      tuneKey("gemm", ids, 1e-2, "bf16[1024]", device, "tessel=0.2\n"),
      tuneKey("gemm", {ids[1], ids[0]}, 1e-2, "bf16[1024]", device, "tessel=0.1\n"),
      tuneKey("gemm", {ids[0]}, 1e-2, "bf16[1024]", device, "tessel=0.1\n"),
      tuneKey("gemm", {ids[0], {"b tma", "schedule=tma;stages=3;", "4567"}}, 1e-2, "bf16[1024]", device,
              "tessel=0.1\n"),
      tuneKey("gemm", {ids[0], {"b tma", "schedule=tma;", "4568"}}, 1e-2, "bf16[1024]", device, "tessel=0.1\n"),
      tuneKey("gemm", {ids[0], {"b tma!", "schedule=tma;", "4567"}}, 1e-2, "bf16[1024]", device, "tessel=0.1\n"),
  };
  for (std::size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(variants[i], key) << i;
    EXPECT_NE(tuneEntryPath("/c", variants[i]), tuneEntryPath("/c", key)) << i;
  }
  EXPECT_EQ(tuneKey("gemm", ids, 1e-2, "bf16[1024]", device, "tessel=0.1\n"), key);
  EXPECT_THAT(tuneEntryPath("/c", key), ::testing::MatchesRegex("/c/[0-9a-f]{32}\\.tune"));
}

TEST(AutotuneMode, ParsesTheKnob) {
  EXPECT_EQ(parseAutotuneMode(""), AutotuneMode::on);
  EXPECT_EQ(parseAutotuneMode("1"), AutotuneMode::on);
  EXPECT_EQ(parseAutotuneMode(" ON "), AutotuneMode::on);
  EXPECT_EQ(parseAutotuneMode("0"), AutotuneMode::off);
  EXPECT_EQ(parseAutotuneMode("off"), AutotuneMode::off);
  EXPECT_EQ(parseAutotuneMode("Force"), AutotuneMode::force);
  EXPECT_EQ(parseAutotuneMode("retune"), AutotuneMode::force);
  EXPECT_EQ(parseAutotuneMode("sometimes"), std::nullopt);
}

//===----------------------------------------------------------------------===//
// The saved entry
//===----------------------------------------------------------------------===//

struct TempDir : tessel_test::temp_dir {
  TempDir() : temp_dir("tessel-autotune-test") {}
};

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void writeAll(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

TuneRecord record() {
  TuneRecord r;
  r.winner = 1;
  r.reference = 0;
  r.tuneMs = 1234.5;
  tune_result a;
  a.label = "gemm_128_128 pingpong";
  a.ok = true;
  a.median_ms = 0.4125;
  a.min_ms = 0.41;
  a.max_ms = 0.5;
  a.batch = 24;
  a.samples = 7;
  tune_result b = a;
  b.label = "gemm_128_256 cooperative";
  b.median_ms = 0.3875;
  tune_result c;
  c.label = "gemm_128_256 tma s7";
  c.dropped = "does not compile: kernel 'x': stages 7 do not fit";
  r.candidates = {a, b, c};
  return r;
}
const std::vector<std::string> kLabels = {"gemm_128_128 pingpong", "gemm_128_256 cooperative", "gemm_128_256 tma s7"};
const std::string kKey = "tessel-autotune\nname=4:gemm\nbucket=bf16[1024]\n";

TEST(AutotuneEntry, RoundTrips) {
  const TuneRecord r = record();
  std::string why;
  std::optional<TuneRecord> back = decodeTuneEntry(encodeTuneEntry(kKey, r), kKey, kLabels, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->winner, 1u);
  EXPECT_EQ(back->reference, 0u);
  EXPECT_DOUBLE_EQ(back->tuneMs, 1234.5);
  ASSERT_EQ(back->candidates.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const tune_result &x = r.candidates[i], &y = back->candidates[i];
    EXPECT_EQ(y.label, x.label);
    EXPECT_EQ(y.ok, x.ok);
    EXPECT_EQ(y.dropped, x.dropped);
    EXPECT_EQ(y.median_ms, x.median_ms);
    EXPECT_EQ(y.min_ms, x.min_ms);
    EXPECT_EQ(y.max_ms, x.max_ms);
    EXPECT_EQ(y.batch, x.batch);
    EXPECT_EQ(y.samples, x.samples);
  }
}

TEST(AutotuneEntry, EveryCorruptionIsRejectedWithAReason) {
  const std::string good = encodeTuneEntry(kKey, record());
  auto why = [&](const std::string& data, const std::string& key = kKey,
                 const std::vector<std::string>& labels = kLabels) {
    std::string w;
    EXPECT_FALSE(decodeTuneEntry(data, key, labels, &w));
    return w;
  };
  EXPECT_EQ(why(""), "truncated: 0 bytes, shorter than the header");
  EXPECT_EQ(why(good.substr(0, good.size() - 5)), "checksum mismatch");
  EXPECT_EQ(why("tessel-autotune 9\n" + good.substr(good.find('\n') + 1)), "format version 9, expected 1");
  EXPECT_EQ(why("TESSELKC\n1\n2\n"), "not a tessel autotune entry (bad first line)");
  std::string flipped = good;
  flipped[flipped.size() - 20] ^= 1;
  EXPECT_EQ(why(flipped), "checksum mismatch");
  EXPECT_EQ(why(good, kKey + "x"), "written for another key (a hash collision or a foreign file)");
  EXPECT_EQ(why(good, kKey, {"a", "b"}), "3 candidates, the tuner has 2");
  EXPECT_EQ(why(good, kKey, {kLabels[0], "other", kLabels[2]}),
            "candidate 1 is 'gemm_128_256 cooperative', the tuner's is 'other'");
  TuneRecord r = record();
  r.winner = 2;  // not timed
  EXPECT_EQ(why(encodeTuneEntry(kKey, r)), "the winner 'gemm_128_256 tma s7' was not timed");
  r.winner = 5;
  EXPECT_EQ(why(encodeTuneEntry(kKey, r)), "winner 5 or reference 0 out of range (3 candidates)");
}

class AutotuneFiles : public ::testing::Test {
protected:
  TempDir dir;
  void SetUp() override { resetTuneWarningsForTesting(); }
};

TEST_F(AutotuneFiles, StoreThenLoad) {
  EXPECT_EQ(loadTuneEntry(dir.path, kKey, kLabels), std::nullopt) << "no entry yet";
  const std::string path = storeTuneEntry(dir.path, kKey, record());
  EXPECT_EQ(path, tuneEntryPath(dir.path, kKey));
  std::optional<TuneRecord> r = loadTuneEntry(dir.path, kKey, kLabels);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->winner, 1u);
  EXPECT_EQ(loadTuneEntry(dir.path, kKey + "other bucket", kLabels), std::nullopt)
      << "another key is another file";
}

TEST_F(AutotuneFiles, ACorruptEntryIsAMissWithOneWarning) {
  const std::string path = storeTuneEntry(dir.path, kKey, record());
  std::string data = readAll(path);
  writeAll(path, data.substr(0, data.size() / 2));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(loadTuneEntry(dir.path, kKey, kLabels), std::nullopt);
  EXPECT_EQ(loadTuneEntry(dir.path, kKey, kLabels), std::nullopt);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tessel: warning: ignoring the autotune entry " + path +
                     " (checksum mismatch); tuning again and replacing it\n");
  // Replacing it makes it valid again.
  storeTuneEntry(dir.path, kKey, record());
  EXPECT_TRUE(loadTuneEntry(dir.path, kKey, kLabels));
}

TEST_F(AutotuneFiles, ClearingTheCacheRemovesTheChoices) {
  const std::string path = storeTuneEntry(dir.path, kKey, record());
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(clearCache(dir.path), 0u) << "no kernel entries";
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(AutotuneFiles, AnUnwritableDirectoryIsReportedOnce) {
  writeAll(dir.path + "/file", "a file, not a directory");  // unwritable under it, even for root
  const std::string ro = dir.path + "/file/cache";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(storeTuneEntry(ro, kKey, record()), "");
  EXPECT_EQ(storeTuneEntry(ro, kKey, record()), "");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::StartsWith("tessel: warning: cannot save the autotune choice in '" + ro + "' ("));
  EXPECT_THAT(err, HasSubstr("); it is kept in this process only (set TESSEL_CACHE_DIR, or TESSEL_DISABLE_CACHE=1 "
                             "to silence this)\n"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

}  // namespace
