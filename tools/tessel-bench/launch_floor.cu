// launch_floor.cu - see launch_floor.h.
#include "launch_floor.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace tessel_bench {
namespace {

using u64 = unsigned long long;

/// The bytes of a CUtensorMap as a kernel parameter (`.param .align 64 .b8 [128]`).
struct alignas(64) tensor_map_bytes {
  unsigned char bytes[128];
};

/// The parameter list of tessel's persistent GEMM (tessel.params of examples::gemm<128, 256, 64>:
/// pointer, sizes and strides of A, B, C; three descriptors; TmaUsable; the grid; the workspace).
/// Thread 0 of each CTA spins for `spin_ns` (the first parameter, A's pointer in tessel's kernel).
__global__ void launch_floor_kernel(u64 spin_ns, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64,
                                    u64, tensor_map_bytes, tensor_map_bytes, tensor_map_bytes, u64, u64, u64, u64,
                                    u64) {
  if (threadIdx.x != 0 || spin_ns == 0) return;
  u64 t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < spin_ns);
}

constexpr int kParams = 23;
constexpr unsigned kSharedBytes = 229440;  // the cooperative 128x256 kernel's dynamic shared memory

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

void* entry_point(const char* name, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return fn;
}

}  // namespace

driver_floor time_driver_launch_floor(cudaStream_t stream, double gpu_us_per_launch) {
  driver_floor r;
  auto launch = reinterpret_cast<PFN_cuLaunchKernelEx_v11060>(entry_point("cuLaunchKernelEx", 11060));
  if (!launch) {
    r.note = "cuLaunchKernelEx not found";
    return r;
  }
  const void* symbol = reinterpret_cast<const void*>(&launch_floor_kernel);
  cudaFunction_t fn = nullptr;
  if (cudaError_t e = cudaFuncSetAttribute(symbol, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
      e != cudaSuccess) {
    r.note = std::string("cudaFuncSetAttribute: ") + cudaGetErrorName(e);
    return r;
  }
  if (cudaError_t e = cudaGetFuncBySymbol(&fn, symbol); e != cudaSuccess) {
    r.note = std::string("cudaGetFuncBySymbol: ") + cudaGetErrorName(e);
    return r;
  }

  // The values: only the spin matters (90% of tessel's kernel time: the launch gaps make the rest).
  u64 scalars[kParams - 3] = {};
  scalars[0] = static_cast<u64>(std::max(0.0, gpu_us_per_launch) * 900.0);
  for (int i = 1; i < kParams - 3; ++i) scalars[i] = 1024;
  tensor_map_bytes maps[3] = {};
  void* pointers[kParams];
  for (int i = 0; i < 15; ++i) pointers[i] = &scalars[i];
  for (int i = 0; i < 3; ++i) pointers[15 + i] = &maps[i];
  for (int i = 0; i < 5; ++i) pointers[18 + i] = &scalars[15 + i];

  // The same bytes packed at the offsets the driver reports (cuFuncGetParamInfo, CUDA 12.4).
  alignas(64) unsigned char packed[1024] = {};
  std::size_t packed_size = 0;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                   CU_LAUNCH_PARAM_END};
  bool have_packed = false;
  if (auto info = reinterpret_cast<PFN_cuFuncGetParamInfo_v12040>(entry_point("cuFuncGetParamInfo", 12040))) {
    have_packed = true;
    for (int i = 0; i < kParams && have_packed; ++i) {
      std::size_t offset = 0, size = 0;
      have_packed = info(fn, i, &offset, &size) == CUDA_SUCCESS && offset + size <= sizeof packed;
      if (have_packed) {
        std::memcpy(packed + offset, pointers[i], size);
        packed_size = std::max(packed_size, offset + size);
      }
    }
    if (!have_packed) r.note = "cuFuncGetParamInfo failed: packed buffer not measured";
  } else {
    r.note = "no cuFuncGetParamInfo (driver older than CUDA 12.4): packed buffer not measured";
  }

  CUlaunchConfig config{};
  config.gridDimX = 128;  // the persistent grid of the 1024^3 cooperative 128x256 launch (stream-K)
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 384;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = kSharedBytes;
  config.hStream = reinterpret_cast<CUstream>(stream);

  // Batches of 100 back-to-back launches, as tessel-latency times the cached launch; the two
  // ways alternate batch by batch, so that drift (clocks, other load) affects both alike.
  constexpr int kWarmup = 20, kBatches = 15, kPerBatch = 100;
  auto error_name = [](CUresult e) {
    const char* name = nullptr;
    if (auto get_name = reinterpret_cast<PFN_cuGetErrorName_v6000>(entry_point("cuGetErrorName", 6000)))
      get_name(e, &name);
    return name ? std::string(name) : std::to_string(int(e));
  };
  auto legacy = reinterpret_cast<PFN_cuLaunchKernel_v4000>(entry_point("cuLaunchKernel", 4000));
  // Per launch in microseconds, or -1 after a failed launch (its error in `note`).
  auto batch = [&](void** params, void** ex, int n, const char* what, bool old_api = false) -> double {
    CUresult failed = CUDA_SUCCESS;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n && failed == CUDA_SUCCESS; ++i)
      failed = old_api ? legacy(fn, config.gridDimX, 1, 1, config.blockDimX, 1, 1, config.sharedMemBytes,
                                config.hStream, params, ex)
                       : launch(&config, fn, params, ex);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    cudaStreamSynchronize(stream);
    if (failed == CUDA_SUCCESS) return us;
    r.note = std::string("cuLaunchKernelEx (") + what + ") failed: " + error_name(failed);
    return -1;
  };
  if (batch(pointers, nullptr, kWarmup, "parameter pointers") < 0) return r;
  if (have_packed && batch(nullptr, extra, kWarmup, "packed buffer") < 0) have_packed = false;
  std::vector<double> by_pointers, by_buffer;
  for (int b = 0; b < kBatches; ++b) {
    const double us = batch(pointers, nullptr, kPerBatch, "parameter pointers");
    if (us < 0) return r;
    by_pointers.push_back(us);
    if (have_packed) {
      const double packed_us = batch(nullptr, extra, kPerBatch, "packed buffer");
      have_packed = packed_us >= 0;
      by_buffer.push_back(packed_us);
    }
  }
  r.pointers_us = median(by_pointers);
  if (have_packed) r.packed_us = median(by_buffer);
  // cuLaunchKernel, then cuLaunchKernelEx with kernels that return at once (idle GPU).
  if (legacy && batch(pointers, nullptr, kWarmup, "cuLaunchKernel", true) >= 0) {
    std::vector<double> v;
    for (int b = 0; b < kBatches; ++b) v.push_back(batch(pointers, nullptr, kPerBatch, "cuLaunchKernel", true));
    if (*std::min_element(v.begin(), v.end()) >= 0) r.legacy_us = median(v);
  }
  const u64 spin = scalars[0];
  scalars[0] = 0;
  if (batch(pointers, nullptr, kWarmup, "idle") >= 0) {
    std::vector<double> v;
    for (int b = 0; b < kBatches; ++b) v.push_back(batch(pointers, nullptr, kPerBatch, "idle"));
    if (*std::min_element(v.begin(), v.end()) >= 0) r.idle_us = median(v);
  }
  scalars[0] = spin;
  return r;
}

}  // namespace tessel_bench
