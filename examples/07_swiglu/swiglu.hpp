// swiglu.hpp - the SwiGLU MLP's first half as one dual GEMM, and the two-kernel sequence it replaces.
//
//   A: M x K bf16 (tokens x hidden), W1, W3: N x K bf16 (intermediate x hidden, the gate and up
//   projections), H: M x N bf16.
//
//   swiglu:        H = silu(A @ W1^T) * (A @ W3^T): two ts::dot on one A tile, both accumulators
//                  in one kernel (tessel computes them with one wgmma of N = 2 x BN), so neither
//                  product leaves the registers.
//   silu_gemm:     S = silu(A @ W1^T), stored in bf16        } the best two-kernel sequence: one
//   mul_gemm:      H = S * (A @ W3^T), S read in the epilogue } M x N bf16 round trip between them
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct swiglu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W3,
                  ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);  // one A tile for both dots
      gate += ts::dot(a, W1.load({n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate) * up));
  }
};

template <int BM_, int BN_, int BK_ = 64>
struct silu_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> S) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), W1.load({n, k}, BN, BK).T());
    S.store({m, n}, ts::cast<ts::bf16>(ts::silu(acc)));
  }
};

template <int BM_, int BN_, int BK_ = 64>
struct mul_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W3, ts::tensor<ts::bf16, 2> S,
                  ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), W3.load({n, k}, BN, BK).T());
    H.store({m, n}, ts::cast<ts::bf16>(ts::cast<ts::f32>(S.load({m, n}, BM, BN)) * acc));
  }
};

}  // namespace examples
