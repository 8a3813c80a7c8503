//===- CudaDriver.cpp - dlopen'ed CUDA driver API -------------------------===//
//
// Loading is lazy and happens at most once: a function-local state guarded by
// std::call_once, never a static initialiser, so that merely linking
// libtessel.so into a process without a GPU costs nothing and cannot fail.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/CudaDriver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <vector>

#include "tessel/kernel/runtime_api.hpp"

namespace tessel::runtime {
namespace {

struct DriverState {
  CudaDriver driver;
  bool usable = false;
  std::string why;  ///< set when !usable
};

/// Error text from a possibly half-initialised driver table (used while
/// loading, when cudaDriver() cannot be re-entered).
std::string errorText(const CudaDriver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(static_cast<int>(r));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

void load(DriverState& s) {
  dlerror();
  // RTLD_LOCAL: the driver's symbols must not interpose on anything else.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    s.why = std::string("libcuda.so.1 not found: ") + (err ? err : "dlopen failed") +
            " (install the NVIDIA driver or add its directory to LD_LIBRARY_PATH)";
    return;
  }
  // The handle is deliberately never closed: function pointers and modules
  // outlive any owner we could give it.
  auto getProc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!getProc) {
    s.why = "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 "
            "(tessel needs a driver for CUDA 12.0 or newer)";
    return;
  }

  CudaDriver& d = s.driver;
  std::vector<std::string> missing;
  auto resolve = [&](const char* name, int version, void** slot, bool required) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = getProc(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !*slot) {
      *slot = nullptr;
      if (required)
        missing.push_back(std::string(name) + " (v" + std::to_string(version) + ")");
    }
  };
#define TESSEL_RESOLVE_REQUIRED(name, version) \
  resolve(#name, version, reinterpret_cast<void**>(&d.name), true);
#define TESSEL_RESOLVE_OPTIONAL(name, version) \
  resolve(#name, version, reinterpret_cast<void**>(&d.name), false);
  TESSEL_CUDA_REQUIRED_FUNCS(TESSEL_RESOLVE_REQUIRED)
  TESSEL_CUDA_OPTIONAL_FUNCS(TESSEL_RESOLVE_OPTIONAL)
#undef TESSEL_RESOLVE_REQUIRED
#undef TESSEL_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing)
      list += (list.empty() ? "" : ", ") + m;
    s.why = "the CUDA driver lacks entry points tessel needs (driver too old?): " + list;
    return;
  }

  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    s.why = "cuInit failed: " + errorText(d, r);
    return;
  }
  if (CUresult r = d.cuDriverGetVersion(&d.driverVersion); r != CUDA_SUCCESS) {
    s.why = "cuDriverGetVersion failed: " + errorText(d, r);
    return;
  }
  if (CUresult r = d.cuDeviceGetCount(&d.deviceCount); r != CUDA_SUCCESS) {
    s.why = "cuDeviceGetCount failed: " + errorText(d, r);
    return;
  }
  if (d.deviceCount < 1) {
    s.why = "no CUDA device found (the driver loaded, but cuDeviceGetCount returned 0)";
    return;
  }
  s.usable = true;
}

DriverState& state() {
  static DriverState s;
  static std::once_flag once;
  std::call_once(once, [] { load(s); });
  return s;
}

}  // namespace

namespace {
const CudaDriver* testDriver = nullptr;
}  // namespace

void setCudaDriverForTesting(const CudaDriver* fake) { testDriver = fake; }

const CudaDriver* cudaDriver(std::string* why) {
  if (testDriver)
    return testDriver;
  DriverState& s = state();
  if (!s.usable) {
    if (why)
      *why = s.why;
    return nullptr;
  }
  return &s.driver;
}

const CudaDriver& requireCudaDriver(std::string_view what) {
  std::string why;
  if (const CudaDriver* d = cudaDriver(&why))
    return *d;
  throw tessel::error("tessel: " + std::string(what) + ": no GPU: " + why);
}

std::string cudaErrorText(CUresult r) {
  // Only the name table is needed, which exists as soon as the library
  // loaded, even if cuInit then failed.
  return errorText(state().driver, r);
}

bool isStickyCudaError(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return true;
  default:
    return false;
  }
}

void throwCudaError(CUresult r, std::string_view op, std::string_view kernel,
                    std::string_view detail) {
  std::string msg = "tessel: ";
  if (!kernel.empty())
    msg += "kernel '" + std::string(kernel) + "': ";
  msg += std::string(op) + " failed: " + cudaErrorText(r);
  if (!detail.empty())
    msg += " [" + std::string(detail) + "]";
  if (isStickyCudaError(r)) {
    msg += "; this error is sticky: the CUDA context is now unusable and the process must "
           "restart (the fault may come from an earlier asynchronous launch; rerun with "
           "TESSEL_DEBUG=1 to synchronize after every launch)";
    recordStickyFault(msg);
  }
  throw tessel::error(msg);
}

namespace {
std::mutex stickyMutex;
std::atomic<bool> faultSeen{false};
std::string& stickyFault() {
  static std::string first;
  return first;
}
}  // namespace

void recordStickyFault(const std::string& message) {
  std::lock_guard<std::mutex> lock(stickyMutex);
  if (stickyFault().empty())
    stickyFault() = message;
  faultSeen.store(true, std::memory_order_release);
}

bool contextFaulted() noexcept { return faultSeen.load(std::memory_order_acquire); }

void throwIfContextFaulted(std::string_view kernel) {
  if (!contextFaulted())
    return;  // the common case, without the mutex
  std::string first;
  {
    std::lock_guard<std::mutex> lock(stickyMutex);
    first = stickyFault();
  }
  if (!first.empty())
    throw tessel::error("tessel: kernel '" + std::string(kernel) +
                        "' not launched: the CUDA context is unusable since an earlier fault (" + first + ")");
}

CUcontext ensureContext(CUstream stream, std::string_view kernel) {
  // The message is built only when there is no GPU: every launch that is not a cached one comes
  // here.
  const CudaDriver* driver = cudaDriver();
  if (!driver)
    driver = &requireCudaDriver(kernel.empty() ? std::string("cannot use the GPU")
                                               : "cannot launch kernel '" + std::string(kernel) + "'");
  const CudaDriver& d = *driver;
  CUcontext ctx = nullptr;
  checkCuda(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent", kernel);
  if (ctx)
    return ctx;

  // A stream belongs to one context; launching into it from a thread with no
  // current context means that context.
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD) {
    checkCuda(d.cuStreamGetCtx(stream, &ctx), "cuStreamGetCtx", kernel);
    if (ctx) {
      checkCuda(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", kernel);
      return ctx;
    }
  }

  static std::mutex mu;
  static CUcontext primary = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!primary) {
      CUdevice dev = 0;
      checkCuda(d.cuDeviceGet(&dev, 0), "cuDeviceGet(0)", kernel);
      // Retained for the life of the process, like the CUDA runtime does: a
      // release would destroy modules that cached kernels still point to.
      checkCuda(d.cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain", kernel);
    }
    ctx = primary;
  }
  checkCuda(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", kernel);
  return ctx;
}

DeviceInfo currentDeviceInfo(std::string_view kernel) {
  const CudaDriver& d = requireCudaDriver("cannot query the GPU");
  DeviceInfo info;
  checkCuda(d.cuCtxGetDevice(&info.device), "cuCtxGetDevice", kernel);
  info.ordinal = static_cast<int>(info.device);
  char name[256] = {};
  checkCuda(d.cuDeviceGetName(name, sizeof(name) - 1, info.device), "cuDeviceGetName", kernel);
  info.name = name;
  auto attr = [&](CUdevice_attribute a, const char* what) {
    int v = 0;
    checkCuda(d.cuDeviceGetAttribute(&v, a, info.device), std::string("cuDeviceGetAttribute(") + what + ")",
              kernel);
    return v;
  };
  info.ccMajor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR");
  info.ccMinor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR");
  info.smemPerBlockOptin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  info.smCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT");
  return info;
}

}  // namespace tessel::runtime

namespace tessel::detail {

bool gpu_available(std::string* why) { return runtime::cudaDriver(why) != nullptr; }

}  // namespace tessel::detail
