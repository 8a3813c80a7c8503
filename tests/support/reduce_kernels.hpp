// reduce_kernels.hpp - GEMM epilogues with reductions (ts::sum / ts::max / ts::amax stored with
// reduce_into; docs/reductions.md) and with two outputs, shared by the CPU tests (tracing,
// compiling in every schedule) and the GPU numerics (tests/gpu/reduce_test.cpp).
#pragma once

#include <tessel/tessel.hpp>

namespace tessel_test {

namespace ts = tessel;

/// Y = A @ B^T + bias (A: M x K, B: N x K, bias: N, all bf16), stored as bf16 C (M x N), and
/// three f32 reductions of the f32 Y (before the rounding to bf16):
///   rowamax[i] = max_j |Y[i, j]|   (M; start at 0)
///   rowsum[i]  = sum_j Y[i, j]     (M; start at 0)
///   colmax[j]  = max_i Y[i, j]     (N; start at -inf)
template <int BM_, int BN_>
struct gemm_bias_reduce {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 2> C, ts::tensor<ts::f32, 1> rowamax,
                  ts::tensor<ts::f32, 1> rowsum, ts::tensor<ts::f32, 1> colmax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    auto y = acc + ts::cast<ts::f32>(bias.load({n}, BN)).row();
    C.store({m, n}, ts::cast<ts::bf16>(y));
    rowamax.reduce_into({m}, ts::amax(y, ts::axis<1>));
    rowsum.reduce_into({m}, ts::sum(y, ts::axis<1>));
    colmax.reduce_into({n}, ts::max(y, ts::axis<0>));
  }
};

/// The row amax alone (the fp8-scaling epilogue): C = bf16(A @ B^T), amax[i] = max_j |acc|.
template <int BM_, int BN_>
struct gemm_row_amax {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C,
                  ts::tensor<ts::f32, 1> amax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
    amax.reduce_into({m}, ts::amax(acc, ts::axis<1>));
  }
};

/// Two outputs of one epilogue: the pre-activation Z = A @ B^T + bias and the activation
/// Y = gelu(Z), both bf16 (M x N).
template <int BM_, int BN_>
struct gemm_bias_gelu_two_outputs {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 2> Z, ts::tensor<ts::bf16, 2> Y) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    auto z = ts::eval(acc + ts::cast<ts::f32>(bias.load({n}, BN)).row());
    Z.store({m, n}, ts::cast<ts::bf16>(z));
    Y.store({m, n}, ts::cast<ts::bf16>(ts::gelu(z)));
  }
};

/// A reduction in a kernel without a dot: not supported (a tessel::error at ts::jit).
struct elementwise_row_sum {
  static constexpr auto BM = ts::c<64>, BN = ts::c<64>;
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> S) const {
    auto m = ts::program_id(0) * BM;
    S.reduce_into({m}, ts::sum(X.load({m, 0}, BM, BN), ts::axis<1>));
  }
};

/// A kernel without a dot that reduces: per 64 x 128 tile of X (bf16), its rows' sums and amaxes
/// and its columns' maxima, into vectors of M, M and N elements (docs/reductions.md, "Kernels
/// without a dot"). Grid: (cdiv(M, 64), cdiv(N, 128)).
struct elementwise_row_stats {
  static constexpr auto BM = ts::c<64>, BN = ts::c<128>;
  void operator()(ts::tensor<ts::bf16, 2> X, ts::tensor<ts::f32, 1> rowsum, ts::tensor<ts::f32, 1> rowamax,
                  ts::tensor<ts::f32, 1> colmax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto x = ts::cast<ts::f32>(X.load({m, n}, BM, BN));
    rowsum.reduce_into({m}, ts::sum(x, ts::axis<1>));
    rowamax.reduce_into({m}, ts::amax(x, ts::axis<1>));
    colmax.reduce_into({n}, ts::max(x, ts::axis<0>));
  }
};

/// A GEMM whose epilogue reduces another tile than the accumulator (a slip: `x` where `acc` was
/// meant): the mainloop is dead code, a tessel::error at ts::dot (not "a kernel without a dot").
struct gemm_reducing_the_wrong_tile {
  static constexpr auto BM = ts::c<128>, BN = ts::c<128>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::f32, 2> X,
                  ts::tensor<ts::f32, 1> S) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    S.reduce_into({m}, ts::sum(X.load({m, n}, BM, BN), ts::axis<1>));
  }
};

}  // namespace tessel_test
