//===- Autotune.cpp - choosing among candidate kernels by timing -----------===//
//
// See Autotune.h. Nothing here touches the GPU: the timing method, the
// numerical check, the choice of the reference, the progress lines and the
// saved entries work through TuneBackend and plain files, so that
// tests/unit/runtime/AutotuneTest.cpp drives all of it without one.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/Autotune.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tessel/Runtime/DiskCache.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"

namespace tessel::runtime {

namespace {

std::string lower(std::string_view s) {
  std::string v(s);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return std::string(s);
}

/// The first line of a message, without a trailing ':' or blank, and without the "tessel: "
/// prefix (the tuner's lines carry their own).
std::string firstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  while (!line.empty() && (line.back() == ':' || line.back() == ' '))
    line.pop_back();
  if (line.rfind("tessel: ", 0) == 0)
    line = line.substr(8);
  return line;
}

/// A value as it may appear on one line of an entry or a message.
std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

//===----------------------------------------------------------------------===//
// TESSEL_AUTOTUNE
//===----------------------------------------------------------------------===//

std::optional<AutotuneMode> parseAutotuneMode(std::string_view value) {
  const std::string v = lower(trim(value));
  if (v.empty() || v == "1" || v == "on" || v == "true" || v == "yes")
    return AutotuneMode::on;
  if (v == "0" || v == "off" || v == "false" || v == "no")
    return AutotuneMode::off;
  if (v == "force" || v == "retune")
    return AutotuneMode::force;
  return std::nullopt;
}

AutotuneMode autotuneMode() {
  const std::string value = envString("TESSEL_AUTOTUNE");
  if (std::optional<AutotuneMode> m = parseAutotuneMode(value))
    return *m;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "tessel: warning: TESSEL_AUTOTUNE='%s' is not one of 1 (on), 0 (off), force; using 1\n",
                 value.c_str());
  });
  return AutotuneMode::on;
}

//===----------------------------------------------------------------------===//
// The numerical check
//===----------------------------------------------------------------------===//

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // Inf, NaN
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float f8e5m2ToFloat(std::uint8_t b) { return halfToFloat(std::uint16_t(b) << 8); }

float f8e4m3ToFloat(std::uint8_t b) {
  const float sign = (b & 0x80u) ? -1.0f : 1.0f;
  const int exp = (b >> 3) & 0xf, mant = b & 0x7;
  if (exp == 0xf && mant == 0x7)
    return std::numeric_limits<float>::quiet_NaN();
  if (exp == 0)  // subnormal: mant / 8 * 2^-6
    return sign * std::ldexp(float(mant), -9);
  return sign * std::ldexp(float(8 + mant), exp - 7 - 3);
}

float bf16ToFloat(std::uint16_t h) {
  const std::uint32_t bits = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace {

/// Element i of an output as a double.
double elementAt(const TuneOutput& o, std::size_t i) {
  const char* p = o.bytes.data();
  switch (o.type) {
  case dtype::f16: {
    std::uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return halfToFloat(h);
  }
  case dtype::bf16: {
    std::uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return bf16ToFloat(h);
  }
  case dtype::f32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case dtype::i32: {
    std::int32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case dtype::f8e4m3:
    return f8e4m3ToFloat(std::uint8_t(p[i]));
  case dtype::f8e5m2:
    return f8e5m2ToFloat(std::uint8_t(p[i]));
  default:
    return 0;
  }
}

std::string shapeText(const std::vector<std::int64_t>& sizes) {
  std::string s = "[";
  for (std::size_t d = 0; d < sizes.size(); ++d)
    s += (d ? "," : "") + std::to_string(sizes[d]);
  return s + "]";
}

/// "[r, c]" of linear element i of a dense tensor of `sizes`.
std::string position(const std::vector<std::int64_t>& sizes, std::size_t i) {
  std::vector<std::int64_t> idx(sizes.size());
  std::uint64_t rest = i;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    const std::uint64_t extent = sizes[d] > 0 ? static_cast<std::uint64_t>(sizes[d]) : 1;
    idx[d] = static_cast<std::int64_t>(rest % extent);
    rest /= extent;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string valueText(double v) { return std::isnan(v) ? "nan" : fmt("%.6g", v); }

/// -1 NaN, 1 +Inf, 2 -Inf, 0 finite.
int nonFiniteClass(double v) { return std::isnan(v) ? -1 : std::isinf(v) ? (v > 0 ? 1 : 2) : 0; }

}  // namespace

std::optional<std::string> compareOutputs(const TuneOutputs& ref, const TuneOutputs& got, double rtol) {
  if (ref.size() != got.size())
    return std::to_string(got.size()) + " outputs, the reference has " + std::to_string(ref.size());
  for (std::size_t t = 0; t < ref.size(); ++t) {
    const TuneOutput& r = ref[t];
    const TuneOutput& g = got[t];
    const std::string arg = "argument " + std::to_string(r.arg);
    if (r.arg != g.arg || r.type != g.type || r.sizes != g.sizes || r.bytes.size() != g.bytes.size())
      return arg + ": " + dtypeName(g.type) + shapeText(g.sizes) + " (argument " + std::to_string(g.arg) +
             "), the reference has " + dtypeName(r.type) + shapeText(r.sizes);
    const std::size_t n = r.bytes.size() / std::max<std::size_t>(elementSize(r.type), 1);
    double diff2 = 0, ref2 = 0;
    std::uint64_t mismatched = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double a = elementAt(r, i), b = elementAt(g, i);
      const int ca = nonFiniteClass(a), cb = nonFiniteClass(b);
      if (ca != 0 || cb != 0) {
        if (ca != cb && mismatched++ == 0)
          first = i;
        continue;
      }
      diff2 += (b - a) * (b - a);
      ref2 += a * a;
    }
    if (mismatched)
      return arg + ": " + std::to_string(mismatched) + " of " + std::to_string(n) +
             " elements are NaN or Inf where the reference is finite, or the other way round (first at " +
             position(r.sizes, first) + ": " + valueText(elementAt(g, first)) + " here, " +
             valueText(elementAt(r, first)) + " in the reference)";
    const double diff = std::sqrt(diff2), norm = std::sqrt(ref2);
    if (norm == 0 ? diff != 0 : !(diff <= rtol * norm))
      return arg + ": relative error " + (norm == 0 ? std::string("inf (the reference is all zeros)") : fmt("%.1e", diff / norm)) +
             " > " + fmt("%.1e", rtol) + " over " + std::to_string(n) + " elements";
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The timing method
//===----------------------------------------------------------------------===//

double TuneBackend::nowMs() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void validateTiming(const std::string& name, const tune_timing& t) {
  auto fail = [&](const char* field, double value, const char* rule) {
    throw tessel::error("tessel: autotune '" + name + "': tune_timing::" + field + " = " + fmt("%g", value) + ": " +
                        rule);
  };
  if (!(t.warmup_ms >= 0))
    fail("warmup_ms", t.warmup_ms, "must be >= 0");
  if (!(t.min_batch_ms >= 0))
    fail("min_batch_ms", t.min_batch_ms, "must be >= 0");
  if (!(t.min_total_ms >= 0))
    fail("min_total_ms", t.min_total_ms, "must be >= 0");
  if (t.batch < 1)
    fail("batch", t.batch, "must be >= 1");
  if (t.max_batch < 1 || t.max_batch > 1000)
    fail("max_batch", t.max_batch, "must be 1..1000 (a batch waits behind a gate in the launch queue)");
  if (t.batch > t.max_batch)
    fail("batch", t.batch, "must be <= max_batch");
  if (t.repeats < 1)
    fail("repeats", t.repeats, "must be >= 1");
  if (t.max_repeats < t.repeats)
    fail("max_repeats", t.max_repeats, "must be >= repeats");
}

namespace {
double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

std::vector<CandidateTiming> timeInterleaved(TuneBackend& b, const std::vector<std::size_t>& cands,
                                             const tune_timing& cfg, const std::function<void(int, int)>& onRepeat) {
  const std::size_t n = cands.size();
  std::vector<CandidateTiming> out(n);
  if (n == 0)
    return out;
  // Warm-up until the clocks settle (the first launches were the checked runs).
  const double t0 = b.nowMs();
  for (int round = 0; round < 1000 && b.nowMs() - t0 < cfg.warmup_ms; ++round) {
    for (std::size_t c : cands)
      b.launch(c, 4);
    b.synchronize();
  }
  // Calibrate: GPU time per launch of each candidate.
  const int probe = std::max(4, std::min(cfg.batch, 20));
  std::vector<double> perLaunch(n);
  for (std::size_t c = 0; c < n; ++c)
    perLaunch[c] = std::max(1e-4, b.timeBatch(cands[c], probe) / probe);
  const double fastest = *std::min_element(perLaunch.begin(), perLaunch.end());
  const double slowest = *std::max_element(perLaunch.begin(), perLaunch.end());
  int batch = std::max(cfg.batch, static_cast<int>(std::ceil(cfg.min_batch_ms / fastest)));
  batch = std::max(1, std::min(batch, cfg.max_batch));
  int repeats = std::max(1, cfg.repeats);
  const double wanted = std::ceil(cfg.min_total_ms / (slowest * batch));  // may exceed int
  repeats = std::max(repeats, static_cast<int>(std::min<double>(cfg.max_repeats, wanted)));
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t c = (static_cast<std::size_t>(r) + j) % n;  // rotate who goes first
      out[c].samplesMs.push_back(b.timeBatch(cands[c], batch) / batch);
    }
    if (onRepeat)
      onRepeat(r + 1, repeats);
  }
  for (CandidateTiming& t : out) {
    t.medianMs = median(t.samplesMs);
    t.minMs = *std::min_element(t.samplesMs.begin(), t.samplesMs.end());
    t.maxMs = *std::max_element(t.samplesMs.begin(), t.samplesMs.end());
    t.batch = batch;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The tune
//===----------------------------------------------------------------------===//

namespace {

/// The tune's lines on stderr: dropped candidates always; progress once the tune is long
/// (TuneSettings::progress), preceded by one line saying what is being tuned.
class Progress {
public:
  Progress(const TuneSettings& s, const TuneBackend& b, std::size_t n)
      : s_(s), b_(b), n_(n), start_(b.nowMs()), verbose_(knobs().verbose) {}

  void print(const std::string& line) const {
    if (s_.print)
      s_.print(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  /// A progress line, if progress is shown now.
  void step(const std::string& text) {
    if (!active())
      return;
    if (!announced_) {
      announced_ = true;
      print("tessel autotune: " + s_.name + ": tuning " + std::to_string(n_) + (n_ == 1 ? " candidate" : " candidates") +
            " for " + s_.bucket);
    }
    print("tessel autotune: " + s_.name + " " + text);
  }
  void dropped(const std::string& label, const std::string& why) {
    print("tessel autotune: " + s_.name + ": dropped '" + label + "': " + why);
  }
  bool shown() const { return announced_; }
  double elapsedMs() const { return b_.nowMs() - start_; }

private:
  bool active() const {
    switch (s_.progress) {
    case tune_progress::always:
      return true;
    case tune_progress::never:
      return false;
    case tune_progress::automatic:
      return verbose_ || elapsedMs() >= 1000;
    }
    return false;
  }
  const TuneSettings& s_;
  const TuneBackend& b_;
  std::size_t n_;
  double start_;
  bool verbose_;
  bool announced_ = false;
};

}  // namespace

std::size_t compileThreads(const std::string& name, int requested, std::size_t candidates) {
  if (requested < 0)
    throw tessel::error("tessel: autotune '" + name + "': tune_options::compile_threads = " +
                        std::to_string(requested) + ": must be >= 0 (0: one per hardware thread)");
  // A compile peaks at about 110 MB (64 MB in this process, 46 MB in ptxas: cooperative
  // 128x256, measured on the development machine): at most kMaxCompileThreads by default.
  std::size_t k = requested > 0 ? static_cast<std::size_t>(requested)
                                : std::min<std::size_t>(kMaxCompileThreads,
                                                        std::max(1u, std::thread::hardware_concurrency()));
  return std::max<std::size_t>(1, std::min(k, candidates));
}

namespace {

/// What compiling one candidate gave: nothing (it compiled), a tessel::error's message (it is
/// dropped) or another exception (the tune ends with it).
struct CompileResult {
  std::optional<std::string> error;
  std::exception_ptr other;
};

/// Compiles every candidate of `b` on `threads` threads (the calling thread alone for 1) and
/// calls `report(i, result)` on the calling thread for i = 0, 1, ... in order, each as soon as
/// candidate i and every candidate before it are done: the lines a tune prints keep the
/// candidates' order whichever compile finishes first. Every compile has finished when it
/// returns, also when `report` throws.
///
/// Ordering rules:
///  1. A worker takes the next candidate from one atomic counter, so each is compiled once.
///  2. It publishes the result under `mutex` (results[i], then done[i]) and notifies; the
///     reporting thread reads results[i] only after seeing done[i] under the same mutex.
///  3. The workers are joined before the results leave this function (a scope guard joins
///     them on the exception path too): no compile outlives the tune.
std::vector<CompileResult> compileAll(TuneBackend& b, std::size_t threads,
                                      const std::function<void(std::size_t, CompileResult&)>& report) {
  const std::size_t n = b.size();
  std::vector<CompileResult> results(n);
  auto compileOne = [&b](std::size_t i, CompileResult& r) {
    try {
      b.prepare(i);
    } catch (const tessel::error& e) {
      r.error = e.what();
    } catch (...) {
      r.other = std::current_exception();
    }
  };
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) {
      compileOne(i, results[i]);
      report(i, results[i]);
    }
    return results;
  }
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<char> done(n, 0);
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  struct Joiner {
    std::vector<std::thread>& w;
    ~Joiner() {
      for (std::thread& t : w)
        if (t.joinable())
          t.join();
    }
  } joiner{workers};
  for (std::size_t t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (std::size_t i; (i = next++) < n;) {
        CompileResult r;
        compileOne(i, r);
        {
          std::lock_guard<std::mutex> lock(mutex);
          results[i] = std::move(r);
          done[i] = 1;
        }
        cv.notify_all();
      }
    });
  for (std::size_t i = 0; i < n; ++i) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, [&] { return done[i] != 0; });
    }
    report(i, results[i]);
  }
  return results;
}

}  // namespace

TuneOutcome tune(TuneBackend& b, const TuneSettings& s) {
  validateTiming(s.name, s.timing);
  const std::size_t n = b.size();
  Progress progress(s, b, n);
  TuneOutcome out;
  out.candidates.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    out.candidates[i].label = b.label(i);
  auto label = [&](std::size_t i) { return out.candidates[i].label; };
  auto count = [&](std::size_t i) { return std::to_string(i + 1) + "/" + std::to_string(n); };
  auto drop = [&](std::size_t i, const std::string& why) {
    out.candidates[i].dropped = oneLine(why);
    progress.dropped(label(i), out.candidates[i].dropped);
  };
  auto allDropped = [&](const std::string& what) {
    std::string list;
    for (const tune_result& r : out.candidates)
      list += (list.empty() ? "" : "; ") + ("'" + r.label + "': " + r.dropped);
    return tessel::error("tessel: autotune '" + s.name + "': no candidate " + what + " (" + list + ")");
  };

  // 1. Compile.
  std::vector<std::size_t> compiled;
  for (CompileResult& r : compileAll(b, compileThreads(s.name, s.compileThreads, n), [&](std::size_t i,
                                                                                          CompileResult& r) {
         if (r.error)
           drop(i, "does not compile: " + firstLine(*r.error));
         else if (!r.other)
           progress.step(count(i) + ": compiled '" + label(i) + "'");
       })) {
    if (r.other)
      std::rethrow_exception(r.other);
  }
  for (std::size_t i = 0; i < n; ++i)
    if (out.candidates[i].dropped.empty())
      compiled.push_back(i);
  if (compiled.empty())
    throw allDropped("compiled");
  b.begin(compiled);

  // 2. Run each once; check against a reference.
  std::vector<std::size_t> ran;
  auto runOnce = [&](std::size_t i, bool again) -> std::optional<TuneOutputs> {
    try {
      return b.run(i);
    } catch (const tessel::error& e) {
      drop(i, std::string(again ? "failed to run a second time: " : "failed to run: ") + firstLine(e.what()));
      return std::nullopt;
    }
  };
  std::optional<TuneOutputs> refOut;
  std::size_t ref = 0;
  std::vector<std::optional<std::string>> disagreement(n);  // against the reference
  for (std::size_t i : compiled) {
    std::optional<TuneOutputs> o = runOnce(i, false);
    if (!o)
      continue;
    ran.push_back(i);
    if (!refOut) {
      refOut = std::move(o);
      ref = i;
    } else {
      disagreement[i] = compareOutputs(*refOut, *o, s.rtol);
    }
    progress.step(count(i) + ": ran '" + label(i) + "'" +
                  (i == ref ? " (the reference)" : disagreement[i] ? " (disagrees)" : " (agrees)"));
  }
  if (ran.empty())
    throw allDropped("ran");
  // How many of the other candidates that ran agree with `reference` under `verdicts`.
  auto agreeing = [&](std::size_t reference, const std::vector<std::optional<std::string>>& verdicts) {
    std::size_t k = 0;
    for (std::size_t j : ran)
      k += j != reference && !verdicts[j];
    return k;
  };
  auto enough = [&](std::size_t reference, const std::vector<std::optional<std::string>>& verdicts) {
    return 2 * agreeing(reference, verdicts) >= ran.size() - 1;
  };
  auto forget = [&](std::size_t j) { ran.erase(std::find(ran.begin(), ran.end(), j)); };
  if (!enough(ref, disagreement)) {
    // The reference agrees with fewer than half of the others: it may be the wrong one. The
    // others take its place in turn (every candidate runs again, since only the reference's
    // outputs are kept) until one agrees with at least half of the rest.
    const std::size_t first = ref;
    const std::vector<std::optional<std::string>> firstVerdicts = disagreement;
    const std::vector<std::size_t> order(ran.begin() + 1, ran.end());
    bool found = false;
    for (std::size_t r : order) {
      if (std::find(ran.begin(), ran.end(), r) == ran.end())
        continue;  // dropped meanwhile
      std::optional<TuneOutputs> rOut = runOnce(r, true);
      if (!rOut) {
        forget(r);
        continue;
      }
      std::vector<std::optional<std::string>> verdicts(n);
      for (std::size_t j : std::vector<std::size_t>(ran)) {
        if (j == r)
          continue;
        if (std::optional<TuneOutputs> o = runOnce(j, true))
          verdicts[j] = compareOutputs(*rOut, *o, s.rtol);
        else
          forget(j);
      }
      if (enough(r, verdicts)) {
        ref = r;
        disagreement = std::move(verdicts);
        found = true;
        break;
      }
    }
    if (!found) {
      std::string list;
      for (std::size_t j = 0; j < n; ++j)
        if (j != first && firstVerdicts[j])
          list += (list.empty() ? "" : "; ") + ("'" + label(j) + "' vs '" + label(first) + "': " + *firstVerdicts[j]);
      throw tessel::error("tessel: autotune '" + s.name + "': no candidate agrees with at least half of the others, "
                          "so none can be trusted (" + list + ")");
    }
    progress.step("the reference is '" + label(ref) + "' (it agrees with " +
                  std::to_string(agreeing(ref, disagreement)) + " of " + std::to_string(ran.size() - 1) + "; '" +
                  label(first) + "' did not)");
  }
  out.reference = ref;
  std::vector<std::size_t> survivors;
  for (std::size_t j : ran) {
    if (j != ref && disagreement[j])
      drop(j, "disagrees with '" + label(ref) + "': " + *disagreement[j]);
    else
      survivors.push_back(j);
  }

  // 3. Time the survivors.
  std::vector<CandidateTiming> t = timeInterleaved(b, survivors, s.timing, [&](int r, int repeats) {
    progress.step("timed round " + std::to_string(r) + "/" + std::to_string(repeats) + " of " +
                  std::to_string(survivors.size()) + " candidates");
  });
  std::size_t best = 0;
  for (std::size_t k = 0; k < survivors.size(); ++k) {
    tune_result& r = out.candidates[survivors[k]];
    r.ok = true;
    r.median_ms = t[k].medianMs;
    r.min_ms = t[k].minMs;
    r.max_ms = t[k].maxMs;
    r.batch = t[k].batch;
    r.samples = static_cast<int>(t[k].samplesMs.size());
    if (t[k].medianMs < t[best].medianMs)
      best = k;
  }
  out.winner = survivors[best];

  // 4. The user's result.
  b.finish(out.winner);
  out.tuneMs = progress.elapsedMs();
  if (progress.shown()) {
    std::string line = "[" + s.bucket + "]: '" + label(out.winner) + "' wins, " +
                       fmt("%.4f", out.candidates[out.winner].median_ms) + " ms per launch";
    std::optional<std::size_t> next;
    for (std::size_t k = 0; k < survivors.size(); ++k)
      if (k != best && (!next || t[k].medianMs < t[*next].medianMs))
        next = k;
    if (next)
      line += " (next '" + label(survivors[*next]) + "' " + fmt("%.4f", t[*next].medianMs) + " ms)";
    line += "; " + std::to_string(survivors.size()) + " timed, " + std::to_string(n - survivors.size()) +
            " dropped, " + fmt("%.1f", out.tuneMs / 1000) + " s";
    progress.step(line);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

std::int64_t roundUpPow2(std::int64_t v) {
  if (v <= 1)
    return v;
  std::int64_t p = 1;
  while (p < v && p < (std::int64_t(1) << 62))
    p <<= 1;
  return p;
}

std::string shapeBucket(std::span<const kernel_arg> args) {
  std::string s;
  for (const kernel_arg& a : args) {
    if (!s.empty())
      s += " ";
    if (a.kind != arg_kind::tensor) {
      s += a.kind == arg_kind::floating ? "f" : "i";
      continue;
    }
    s += dtypeName(a.type);
    s += "[";
    for (int d = 0; d < a.rank && d < 3; ++d)
      s += (d ? "," : "") + std::to_string(roundUpPow2(a.sizes[d]));
    s += "]";
    if (a.rank >= 1 && a.rank <= 3) {
      const int c = contiguousDimOf(a);
      if (c != a.rank - 1)
        s += "@" + (c < 0 ? std::string("none") : std::to_string(c));
    }
    if (reinterpret_cast<std::uintptr_t>(a.data) % 16 != 0)
      s += "!a16";
  }
  return s;
}

std::string deviceKey(const std::string& name, int ccMajor, int ccMinor, int smCount) {
  return name + " sm_" + std::to_string(ccMajor) + std::to_string(ccMinor) + " sms=" + std::to_string(smCount);
}

std::string tuneKey(const std::string& name, const std::vector<CandidateIdentity>& candidates, double rtol,
                    const std::string& bucket, const std::string& device, const std::string& toolchain) {
  std::string k = "tessel-autotune\nname=" + std::to_string(name.size()) + ":" + name + "\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CandidateIdentity& c = candidates[i];
    k += "candidate " + std::to_string(i) + " label=" + std::to_string(c.label.size()) + ":" + c.label +
         "\n  options=" + c.options + "\n  program=" + c.program + "\n";
  }
  k += "rtol=" + fmt("%.17g", rtol) + "\nbucket=" + bucket + "\ndevice=" + device + "\n" + toolchain;
  return k;
}

std::string tuneEntryPath(const std::string& dir, std::string_view key) {
  return dir + "/" + hash128Hex(key) + kTuneSuffix;
}

//===----------------------------------------------------------------------===//
// The entry
//===----------------------------------------------------------------------===//

namespace {
constexpr const char* kTuneMagic = "tessel-autotune";
constexpr std::uint64_t kChecksumSeed = 0x7e55e1;

/// Splits `text` into lines (without '\n'); false when it does not end with one.
bool splitLines(std::string_view text, std::vector<std::string_view>& lines) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    if (nl == std::string_view::npos)
      return false;
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return true;
}
}  // namespace

std::string encodeTuneEntry(std::string_view key, const TuneRecord& r) {
  std::string body(key);
  body += "winner " + std::to_string(r.winner) + "\n";
  body += "reference " + std::to_string(r.reference) + "\n";
  body += "tune-ms " + fmt("%.17g", r.tuneMs) + "\n";
  body += "candidates " + std::to_string(r.candidates.size()) + "\n";
  for (const tune_result& c : r.candidates) {
    body += "label " + oneLine(c.label) + "\n";
    body += "ok " + std::string(c.ok ? "1" : "0") + "\n";
    body += "dropped " + oneLine(c.dropped) + "\n";
    body += "times " + fmt("%.17g", c.median_ms) + " " + fmt("%.17g", c.min_ms) + " " + fmt("%.17g", c.max_ms) + " " +
            std::to_string(c.batch) + " " + std::to_string(c.samples) + "\n";
  }
  body += "end\n";
  return std::string(kTuneMagic) + " " + std::to_string(kTuneEntryVersion) + "\nkey-bytes " +
         std::to_string(key.size()) + "\nchecksum " + hex16(xxh64(body, kChecksumSeed)) + "\n" + body;
}

std::optional<TuneRecord> decodeTuneEntry(std::string_view data, std::string_view key,
                                          const std::vector<std::string>& labels, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<TuneRecord> {
    if (why)
      *why = std::move(reason);
    return std::nullopt;
  };
  // The header: three lines.
  auto takeLine = [&](std::string_view& rest, std::string_view& line) {
    const std::size_t nl = rest.find('\n');
    if (nl == std::string_view::npos)
      return false;
    line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    return true;
  };
  std::string_view rest = data, magic, keyBytes, sum;
  if (!takeLine(rest, magic) || !takeLine(rest, keyBytes) || !takeLine(rest, sum))
    return fail("truncated: " + std::to_string(data.size()) + " bytes, shorter than the header");
  const std::string expectedMagic = std::string(kTuneMagic) + " ";
  if (magic.substr(0, expectedMagic.size()) != expectedMagic)
    return fail("not a tessel autotune entry (bad first line)");
  if (magic.substr(expectedMagic.size()) != std::to_string(kTuneEntryVersion))
    return fail("format version " + std::string(magic.substr(expectedMagic.size())) + ", expected " +
                std::to_string(kTuneEntryVersion));
  if (sum.substr(0, 9) != "checksum " || sum.size() != 9 + 16)
    return fail("malformed checksum line");
  if (hex16(xxh64(rest, kChecksumSeed)) != sum.substr(9))
    return fail("checksum mismatch");
  if (keyBytes != "key-bytes " + std::to_string(key.size()) || rest.substr(0, key.size()) != key)
    return fail("written for another key (a hash collision or a foreign file)");
  std::vector<std::string_view> lines;
  if (!splitLines(rest.substr(key.size()), lines))
    return fail("truncated: no newline at the end");
  std::size_t at = 0;
  auto field = [&](const char* name, std::string& value) {
    if (at >= lines.size())
      return false;
    const std::string prefix = std::string(name) + " ";
    if (lines[at].substr(0, prefix.size()) != prefix)
      return false;
    value = std::string(lines[at++].substr(prefix.size()));
    return true;
  };
  auto number = [](const std::string& text, auto& out) {
    std::istringstream is(text);
    is >> out;
    return !is.fail() && (is >> std::ws).eof();
  };
  TuneRecord r;
  std::string text;
  std::size_t count = 0;
  if (!field("winner", text) || !number(text, r.winner) || !field("reference", text) || !number(text, r.reference) ||
      !field("tune-ms", text) || !number(text, r.tuneMs) || !field("candidates", text) || !number(text, count))
    return fail("malformed record at line " + std::to_string(at + 1) + " after the key");
  if (count != labels.size())
    return fail(std::to_string(count) + " candidates, the tuner has " + std::to_string(labels.size()));
  for (std::size_t i = 0; i < count; ++i) {
    tune_result c;
    std::string ok, times;
    if (!field("label", c.label) || !field("ok", ok) || (ok != "0" && ok != "1") || !field("dropped", c.dropped) ||
        !field("times", times))
      return fail("malformed record of candidate " + std::to_string(i));
    c.ok = ok == "1";
    std::istringstream is(times);
    is >> c.median_ms >> c.min_ms >> c.max_ms >> c.batch >> c.samples;
    if (is.fail() || !(is >> std::ws).eof())
      return fail("malformed times of candidate " + std::to_string(i));
    if (c.label != labels[i])
      return fail("candidate " + std::to_string(i) + " is '" + c.label + "', the tuner's is '" + labels[i] + "'");
    r.candidates.push_back(std::move(c));
  }
  if (at + 1 != lines.size() || lines[at] != "end")
    return fail("malformed end");
  if (r.winner >= count || r.reference >= count)
    return fail("winner " + std::to_string(r.winner) + " or reference " + std::to_string(r.reference) +
                " out of range (" + std::to_string(count) + " candidates)");
  if (!r.candidates[r.winner].ok)
    return fail("the winner '" + r.candidates[r.winner].label + "' was not timed");
  return r;
}

namespace {
std::mutex warnedMutex;
std::set<std::string> warnedEntries;  ///< entries reported invalid
std::set<std::string> warnedDirs;     ///< directories reported unwritable

/// True the first time `what` is inserted into `set`.
bool firstTime(std::set<std::string>& set, const std::string& what) {
  std::lock_guard<std::mutex> lock(warnedMutex);
  return set.insert(what).second;
}
}  // namespace

void resetTuneWarningsForTesting() {
  std::lock_guard<std::mutex> lock(warnedMutex);
  warnedEntries.clear();
  warnedDirs.clear();
}

std::optional<TuneRecord> loadTuneEntry(const std::string& dir, const std::string& key,
                                        const std::vector<std::string>& labels) {
  const std::string path = tuneEntryPath(dir, key);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string why;
  std::optional<TuneRecord> r = decodeTuneEntry(data, key, labels, &why);
  if (!r && firstTime(warnedEntries, path))
    std::fprintf(stderr, "tessel: warning: ignoring the autotune entry %s (%s); tuning again and replacing it\n",
                 path.c_str(), why.c_str());
  return r;
}

std::string storeTuneEntry(const std::string& dir, const std::string& key, const TuneRecord& r) {
  const std::string path = tuneEntryPath(dir, key);
  try {
    createDirectories(dir);
    writeFileAtomic(path, encodeTuneEntry(key, r));
  } catch (const tessel::error& e) {
    if (firstTime(warnedDirs, dir))
      std::fprintf(stderr,
                   "tessel: warning: cannot save the autotune choice in '%s' (%s); it is kept in this process "
                   "only (set TESSEL_CACHE_DIR, or TESSEL_DISABLE_CACHE=1 to silence this)\n",
                   dir.c_str(), firstLine(e.what()).c_str());
    return {};
  }
  return path;
}

}  // namespace tessel::runtime
