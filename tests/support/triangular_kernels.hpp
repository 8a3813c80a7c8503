// triangular_kernels.hpp - a GEMM whose mainloop's trip count depends on the tile, for the JIT
// tests (which schedules take it) and the GPU tests (its numerics).
#pragma once

#include <tessel/tessel.hpp>

namespace tessel_test {
namespace ts = tessel;

/// C = A B^T with A lower-triangular by row blocks: row block m (its BM rows) sums k < m + BM
/// only (a causal / triangular product; reads past K are zeros). Each row tile has its own trip
/// count, so a kernel that ran every tile with one (a persistent CTA's first tile's, or the
/// count of the CTA's launch index where the tile's program ids are rastered) is wrong.
template <int BM_, int BN_, int BK_ = 64>
struct gemm_triangular {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, m + BM, BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

}  // namespace tessel_test
