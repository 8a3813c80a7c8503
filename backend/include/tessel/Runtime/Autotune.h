//===- Autotune.h - choosing among candidate kernels by timing -----*- C++ -*-===//
//
// The core of ts::autotune (dsl/include/tessel/kernel/autotune.hpp,
// docs/autotune.md), without the GPU: everything here talks to a TuneBackend
// (compile, run once and return the outputs, launch, time a batch), so that the
// unit tests drive it with fake candidates and a fake clock. Tuner.cpp
// implements the backend on the CUDA driver and the tuner the DSL calls.
//
//   tune()              compiles, checks and times the candidates, picks the
//                       winner; prints the dropped candidates and, on a long
//                       tune, progress lines.
//   timeInterleaved()   tessel-bench's timing method (bench_util.cu,
//                       time_interleaved): warm-up, calibrated batches,
//                       interleaved repeats with a rotating start, median.
//   compareOutputs()    the numerical check of one candidate's outputs
//                       against the reference's.
//   shapeBucket(), tuneKey(), tuneEntryPath(), encodeTuneEntry(),
//   decodeTuneEntry(), loadTuneEntry(), storeTuneEntry()
//                       the saved choice: one small text file per key in the
//                       disk cache's directory, "<32 hex digits>.tune".
//
// The saved entry (format version kTuneEntryVersion), text, one field a line:
//
//   tessel-autotune <version>
//   key-bytes <n>
//   checksum <16 hex digits: xxh64 of everything after this line, seeded with 0x7e55e1>
//   <the key: n bytes>
//   winner <index>
//   reference <index>
//   tune-ms <wall ms of the tune>
//   candidates <count>
//   then per candidate: label <text>, ok <0|1>, dropped <text>, times <median> <min> <max>
//   <batch> <samples>
//   end
//
// Anything else (another version, a bad checksum, another key, a truncated
// file, a winner out of range or not ok, a label that is not the candidate's)
// is a miss: the bucket is tuned again and the entry replaced, with one
// "tessel: warning: ..." line per entry and process.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/kernel/autotune.hpp"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel::runtime {

//===----------------------------------------------------------------------===//
// TESSEL_AUTOTUNE
//===----------------------------------------------------------------------===//

/// TESSEL_AUTOTUNE: `on` (default, also "1"): use a saved choice, tune on a miss; `off` ("0",
/// "false", "no"): launch the first candidate that compiles, untimed and unchecked, and save
/// nothing; `force` ("retune"): tune every bucket again and replace the saved choice.
enum class AutotuneMode { on, off, force };
/// Parses a TESSEL_AUTOTUNE value (any case, blanks around ignored); nullopt when unknown.
std::optional<AutotuneMode> parseAutotuneMode(std::string_view value);
/// TESSEL_AUTOTUNE now; an unknown value is `on`, with one warning per process naming the
/// accepted values.
AutotuneMode autotuneMode();

//===----------------------------------------------------------------------===//
// The numerical check
//===----------------------------------------------------------------------===//

/// One output tensor of a run, copied to the host: its elements densely, outermost dimension
/// first, each `elementSize(type)` bytes.
struct TuneOutput {
  int arg = -1;  ///< the launch argument
  dtype type = dtype::f32;
  std::vector<std::int64_t> sizes;
  std::string bytes;
};
using TuneOutputs = std::vector<TuneOutput>;

/// The check of `got` against `ref` (tune_options::rtol): per output, the elements that are
/// finite in both give ||got - ref||_F / ||ref||_F, which must be <= rtol (a reference of norm 0:
/// the difference must be 0); an element non-finite in either must be the same NaN / +Inf /
/// -Inf in the other. Returns nullopt when they agree, else the first disagreement in one line,
/// e.g. "argument 2: relative error 4.1e-01 > 1.0e-02 over 4096 elements" or "argument 2: 12
/// of 4096 elements are NaN or Inf where the reference is finite, or the other way round (first
/// at [0, 17]: 1.5 here, nan in the reference)". A different list of outputs or shapes is a
/// disagreement too.
std::optional<std::string> compareOutputs(const TuneOutputs& ref, const TuneOutputs& got, double rtol);

/// IEEE half / bfloat16 / fp8 bits to float (the check reads 16- and 8-bit outputs with these).
float halfToFloat(std::uint16_t h);
float bf16ToFloat(std::uint16_t h);
/// OCP E4M3FN (bias 7, no infinities; S.1111.111 is NaN) and E5M2 (the top byte of an f16).
float f8e4m3ToFloat(std::uint8_t b);
float f8e5m2ToFloat(std::uint8_t b);

//===----------------------------------------------------------------------===//
// The tune
//===----------------------------------------------------------------------===//

/// What tune() needs from the GPU (Tuner.cpp) or from a test. Candidates are numbered
/// 0..size()-1 in the user's order.
class TuneBackend {
public:
  virtual ~TuneBackend() = default;
  virtual std::size_t size() const = 0;
  virtual std::string label(std::size_t i) const = 0;
  /// Compiles candidate i. A tessel::error drops it ("does not compile: <first line>").
  /// tune() calls it from several threads at once (TuneSettings::compileThreads), each for a
  /// different i, and nothing else of the backend but nowMs() and label() while any runs.
  virtual void prepare(std::size_t i) = 0;
  /// Called once the candidates in `compiled` compiled, before any of them runs (the GPU backend
  /// saves the outputs here). A tessel::error ends the tune.
  virtual void begin(const std::vector<std::size_t>& compiled) = 0;
  /// Brings the outputs back to their saved state, launches candidate i once, waits for it and
  /// returns its outputs. May be called again for a candidate. A tessel::error drops it ("failed
  /// to run: <first line>").
  virtual TuneOutputs run(std::size_t i) = 0;
  /// Enqueues `n` untimed launches of candidate i.
  virtual void launch(std::size_t i, int n) = 0;
  /// Waits until everything enqueued has run.
  virtual void synchronize() = 0;
  /// Enqueues `n` launches of candidate i between two timing events and returns the time
  /// between the events in milliseconds (the GPU time of the n launches).
  virtual double timeBatch(std::size_t i, int n) = 0;
  /// Brings the outputs back to their saved state and launches the winner once (the user's
  /// result). Called only when the tune found a winner.
  virtual void finish(std::size_t winner) = 0;
  /// A monotonic clock in milliseconds (warm-up length, progress).
  virtual double nowMs() const;
};

/// What tune() is told.
struct TuneSettings {
  std::string name;    ///< the tuner's name (messages)
  std::string bucket;  ///< the shape bucket (messages)
  double rtol = 1e-2;
  tune_timing timing{};
  tune_progress progress = tune_progress::automatic;
  /// Candidates compiled at once (tune_options::compile_threads): 0 one per hardware thread
  /// (at most 16), at most one per candidate; 1 one after another on the calling thread.
  int compileThreads = 0;
  /// Printed on stderr by default; tests collect them.
  std::function<void(const std::string&)> print;
};

/// What tune() found.
struct TuneOutcome {
  std::size_t winner = 0;
  std::size_t reference = 0;
  std::vector<tune_result> candidates;  ///< one per candidate, in order
  double tuneMs = 0;                    ///< wall time (the backend's clock)
};

/// Tunes (the steps of autotune.hpp's file comment):
///  1. prepare() each candidate, on up to compileThreads threads at once (compileThreads()
///     below); those that throw a tessel::error are dropped; any other exception is rethrown
///     once every compile has finished. Progress and drop lines come in the candidates' order;
///  2. begin(), then run() each candidate once; the first that runs is the reference, every
///     later one is compared with it (compareOutputs). When the reference agrees with fewer
///     than half of the others, the candidates after it take its place in turn (run() again)
///     until one agrees with at least half of the others; the candidates that disagree with
///     the reference are dropped ("disagrees with '<reference>': <compareOutputs' line>"). No
///     such candidate (e.g. two that disagree): tessel::error;
///  3. timeInterleaved() on the survivors; the smallest median wins (the earlier on a tie);
///  4. finish(winner).
/// Each dropped candidate is printed ("tessel autotune: <name>: dropped '<label>': <why>").
/// Progress lines ("tessel autotune: <name> <bucket>: ... i/n ...") are printed as `progress`
/// says: `automatic` once a second has passed since the start (or with TESSEL_VERBOSE), with a
/// closing line naming the winner. Throws tessel::error "tessel: autotune '<name>': no
/// candidate ..." when every candidate was dropped.
TuneOutcome tune(TuneBackend& backend, const TuneSettings& settings);

/// The default's cap on compile threads (tune_options::compile_threads = 0).
constexpr std::size_t kMaxCompileThreads = 16;

/// The threads tune() compiles `candidates` on: `requested` (>= 1) or, for 0, one per hardware
/// thread up to kMaxCompileThreads; never more than `candidates`, never fewer than 1. A negative
/// `requested` is a tessel::error naming tune_options::compile_threads.
std::size_t compileThreads(const std::string& name, int requested, std::size_t candidates);

/// Per-candidate timing (tune_result's fields).
struct CandidateTiming {
  double medianMs = 0, minMs = 0, maxMs = 0;
  int batch = 0;
  std::vector<double> samplesMs;  ///< per launch, one per repeat
};

/// tessel-bench's time_interleaved (tools/tessel-bench/bench_util.cu) over `candidates`:
///  - warm-up: rounds of 4 launches of each candidate until `warmup_ms` of the backend's clock
///    have passed (at most 1000 rounds);
///  - calibration: one probe batch (max(4, min(batch, 20)) launches) per candidate gives its
///    time per launch; batch = max(batch, ceil(min_batch_ms / fastest)), at most max_batch;
///    repeats = max(repeats, min(max_repeats, ceil(min_total_ms / (slowest * batch))));
///  - `repeats` rounds, each timing one batch of every candidate, the round's first candidate
///    rotating; per candidate the median, min and max of the per-launch times.
/// `onRepeat(r, repeats)` is called after each round (progress).
std::vector<CandidateTiming> timeInterleaved(TuneBackend& backend, const std::vector<std::size_t>& candidates,
                                             const tune_timing& cfg,
                                             const std::function<void(int, int)>& onRepeat = {});

/// Checks `t` (tune_timing's rules): every count >= 1, times >= 0, max_batch <= 1000, batch <=
/// max_batch, repeats <= max_repeats. Throws tessel::error "tessel: autotune '<name>':
/// tune_timing::<field> = <value>: <rule>".
void validateTiming(const std::string& name, const tune_timing& t);

//===----------------------------------------------------------------------===//
// The saved choice
//===----------------------------------------------------------------------===//

inline constexpr int kTuneEntryVersion = 1;
inline constexpr const char* kTuneSuffix = ".tune";

/// A power of two >= v (0 stays 0, 1 stays 1).
std::int64_t roundUpPow2(std::int64_t v);

/// The shape bucket of a launch: per argument, a tensor as "<dtype>[<sizes rounded up to powers
/// of two>]" with "@<d>" when its unit-stride dimension is not its last and "!a16" when its
/// base is not 16-byte aligned; a scalar as its parameter kind, "f" (floating) or "i" (integer).
/// E.g. "bf16[1024,512] bf16[2048,512] f32[1024,2048]@0 f".
std::string shapeBucket(std::span<const kernel_arg> args);

/// The device part of the key: "<name> sm_<major><minor> sms=<count>".
std::string deviceKey(const std::string& name, int ccMajor, int ccMinor, int smCount);

/// What identifies one candidate in the key.
struct CandidateIdentity {
  std::string label;
  std::string options;  ///< optionsKey (DiskCache.h)
  std::string program;  ///< hash of the traced program (finish_trace_identity)
};

/// The key of a saved choice: the tuner's name, every candidate (label, options, program), the
/// check's tolerance, the bucket, the device and the toolchain (cacheToolchainIdentity: tessel's
/// version and build, ptxas, the architecture).
std::string tuneKey(const std::string& name, const std::vector<CandidateIdentity>& candidates, double rtol,
                    const std::string& bucket, const std::string& device, const std::string& toolchain);

/// <dir>/<32 hex digits of the key's hash>.tune
std::string tuneEntryPath(const std::string& dir, std::string_view key);

/// A saved decision.
struct TuneRecord {
  std::size_t winner = 0;
  std::size_t reference = 0;
  double tuneMs = 0;
  std::vector<tune_result> candidates;
};
std::string encodeTuneEntry(std::string_view key, const TuneRecord& r);
/// Decodes an entry written for `key`; nullopt with *why (one phrase) otherwise. `labels` are
/// the current candidates' labels: the entry must have as many, with the same labels, and a
/// winner that is ok.
std::optional<TuneRecord> decodeTuneEntry(std::string_view data, std::string_view key,
                                          const std::vector<std::string>& labels, std::string* why);

/// Reads the entry for `key` in `dir`: nullopt when there is none or it is not valid (then one
/// "tessel: warning: ignoring the autotune entry <path> (<why>); tuning again and replacing
/// it" line per entry and process).
std::optional<TuneRecord> loadTuneEntry(const std::string& dir, const std::string& key,
                                        const std::vector<std::string>& labels);
/// Writes the entry (atomically); a directory that cannot be written is reported once
/// ("tessel: warning: cannot save the autotune choice ...") and the tune is kept in memory only.
/// Returns the entry's path, or "" when it could not be written.
std::string storeTuneEntry(const std::string& dir, const std::string& key, const TuneRecord& r);

/// Tests: forget which warnings this process has printed.
void resetTuneWarningsForTesting();

}  // namespace tessel::runtime
