//===- Kernel.h - a compiled kernel, its validation and launch -----*- C++ -*-===//
//
// detail::kernel_impl is what tessel::jit hands back to the user (behind a
// shared_ptr): the CompiledKernel plus the CUDA modules it has been loaded
// into, one per context, loaded on first launch there.
//
// Launch contract (detail::launch), in order:
//  1. validateArgs: every rule that needs no GPU (count, rank, dtype, sizes,
//     strides, null pointers, TMA alignment and limits, grid). Each failure
//     is a tessel::error "tessel: kernel 'K' argument I: <rule>".
//  2. The GPU: a context is made current (ensureContext), every non-empty
//     argument must be device memory usable from that context (host memory,
//     pinned or pageable, is rejected), and a user stream must belong to it.
//  3. If any argument has zero elements, nothing is launched and the call
//     returns: a TMA descriptor cannot describe an empty tensor, and doing the
//     same for every schedule keeps results independent of the schedule.
//     Outputs are then left untouched (a GEMM with K == 0 does not zero C).
//     A zero-element argument may have a null data pointer.
//  4. The kernel's module is loaded into the context if needed (architecture
//     and shared-memory limits are checked then), the parameters are built in
//     CompiledKernel::params order (TMA descriptors encoded on the host) and
//     the kernel is launched with cuLaunchKernelEx on the stream, with the
//     cluster shape as a launch attribute. With TESSEL_DEBUG the stream is
//     then synchronised, so that a fault names this kernel.
//
// Nothing here includes cuda.h: code that only compiles kernels can use this
// header without the CUDA toolkit's headers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tessel/Runtime/CompiledKernel.h"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel::detail {

/// A compiled kernel and its per-context CUDA modules. Thread-safe: launches
/// from several threads may share one kernel_impl.
struct kernel_impl {
  /// Checks `k` with runtime::validateCompiledKernel (throws tessel::error).
  explicit kernel_impl(CompiledKernel k);
  /// Unloads the modules (errors ignored: at process exit the driver may
  /// already be shutting down).
  ~kernel_impl();
  kernel_impl(const kernel_impl&) = delete;
  kernel_impl& operator=(const kernel_impl&) = delete;

  const CompiledKernel& compiled() const { return compiled_; }

  /// The kernel's function in context `context` (a CUcontext), loading the
  /// module there on first use. Returns a CUfunction. Throws tessel::error.
  void* functionFor(void* context);

private:
  struct Loaded {
    void* context;   ///< CUcontext
    void* module;    ///< CUmodule
    void* function;  ///< CUfunction
  };
  const CompiledKernel compiled_;
  std::mutex mutex_;
  std::vector<Loaded> loaded_;
};

}  // namespace tessel::detail

namespace tessel::runtime {

/// Wraps a compiled kernel for the DSL (validates it first; no GPU needed).
std::shared_ptr<detail::kernel_impl> makeKernel(CompiledKernel k);

/// Size in bytes of one element of `t` (i1: 1, index: 8).
std::size_t elementSize(dtype t);
/// "f16", "bf16", "f32", "i32", "i1", "index".
const char* dtypeName(dtype t);

/// Checks that a CompiledKernel is self-consistent before it is ever
/// launched: argument ranks 1..3, every parameter refers to an existing
/// argument and dimension, TMA descriptors only for f16/bf16/f32/i32
/// arguments marked loadedByTma, TMA boxes within the hardware rules (each
/// extent 1..256, inner extent × element size a multiple of 16 bytes and, with
/// a swizzle, at most the swizzle span), swizzle 0/32/64/128, blockThreads
/// 1..1024, cluster extents >= 1. Violations are compiler bugs; they throw
/// tessel::error "tessel: internal error: kernel 'K' ...".
void validateCompiledKernel(const CompiledKernel& k);

/// Every argument rule that needs no GPU (see the file comment); throws
/// tessel::error "tessel: kernel 'K' argument I: <rule>" or
/// "tessel: kernel 'K': <grid rule>". Rules, per argument:
///  - the argument count matches; rank and dtype match the signature;
///  - sizes >= 0 and, for TMA-loaded arguments, <= 2^32;
///  - strides >= 1, except for dimensions of size 1, whose stride is never
///    used (so any value is accepted there);
///  - the innermost stride is 1 when the argument is TMA-loaded or when the
///    kernel receives no Stride parameter for its innermost dimension (it then
///    assumes contiguity);
///  - the data pointer is non-null unless the argument has zero elements;
///  - TMA-loaded: base address 16-byte aligned; every outer stride (of a
///    dimension of size > 1) × element size a multiple of 16 bytes and below
///    2^40;
///  - the largest element offset fits in 63 bits.
/// And for the grid: every extent >= 1, x <= 2^31-1, y and z <= 65535, and
/// each extent a multiple of the kernel's cluster extent.
void validateArgs(const CompiledKernel& k, std::span<const tensor_arg> args, grid g);

/// True when some argument has zero elements (then launch does nothing).
bool hasEmptyArg(std::span<const tensor_arg> args);

/// What cuTensorMapEncodeTiled is called with for one TMA parameter, kept
/// free of CUDA types so that it can be tested without a GPU.
struct TmaEncoding {
  dtype type = dtype::f32;
  std::uint32_t rank = 0;
  const void* globalAddress = nullptr;
  std::uint64_t globalDim[3] = {};      ///< innermost first
  std::uint64_t globalStrides[2] = {};  ///< bytes, for dims 1..rank-1
  std::uint32_t boxDim[3] = {};         ///< innermost first
  std::uint32_t elementStrides[3] = {};
  int swizzleBytes = 0;
  /// A store descriptor of an argument that breaks TMA's rules: not encoded,
  /// passed as zeros (the kernel's TmaUsable parameter is 0).
  bool zeroed = false;
};

/// One kernel parameter's value: a 64-bit scalar (Pointer, Size, Stride) or
/// a tensor map to encode.
struct ParamValue {
  ParamSpec::Kind kind = ParamSpec::Kind::Pointer;
  std::uint64_t scalar = 0;
  TmaEncoding tma;
};

/// The parameter values, in CompiledKernel::params order, for validated args.
/// `g` is the user's grid (GridDim parameters of persistent kernels).
std::vector<ParamValue> planParams(const CompiledKernel& k, std::span<const tensor_arg> args, grid g = {});

/// A human-readable description of a TMA encoding (for error messages).
std::string describeTma(const TmaEncoding& e);

}  // namespace tessel::runtime
