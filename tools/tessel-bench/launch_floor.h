// launch_floor.h - tessel-latency's driver floor: the host time of cuLaunchKernelEx alone.
//
// A cached tessel launch is tessel's own checks (comparing the arguments with the recorded
// launch's) plus one cuLaunchKernelEx. To tell the two apart on a GPU machine, this times the
// driver call alone, with no tessel code: a kernel with the parameter list of tessel's persistent
// GEMMs (23 parameters: 20 of 8 bytes and three 128-byte tensor maps, 64-byte aligned; 552 bytes)
// launched with the cooperative 128x256 kernel's shape (128 CTAs of 384 threads, 229440 bytes of
// dynamic shared memory), spinning on the GPU for as long as tessel's kernel ran, so that launches
// queue up behind a busy GPU as they do in the cached-launch measurement; timed the same way
// (median over 15 batches of 100 back-to-back launches). Both ways of passing the parameters:
// an array of pointers to each (what tessel passes) and one packed buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER); and, to see what else the driver's time depends on, the
// older cuLaunchKernel with the same pointers, and cuLaunchKernelEx on an idle GPU (kernels that
// return at once, so that no launch waits behind a busy queue).
#pragma once

#include <string>

#include <cuda_runtime_api.h>

namespace tessel_bench {

struct driver_floor {
  double pointers_us = -1;  ///< per launch, kernelParams (an array of pointers); -1: not measured
  double packed_us = -1;    ///< per launch, one packed buffer (`extra`); -1: not measured
  double legacy_us = -1;    ///< per launch, cuLaunchKernel (not Ex) with the pointers; -1: not measured
  double idle_us = -1;      ///< per launch, cuLaunchKernelEx with the pointers, kernels that do not spin
  std::string note;         ///< why something was not measured ("" when both were)
};

/// Times cuLaunchKernelEx alone on `stream` (see the file comment); each launch keeps the GPU busy
/// for `gpu_us_per_launch` microseconds. Never throws; CUDA failures end up in `note`.
driver_floor time_driver_launch_floor(cudaStream_t stream, double gpu_us_per_launch);

}  // namespace tessel_bench
