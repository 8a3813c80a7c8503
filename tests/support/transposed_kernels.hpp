// transposed_kernels.hpp - a GEMM that stores its accumulator transposed, for the JIT tests (what
// the epilogue builds) and the GPU tests (its numerics).
#pragma once

#include <tessel/tessel.hpp>

namespace tessel_test {
namespace ts = tessel;

/// C^T (N x M) = (A B^T)^T: each BM x BN tile of the product is stored transposed at [n, m]
/// (acc.T()). The epilogue writes each thread's fragment element (r, c) at (c, r).
template <int BM_, int BN_>
struct gemm_store_transposed {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> CT) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    CT.store({n, m}, ts::cast<ts::bf16>(acc.T()));
  }
};

}  // namespace tessel_test
