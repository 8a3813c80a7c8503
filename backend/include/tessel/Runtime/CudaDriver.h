//===- CudaDriver.h - the CUDA driver API, loaded on first use -----*- C++ -*-===//
//
// tessel talks to the GPU through the driver API only, and never links libcuda:
// the library is dlopen'ed ("libcuda.so.1") the first time something needs a
// GPU, so that compiling kernels (and CI, which has no GPU) works on machines
// without a driver. Every entry point is resolved with cuGetProcAddress at an
// explicit ABI version (the PFN_<name>_v<version> typedefs of cudaTypedefs.h):
// several entry points changed signature between CUDA 12 and 13 (for example
// cuCtxSynchronize and cuCtxGetDevice), and pinning the version keeps the
// function pointers in step with the prototypes we call them through, whatever
// the installed driver.
//
// Failures of driver calls become tessel::error carrying the CUDA error name,
// the operation and the kernel name (DESIGN.md §7).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>
#include <string_view>

namespace tessel::runtime {

/// Entry points that must exist (name, ABI version). The versions are the
/// oldest ones whose prototype matches what the runtime calls.
#define TESSEL_CUDA_REQUIRED_FUNCS(X)                                           \
  X(cuInit, 2000)                                                              \
  X(cuDriverGetVersion, 2020)                                                  \
  X(cuGetErrorName, 6000)                                                      \
  X(cuGetErrorString, 6000)                                                    \
  X(cuDeviceGet, 2000)                                                         \
  X(cuDeviceGetCount, 2000)                                                    \
  X(cuDeviceGetName, 2000)                                                     \
  X(cuDeviceGetAttribute, 2000)                                                \
  X(cuDevicePrimaryCtxRetain, 7000)                                            \
  X(cuCtxGetCurrent, 4000)                                                     \
  X(cuCtxSetCurrent, 4000)                                                     \
  X(cuCtxGetDevice, 2000)                                                      \
  X(cuCtxSynchronize, 2000)                                                    \
  X(cuStreamGetCtx, 9020)                                                      \
  X(cuStreamSynchronize, 2000)                                                 \
  X(cuModuleLoadData, 2000)                                                    \
  X(cuModuleLoadDataEx, 2010)                                                  \
  X(cuModuleUnload, 2000)                                                      \
  X(cuModuleGetFunction, 2000)                                                 \
  X(cuFuncGetAttribute, 2020)                                                  \
  X(cuFuncSetAttribute, 9000)                                                  \
  X(cuLaunchKernelEx, 11060)                                                   \
  X(cuTensorMapEncodeTiled, 12000)                                             \
  X(cuPointerGetAttribute, 4000)                                               \
  X(cuPointerGetAttributes, 7000)                                              \
  X(cuMemAlloc, 3020)                                                          \
  X(cuMemFree, 3020)                                                           \
  X(cuMemAllocHost, 3020)                                                      \
  X(cuMemFreeHost, 2000)                                                       \
  X(cuMemcpyHtoD, 3020)                                                        \
  X(cuMemcpyDtoH, 3020)                                                        \
  X(cuMemsetD8, 3020)

/// Entry points used when the driver has them (nullptr otherwise). The event,
/// host-function, capture and async-copy ones are ts::autotune's (Tuner.cpp),
/// which says which one is missing if it needs it.
#define TESSEL_CUDA_OPTIONAL_FUNCS(X)                                           \
  X(cuFuncGetParamInfo, 12040)                                                 \
  X(cuOccupancyMaxActiveClusters, 11070)                                       \
  X(cuEventCreate, 2000)                                                       \
  X(cuEventDestroy, 4000)                                                      \
  X(cuEventRecord, 2000)                                                       \
  X(cuEventSynchronize, 2000)                                                  \
  X(cuEventElapsedTime, 12080)                                                 \
  X(cuLaunchHostFunc, 10000)                                                   \
  X(cuStreamIsCapturing, 10000)                                                \
  X(cuMemcpyDtoDAsync, 3020)

/// The resolved driver. Immutable once cudaDriver() has returned it.
///
/// Note: some member names are macros in cuda.h (cuMemAlloc -> cuMemAlloc_v2);
/// the member is declared and used through the same macro, so that is harmless.
struct CudaDriver {
#define TESSEL_CUDA_MEMBER(name, version) PFN_##name##_v##version name = nullptr;
  TESSEL_CUDA_REQUIRED_FUNCS(TESSEL_CUDA_MEMBER)
  TESSEL_CUDA_OPTIONAL_FUNCS(TESSEL_CUDA_MEMBER)
#undef TESSEL_CUDA_MEMBER
  int driverVersion = 0;  ///< e.g. 13000 for CUDA 13.0
  int deviceCount = 0;    ///< >= 1
};

/// Loads libcuda, resolves the entry points, runs cuInit(0) and counts the
/// devices, once per process (thread-safe). Returns nullptr when the GPU is
/// unusable, with the reason in *why (e.g. "libcuda.so.1 not found: ...",
/// "cuInit failed: CUDA_ERROR_NO_DEVICE ..."); the outcome is remembered.
const CudaDriver* cudaDriver(std::string* why = nullptr);

/// Tests only: makes cudaDriver() return `fake` (a table of stub functions, so that the launch
/// path runs without a GPU: tests/unit/runtime/CachedLaunchTest.cpp), or the real outcome again
/// with nullptr. Not thread-safe against concurrent driver use.
void setCudaDriverForTesting(const CudaDriver* fake);

/// As cudaDriver(), but throws tessel::error "tessel: <what>: no GPU: <why>"
/// when the GPU is unusable.
const CudaDriver& requireCudaDriver(std::string_view what);

/// "CUDA_ERROR_INVALID_VALUE (invalid argument)"; works before cuInit and
/// without a driver (then only the number is known).
std::string cudaErrorText(CUresult r);

/// True for the errors after which the CUDA context is corrupt and every
/// later call fails (illegal address, trap, launch failure ...).
bool isStickyCudaError(CUresult r);

/// Throws tessel::error "tessel: kernel 'K': OP failed: CUDA_ERROR_X (text)
/// [DETAIL]" (the kernel part only when `kernel` is non-empty). Sticky errors
/// say that the context is unusable and the process must restart.
[[noreturn]] void throwCudaError(CUresult r, std::string_view op,
                                 std::string_view kernel = {},
                                 std::string_view detail = {});

/// Remembers the first sticky fault of the process (throwCudaError calls it):
/// after one, every later launch fails fast with that message instead of
/// reaching the driver with a dead context. One record for the process: tessel
/// launches into one context per device, and a fault of one is reported
/// honestly as the reason for refusing the others.
void recordStickyFault(const std::string& message);

/// Throws "kernel 'K' not launched: the CUDA context is unusable since an
/// earlier fault (<first message>)" after a recorded sticky fault.
void throwIfContextFaulted(std::string_view kernel);
/// True once recordStickyFault was called (an atomic load: the cached launch path asks per launch).
bool contextFaulted() noexcept;

/// Checks a driver call's result; see throwCudaError.
inline void checkCuda(CUresult r, std::string_view op, std::string_view kernel = {},
                      std::string_view detail = {}) {
  if (r != CUDA_SUCCESS)
    throwCudaError(r, op, kernel, detail);
}

/// Returns the context that work of this thread goes to, making one current
/// if none is: the context current on the thread if any; else the context of
/// `stream` (when it is a real stream, not the null/legacy/per-thread one);
/// else the primary context of device 0 (retained once, never released, as
/// the CUDA runtime does). Throws tessel::error (no GPU, driver failures).
CUcontext ensureContext(CUstream stream = nullptr, std::string_view kernel = {});

/// Properties of the device of the current context that the runtime checks.
struct DeviceInfo {
  CUdevice device = 0;
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int smemPerBlockOptin = 0;  ///< CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  int smCount = 0;
};

/// Info about the device of the current context (call ensureContext first).
DeviceInfo currentDeviceInfo(std::string_view kernel = {});

}  // namespace tessel::runtime
