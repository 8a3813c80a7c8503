//===- TestSupport.h - shared fixtures of the runtime unit tests ---*- C++ -*-===//
//
// A CompiledKernel shaped like a TMA GEMM (no real code: validation and
// parameter planning never look at the PTX), an environment-variable guard,
// and hand-written sm_90a PTX kernels for the ptxas and GPU tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdlib>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "scoped_env.hpp"
#include "tessel/Runtime/CompiledKernel.h"
#include "tessel/kernel/runtime_api.hpp"

namespace tessel::testing {

/// How many fields an aggregate has (it can be brace-initialised from that many values of a
/// type that converts to anything, and not from one more). Guards "serialize every field".
struct AnyField {
  template <class T>
  operator T() const;
};
template <class T, std::size_t... I>
constexpr bool bracedFrom(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyField{})...}; };
}
template <class T, std::size_t N = 0>
constexpr std::size_t fieldCount() {
  if constexpr (bracedFrom<T>(std::make_index_sequence<N + 1>{}))
    return fieldCount<T, N + 1>();
  else
    return N;
}

using ScopedEnv = tessel_test::scoped_env;

/// kernel 'gemm'(A: bf16 MxK via TMA, B: bf16 KxN via TMA, C: f32 MxN by
/// pointer). C gets sizes and its outer stride, but no innermost stride
/// parameter: the kernel assumes C is contiguous along N.
inline CompiledKernel gemmKernel() {
  CompiledKernel k;
  k.name = "gemm";
  k.args = {{dtype::bf16, 2, true}, {dtype::bf16, 2, true}, {dtype::f32, 2, false}};
  ParamSpec a{ParamSpec::Kind::TmaDescriptor, 0, 0, {64, 128, 1}, 128};
  ParamSpec b{ParamSpec::Kind::TmaDescriptor, 1, 0, {64, 64, 1}, 128};
  k.params = {a,
              b,
              {ParamSpec::Kind::Pointer, 2, 0},
              {ParamSpec::Kind::Size, 2, 0},
              {ParamSpec::Kind::Size, 2, 1},
              {ParamSpec::Kind::Stride, 2, 0}};
  k.blockThreads = 128;
  k.dynamicSmemBytes = 96 * 1024;
  k.ptx = "// not assembled in these tests\n";
  k.ptxasLog = "ptxas info    : Used 90 registers\n";
  k.stages = {{"01-tessel.mlir", "tessel ir"},
              {"02-select-schedule.mlir", "scheduled ir"},
              {"03-materialize-tile-scheduler.mlir", "tile scheduler"},
              {"04-insert-async-copies.mlir", "async copies"},
              {"05-warp-specialize.mlir", "roles"},
              {"06-schedule-mma.mlir", "mma schedule"},
              {"07-lower-epilogue.mlir", "epilogue"},
              {"08-allocate-resources.mlir", "resources"},
              {"09-lower-to-nvvm.mlir", "hopper ir"},
              {"10-convert-hopper-to-nvvm.mlir", "nvvm ir"},
              {"11-convert-to-llvm.mlir", "llvm dialect"},
              {"12-kernel.ll", "llvm ir"},
              {"13-kernel.opt.ll", "optimized llvm ir"}};
  return k;
}

/// Fake, 16-byte aligned device addresses (validation never dereferences).
inline const void* fakeAddress(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

/// An n-element vector view with stride `stride`.
inline tensor_arg tensor1d(dtype t, const void* data, std::int64_t n, std::int64_t stride = 1) {
  tensor_arg a;
  a.data = data;
  a.type = t;
  a.rank = 1;
  a.sizes = {n, 0, 0};
  a.strides = {stride, 0, 0};
  return a;
}

/// A rows x cols view with strides {ld, inner} (row-major with leading dimension ld by default).
inline tensor_arg tensor2d(dtype t, const void* data, std::int64_t rows, std::int64_t cols,
                           std::int64_t ld, std::int64_t inner = 1) {
  tensor_arg a;
  a.data = data;
  a.type = t;
  a.rank = 2;
  a.sizes = {rows, cols, 0};
  a.strides = {ld, inner, 0};
  return a;
}

/// The multistage build of gemmKernel() (what the TMA fallback compiles): pointers, sizes and
/// strides for every argument, nothing loaded with TMA.
inline CompiledKernel multistageGemmKernel() {
  CompiledKernel k = gemmKernel();
  k.schedule = "multistage";
  k.params.clear();
  for (int a = 0; a < 3; ++a) {
    k.args[a].loadedByTma = false;
    k.params.push_back({ParamSpec::Kind::Pointer, a, 0});
    for (int d = 0; d < 2; ++d)
      k.params.push_back({ParamSpec::Kind::Size, a, d});
    for (int d = 0; d < 2; ++d)
      k.params.push_back({ParamSpec::Kind::Stride, a, d});
  }
  return k;
}

/// Valid arguments of gemmKernel(): M = 256, N = 128, K = 512.
inline std::vector<tensor_arg> gemmArgs() {
  return {tensor2d(dtype::bf16, fakeAddress(0x7f0000100000), 256, 512, 512),
          tensor2d(dtype::bf16, fakeAddress(0x7f0000200000), 512, 128, 128),
          tensor2d(dtype::f32, fakeAddress(0x7f0000300000), 256, 128, 128)};
}

/// One thread per element: out[i] += 1 for i < n. Params: out (u64), n (u64).
inline const char* kAddOnePtx = R"(.version 8.0
.target sm_90a
.address_size 64

.visible .entry add_one(
    .param .u64 p_out,
    .param .u64 p_n
)
.maxntid 128, 1, 1
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<3>;

    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_n];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r2, 128, %r1;
    cvt.u64.u32 %rd3, %r3;
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    shl.b64 %rd5, %rd3, 2;
    add.s64 %rd4, %rd4, %rd5;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
)";

/// setmaxnreg without .maxnreg/.minnctapersm: ptxas ignores it (C7508).
inline const char* kSetmaxnregPtx = R"(.version 8.0
.target sm_90a
.address_size 64

.visible .entry ws(
    .param .u64 p_out
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 128;
    @%p1 bra PROD;
    setmaxnreg.inc.sync.aligned.u32 232;
    bra DONE;
PROD:
    setmaxnreg.dec.sync.aligned.u32 40;
DONE:
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r1;
    ret;
}
)";

/// Each CTA (bx, by) loads the box {16 (cols), 8 (rows)} at (by*8, bx*16) of
/// an f32 matrix with TMA into dynamic shared memory, then thread t stores
/// element t to out[row*ldo + col] when in bounds; an out-of-bounds element
/// that is not zero (TMA must zero-fill) sets *flag = 1.
/// Params: TMA(in), out, rows, cols, ldo, flag.
inline const char* kTmaCopyPtx = R"(.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 smem[];

.visible .entry tma_copy(
    .param .align 64 .b8 p_desc[128],
    .param .u64 p_out,
    .param .u64 p_rows,
    .param .u64 p_cols,
    .param .u64 p_ldo,
    .param .u64 p_flag
)
.maxntid 128, 1, 1
{
    .reg .pred %p<8>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<24>;
    .reg .f32 %f<4>;

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.y;
    mov.u32 %r4, smem;
    add.u32 %r5, %r4, 1024;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra INIT_DONE;
    mbarrier.init.shared::cta.b64 [%r4], 1;
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
INIT_DONE:
    bar.sync 0;
    @!%p1 bra WAIT;
    mov.u64 %rd1, p_desc;
    cvta.param.u64 %rd2, %rd1;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r4], 512;
    shl.b32 %r6, %r2, 4;
    shl.b32 %r7, %r3, 3;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r6, %r7}], [%r4];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
    @!%p2 bra WAIT;
    shl.b32 %r10, %r1, 2;
    add.u32 %r11, %r5, %r10;
    ld.shared.f32 %f1, [%r11];
    shr.u32 %r8, %r1, 4;
    and.b32 %r9, %r1, 15;
    shl.b32 %r12, %r3, 3;
    add.u32 %r12, %r12, %r8;
    shl.b32 %r13, %r2, 4;
    add.u32 %r13, %r13, %r9;
    cvt.u64.u32 %rd4, %r12;
    cvt.u64.u32 %rd5, %r13;
    ld.param.u64 %rd6, [p_rows];
    ld.param.u64 %rd7, [p_cols];
    setp.ge.u64 %p3, %rd4, %rd6;
    setp.ge.u64 %p4, %rd5, %rd7;
    or.pred %p5, %p3, %p4;
    @%p5 bra OOB;
    ld.param.u64 %rd8, [p_ldo];
    ld.param.u64 %rd9, [p_out];
    mad.lo.u64 %rd10, %rd4, %rd8, %rd5;
    shl.b64 %rd11, %rd10, 2;
    cvta.to.global.u64 %rd12, %rd9;
    add.s64 %rd13, %rd12, %rd11;
    st.global.f32 [%rd13], %f1;
    bra DONE;
OOB:
    setp.eq.f32 %p6, %f1, 0f00000000;
    @%p6 bra DONE;
    ld.param.u64 %rd14, [p_flag];
    cvta.to.global.u64 %rd15, %rd14;
    st.global.u32 [%rd15], 1;
DONE:
    ret;
}
)";

/// Thread 0 of CTA i writes {%cluster_nctarank, %cluster_ctarank} to
/// out[2i], out[2i+1]. Params: out.
inline const char* kClusterInfoPtx = R"(.version 8.0
.target sm_90a
.address_size 64

.visible .entry cluster_info(
    .param .u64 p_out
)
.maxntid 32, 1, 1
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r4, %cluster_ctarank;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 8;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r3;
    st.global.u32 [%rd4+4], %r4;
DONE:
    ret;
}
)";

}  // namespace tessel::testing
