// gemm_alpha_beta.hpp - C = alpha * (A @ B^T) + beta * C0, with alpha and beta runtime scalars.
//
//   A: M x K bf16, B: N x K bf16, C0: M x N bf16 (read in the epilogue, in its own layout: any
//   strides), C: M x N bf16. alpha and beta are kernel parameters (ts::scalar<ts::f32>): new values
//   at launch, no recompilation (docs/scalars.md).
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct gemm_alpha_beta {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::scalar<ts::f32> alpha,
                  ts::scalar<ts::f32> beta, ts::tensor<ts::bf16, 2> C0, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc * alpha + ts::cast<ts::f32>(C0.load({m, n}, BM, BN)) * beta));
  }
};

}  // namespace examples
