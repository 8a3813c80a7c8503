// gemm_row_amax.hpp - GEMM that also reduces each row of its result: C = bf16(A @ B^T) and
// amax[m] = max_n |(A @ B^T)[m, n]| (the per-row amax that fp8 scaling of C needs).
//
//   A: M x K bf16, B: N x K bf16, C: M x N bf16, amax: M f32. The amax is taken on the f32
//   accumulator (before the rounding to bf16), in the epilogue: each program instance reduces its
//   tile's rows in registers and combines them into amax with one atomic max per row and warp
//   (docs/reductions.md). amax is combined into, not overwritten: it must hold 0 before the launch
//   (cudaMemsetAsync(amax, 0, M * 4, stream)); max is exact, so the result is deterministic.
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct gemm_row_amax {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C,
                  ts::tensor<ts::f32, 1> amax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
    amax.reduce_into({m}, ts::amax(acc, ts::axis<1>));  // amax[m + i] = max(amax[m + i], max_j |acc[i, j]|)
  }
};

}  // namespace examples
