//===- Kernel.cpp - module loading and kernel launch -----------------------===//
//
// The GPU half of the launch contract described in Kernel.h; the host-only
// checks and the parameter plan live in Validate.cpp.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/Kernel.h"
#include "tessel/Runtime/Ptxas.h"

#include <array>
#include <cmath>
#include <limits>
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Env.h"

extern char** environ;

namespace tessel::detail {

using namespace tessel::runtime;

namespace {

std::string hexAddress(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(p));
  return buf;
}

/// "sm_90a" -> {9, 0, archSpecific = true}; false if malformed.
bool parseArch(const std::string& arch, int& major, int& minor, bool& specific) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  std::string digits;
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    digits += arch[i++];
  if (digits.size() < 2)
    return false;
  major = std::stoi(digits.substr(0, digits.size() - 1));
  minor = digits.back() - '0';
  specific = i < arch.size() && (arch[i] == 'a' || arch[i] == 'f');
  return true;
}

/// An environment flag as envFlag reads it (Env.h's syntax), without building a string when it is
/// unset. The launch path asks per launch, so neither knobs() (every knob, strings for each) nor
/// envFlag (a string per call) there.
bool flagSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && parseFlag(v);
}

/// `s` past `prefix`, or nullptr when `s` does not start with it. Inline, unlike strncmp: the scan
/// below calls it for every environment entry. Never reads past the end of `s` (its NUL differs
/// from every character of the prefix).
template <std::size_t N>
const char* skipPrefix(const char* s, const char (&prefix)[N]) {
  for (std::size_t i = 0; i + 1 < N; ++i)
    if (s[i] != prefix[i])
      return nullptr;
  return s + (N - 1);
}

/// TESSEL_DEBUG and TESSEL_VERBOSE (true flag values) now: what keeps a launch from being cached
/// or recorded (a debug launch synchronizes, a verbose one prints select()'s lines). Every launch
/// asks, and Env.h reads variables at each call rather than caching them, so this reads the
/// environment now, but in one pass over it instead of a getenv scan per name (the two scans were
/// about half of the cached launch's own host time). As getenv does, only the first entry of a
/// name counts.
struct LaunchFlags {
  bool debug = false;
  bool verbose = false;
};

LaunchFlags launchFlags() {
  LaunchFlags f;
  bool seenDebug = false, seenVerbose = false;
  for (char** e = environ; e && *e && !(seenDebug && seenVerbose); ++e) {
    const char* s = skipPrefix(*e, "TESSEL_");
    if (!s)
      continue;
    if (const char* v = skipPrefix(s, "DEBUG="); v && !seenDebug) {
      seenDebug = true;
      f.debug = *v && parseFlag(v);
    } else if (const char* v = skipPrefix(s, "VERBOSE="); v && !seenVerbose) {
      seenVerbose = true;
      f.verbose = *v && parseFlag(v);
    }
  }
  return f;
}

/// Unloads a module on scope exit unless released (error paths of loading).
struct ModuleGuard {
  const CudaDriver& d;
  CUmodule m;
  ~ModuleGuard() {
    if (m)
      d.cuModuleUnload(m);
  }
};

}  // namespace

LoadedKernel::LoadedKernel(CompiledKernel k) : compiled_(std::move(k)) {
  validateCompiledKernel(compiled_);
}

LoadedKernel::~LoadedKernel() {
  if (loaded_.empty())
    return;
  const CudaDriver* d = cudaDriver();
  if (!d)
    return;
  // cuModuleUnload works on the current context: switch to each module's.
  CUcontext previous = nullptr;
  if (d->cuCtxGetCurrent(&previous) != CUDA_SUCCESS)
    return;
  for (const Loaded& l : loaded_) {
    if (d->cuCtxSetCurrent(static_cast<CUcontext>(l.context)) == CUDA_SUCCESS)
      d->cuModuleUnload(static_cast<CUmodule>(l.module));
  }
  d->cuCtxSetCurrent(previous);
}

const std::vector<std::pair<std::string, std::string>>& LoadedKernel::stages() const {
  if (compiled_.hasAllStages() || !compiled_.restage)
    return compiled_.stages;
  std::call_once(stagesOnce_, [&] { stages_ = compiled_.restage(); });
  return stages_;
}

void* LoadedKernel::functionFor(void* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Loaded& l : loaded_)
    if (l.context == context)
      return l.function;

  const CompiledKernel& k = compiled_;
  const std::string& name = k.name;
  const CudaDriver& d = requireCudaDriver("cannot load kernel '" + name + "'");
  DeviceInfo dev = currentDeviceInfo(name);
  const std::string devText = "device " + std::to_string(dev.ordinal) + " (" + dev.name + ", sm_" +
                              std::to_string(dev.ccMajor) + std::to_string(dev.ccMinor) + ")";

  // A cubin runs only on its own major architecture (and an arch-specific
  // "a" target only on exactly that one); the driver would say
  // CUDA_ERROR_NO_BINARY_FOR_GPU, which does not say what was expected.
  int major = 0, minor = 0;
  bool specific = false;
  if (parseArch(k.arch, major, minor, specific)) {
    bool ok;
    if (specific)
      ok = dev.ccMajor == major && dev.ccMinor == minor;
    else if (!k.cubin.empty())
      ok = dev.ccMajor == major && dev.ccMinor >= minor;
    else
      ok = dev.ccMajor * 10 + dev.ccMinor >= major * 10 + minor;
    if (!ok)
      throw tessel::error("tessel: kernel '" + name + "' was compiled for " + k.arch + ", but " + devText +
                          " cannot run it");
  }

  ModuleGuard module{d, nullptr};
  if (!k.cubin.empty()) {
    checkCuda(d.cuModuleLoadData(&module.m, k.cubin.data()), "cuModuleLoadData (cubin)", name,
              k.arch + " on " + devText);
  } else {
    // The driver JIT: keep its log, it is the only explanation of a failure.
    char errorLog[8192] = {};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {errorLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(errorLog) - 1))};
    CUresult r = d.cuModuleLoadDataEx(&module.m, k.ptx.c_str(), 2, opts, values);
    if (r != CUDA_SUCCESS)
      throwCudaError(r, "cuModuleLoadDataEx (driver JIT of the PTX)", name,
                     std::string(k.arch + " on " + devText) + (errorLog[0] ? std::string(": ") + errorLog : ""));
  }

  CUfunction fn = nullptr;
  checkCuda(d.cuModuleGetFunction(&fn, module.m, name.c_str()), "cuModuleGetFunction", name);

  // The parameter list of the PTX must be the one the runtime is about to
  // pass; a mismatch is a compiler bug that would otherwise read garbage.
  // (Only indices that should exist are queried: probing one past the end
  // fails by design, and compute-sanitizer reports every failing API call.)
  if (d.cuFuncGetParamInfo) {
    for (size_t i = 0; i < k.params.size(); ++i) {
      size_t offset = 0, size = 0;
      CUresult r = d.cuFuncGetParamInfo(fn, i, &offset, &size);
      if (r != CUDA_SUCCESS)
        throw tessel::error("tessel: internal error: kernel '" + name + "' has " + std::to_string(i) +
                            " parameters, the runtime passes " + std::to_string(k.params.size()));
      // CUtensorMap: 128 bytes; ts::scalar<f32 / i32>: 4 (.f32 / .u32); the rest: 8.
      const ParamSpec::Kind kind = k.params[i].kind;
      size_t expected = kind == ParamSpec::Kind::TmaDescriptor ? 128 : kind == ParamSpec::Kind::Scalar ? 4 : 8;
      if (size != expected)
        throw tessel::error("tessel: internal error: kernel '" + name + "' parameter " + std::to_string(i) +
                            " is " + std::to_string(size) + " bytes in the PTX, the runtime passes " +
                            std::to_string(expected));
    }
  }

  auto funcAttr = [&](CUfunction_attribute a, const char* what) {
    int v = 0;
    checkCuda(d.cuFuncGetAttribute(&v, a, fn), std::string("cuFuncGetAttribute(") + what + ")", name);
    return v;
  };
  const long long staticSmem = funcAttr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
  const long long totalSmem = staticSmem + k.dynamicSmemBytes;
  if (totalSmem > dev.smemPerBlockOptin)
    throw tessel::error("tessel: kernel '" + name + "': out of resource: shared memory, required " +
                        std::to_string(totalSmem) + " bytes (" + std::to_string(staticSmem) + " static + " +
                        std::to_string(k.dynamicSmemBytes) + " dynamic), hardware limit " +
                        std::to_string(dev.smemPerBlockOptin) + " bytes per block on " + devText +
                        "; reduce the stages or the tile size");
  if (k.dynamicSmemBytes > 48 * 1024)
    checkCuda(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(k.dynamicSmemBytes)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", name,
              std::to_string(k.dynamicSmemBytes) + " bytes");
  const int maxThreads = funcAttr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  if (static_cast<int>(k.blockThreads) > maxThreads)
    throw tessel::error("tessel: kernel '" + name + "' needs " + std::to_string(k.blockThreads) +
                        " threads per block, but with " +
                        std::to_string(funcAttr(CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS")) +
                        " registers per thread at most " + std::to_string(maxThreads) + " can run on " + devText);
  if (k.cluster[0] * k.cluster[1] * k.cluster[2] > 8)
    checkCuda(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
              "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", name);

  loaded_.push_back({context, module.m, fn});
  module.m = nullptr;  // owned by loaded_ now
  return fn;
}

kernel_impl::kernel_impl(CompiledKernel k, VariantCompiler compiler, bool verbose)
    : primary_(std::move(k)), compiler_(std::move(compiler)), verbose_(verbose) {}

bool kernel_impl::verbose() const { return verbose_ || flagSet("TESSEL_VERBOSE"); }

std::vector<std::string> kernel_impl::variantTags() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_;
}

LoadedKernel& kernel_impl::variant(const VariantRequest& r) {
  Slot* slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = variants_[r.tag];
    if (!entry) {
      entry = std::make_unique<Slot>();
      order_.push_back(r.tag);
    }
    slot = entry.get();  // slots are never erased: the pointer stays valid
  }
  // One compile per tag; concurrent launches needing it wait here, launches
  // of other variants do not.
  std::call_once(slot->once, [&] {
    try {
      slot->kernel = std::make_unique<LoadedKernel>(compiler_(r));
    } catch (const std::exception& e) {
      slot->error = e.what();
    }
  });
  if (!slot->kernel)
    throw tessel::error(slot->error);
  return *slot->kernel;
}

void kernel_impl::noteOnce(const std::string& key, const std::string& line) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!noted_.insert(key).second)
      return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

namespace {
/// The first line of a (possibly multi-line) message.
std::string firstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  while (!line.empty() && (line.back() == ':' || line.back() == ' '))
    line.pop_back();
  return line;
}
}  // namespace

namespace {
/// The program instances of a launch: the tiles of a GEMM (schedule::automatic's R3).
std::int64_t gridTiles(grid g) {
  return static_cast<std::int64_t>(g.x) * static_cast<std::int64_t>(g.y) * static_cast<std::int64_t>(g.z);
}
/// The grid's extent along program_id axis `axis`; -1 for none (AutoGemmInfo::mAxis / nAxis).
std::int64_t gridAlong(grid g, int axis) { return axis == 0 ? g.x : axis == 1 ? g.y : axis == 2 ? g.z : -1; }
}  // namespace

void kernel_impl::setAutomatic(runtime::AutoGemmInfo info, runtime::AutoChoice eager) {
  auto_ = std::move(info);
  autoEager_ = eager;
}

std::optional<runtime::AutoChoice> kernel_impl::automaticChoice(std::span<const tensor_arg> args, grid g) const {
  if (!auto_)
    return std::nullopt;
  std::int64_t k = -1;  // unknown: the rule treats it as large
  if (auto_->kArg >= 0 && static_cast<size_t>(auto_->kArg) < args.size() && auto_->kDim >= 0 &&
      auto_->kDim < args[auto_->kArg].rank)
    k = args[auto_->kArg].sizes[auto_->kDim];
  return chooseAutomatic(*auto_, k, nullptr, gridTiles(g), gridAlong(g, auto_->mAxis), gridAlong(g, auto_->nAxis));
}

LoadedKernel& kernel_impl::select(std::span<const tensor_arg> args, grid g, bool* fellBack) {
  if (fellBack)
    *fellBack = false;
  const CompiledKernel& p = compiled();
  validateCommonArgs(p, args, g);
  if (!compiler_)
    return primary_;  // nothing else can be built: validateArgs decides
  if (nothingToDo(p, args, g))
    return primary_;  // launch() returns without launching
  const std::vector<int> key = layoutKey(args);
  // schedule::automatic: the rule's choice for this launch (AutoSchedule.h). The common case,
  // the eager choice with the default layout, takes no string or allocation beyond layoutKey.
  std::optional<runtime::AutoChoice> autoChoice = automaticChoice(args, g);
  if (autoChoice && *autoChoice == autoEager_)
    autoChoice.reset();

  // Names for tags and messages, built only when a variant or a message needs them.
  auto scheduleName = [&] {
    return autoChoice ? autoChoiceName(*autoChoice) : p.schedule.empty() ? std::string("?") : p.schedule;
  };
  auto head = [&] {
    return "kernel '" + p.name + "' (schedule " + (auto_ ? "auto: " : "") + scheduleName() + ")";
  };
  if (tmaLoadsAnEmptyArg(p, args)) {
    // K == 0 (Kernel.h, launch contract 3): not a fallback, so no note and no TESSEL_FALLBACK check.
    if (verbose())
      std::fprintf(stderr, "tessel: %s: an empty argument (K == 0): launching the schedule multistage variant\n",
                   head().c_str());
    try {
      return variant(VariantRequest{key, true, variantTag("multistage", key)});
    } catch (const tessel::error& e) {
      // fp8 operands, a dual GEMM: what multistage does not build (docs/errors.md, Empty problems).
      std::string empty;  // the first argument loaded with TMA that has a dimension of size 0
      for (std::size_t i = 0; i < args.size() && i < p.args.size() && empty.empty(); ++i)
        for (int d = 0; p.args[i].loadedByTma && d < args[i].rank && empty.empty(); ++d)
          if (args[i].sizes[d] == 0)
            empty = "argument " + std::to_string(i) + " has size 0 along dimension " + std::to_string(d);
      throw tessel::error("tessel: " + head() + ": " + empty +
                          " (K == 0 for a GEMM's operands), and TMA cannot describe an empty tensor: the launch "
                          "needs the schedule multistage variant, which cannot be built for this kernel:\n" +
                          std::string(e.what()));
    }
  }
  LoadedKernel* chosen = &primary_;
  std::string layoutFailure;
  if (autoChoice && verbose()) {
    std::string why;
    const std::int64_t k = auto_->kArg >= 0 && static_cast<size_t>(auto_->kArg) < args.size()
                               ? args[auto_->kArg].sizes[auto_->kDim]
                               : -1;
    chooseAutomatic(*auto_, k, &why, gridTiles(g), gridAlong(g, auto_->mAxis), gridAlong(g, auto_->nAxis));
    std::fprintf(stderr, "tessel: %s: K = %lld: %s\n", head().c_str(), static_cast<long long>(k), why.c_str());
  }
  // The variant for the launch's layout and, under schedule::automatic, the rule's choice.
  auto request = [&] {
    VariantRequest r{key, false, variantTag(scheduleName(), key)};
    if (autoChoice) {
      r.schedule = autoChoice->schedule;
      r.decomposition = autoChoice->decomposition;
      if (autoChoice->stages)
        r.stages = autoChoice->stages;
    }
    return r;
  };
  if (autoChoice && isDefaultLayout(key)) {
    VariantRequest r = request();
    try {
      chosen = &variant(r);
    } catch (const tessel::error& e) {
      // Not silent: the rule's choice failed to build (a tessel bug); the eager kernel still runs.
      noteOnce("auto:" + r.tag, "tessel: note: " + head() + ": the automatic choice '" + r.tag +
                                    "' could not be compiled: " + firstLine(e.what()) +
                                    "; launching the eagerly compiled '" + autoChoiceName(autoEager_) + "' instead");
      chosen = &primary_;
    }
  }
  if (!isDefaultLayout(key)) {
    VariantRequest r = request();
    try {
      chosen = &variant(r);
    } catch (const tessel::error& e) {
      layoutFailure = "schedule " + scheduleName() + " could not be compiled for the layout of the arguments (" + r.tag +
                      "): " + firstLine(e.what());
      chosen = &primary_;
    }
  }

  // Does the chosen variant load with TMA an argument TMA cannot address?
  std::optional<TmaViolation> violation = findTmaViolation(chosen->compiled(), args);
  if (!violation && layoutFailure.empty()) {
    if (chosen != &primary_ && verbose())
      std::fprintf(stderr, "tessel: %s: launching variant '%s'\n", head().c_str(), chosen->compiled().variant.c_str());
    return *chosen;
  }
  if (!violation) {
    // The primary reads every argument through pointers with its real
    // strides: correct for any layout, only slower.
    noteOnce("layout:" + variantTag(scheduleName(), key),
             "tessel: note: " + head() + ": " + layoutFailure + "; launching the default-layout kernel instead");
    return primary_;
  }

  if (!layoutFailure.empty() && verbose())
    std::fprintf(stderr, "tessel: %s: %s\n", head().c_str(), layoutFailure.c_str());
  const std::string what = "argument " + std::to_string(violation->arg) + ": " + violation->message;
  // fp8 has no multistage path (docs/fp8.md): say so instead of quoting the
  // fallback's compile error.
  const dtype vt = args[std::size_t(violation->arg)].type;
  if (vt == dtype::f8e4m3 || vt == dtype::f8e5m2)
    throw tessel::error("tessel: " + head() + " " + what + "; an " + dtypeName(vt) +
                        " tensor has no fallback (schedule multistage has no fp8 path): fp8 tensors must meet "
                        "TMA's rules (16-byte aligned base, strides of 16-byte multiples, the last dimension "
                        "contiguous)");
  const FallbackPolicy policy = fallbackPolicy();
  if (policy == FallbackPolicy::error)
    throw tessel::error("tessel: " + head() + " " + what +
                        "; TESSEL_FALLBACK=error forbids falling back to schedule multistage, which needs no TMA "
                        "(unset it to fall back)");
  VariantRequest fallback{key, true, variantTag("multistage", key)};
  LoadedKernel* ms;
  try {
    ms = &variant(fallback);
  } catch (const tessel::error& e) {
    throw tessel::error("tessel: " + head() + " " + what + "; the fallback to schedule multistage failed: " +
                        std::string(e.what()));
  }
  if (policy == FallbackPolicy::warn)
    noteOnce("tma:" + std::to_string(violation->arg) + ":" + violation->rule,
             "tessel: note: " + head() + " " + what + "; launching the schedule multistage variant instead "
             "(TESSEL_FALLBACK=quiet silences this note, TESSEL_FALLBACK=error makes it an error)");
  if (verbose())
    std::fprintf(stderr, "tessel: %s: %s: launching variant '%s'\n", head().c_str(), what.c_str(),
                 ms->compiled().variant.c_str());
  if (fellBack)
    *fellBack = true;
  return *ms;
}

namespace {

/// Every non-empty argument must be device memory that kernels of the current
/// context can access. Host memory is rejected even where the GPU could map
/// it: TMA and the GEMM schedules assume device memory, and passing a host
/// buffer is almost always a mistake.
void checkDevicePointers(const CudaDriver& d, const CompiledKernel& k, std::span<const tensor_arg> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const tensor_arg& a = args[i];
    if (a.kind != arg_kind::tensor)
      continue;  // a scalar value (validateArgs checked that a scalar is expected)
    bool empty = false;
    for (int dim = 0; dim < a.rank; ++dim)
      empty |= a.sizes[dim] == 0;
    if (empty)
      continue;
    auto fail = [&](const std::string& rule) {
      throw tessel::error("tessel: kernel '" + k.name + "' argument " + std::to_string(i) + ": data pointer " +
                          hexAddress(a.data) + " " + rule);
    };
    const CUdeviceptr ptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(a.data));
    // Zero-filled 8-byte slots: the attributes are 4-byte enums, bools and
    // ints, so any non-zero byte reads back correctly on little endian.
    std::uint64_t memoryType = 0, isManaged = 0;
    int ordinal = -1;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* data[] = {&memoryType, &isManaged, &ordinal};
    // cuPointerGetAttributes does not fail for non-CUDA memory: it reports
    // memory type 0 instead.
    if (CUresult r = d.cuPointerGetAttributes(3, attrs, data, ptr); r != CUDA_SUCCESS)
      throwCudaError(r, "cuPointerGetAttributes", k.name, "argument " + std::to_string(i));
    if (isManaged)
      continue;
    const auto type = static_cast<CUmemorytype>(static_cast<std::uint32_t>(memoryType));
    if (type == CU_MEMORYTYPE_HOST)
      fail("is page-locked host memory (cudaMallocHost / cuMemHostAlloc); tessel kernels need device "
           "memory (cudaMalloc, cuMemAlloc, a CUDA tensor)");
    CUdeviceptr usable = 0;
    const bool accessible =
        d.cuPointerGetAttribute(&usable, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, ptr) == CUDA_SUCCESS;
    if (accessible)
      continue;
    if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY) {
      CUdevice current = 0;
      checkCuda(d.cuCtxGetDevice(&current), "cuCtxGetDevice", k.name);
      fail("is memory of device " + std::to_string(ordinal) + ", which the current context (device " +
           std::to_string(static_cast<int>(current)) +
           ") cannot access; launch on that device or enable peer access");
    }
    fail("is not CUDA device memory (a host pointer, or memory freed already?); pass memory from "
         "cudaMalloc / cuMemAlloc or a CUDA tensor");
  }
}

/// The stream-K workspace of (context, stream): CompiledKernel::kStreamKFlagBytes of flags,
/// then one partial-tile slot per CTA, for the most CTAs a launch can have (`bytes`). Allocated
/// zeroed on first use; the kernels leave the flags zero. One per stream, so that launches on
/// different streams never share one, while launches on one stream are ordered; the per-thread
/// default stream (CU_STREAM_PER_THREAD) is a different stream in each host thread, so it is
/// keyed by thread too. A kernel with larger tiles gets a larger buffer; the smaller one is kept
/// (never freed: an earlier launch, or a CUDA graph captured earlier, may still use it).
/// Allocating synchronizes the context (the zeroing runs on the legacy stream, which a
/// non-blocking stream does not wait for), so the first stream-K launch on a stream, and the
/// first with larger tiles, must not be captured into a CUDA graph. (A stream handle reused
/// after cuStreamDestroy while the old stream's kernels still run would share the buffer.)
CUdeviceptr streamWorkspace(const CudaDriver& d, CUcontext ctx, CUstream s, std::uint64_t bytes,
                            const std::string& kernelName) {
  struct Buffer {
    CUdeviceptr ptr = 0;
    std::uint64_t bytes = 0;
  };
  using Key = std::tuple<CUcontext, CUstream, std::thread::id>;
  static std::mutex mutex;
  static std::map<Key, Buffer> buffers;
  const std::thread::id thread = s == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id();
  std::lock_guard<std::mutex> lock(mutex);
  Buffer& buf = buffers[Key{ctx, s, thread}];
  if (buf.bytes >= bytes)
    return buf.ptr;
  // A capture cannot contain the allocation (nor the synchronization): say what to do instead of
  // cuMemAlloc's CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, which also invalidates the capture.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (d.cuStreamIsCapturing && d.cuStreamIsCapturing(s, &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    throw tessel::error("tessel: kernel '" + kernelName +
                        "': this stream-K launch needs the stream's workspace, which is allocated at the "
                        "first such launch on a stream and cannot be inside a CUDA graph capture; call "
                        "kernel::prepare(stream, grid, args...) with this stream before the capture");
  CUdeviceptr ptr = 0;
  checkCuda(d.cuMemAlloc(&ptr, bytes), "cuMemAlloc (stream-K workspace of " + std::to_string(bytes) + " bytes)",
            kernelName);
  checkCuda(d.cuMemsetD8(ptr, 0, bytes), "cuMemsetD8 (stream-K workspace)", kernelName);
  checkCuda(d.cuCtxSynchronize(), "cuCtxSynchronize (stream-K workspace)", kernelName);
  buf = {ptr, bytes};  // the smaller buffer is dropped, not freed (see above)
  return ptr;
}

CUtensorMapDataType tmaDataType(dtype t) {
  switch (t) {
  case dtype::f16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case dtype::bf16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case dtype::f32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case dtype::i32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  // fp8 has no TMA data type of its own: bytes (the swizzle and the box are
  // in bytes, and TMA never converts).
  case dtype::f8e4m3:
  case dtype::f8e5m2:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  default:
    break;
  }
  throw tessel::error(std::string("tessel: internal error: TMA cannot load ") + dtypeName(t));
}

CUtensorMapSwizzle tmaSwizzle(int bytes) {
  switch (bytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  default:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

}  // namespace

struct kernel_impl::LaunchRecord {
  // The key: a launch with all of these equal launches this record.
  std::vector<tensor_arg> args;
  grid g;
  CUstream stream = nullptr;
  CUcontext context = nullptr;
  std::thread::id thread;  ///< CU_STREAM_PER_THREAD only: another thread's stream (and workspace)
  // What is launched.
  const CompiledKernel* kernel = nullptr;  ///< the variant's (names the kernel in errors)
  CUfunction function = nullptr;
  bool fallback = false;  ///< a TMA fallback: TESSEL_FALLBACK=error set since must still throw
  CUlaunchConfig config{};
  CUlaunchAttribute cluster{};
  std::vector<std::uint64_t> scalars;
  std::vector<CUtensorMap> maps;  // CUtensorMap is alignas(64)
  std::vector<void*> params;      // into scalars and maps
  /// The ts::scalar parameters: a launch that differs from the record only in their values
  /// (alpha changing per call) is launched from the record with those parameters replaced.
  struct ScalarParam {
    std::size_t param;
    int arg;
    dtype type;
  };
  std::vector<ScalarParam> scalarParams;
};

std::shared_ptr<const kernel_impl::LaunchRecord> kernel_impl::lastLaunch() const {
  std::lock_guard<std::mutex> lock(launchMutex_);
  return lastLaunch_;
}

void kernel_impl::rememberLaunch(std::shared_ptr<const LaunchRecord> r) {
  std::lock_guard<std::mutex> lock(launchMutex_);
  lastLaunch_ = std::move(r);
}

namespace {

/// Every field of a launch argument equal (the floating value bit for bit: -0.0 and NaN payloads
/// are other values). All three sizes and strides, also past the rank, so that nothing the full
/// path might read differs. The array fields are compared with XORs, not std::array's ==, which
/// calls memcmp per array (a third of the compare's time).
bool sameArg(const tensor_arg& a, const tensor_arg& b) {
  std::uint64_t floatingA = 0, floatingB = 0;
  std::memcpy(&floatingA, &a.floating, sizeof floatingA);
  std::memcpy(&floatingB, &b.floating, sizeof floatingB);
  const std::uint64_t diff =
      static_cast<std::uint64_t>(a.sizes[0] ^ b.sizes[0]) | static_cast<std::uint64_t>(a.sizes[1] ^ b.sizes[1]) |
      static_cast<std::uint64_t>(a.sizes[2] ^ b.sizes[2]) | static_cast<std::uint64_t>(a.strides[0] ^ b.strides[0]) |
      static_cast<std::uint64_t>(a.strides[1] ^ b.strides[1]) |
      static_cast<std::uint64_t>(a.strides[2] ^ b.strides[2]) | (floatingA ^ floatingB) |
      static_cast<std::uint64_t>(a.integer ^ b.integer);
  return diff == 0 && a.data == b.data && a.type == b.type && a.rank == b.rank && a.kind == b.kind;
}

std::string launchShape(const CompiledKernel& k, grid g) {
  return "grid (" + std::to_string(g.x) + ", " + std::to_string(g.y) + ", " + std::to_string(g.z) +
         "), block " + std::to_string(k.blockThreads) + ", dynamic shared memory " +
         std::to_string(k.dynamicSmemBytes) + " bytes, cluster (" + std::to_string(k.cluster[0]) + ", " +
         std::to_string(k.cluster[1]) + ", " + std::to_string(k.cluster[2]) + ")";
}

/// The cached launch: true when `kernel`'s last recorded launch had exactly these arguments,
/// grid and stream, the same context is current and nothing asks for the full path (a sticky
/// fault, TESSEL_DEBUG, TESSEL_VERBOSE, TESSEL_FALLBACK=error on a fallback); then it is
/// launched again as it was. Every check of the full path depends only on these (the host
/// rules) or was made for them when recorded (device pointers, the stream's context); what a
/// repeated launch does not check again is whether memory at the same addresses was freed
/// since (docs/design-notes.md, 2026-12-04 "cached launch").
bool launchCached(kernel_impl& kernel, CUstream s, grid g, std::span<const tensor_arg> args) {
  const CudaDriver* d = cudaDriver();
  if (!d)
    return false;
  std::shared_ptr<const kernel_impl::LaunchRecord> r = kernel.lastLaunch();
  if (!r || r->stream != s || r->g.x != g.x || r->g.y != g.y || r->g.z != g.z || r->args.size() != args.size())
    return false;
  bool newScalars = false;  // a scalar value of the same kind differs: only its parameter changes
  for (size_t i = 0; i < args.size(); ++i)
    if (!sameArg(r->args[i], args[i])) {
      if (args[i].kind == arg_kind::tensor || args[i].kind != r->args[i].kind)
        return false;
      newScalars = true;
    }
  if (s == CU_STREAM_PER_THREAD && r->thread != std::this_thread::get_id())
    return false;
  if (contextFaulted())
    return false;
  if (const LaunchFlags f = launchFlags(); f.debug || f.verbose)
    return false;
  if (r->fallback && fallbackPolicy() == FallbackPolicy::error)
    return false;
  // New scalar values: the parameter list with their slots replaced (values the full path would
  // reject, outside the f32 / i32 range, take the full path for its error).
  constexpr std::size_t kMaxParams = 64;
  std::array<void*, kMaxParams> localParams;
  std::array<std::uint64_t, kMaxParams> localBits;
  void** params = const_cast<void**>(r->params.data());
  if (newScalars) {
    if (r->params.size() > kMaxParams)
      return false;
    std::copy(r->params.begin(), r->params.end(), localParams.begin());
    for (const kernel_impl::LaunchRecord::ScalarParam& p : r->scalarParams) {
      const tensor_arg& a = args[p.arg];
      std::uint64_t bits = 0;
      if (p.type == dtype::f32) {
        if (std::isfinite(a.floating) && std::fabs(a.floating) > static_cast<double>(std::numeric_limits<float>::max()))
          return false;
        const float f = static_cast<float>(a.floating);
        std::uint32_t b = 0;
        std::memcpy(&b, &f, sizeof b);
        bits = b;
      } else {
        if (a.integer < std::numeric_limits<std::int32_t>::min() || a.integer > std::numeric_limits<std::int32_t>::max())
          return false;
        bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(a.integer));
      }
      localBits[p.param] = bits;
      localParams[p.param] = &localBits[p.param];
    }
    params = localParams.data();
  }
  CUcontext ctx = nullptr;
  if (d->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx != r->context)
    return false;
  if (CUresult e = d->cuLaunchKernelEx(&r->config, r->function, params, nullptr); e != CUDA_SUCCESS)
    throwCudaError(e, "cuLaunchKernelEx", r->kernel->name, launchShape(*r->kernel, g));
  return true;
}

}  // namespace

namespace {

/// Launch steps 0 and 1 (Kernel.h), which need no GPU: the variant `args` and `g` take (compiled
/// into the kernel_impl on first use) and its argument checks; c.fallback, and with `describe`
/// what kernel::prepare reports of it (the resources parse the ptxas log: not for a launch).
LoadedKernel& chooseVariant(kernel_impl& kernel, grid g, std::span<const tensor_arg> args, launch_choice& c,
                            bool describe) {
  LoadedKernel& variant = kernel.select(args, g, &c.fallback);
  const CompiledKernel& k = variant.compiled();
  validateArgs(k, args, g);
  if (describe) {
    if (&k != &kernel.compiled())
      c.variant = k.variant;
    c.resources = resourcesOf(k);
  }
  return variant;
}

/// The full path of a launch up to the driver's launch call (Kernel.h, launch steps 0-4): the
/// variant chosen and checked, the context, the stream and the pointers checked, the parameters
/// and TMA descriptors built, the stream-K workspace allocated and the co-resident clusters
/// counted. Returns the record to launch, or nullptr when there is nothing to launch (launch
/// contract 3); `choice` says which kernel that is (chooseVariant).
std::shared_ptr<kernel_impl::LaunchRecord> buildLaunch(kernel_impl& kernel, CUstream s, grid g,
                                                       std::span<const tensor_arg> args, launch_choice& choice,
                                                       bool describe) {
  LoadedKernel& variant = chooseVariant(kernel, g, args, choice, describe);
  const CompiledKernel& k = variant.compiled();
  const bool fellBack = choice.fallback;
  if (nothingToDo(k, args, g))
    return nullptr;  // Kernel.h, launch contract 3 (before step 2: it needs no GPU)

  CUcontext ctx = ensureContext(s, k.name);  // throws "no GPU"
  throwIfContextFaulted(k.name);
  const CudaDriver& d = *cudaDriver();

  if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) {
    CUcontext streamCtx = nullptr;
    checkCuda(d.cuStreamGetCtx(s, &streamCtx), "cuStreamGetCtx (checking the stream passed to launch)", k.name);
    if (streamCtx != ctx)
      throw tessel::error("tessel: kernel '" + k.name +
                          "': the stream belongs to another CUDA context than the one current on this thread");
  }
  checkDevicePointers(d, k, args);

  CUfunction fn = static_cast<CUfunction>(variant.functionFor(ctx));

  // Built in a record that the next launch with the same arguments reuses (launchCached).
  auto record = std::make_shared<kernel_impl::LaunchRecord>();
  kernel_impl::LaunchRecord& rec = *record;
  std::vector<ParamValue> plan = planParams(k, args, g);
  std::vector<std::uint64_t>& scalars = rec.scalars;
  scalars.resize(plan.size());
  size_t tmaCount = 0;
  for (const ParamValue& v : plan)
    tmaCount += v.kind == ParamSpec::Kind::TmaDescriptor;
  std::vector<CUtensorMap>& maps = rec.maps;
  maps.resize(tmaCount);
  std::vector<void*>& params = rec.params;
  params.resize(plan.size());
  size_t nextMap = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const ParamValue& v = plan[i];
    if (v.kind != ParamSpec::Kind::TmaDescriptor) {
      scalars[i] = v.scalar;
      params[i] = &scalars[i];
      continue;
    }
    const TmaEncoding& e = v.tma;
    CUtensorMap* map = &maps[nextMap++];
    std::memset(map, 0, sizeof(*map));
    params[i] = map;
    if (e.zeroed)
      continue;  // an output TMA cannot address: the kernel's TmaUsable parameter is 0
    CUresult r = d.cuTensorMapEncodeTiled(
        map, tmaDataType(e.type), e.rank, const_cast<void*>(e.globalAddress), e.globalDim, e.globalStrides,
        e.boxDim, e.elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, tmaSwizzle(e.swizzleBytes),
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      throwCudaError(r, "cuTensorMapEncodeTiled", k.name,
                     "parameter " + std::to_string(i) + ", argument " + std::to_string(k.params[i].arg) + ": " +
                         describeTma(e));
    params[i] = map;
  }

  CUlaunchConfig& config = rec.config;
  config.gridDimX = g.x;
  config.gridDimY = g.y;
  config.gridDimZ = g.z;
  if (k.persistent) {
    // The kernel walks the user's grid of tiles itself (GridDim parameters):
    // one CTA per SM (the shared-memory ring allows no more), fewer for small grids.
    CUdevice dev = 0;
    int sms = 0;
    checkCuda(d.cuCtxGetDevice(&dev), "cuCtxGetDevice", k.name);
    checkCuda(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
              "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", k.name);
    // With clusters (launched as k.cluster[0] x 1 x 1) the kernel walks
    // cluster tiles of the user's grid; it is told its cluster shape at compile
    // time, so the runtime only needs the count: a whole number of clusters.
    const std::uint64_t csize = k.cluster[0];
    std::uint64_t tiles = std::uint64_t(g.x) * g.y * g.z;
    if (csize > 1)  // ceil over the clustered axis: cluster tiles x csize CTAs
      tiles = (tiles + csize - 1) / csize * csize;
    std::uint64_t ctas = std::min<std::uint64_t>(tiles, static_cast<std::uint64_t>(sms) / csize * csize);
    if (k.workspaceSlotBytes) {
      // Stream-K kernels split tiles among more CTAs than there are tiles (each tile among
      // at most about 4), never more than the workspace has flags for.
      ctas = std::min<std::uint64_t>({static_cast<std::uint64_t>(sms), tiles * 4,
                                      CompiledKernel::kMaxStreamKCtas});
      ctas = std::max<std::uint64_t>(ctas, 1);
      // Sized for the most CTAs any launch of this kernel can have, so that smaller grids
      // first do not make larger ones reallocate.
      const std::uint64_t most = std::min<std::uint64_t>(sms, CompiledKernel::kMaxStreamKCtas);
      CUdeviceptr ws = streamWorkspace(d, ctx, s, CompiledKernel::kStreamKFlagBytes + most * k.workspaceSlotBytes,
                                       k.name);
      for (size_t i = 0; i < plan.size(); ++i)
        if (plan[i].kind == ParamSpec::Kind::Workspace)
          scalars[i] = static_cast<std::uint64_t>(ws);
    }
    config.gridDimX = static_cast<unsigned>(std::max<std::uint64_t>(ctas, csize));
    config.gridDimY = 1;
    config.gridDimZ = 1;
  }
  config.blockDimX = k.blockThreads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = k.dynamicSmemBytes;
  config.hStream = s;
  CUlaunchAttribute& cluster = rec.cluster;
  const bool clustered = k.cluster[0] * k.cluster[1] * k.cluster[2] > 1;
  if (clustered) {
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = k.cluster[0];
    cluster.value.clusterDim.y = k.cluster[1];
    cluster.value.clusterDim.z = k.cluster[2];
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  auto shape = [&] { return launchShape(k, g); };
  if (k.persistent && clustered && d.cuOccupancyMaxActiveClusters) {
    // Not every SM can hold a CTA of a cluster (clusters live inside one GPC):
    // a persistent grid larger than the co-resident clusters would run its
    // last clusters as a second wave. Launch only as many as fit at once.
    static std::mutex mutex;
    static std::map<CUfunction, int> fitting;
    int clusters = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = fitting.find(fn);
      if (it == fitting.end()) {
        CUlaunchConfig probe = config;
        probe.gridDimX = k.cluster[0];
        checkCuda(d.cuOccupancyMaxActiveClusters(&clusters, fn, &probe), "cuOccupancyMaxActiveClusters",
                  k.name, shape());
        it = fitting.emplace(fn, clusters).first;
        if (flagSet("TESSEL_VERBOSE"))
          std::fprintf(stderr, "tessel: '%s': %d clusters of %u CTAs fit at once; persistent grid %u CTAs\n",
                       k.name.c_str(), clusters, k.cluster[0],
                       std::min<unsigned>(config.gridDimX, static_cast<unsigned>(clusters) * k.cluster[0]));
      }
      clusters = it->second;
    }
    if (clusters > 0)
      config.gridDimX = std::min<unsigned>(config.gridDimX, static_cast<unsigned>(clusters) * k.cluster[0]);
  }
  rec.args.assign(args.begin(), args.end());
  rec.g = g;
  rec.stream = s;
  rec.context = ctx;
  if (s == CU_STREAM_PER_THREAD)
    rec.thread = std::this_thread::get_id();
  rec.kernel = &k;
  rec.function = fn;
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].kind == ParamSpec::Kind::Scalar)
      rec.scalarParams.push_back({i, k.params[i].arg, k.args[k.params[i].arg].type});
  rec.fallback = fellBack;
  return record;
}

/// Whether a record may be reused by the next launch with the same arguments: never under
/// TESSEL_DEBUG (every debug launch synchronizes) or TESSEL_VERBOSE (the full path prints
/// select()'s lines on every launch).
bool recordable(const kernel_impl& kernel, const LaunchFlags& flags) {
  return !flags.debug && !flags.verbose && !kernel.verbose();
}

}  // namespace

void launch(kernel_impl& kernel, void* stream, grid g, std::span<const tensor_arg> args) {
  CUstream s = static_cast<CUstream>(stream);
  if (launchCached(kernel, s, g, args))
    return;

  kernel.countCheckedLaunch();
  launch_choice choice;
  std::shared_ptr<kernel_impl::LaunchRecord> record = buildLaunch(kernel, s, g, args, choice, /*describe=*/false);
  if (!record)
    return;
  const kernel_impl::LaunchRecord& rec = *record;
  const CudaDriver& d = *cudaDriver();
  if (CUresult r = d.cuLaunchKernelEx(&rec.config, rec.function, const_cast<void**>(rec.params.data()), nullptr);
      r != CUDA_SUCCESS)
    throwCudaError(r, "cuLaunchKernelEx", rec.kernel->name, launchShape(*rec.kernel, g));
  const LaunchFlags flags = launchFlags();
  if (flags.debug)
    checkCuda(d.cuStreamSynchronize(s), "cuStreamSynchronize after the launch (TESSEL_DEBUG)", rec.kernel->name,
              launchShape(*rec.kernel, g));
  if (recordable(kernel, flags))
    kernel.rememberLaunch(std::move(record));
}

launch_choice prepare(kernel_impl& kernel, void* stream, grid g, std::span<const tensor_arg> args) {
  // Everything launch does but the launch call: its record becomes the kernel's last launch, so
  // that launch(stream, g, args) right after (in a CUDA graph capture say) is a cached one, which
  // only calls cuCtxGetCurrent and cuLaunchKernelEx. Under TESSEL_DEBUG / TESSEL_VERBOSE nothing
  // is recorded, and that launch takes the full path again, finding the workspace and the cluster
  // count made here.
  launch_choice c;
  CUstream s = static_cast<CUstream>(stream);
  std::shared_ptr<kernel_impl::LaunchRecord> record = buildLaunch(kernel, s, g, args, c, /*describe=*/true);
  if (record && recordable(kernel, launchFlags()))
    kernel.rememberLaunch(std::move(record));
  return c;
}

kernel_resources resourcesOf(const CompiledKernel& c) {
  kernel_resources r;
  r.schedule = c.schedule;
  if (!c.cubin.empty()) {
    runtime::PtxasReport p = runtime::parsePtxasLog(c.ptxasLog, c.name);
    r.registers = p.registers;
    r.spill_stores = p.spillStores;
    r.spill_loads = p.spillLoads;
    r.stack_frame = p.stackFrame;
  }
  r.threads = c.blockThreads;
  r.shared_bytes = c.dynamicSmemBytes;
  r.cluster = c.cluster;
  r.persistent = c.persistent;
  return r;
}

launch_choice prepare(kernel_impl& kernel, grid g, std::span<const tensor_arg> args) {
  // launch's steps 0 and 1 (Kernel.h): what launch would throw for these arguments before it needs
  // the GPU, prepare throws too; select compiles the variant into the kernel_impl, where the
  // launch finds it.
  launch_choice c;
  LoadedKernel& variant = chooseVariant(kernel, g, args, c, /*describe=*/true);
  const CompiledKernel& k = variant.compiled();
  // On a thread with a current CUDA context, the module is loaded there too (checking the
  // architecture and shared-memory limits), so that the launch after prepare, in a CUDA graph
  // capture say, loads nothing. Without a GPU or a current context it is left to the launch, and
  // so it is for an empty problem, which launches nothing (launch contract 3).
  if (nothingToDo(k, args, g))
    return c;
  if (const CudaDriver* d = cudaDriver()) {
    CUcontext ctx = nullptr;
    if (d->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx)
      variant.functionFor(ctx);
  }
  return c;
}

std::string stage_text(const kernel_impl& kernel, const std::string& stage) {
  const CompiledKernel& k = kernel.compiled();
  // The names kernel::stage documents (jit.hpp), each one stage; a dump file's
  // own name ("10-convert-hopper-to-nvvm.mlir") works too. The stages after a
  // pass are named after it (Pipelines.h, docs/pipeline.md).
  static const std::pair<const char*, const char*> names[] = {
      {"tessel", "01-tessel.mlir"},
      {"select-schedule", "02-select-schedule.mlir"},
      {"materialize-tile-scheduler", "03-materialize-tile-scheduler.mlir"},
      {"insert-async-copies", "04-insert-async-copies.mlir"},
      {"warp-specialize", "05-warp-specialize.mlir"},
      {"schedule-mma", "06-schedule-mma.mlir"},
      {"lower-epilogue", "07-lower-epilogue.mlir"},
      {"allocate-resources", "08-allocate-resources.mlir"},
      {"lower-to-nvvm", "09-lower-to-nvvm.mlir"},
      {"convert-hopper-to-nvvm", "10-convert-hopper-to-nvvm.mlir"},
      {"convert-to-llvm", "11-convert-to-llvm.mlir"},
      {"ll", "12-kernel.ll"},
      {"opt.ll", "13-kernel.opt.ll"}};
  if (stage == "ptx" || stage == k.name + ".ptx")  // (the dump's <name>.ptx and <name>.cubin too)
    return k.ptx;
  if (stage == "ptxas.log")
    return k.ptxasLog;
  if (stage == "cubin" || stage == "sass" || stage == k.name + ".cubin") {
    if (k.cubin.empty())
      throw tessel::error("tessel: kernel '" + k.name + "' has no cubin (ptxas was not found when it was compiled), so "
                          "no stage '" + stage + "'");
    return stage == "sass" ? disassembleCubin(k.cubin, k.name) : k.cubin;
  }
  std::string file = stage;
  for (const auto& [name, f] : names)
    if (stage == name)
      file = f;
  for (const auto& [name, text] : k.stages)
    if (name == file)
      return text;
  if (!k.hasAllStages() && k.restage)  // compiled without recording them: made now, once
    for (const auto& [name, text] : kernel.stages())
      if (name == file)
        return text;
  std::string available;
  for (const auto& [name, f] : names)
    available += std::string(available.empty() ? "" : ", ") + name;
  available += ", ptx, ptxas.log, cubin, sass";
  throw tessel::error("tessel: kernel '" + k.name + "' has no stage '" + stage + "'; stages: " + available +
                      " (or a dump file's name)");
}

}  // namespace tessel::detail

namespace tessel::runtime {

std::shared_ptr<detail::kernel_impl> makeKernel(CompiledKernel k, detail::VariantCompiler compiler, bool verbose) {
  warnUnknownKnobsOnce();
  return std::make_shared<detail::kernel_impl>(std::move(k), std::move(compiler), verbose);
}

}  // namespace tessel::runtime
