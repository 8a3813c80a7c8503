// gemm.hpp - the tessel GEMM tile program of example 02 (also what tessel-bench and tests/gpu run).
//
// One program instance computes one BM x BN tile of C = A @ B^T:
//   A: M x K bf16, B: N x K bf16 (both K-contiguous), C: M x N bf16, f32 accumulation.
// The same body compiles under every schedule (tma, warp_specialized, cooperative, ...).
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

}  // namespace examples
