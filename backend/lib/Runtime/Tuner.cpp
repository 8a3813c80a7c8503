//===- Tuner.cpp - ts::autotune on the GPU ----------------------------------===//
//
// detail::tuner_impl (what ts::autotune returns, behind a shared_ptr) and the
// TuneBackend that runs runtime::tune (Autotune.h) on the CUDA driver:
//
//  - outputs: the union of the arguments the compiled candidates store into
//    (ArgSpec::stored). Before the first checked run each is copied aside on
//    the device (its whole span: from its base to its last element, padding
//    included), and copied back on the user's stream before every checked
//    run and before the winner's final launch, so that every candidate starts
//    from the user's data and the user gets the result of exactly one launch
//    of the winner. tune_options::reset replaces the copies. A tune that fails
//    puts the outputs back too.
//  - checked runs: launch, synchronize the stream, copy each output's span to
//    the host and keep its elements densely (compareOutputs reads them).
//  - timing: CUDA events around a batch of launches. A host function enqueued
//    ahead of each batch (cuLaunchHostFunc) holds the stream until the host has
//    enqueued the whole batch (at most 10 s), so that the events measure GPU
//    time, not launch overhead: what tessel-bench's spin kernel does, without a
//    kernel of our own. With TESSEL_DEBUG (every launch synchronizes) batches
//    run without it.
//
// The tuner keeps, per shape bucket (Autotune.h, shapeBucket), the decision and
// the winner's kernel; candidates compile once per tuner, when first needed.
//
//===----------------------------------------------------------------------===//

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tessel/Runtime/Autotune.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/DiskCache.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"

namespace tessel::detail {

struct tuner_impl {
  std::string name;
  std::vector<candidate_spec> candidates;
  tune_options opts;

  struct Compiled {
    bool tried = false;
    std::shared_ptr<kernel_impl> kernel;
    std::string error;
  };
  struct Choice {
    tune_decision decision;
    std::shared_ptr<kernel_impl> kernel;
  };

  mutable std::mutex mutex;
  std::vector<Compiled> compiled;          ///< per candidate
  std::vector<std::string> identities;     ///< per candidate, once the key was first needed
  std::map<std::string, Choice> choices;   ///< per shape bucket
  const Choice* last = nullptr;

  /// Candidate i's kernel, compiling it on first need (a failure is remembered). Throws
  /// tessel::error. Call with `mutex` held; a tune's compile step (runtime::tune) calls it from
  /// several threads at once for different candidates, each touching only `compiled[i]`.
  const std::shared_ptr<kernel_impl>& kernel(std::size_t i) {
    Compiled& c = compiled[i];
    if (!c.tried) {
      c.tried = true;
      try {
        c.kernel = candidates[i].compile();
        if (!c.kernel)
          c.error = "tessel: internal error: the candidate's compile function returned no kernel";
      } catch (const std::exception& e) {
        c.error = e.what();
      }
    }
    if (!c.kernel)
      throw tessel::error(c.error);
    return c.kernel;
  }
};

namespace {

using namespace tessel::runtime;

std::string firstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.rfind("tessel: ", 0) == 0)
    line = line.substr(8);
  return line;
}

/// A driver entry point the tuner needs; the error names it when the driver lacks it.
template <class F>
F need(F f, const char* what, const std::string& name) {
  if (!f)
    throw tessel::error("tessel: autotune '" + name + "': the CUDA driver lacks " + what +
                        " (a driver for CUDA 12.0 or newer has it)");
  return f;
}

/// Holds a stream until the host opens it (see the file comment). Shared between the host and
/// the host function, which owns a reference until it returns.
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> timedOut{false};
};

void CUDA_CB waitForGate(void* data) {
  std::unique_ptr<std::shared_ptr<Gate>> gate(static_cast<std::shared_ptr<Gate>*>(data));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(*gate)->open.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) {
      (*gate)->timedOut.store(true);
      return;
    }
    std::this_thread::yield();
  }
}

/// One output tensor of the launch: its span in device memory and, unless the user resets the
/// outputs, a copy of it.
struct Output {
  int arg = -1;
  const kernel_arg* view = nullptr;
  std::uint64_t spanBytes = 0;
  CUdeviceptr saved = 0;
};

class GpuTuneBackend final : public TuneBackend {
public:
  GpuTuneBackend(tuner_impl& t, CUstream stream, std::span<const kernel_arg> args)
      : t_(t), stream_(stream), args_(args), d_(requireCudaDriver("autotune '" + t.name + "'")),
        grids_(t.candidates.size()) {}

  ~GpuTuneBackend() override {
    if (begun_ && !finished_) {
      try {
        restore();  // a failed tune leaves the outputs as they were
        d_.cuStreamSynchronize(stream_);
      } catch (...) {
      }
    }
    freeSaved();
    if (events_[0])
      d_.cuEventDestroy(events_[0]);
    if (events_[1])
      d_.cuEventDestroy(events_[1]);
  }

  std::size_t size() const override { return t_.candidates.size(); }
  std::string label(std::size_t i) const override { return t_.candidates[i].label; }

  void prepare(std::size_t i) override { t_.kernel(i); }

  void begin(const std::vector<std::size_t>& compiled) override {
    begun_ = true;
    std::vector<bool> stored(args_.size(), false);
    for (std::size_t i : compiled) {
      const CompiledKernel& k = t_.compiled[i].kernel->compiled();
      for (std::size_t a = 0; a < k.args.size() && a < args_.size(); ++a)
        stored[a] = stored[a] || k.args[a].stored;
    }
    for (std::size_t a = 0; a < args_.size(); ++a) {
      const kernel_arg& v = args_[a];
      if (!stored[a] || v.kind != arg_kind::tensor || v.rank < 1 || v.rank > 3)
        continue;
      std::uint64_t last = 0;  // offset of the last element
      bool empty = false;
      for (int d = 0; d < v.rank; ++d) {
        if (v.sizes[d] <= 0)
          empty = true;
        else if (v.strides[d] < 0)
          throw tessel::error("tessel: autotune '" + t_.name + "': argument " + std::to_string(a) +
                              " (an output) has the negative stride " + std::to_string(v.strides[d]) +
                              " in dimension " + std::to_string(d));
        else
          last += static_cast<std::uint64_t>(v.sizes[d] - 1) * static_cast<std::uint64_t>(v.strides[d]);
      }
      if (empty || !v.data)
        continue;
      Output o;
      o.arg = static_cast<int>(a);
      o.view = &v;
      o.spanBytes = (last + 1) * elementSize(v.type);
      outputs_.push_back(o);
    }
    if (t_.opts.reset)
      return;
    auto copy = need(d_.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", t_.name);
    for (Output& o : outputs_) {
      CUresult r = d_.cuMemAlloc(&o.saved, o.spanBytes);
      if (r != CUDA_SUCCESS) {
        o.saved = 0;
        throw tessel::error("tessel: autotune '" + t_.name + "': cannot save output argument " +
                            std::to_string(o.arg) + " (" + std::to_string(o.spanBytes) + " bytes) before tuning: "
                            "cuMemAlloc failed: " + cudaErrorText(r) +
                            "; free memory, or set tune_options::reset to re-initialise the outputs instead");
      }
      checkCuda(copy(o.saved, address(o), o.spanBytes, stream_), "cuMemcpyDtoDAsync (saving an output)", {},
                "argument " + std::to_string(o.arg));
    }
    synchronize();
  }

  TuneOutputs run(std::size_t i) override {
    restore();
    launchOnce(i);
    synchronize();
    TuneOutputs outs;
    std::string span;
    for (const Output& o : outputs_) {
      const kernel_arg& v = *o.view;
      span.resize(o.spanBytes);
      checkCuda(d_.cuMemcpyDtoH(span.data(), address(o), o.spanBytes), "cuMemcpyDtoH (reading an output back)", {},
                "argument " + std::to_string(o.arg));
      TuneOutput out;
      out.arg = o.arg;
      out.type = v.type;
      out.sizes.assign(v.sizes.begin(), v.sizes.begin() + v.rank);
      const std::size_t e = elementSize(v.type);
      std::int64_t count = 1;
      for (int d = 0; d < v.rank; ++d)
        count *= v.sizes[d];
      out.bytes.resize(static_cast<std::size_t>(count) * e);
      // Dense, outermost dimension first: rows of the innermost dimension at a time when it is
      // contiguous, else element by element.
      const int inner = v.rank - 1;
      const std::int64_t run = v.strides[inner] == 1 ? v.sizes[inner] : 1;
      std::array<std::int64_t, 3> idx{};
      for (std::int64_t n = 0; n < count; n += run) {
        std::int64_t off = 0;
        for (int d = 0; d < v.rank; ++d)
          off += idx[d] * v.strides[d];
        std::memcpy(out.bytes.data() + n * e, span.data() + off * e, run * e);
        for (int d = run > 1 ? inner - 1 : inner; d >= 0; --d) {
          if (++idx[d] < v.sizes[d])
            break;
          idx[d] = 0;
        }
      }
      outs.push_back(std::move(out));
    }
    return outs;
  }

  void launch(std::size_t i, int n) override {
    for (int k = 0; k < n; ++k)
      launchOnce(i);
  }

  void synchronize() override { checkCuda(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize", {}, "autotune"); }

  double timeBatch(std::size_t i, int n) override {
    if (!events_[0]) {
      auto create = need(d_.cuEventCreate, "cuEventCreate", t_.name);
      for (CUevent& e : events_)
        checkCuda(create(&e, CU_EVENT_DEFAULT), "cuEventCreate", {}, "autotune");
    }
    auto record = need(d_.cuEventRecord, "cuEventRecord", t_.name);
    auto wait = need(d_.cuEventSynchronize, "cuEventSynchronize", t_.name);
    auto elapsed = need(d_.cuEventElapsedTime, "cuEventElapsedTime", t_.name);
    std::shared_ptr<Gate> gate;
    if (!envFlag("TESSEL_DEBUG")) {
      gate = std::make_shared<Gate>();
      auto hostFunc = need(d_.cuLaunchHostFunc, "cuLaunchHostFunc", t_.name);
      auto* ref = new std::shared_ptr<Gate>(gate);
      if (CUresult r = hostFunc(stream_, waitForGate, ref); r != CUDA_SUCCESS) {
        delete ref;
        throwCudaError(r, "cuLaunchHostFunc (the gate ahead of a timed batch)", {}, "autotune");
      }
    }
    struct Opener {  // opens the gate on every path; after an error, waits until it passed
      std::shared_ptr<Gate>& g;
      GpuTuneBackend& b;
      bool ok = false;
      ~Opener() {
        if (!g)
          return;
        g->open.store(true, std::memory_order_release);
        if (!ok)
          b.d_.cuStreamSynchronize(b.stream_);
      }
    } opener{gate, *this};
    checkCuda(record(events_[0], stream_), "cuEventRecord", {}, "autotune");
    launch(i, n);
    checkCuda(record(events_[1], stream_), "cuEventRecord", {}, "autotune");
    if (gate)
      gate->open.store(true, std::memory_order_release);
    checkCuda(wait(events_[1]), "cuEventSynchronize (a timed batch)", label(i));
    opener.ok = true;
    if (gate && gate->timedOut.load() && !gateNoted_) {
      gateNoted_ = true;  // not silent: that batch's time includes the host's enqueue time
      std::fprintf(stderr,
                   "tessel autotune: %s: note: a timed batch of '%s' took more than 10 s to enqueue, so the gate "
                   "ahead of it let the GPU start early; its time includes launch overhead\n",
                   t_.name.c_str(), label(i).c_str());
    }
    float ms = 0;
    checkCuda(elapsed(&ms, events_[0], events_[1]), "cuEventElapsedTime", label(i));
    return ms;
  }

  void finish(std::size_t winner) override {
    restore();
    synchronize();
    freeSaved();
    finished_ = true;
    launchOnce(winner);
  }

private:
  static CUdeviceptr address(const Output& o) {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(o.view->data));
  }
  void restore() {
    if (t_.opts.reset) {
      if (begun_)
        t_.opts.reset(stream_);
      return;
    }
    for (const Output& o : outputs_)
      if (o.saved)
        checkCuda(d_.cuMemcpyDtoDAsync(address(o), o.saved, o.spanBytes, stream_),
                  "cuMemcpyDtoDAsync (restoring an output)", {}, "argument " + std::to_string(o.arg));
  }
  void freeSaved() {
    for (Output& o : outputs_)
      if (o.saved) {
        d_.cuMemFree(o.saved);
        o.saved = 0;
      }
  }
  /// Candidate i's grid for the arguments, computed on its first launch (run(), so that a grid
  /// function that throws drops the candidate as "failed to run").
  const grid& gridOf(std::size_t i) {
    if (!grids_[i])
      grids_[i] = t_.candidates[i].grid_of(args_);
    return *grids_[i];
  }
  void launchOnce(std::size_t i) { detail::launch(*t_.compiled[i].kernel, stream_, gridOf(i), args_); }

  tuner_impl& t_;
  CUstream stream_;
  std::span<const kernel_arg> args_;
  const CudaDriver& d_;
  std::vector<std::optional<grid>> grids_;
  std::vector<Output> outputs_;
  CUevent events_[2] = {nullptr, nullptr};
  bool begun_ = false, finished_ = false, gateNoted_ = false;
};

/// `args` against the program's signature and size contracts, with candidate `i` (compiled;
/// every candidate compiles the same program, so any speaks for all; the messages are
/// kernel::launch's), before its grid function reads them or a tune saves the outputs over spans
/// taken from them. True when the launch has nothing to write (an empty output: docs/errors.md).
bool checkArgsWith(tuner_impl& t, std::size_t i, std::span<const kernel_arg> args) {
  const CompiledKernel& ck = t.kernel(i)->compiled();
  validateCommonArgs(ck, args, grid{1, 1, 1});  // (the count and each argument, before grid_of)
  const grid g = t.candidates[i].grid_of(args);
  validateCommonArgs(ck, args, g);
  return nothingToDo(ck, args, g);
}

/// checkArgsWith the first candidate that compiles (none: decide's own errors follow).
bool checkArgsWithTheFirst(tuner_impl& t, std::span<const kernel_arg> args) {
  for (std::size_t i = 0; i < t.candidates.size(); ++i) {
    try {
      t.kernel(i);
    } catch (const tessel::error&) {
      continue;
    }
    return checkArgsWith(t, i, args);
  }
  return false;
}

/// Decides for `bucket` (tuner_launch holds the mutex). Returns the choice, or null when the
/// launch has nothing to write (then nothing is decided); `*launched` is set when the decision
/// already launched the winner (a tune's final launch). The arguments are checked (checkArgsWith)
/// with the first candidate decide compiles anyway: the first that compiles when tuning is off
/// or there is no GPU, the saved winner, or, before a tune, the first of the candidates it
/// compiles; so a saved choice still compiles its winner only.
const tuner_impl::Choice* decide(tuner_impl& t, CUstream stream, std::span<const kernel_arg> args,
                                 const std::string& bucket, bool* launched) {
  *launched = false;
  const std::size_t n = t.candidates.size();
  const bool verbose = knobs().verbose;
  tuner_impl::Choice c;
  c.decision.bucket = bucket;
  for (const candidate_spec& s : t.candidates) {
    tune_result r;
    r.label = s.label;
    c.decision.candidates.push_back(r);
  }
  auto keep = [&](std::size_t winner) -> const tuner_impl::Choice* {
    c.decision.winner = winner;
    c.decision.label = t.candidates[winner].label;
    c.kernel = t.compiled[winner].kernel;
    if (verbose)
      std::fprintf(stderr, "tessel autotune: %s [%s]: '%s' (%s%s%s)\n", t.name.c_str(), bucket.c_str(),
                   c.decision.label.c_str(), to_string(c.decision.source), c.decision.entry.empty() ? "" : ", ",
                   c.decision.entry.c_str());
    return &(t.choices[bucket] = std::move(c));
  };

  const AutotuneMode mode = autotuneMode();
  if (mode == AutotuneMode::off) {
    // The first candidate that compiles, as the user listed them.
    c.decision.source = tune_source::disabled;
    std::string errors;
    for (std::size_t i = 0; i < n; ++i) {
      try {
        t.kernel(i);
      } catch (const tessel::error& e) {
        errors += (errors.empty() ? "" : "; ") + ("'" + t.candidates[i].label + "': " + firstLine(e.what()));
        continue;
      }
      return checkArgsWith(t, i, args) ? nullptr : keep(i);
    }
    throw tessel::error("tessel: autotune '" + t.name + "': no candidate compiled (TESSEL_AUTOTUNE=0 launches the "
                        "first that does: " + errors + ")");
  }

  std::string why;
  if (!cudaDriver(&why)) {
    if (checkArgsWithTheFirst(t, args))
      return nullptr;  // nothing to write: no GPU needed (docs/errors.md)
    throw tessel::error("tessel: autotune '" + t.name + "': no GPU: " + why);
  }
  ensureContext(stream, "autotune '" + t.name + "'");
  const DeviceInfo dev = currentDeviceInfo("autotune '" + t.name + "'");
  const std::string device = deviceKey(dev.name, dev.ccMajor, dev.ccMinor, dev.smCount);

  // The saved choice.
  const DiskCacheConfig cache = diskCacheConfig();
  std::string key;
  std::vector<std::string> labels;
  for (const candidate_spec& s : t.candidates)
    labels.push_back(s.label);
  if (cache.enabled) {
    if (t.identities.empty()) {
      for (const candidate_spec& s : t.candidates) {
        try {
          t.identities.push_back(s.identity());
        } catch (const std::exception& e) {
          // It will not compile either; its error is its identity.
          t.identities.push_back("untraceable: " + firstLine(e.what()));
        }
      }
    }
    std::vector<CandidateIdentity> ids;
    for (std::size_t i = 0; i < n; ++i)
      ids.push_back({t.candidates[i].label, optionsKey(t.candidates[i].opts), t.identities[i]});
    key = tuneKey(t.name, ids, t.opts.rtol, bucket, device, cacheToolchainIdentity(cache.dir));
    if (mode == AutotuneMode::on) {
      if (std::optional<TuneRecord> saved = loadTuneEntry(cache.dir, key, labels)) {
        try {
          t.kernel(saved->winner);
        } catch (const tessel::error& e) {
          std::fprintf(stderr,
                       "tessel: warning: autotune '%s': the saved winner '%s' does not compile here (%s); tuning "
                       "again\n",
                       t.name.c_str(), labels[saved->winner].c_str(), firstLine(e.what()).c_str());
          saved.reset();
        }
        if (saved) {
          if (checkArgsWith(t, saved->winner, args))
            return nullptr;
          c.decision.source = tune_source::cached;
          c.decision.reference = saved->reference;
          c.decision.candidates = saved->candidates;
          c.decision.entry = tuneEntryPath(cache.dir, key);
          return keep(saved->winner);
        }
      }
    }
  }

  // Tune (it compiles every candidate: checking the arguments with the first costs nothing more).
  if (checkArgsWithTheFirst(t, args))
    return nullptr;
  const CudaDriver& d = *cudaDriver();
  {
    auto capturing = need(d.cuStreamIsCapturing, "cuStreamIsCapturing", t.name);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    checkCuda(capturing(stream, &status), "cuStreamIsCapturing", {}, "autotune '" + t.name + "'");
    if (status != CU_STREAM_CAPTURE_STATUS_NONE)
      throw tessel::error("tessel: autotune '" + t.name + "': the stream is capturing a CUDA graph, and the first "
                          "launch of a shape bucket tunes (it synchronizes and times the candidates); launch "
                          "once before the capture, or set TESSEL_AUTOTUNE=0");
  }
  TuneSettings settings;
  settings.name = t.name;
  settings.bucket = bucket;
  settings.rtol = t.opts.rtol;
  settings.timing = t.opts.timing;
  settings.progress = t.opts.progress;
  settings.compileThreads = t.opts.compile_threads;
  TuneOutcome outcome;
  {
    GpuTuneBackend backend(t, stream, args);
    outcome = runtime::tune(backend, settings);
  }
  *launched = true;
  c.decision.source = tune_source::timed;
  c.decision.reference = outcome.reference;
  c.decision.candidates = outcome.candidates;
  c.decision.tune_ms = outcome.tuneMs;
  if (cache.enabled) {
    TuneRecord r;
    r.winner = outcome.winner;
    r.reference = outcome.reference;
    r.tuneMs = outcome.tuneMs;
    r.candidates = outcome.candidates;
    c.decision.entry = storeTuneEntry(cache.dir, key, r);
  }
  return keep(outcome.winner);
}

}  // namespace

std::shared_ptr<tuner_impl> make_tuner(std::string name, std::vector<candidate_spec> candidates, tune_options opts) {
  if (name.empty())
    throw tessel::error("tessel: autotune: the tuner's name must not be empty (it is part of the saved choice's key)");
  if (candidates.empty())
    throw tessel::error("tessel: autotune '" + name + "': no candidates");
  if (!(opts.rtol >= 0) || !std::isfinite(opts.rtol))
    throw tessel::error("tessel: autotune '" + name + "': tune_options::rtol = " + std::to_string(opts.rtol) +
                        ": must be finite and >= 0");
  validateTiming(name, opts.timing);
  runtime::compileThreads(name, opts.compile_threads, candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const candidate_spec& c = candidates[i];
    if (!c.compile || !c.identity || !c.grid_of)
      throw tessel::error("tessel: autotune '" + name + "': candidate " + std::to_string(i) + " ('" + c.label +
                          "') is incomplete (make candidates with ts::candidate)");
    if (c.label.empty() || c.label.find('\n') != std::string::npos)
      throw tessel::error("tessel: autotune '" + name + "': candidate " + std::to_string(i) +
                          " has an empty or multi-line label");
    for (std::size_t j = 0; j < i; ++j) {
      if (candidates[j].label == c.label)
        throw tessel::error("tessel: autotune '" + name + "': candidates " + std::to_string(j) + " and " +
                            std::to_string(i) + " are both labelled '" + c.label +
                            "'; labels must be unique (rename one with .named(\"...\"))");
    }
    if (c.signature != candidates[0].signature)
      throw tessel::error("tessel: autotune '" + name + "': candidate " + std::to_string(i) + " ('" + c.label +
                          "') takes (" + c.signature + ") but candidate 0 ('" + candidates[0].label + "') takes (" +
                          candidates[0].signature + "); every candidate must take the same arguments");
  }
  auto t = std::make_shared<tuner_impl>();
  t->name = std::move(name);
  t->candidates = std::move(candidates);
  t->opts = std::move(opts);
  t->compiled.resize(t->candidates.size());
  return t;
}

void tuner_launch(tuner_impl& t, void* stream, std::span<const kernel_arg> args) {
  const std::string bucket = runtime::shapeBucket(args);
  std::shared_ptr<kernel_impl> kernel;
  grid g;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.choices.find(bucket);
    const tuner_impl::Choice* choice = it == t.choices.end() ? nullptr : &it->second;
    if (!choice) {
      bool launched = false;
      choice = decide(t, static_cast<CUstream>(stream), args, bucket, &launched);
      if (!choice)
        return;  // nothing to write (an empty output): nothing decided
      t.last = choice;
      if (launched)
        return;  // the tune's final launch was the winner's launch for these arguments
    }
    t.last = choice;
    kernel = choice->kernel;
    g = t.candidates[choice->decision.winner].grid_of(args);
  }
  detail::launch(*kernel, stream, g, args);
}

tune_decision tuner_last_decision(const tuner_impl& t) {
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.last ? t.last->decision : tune_decision{};
}

std::shared_ptr<kernel_impl> tuner_last_kernel(const tuner_impl& t, std::string* name) {
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.last)
    return nullptr;
  if (name)
    *name = t.candidates[t.last->decision.winner].kernel;
  return t.last->kernel;
}

}  // namespace tessel::detail
