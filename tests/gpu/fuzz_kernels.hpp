// fuzz_kernels.hpp - what the GEMM fuzzer compiles and launches for a fuzz_case (fuzz_case.hpp):
// examples/02_gemm, 03_gemm_bias_relu and 05_gemm_residual for 2-d problems, their batched forms
// (rank-3 tensors, program_id(2) picks the matrix, one bias or residual for all) otherwise, and the
// views of a case's buffers.
// No CUDA: tests/unit/fuzz compiles every configuration of a pool without a GPU.
#pragma once

#include <tessel/tessel.hpp>

#include <vector>

#include "02_gemm/gemm.hpp"
#include "03_gemm_bias_relu/gemm_bias_relu.hpp"
#include "05_gemm_residual/gemm_residual.hpp"
#include "fuzz_case.hpp"

namespace tessel_fuzz {

template <int BM_, int BN_, int BK_ = 64>
struct batched_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B, ts::tensor<ts::bf16, 3> C) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(acc));
  }
};

template <int BM_, int BN_, int BK_>
struct batched_gemm_bias_relu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 3> C) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(ts::relu(acc + bias.load({n}, BN).row())));
  }
};

template <int BM_, int BN_, int BK_>
struct batched_gemm_residual {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B, ts::tensor<ts::bf16, 2> R,
                  ts::tensor<ts::bf16, 3> C) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(acc + ts::cast<ts::f32>(R.load({m, n}, BM, BN))));
  }
};

/// C = A B^T, amax[i] = max_j |acc[i, j]|, colmax[j] = max_i acc[i, j].
template <int BM_, int BN_, int BK_>
struct gemm_reductions {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C,
                  ts::tensor<ts::f32, 1> amax, ts::tensor<ts::f32, 1> colmax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
    amax.reduce_into({m}, ts::amax(acc, ts::axis<1>));
    colmax.reduce_into({n}, ts::max(acc, ts::axis<0>));
  }
};

/// The batched form: the vectors reduce over every matrix of the batch.
template <int BM_, int BN_, int BK_>
struct batched_gemm_reductions {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 3> A, ts::tensor<ts::bf16, 3> B, ts::tensor<ts::bf16, 3> C,
                  ts::tensor<ts::f32, 1> amax, ts::tensor<ts::f32, 1> colmax) const {
    auto b = ts::program_id(2), m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(2), BK))
      acc += ts::dot(A.load({b, m, k}, BM, BK), B.load({b, n, k}, BN, BK).T());
    C.store({b, m, n}, ts::cast<ts::bf16>(acc));
    amax.reduce_into({m}, ts::amax(acc, ts::axis<1>));
    colmax.reduce_into({n}, ts::max(acc, ts::axis<0>));
  }
};

inline ts::options options_of(const fuzz_config& c) {
  ts::options o;
  o.schedule = c.schedule;
  o.stages = c.stages;
  o.cluster = c.cluster;
  o.swizzle = c.swizzle;
  o.decomposition = c.decomposition;
  return o;
}

template <int BM, int BN, int BK>
ts::kernel jit_tile(const fuzz_config& c) {
  const ts::options o = options_of(c);
  if (c.batched) {
    if (c.residual) return ts::jit(batched_gemm_residual<BM, BN, BK>{}, o);
    if (c.reductions) return ts::jit(batched_gemm_reductions<BM, BN, BK>{}, o);
    return c.bias_relu ? ts::jit(batched_gemm_bias_relu<BM, BN, BK>{}, o) : ts::jit(batched_gemm<BM, BN, BK>{}, o);
  }
  if (c.residual) return ts::jit(examples::gemm_residual<BM, BN, BK>{}, o);
  if (c.reductions) return ts::jit(gemm_reductions<BM, BN, BK>{}, o);
  return c.bias_relu ? ts::jit(examples::gemm_bias_relu<BM, BN, BK>{}, o) : ts::jit(examples::gemm<BM, BN, BK>{}, o);
}

/// The kernel of `c` (throws tessel::error when tessel cannot build it).
inline ts::kernel jit_kernel(const fuzz_config& c) {
  if (c.bm == 128 && c.bn == 128 && c.bk == 64) return jit_tile<128, 128, 64>(c);
  if (c.bm == 128 && c.bn == 256 && c.bk == 64) return jit_tile<128, 256, 64>(c);
  if (c.bm == 128 && c.bn == 128 && c.bk == 32) return jit_tile<128, 128, 32>(c);
  // Fewer than 64 rows: computed transposed (docs/small-m.md).
  if (c.bm == 16 && c.bn == 64 && c.bk == 64) return jit_tile<16, 64, 64>(c);
  if (c.bm == 32 && c.bn == 128 && c.bk == 64) return jit_tile<32, 128, 64>(c);
  if (c.bm == 8 && c.bn == 64 && c.bk == 64) return jit_tile<8, 64, 64>(c);
  throw ts::error("fuzz: tile " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" + std::to_string(c.bk) +
                  " is not instantiated in fuzz_kernels.hpp");
}

inline ts::grid launch_grid(const fuzz_case& c) {
  return ts::grid{unsigned(ts::cdiv(c.m, std::int64_t(c.cfg.bm))), unsigned(ts::cdiv(c.n, std::int64_t(c.cfg.bn))),
                  unsigned(c.batch)};
}

/// The kernel's arguments for the case's buffers: A, B, (bias or R,) C, (amax, colmax,) each
/// pointing at its element 0.
inline std::vector<ts::tensor_arg> launch_args(const fuzz_case& c, const void* A, const void* B, const void* bias,
                                               void* C, const void* R = nullptr, void* amax = nullptr,
                                               void* colmax = nullptr) {
  const fuzz_config& f = c.cfg;
  // Strides of (row, k) for A's M x K view and B's N x K view.
  const std::int64_t ar = f.a_k_major ? c.lda : 1, ak = f.a_k_major ? 1 : c.lda;
  const std::int64_t br = f.b_k_major ? c.ldb : 1, bk = f.b_k_major ? 1 : c.ldb;
  std::vector<ts::tensor_arg> args;
  if (f.batched) {
    args.push_back(ts::view<ts::bf16>(A, {c.batch, c.m, c.k}, {c.batch_a, ar, ak}));
    args.push_back(ts::view<ts::bf16>(B, {c.batch, c.n, c.k}, {c.batch_b, br, bk}));
  } else {
    args.push_back(ts::view<ts::bf16>(A, {c.m, c.k}, {ar, ak}));
    args.push_back(ts::view<ts::bf16>(B, {c.n, c.k}, {br, bk}));
  }
  if (f.bias_relu) args.push_back(ts::view<ts::bf16>(bias, {c.n}));
  if (f.residual)
    args.push_back(c.r_col_major ? ts::view<ts::bf16>(R, {c.m, c.n}, {1, c.ldr})
                                 : ts::view<ts::bf16>(R, {c.m, c.n}, {c.ldr, 1}));
  args.push_back(f.batched ? ts::view<ts::bf16>(C, {c.batch, c.m, c.n}, {c.batch_c, c.ldc, 1})
                           : ts::view<ts::bf16>(C, {c.m, c.n}, {c.ldc, 1}));
  if (f.reductions) {
    args.push_back(ts::view<ts::f32>(amax, {c.m}));
    args.push_back(ts::view<ts::f32>(colmax, {c.n}));
  }
  return args;
}

/// launch_args at fake addresses that keep the alignment of the case's real buffers (cudaMalloc's
/// 256 bytes; C and the reduction vectors 48 bytes into their guarded buffers, C one element
/// further when !c_aligned; R one element past when !r_aligned): for kernel::prepare, which picks
/// and compiles the launch's variant without a GPU.
inline std::vector<ts::tensor_arg> fake_launch_args(const fuzz_case& c) {
  auto fake = [](int buffer, std::int64_t offset) {
    return reinterpret_cast<void*>((std::uintptr_t(0x7f00) + std::uintptr_t(buffer)) << 32 | std::uintptr_t(offset));
  };
  return launch_args(c, fake(0, 0), fake(1, 0), fake(2, 0), fake(3, c.c_aligned ? 48 : 50), fake(4, c.r_aligned ? 0 : 2),
                     fake(5, 48), fake(6, 48));
}

}  // namespace tessel_fuzz
