//===- FakeGpu.h - a CUDA driver that computes on the host, for the tuner --===//
//
// A table of stub driver functions (runtime::setCudaDriverForTesting) under
// which the whole tuner runs without a GPU: "device memory" is host memory
// (cuMemAlloc is malloc, the copies are memcpy), a launch of one of the fake
// kernels below computes on the host and advances a virtual GPU clock by the
// kernel's cost, events read that clock, and host functions (the timing gate)
// run when the stream or an event is synchronized. Shared by TunerTest.cpp and
// autotune_helper.cpp (the second process of the cross-process tests).
//
// The fake kernels take (X: f32[n], Y: f32[n]) and store into Y:
//   Y = factor * X          (accumulate = false)
//   Y += factor * X         (accumulate = true: an in-place output, like reduce_into)
// or, made with kernel2d, (X: f32[rows x cols] dense, Y: f32[rows x cols] with rows `ld` apart),
// Y[r][c] = factor * X[r][c], and Y[badRow][badCol] NaN when those are set.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/kernel/autotune.hpp"

namespace tessel::testing::fakegpu {

struct Behaviour {
  double ms = 1.0;  ///< GPU time per launch
  float factor = 2.0f;
  bool accumulate = false;
  int badRow = -1, badCol = -1;  ///< kernel2d: this element is NaN
};

struct State {
  double clockMs = 0;
  std::map<std::string, Behaviour> kernels;  ///< by kernel name
  std::vector<std::string> functions;        ///< CUfunction i + 1 is functions[i]
  std::map<std::string, int> launches;       ///< by kernel name
  std::map<std::string, bool> twoD;          ///< kernels made with kernel2d
  int eventRecords = 0, elapsedQueries = 0, hostFuncs = 0, allocs = 0, frees = 0, dtodCopies = 0, dtohCopies = 0;
  bool capturing = false;
  std::vector<std::pair<CUhostFn, void*>> pending;  ///< host functions not run yet
  /// Host functions start at once on a thread of their own (as the driver runs them), instead of
  /// at the next synchronization; hostFuncsDone counts those that returned.
  bool asyncHostFuncs = false;
  std::vector<std::thread> hostThreads;
  std::atomic<int> hostFuncsDone{0};
  /// Launches between a batch's two events, and those of them made while no host function held
  /// the stream (its gate had returned already).
  int batchLaunches = 0, batchLaunchesUnheld = 0;

  void runPending() {
    std::vector<std::pair<CUhostFn, void*>> now;
    now.swap(pending);
    for (auto& [fn, data] : now)
      fn(data);
    for (std::thread& t : hostThreads)
      t.join();
    hostThreads.clear();
  }
  State() = default;
  State& operator=(State&& o) {  // tests reset the state between cases
    runPending();
    clockMs = o.clockMs;
    kernels = std::move(o.kernels);
    functions = std::move(o.functions);
    launches = std::move(o.launches);
    twoD = std::move(o.twoD);
    eventRecords = o.eventRecords, elapsedQueries = o.elapsedQueries, hostFuncs = o.hostFuncs, allocs = o.allocs,
    frees = o.frees, dtodCopies = o.dtodCopies, dtohCopies = o.dtohCopies;
    capturing = o.capturing;
    pending = std::move(o.pending);
    asyncHostFuncs = o.asyncHostFuncs;
    hostFuncsDone = o.hostFuncsDone.load();
    batchLaunches = o.batchLaunches, batchLaunchesUnheld = o.batchLaunchesUnheld;
    return *this;
  }
};

inline State& state() {
  static State s;
  return s;
}

inline CUcontext context() { return reinterpret_cast<CUcontext>(std::uintptr_t(0xc0ffee)); }

inline runtime::CudaDriver driver() {
  runtime::CudaDriver d;
  d.driverVersion = 13000;
  d.deviceCount = 1;
  d.cuGetErrorName = [](CUresult, const char** s) -> CUresult { *s = "FAKE_ERROR"; return CUDA_SUCCESS; };
  d.cuGetErrorString = [](CUresult, const char** s) -> CUresult { *s = "fake"; return CUDA_SUCCESS; };
  d.cuCtxGetCurrent = [](CUcontext* c) -> CUresult { *c = context(); return CUDA_SUCCESS; };
  d.cuCtxSetCurrent = [](CUcontext) -> CUresult { return CUDA_SUCCESS; };
  d.cuCtxGetDevice = [](CUdevice* dev) -> CUresult { *dev = 0; return CUDA_SUCCESS; };
  d.cuCtxSynchronize = []() -> CUresult { state().runPending(); return CUDA_SUCCESS; };
  d.cuDeviceGetName = [](char* name, int len, CUdevice) -> CUresult {
    std::strncpy(name, "Fake H200", static_cast<size_t>(len));
    return CUDA_SUCCESS;
  };
  d.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice) -> CUresult {
    *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
         : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
         : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
                                                             : 232448;
    return CUDA_SUCCESS;
  };
  d.cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned, CUjit_option*, void**) -> CUresult {
    *m = reinterpret_cast<CUmodule>(std::uintptr_t(0x1000));
    return CUDA_SUCCESS;
  };
  d.cuModuleLoadData = [](CUmodule* m, const void*) -> CUresult {
    *m = reinterpret_cast<CUmodule>(std::uintptr_t(0x1000));
    return CUDA_SUCCESS;
  };
  d.cuModuleUnload = [](CUmodule) -> CUresult { return CUDA_SUCCESS; };
  d.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) -> CUresult {
    State& s = state();
    s.functions.push_back(name);
    *f = reinterpret_cast<CUfunction>(std::uintptr_t(s.functions.size()));
    return CUDA_SUCCESS;
  };
  d.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) -> CUresult {
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
    return CUDA_SUCCESS;
  };
  d.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute, int) -> CUresult { return CUDA_SUCCESS; };
  d.cuPointerGetAttributes = [](unsigned n, CUpointer_attribute*, void** data, CUdeviceptr) -> CUresult {
    if (n >= 1)
      *static_cast<std::uint64_t*>(data[0]) = CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
  };
  d.cuPointerGetAttribute = [](void* out, CUpointer_attribute, CUdeviceptr p) -> CUresult {
    *static_cast<CUdeviceptr*>(out) = p;
    return CUDA_SUCCESS;
  };
  d.cuLaunchKernelEx = [](const CUlaunchConfig*, CUfunction f, void** params, void**) -> CUresult {
    State& s = state();
    const std::string& name = s.functions.at(reinterpret_cast<std::uintptr_t>(f) - 1);
    const Behaviour& b = s.kernels.at(name);
    auto param = [&](int i) {
      std::uint64_t v = 0;
      std::memcpy(&v, params[i], 8);
      return v;
    };
    const float* X = reinterpret_cast<const float*>(param(0));
    float* Y = reinterpret_cast<float*>(param(2));
    if (s.twoD.count(name)) {  // X rows x cols, Y rows x cols with leading dimension ld
      const std::uint64_t rows = param(3), cols = param(4), ld = param(5);
      for (std::uint64_t r = 0; r < rows; ++r)
        for (std::uint64_t c = 0; c < cols; ++c)
          Y[r * ld + c] = int(r) == b.badRow && int(c) == b.badCol ? __builtin_nanf("")
                                                                    : b.factor * X[r * cols + c];
    } else {
      const std::uint64_t n = param(1);
      for (std::uint64_t i = 0; i < n; ++i)
        Y[i] = b.factor * X[i] + (b.accumulate ? Y[i] : 0.0f);
    }
    s.clockMs += b.ms;
    ++s.launches[name];
    if (s.eventRecords % 2 == 1) {  // between a timed batch's events
      ++s.batchLaunches;
      s.batchLaunchesUnheld += s.hostFuncsDone.load() == s.hostFuncs;
    }
    return CUDA_SUCCESS;
  };
  d.cuStreamSynchronize = [](CUstream) -> CUresult {
    state().runPending();
    return CUDA_SUCCESS;
  };
  d.cuStreamGetCtx = [](CUstream, CUcontext* c) -> CUresult {
    *c = context();
    return CUDA_SUCCESS;
  };
  d.cuStreamIsCapturing = [](CUstream, CUstreamCaptureStatus* status) -> CUresult {
    *status = state().capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  };
  d.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) -> CUresult {
    ++state().allocs;
    *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
    return CUDA_SUCCESS;
  };
  d.cuMemFree = [](CUdeviceptr p) -> CUresult {
    ++state().frees;
    std::free(reinterpret_cast<void*>(p));
    return CUDA_SUCCESS;
  };
  d.cuMemcpyDtoH = [](void* dst, CUdeviceptr src, size_t bytes) -> CUresult {
    ++state().dtohCopies;
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
  };
  d.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream) -> CUresult {
    ++state().dtodCopies;
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
  };
  d.cuEventCreate = [](CUevent* e, unsigned) -> CUresult {
    *e = reinterpret_cast<CUevent>(new double(0));
    return CUDA_SUCCESS;
  };
  d.cuEventDestroy = [](CUevent e) -> CUresult {
    delete reinterpret_cast<double*>(e);
    return CUDA_SUCCESS;
  };
  d.cuEventRecord = [](CUevent e, CUstream) -> CUresult {
    ++state().eventRecords;
    *reinterpret_cast<double*>(e) = state().clockMs;
    return CUDA_SUCCESS;
  };
  d.cuEventSynchronize = [](CUevent) -> CUresult {
    state().runPending();
    return CUDA_SUCCESS;
  };
  d.cuEventElapsedTime = [](float* ms, CUevent a, CUevent b) -> CUresult {
    ++state().elapsedQueries;
    *ms = static_cast<float>(*reinterpret_cast<double*>(b) - *reinterpret_cast<double*>(a));
    return CUDA_SUCCESS;
  };
  d.cuLaunchHostFunc = [](CUstream, CUhostFn fn, void* data) -> CUresult {
    State& s = state();
    ++s.hostFuncs;
    if (s.asyncHostFuncs)
      s.hostThreads.emplace_back([fn, data] {
        fn(data);
        ++state().hostFuncsDone;
      });
    else
      s.pending.emplace_back(fn, data);
    return CUDA_SUCCESS;
  };
  return d;
}

/// A compiled kernel `name` of the shape the fake launch computes: (X: f32[n] in, Y: f32[n] out).
inline CompiledKernel kernel(const std::string& name) {
  CompiledKernel k;
  k.name = name;
  k.args = {{dtype::f32, 1, false, false}, {dtype::f32, 1, false, true}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0},
              {ParamSpec::Kind::Size, 0, 0},
              {ParamSpec::Kind::Pointer, 1, 0},
              {ParamSpec::Kind::Size, 1, 0}};
  k.blockThreads = 128;
  k.ptx = "// fake\n";
  k.stages = {{"01-tessel.mlir", "fake " + name}};
  return k;
}

/// (X: f32[rows x cols] in, Y: f32[rows x cols] out, its rows Stride(1, 0) apart).
inline CompiledKernel kernel2d(const std::string& name) {
  CompiledKernel k;
  k.name = name;
  k.args = {{dtype::f32, 2, false, false}, {dtype::f32, 2, false, true}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}, {ParamSpec::Kind::Size, 0, 0}, {ParamSpec::Kind::Pointer, 1, 0},
              {ParamSpec::Kind::Size, 1, 0},    {ParamSpec::Kind::Size, 1, 1}, {ParamSpec::Kind::Stride, 1, 0}};
  k.blockThreads = 128;
  k.ptx = "// fake\n";
  k.stages = {{"01-tessel.mlir", "fake " + name}};
  return k;
}

/// A candidate running fake kernel `name` (which must be in state().kernels; `twoD`: made with
/// kernel2d); `compiles` counts its compiles. The tuner compiles candidates on several threads
/// at once: their compile functions touch no shared state (state().twoD is set here).
inline detail::candidate_spec candidate(const std::string& name, int* compiles = nullptr, bool twoD = false) {
  if (twoD)
    state().twoD[name] = true;
  detail::candidate_spec c;
  c.label = name;
  c.kernel = name;
  c.signature = twoD ? "f32[2] f32[2]" : "f32[1] f32[1]";
  c.opts.schedule = schedule::tma;
  c.compile = [name, compiles, twoD] {
    if (compiles)
      ++*compiles;
    return runtime::makeKernel(twoD ? kernel2d(name) : kernel(name));
  };
  c.identity = [name] { return "program of " + name; };
  c.grid_of = [](launch_args a) { return grid{static_cast<unsigned>((a[1].sizes[0] + 127) / 128), 1, 1}; };
  return c;
}

/// A 1-d f32 view of host memory ("device memory" under the fake driver).
inline kernel_arg view(const float* p, std::int64_t n) {
  kernel_arg a;
  a.data = p;
  a.type = dtype::f32;
  a.rank = 1;
  a.sizes = {n, 0, 0};
  a.strides = {1, 0, 0};
  return a;
}

/// Installs the fake driver for a scope and clears the state.
class Scope {
public:
  Scope() : driver_(driver()) {
    state() = State();
    runtime::setCudaDriverForTesting(&driver_);
  }
  ~Scope() { runtime::setCudaDriverForTesting(nullptr); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

private:
  runtime::CudaDriver driver_;
};

}  // namespace tessel::testing::fakegpu
