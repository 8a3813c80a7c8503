// scalar_kernels.hpp - kernels with runtime scalar parameters (ts::scalar<ts::f32>,
// ts::scalar<ts::i32>; docs/scalars.md), shared by the CPU tests (tracing, compiling in every
// schedule, launch-time errors) and the GPU numerics (tests/gpu/scalar_test.cpp).
#pragma once

#include <tessel/tessel.hpp>

namespace tessel_test {

namespace ts = tessel;

/// C = bf16(alpha * (A @ B^T) + beta * D): the BLAS epilogue with runtime alpha and beta.
/// A: M x K, B: N x K, D and C: M x N, all bf16.
template <int BM_, int BN_>
struct gemm_alpha_beta {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::scalar<ts::f32> alpha,
                  ts::scalar<ts::f32> beta, ts::tensor<ts::bf16, 2> D, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc * alpha + ts::cast<ts::f32>(D.load({m, n}, BM, BN)) * beta));
  }
};

/// Y[i] = max(X[i + shift] * (alpha + 1), f32(shift)) for i in Y (X read as 0 outside X): an
/// elementwise kernel using an f32 scalar in scalar arithmetic and in a tile expression, and an
/// i32 scalar as an index offset and as a tile operand.
struct scale_shift {
  void operator()(ts::tensor<ts::f32, 1> X, ts::scalar<ts::f32> alpha, ts::scalar<ts::i32> shift,
                  ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * ts::c<1024>;
    ts::index src = o + shift;
    auto factor = alpha + 1.0f;
    Y.store({o}, ts::max(X.load({src}, ts::c<1024>) * factor, ts::cast<ts::f32>(shift)));
  }
};

}  // namespace tessel_test
