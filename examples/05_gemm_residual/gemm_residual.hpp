// gemm_residual.hpp - GEMM with a residual connection: C = A @ B^T + R.
//
//   A: M x K bf16, B: N x K bf16, R: M x N bf16 (the residual, read in the epilogue), C: M x N
//   bf16. The sum is taken in f32 on the accumulator and rounded to bf16 once, when C is stored:
//   no separate pass over C, and R is read where the tile is written.
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct gemm_residual {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> R,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc + ts::cast<ts::f32>(R.load({m, n}, BM, BN))));
  }
};

}  // namespace examples
