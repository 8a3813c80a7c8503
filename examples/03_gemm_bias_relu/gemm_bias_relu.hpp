// gemm_bias_relu.hpp - GEMM with a fused epilogue: C = relu(A @ B^T + bias), or gelu (gemm_bias_gelu),
// optionally times a per-column scale after the activation (gemm_bias_relu_scale, gemm_bias_gelu_scale).
//
//   A: M x K bf16, B: N x K bf16, bias: N bf16 (broadcast along the rows of C), C: M x N bf16,
//   scale: N f32 (one factor per column of C).
// The epilogue (add a broadcast row, relu, cast) is one expression; the compiler applies it to the
// f32 accumulator in registers before the single store, so C is written once.
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <int BM_, int BN_, int BK_ = 64>
struct gemm_bias_relu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::relu(acc + bias.load({n}, BN).row())));
  }
};

/// C = gelu(A @ B^T + bias), gelu in its tanh form (ts::gelu, the form cuBLASLt's GELU_BIAS
/// epilogue computes; ts::gelu_erf is the erf form).
template <int BM_, int BN_, int BK_ = 64>
struct gemm_bias_gelu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::gelu(acc + bias.load({n}, BN).row())));
  }
};

/// C = relu(A @ B^T + bias) * scale: a per-column factor applied after the activation (an output
/// channel's scale, a dequantisation factor), in f32 before the one rounding to bf16.
template <int BM_, int BN_, int BK_ = 64>
struct gemm_bias_relu_scale {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::f32, 1> scale, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::relu(acc + bias.load({n}, BN).row()) * scale.load({n}, BN).row()));
  }
};

/// C = gelu(A @ B^T + bias) * scale (gelu in its tanh form, scale: N f32, one factor per column).
template <int BM_, int BN_, int BK_ = 64>
struct gemm_bias_gelu_scale {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<BK_>;

  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::f32, 1> scale, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::gelu(acc + bias.load({n}, BN).row()) * scale.load({n}, BN).row()));
  }
};

}  // namespace examples
