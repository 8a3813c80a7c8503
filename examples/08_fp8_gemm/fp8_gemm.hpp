// fp8_gemm.hpp - the tessel fp8 GEMM tile program of example 08 (also what tests/gpu runs).
//
// One program instance computes one BM x BN tile of C = cast<TC>(scale * A @ B^T):
//   A: M x K fp8 (TA), B: N x K fp8 (TB), both K-contiguous (wgmma reads fp8 only K-major),
//   f32 accumulation, `scale` a runtime f32 (e.g. the product of A's and B's per-tensor
//   quantization scales), C: M x N in TC (bf16, f16, f32, or fp8 for a quantized output).
// BK = 128: 128 bytes of K per stage row, one 128-byte swizzle row (wgmma m64nBNk32).
#pragma once

#include <tessel/tessel.hpp>

namespace examples {
namespace ts = tessel;

template <class TA, class TB, class TC, int BM_, int BN_>
struct fp8_gemm {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<TA, 2> A, ts::tensor<TB, 2> B, ts::tensor<TC, 2> C,
                  ts::scalar<ts::f32> scale) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<TC>(acc * scale));
  }
};

/// Rowwise scaling, the usual fp8 inference recipe (PyTorch's `_scaled_mm` with rowwise scales):
/// one f32 scale per row of A (per token) and one per row of B (per output channel),
/// C = cast<TC>((A @ B^T) * sa[m] * sb[n]), applied in the epilogue on the f32 accumulator.
template <class TC, int BM_, int BN_>
struct fp8_gemm_rowwise {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e4m3, 2> B, ts::tensor<ts::f32, 1> sa,
                  ts::tensor<ts::f32, 1> sb, ts::tensor<TC, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<TC>(acc * sa.load({m}, BM).col() * sb.load({n}, BN).row()));
  }
};

/// Block scaling, DeepSeek-V3's fp8 recipe (DeepGEMM; cuBLASLt's VEC128_32F / BLK128x128_32F
/// scale modes): one f32 scale per row of A and 128-wide block of K (per token and channel
/// group), one per 128 x 128 block of B (per weight block), applied to each k-step's product
/// before it is added (the scaled accumulation, docs/fp8.md):
///   C = cast<TC>(sum over k-blocks kb of (A_kb @ B_kb^T) * (SA[kb][m] * SB[n / 128][kb]))
/// SA is ceil(K / 128) x M (M contiguous), SB ceil(N / 128) x ceil(K / 128). BN divides 128, so
/// that a tile's columns share one block of B; BK = 128 is one block of K per k-step.
/// `RowFactor`: the factor written as one per-row vector, (sa * sb).col(), so each accumulator
/// element takes one fma; false: dot * sa.col() * sb, a multiply and an fma (the GPU tests run
/// both).
template <class TC, int BM_, int BN_, bool RowFactor = true>
struct fp8_gemm_blockwise {
  static_assert(128 % BN_ == 0, "fp8_gemm_blockwise: BN must divide 128 (one block of B per tile)");
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e4m3, 2> B, ts::tensor<ts::f32, 2> SA,
                  ts::tensor<ts::f32, 2> SB, ts::tensor<TC, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto kb = k / BK;
      auto d = ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
      if constexpr (RowFactor)
        acc += d * (SA.load({kb, m}, BM) * SB.at({n / 128, kb})).col();
      else
        acc += d * SA.load({kb, m}, BM).col() * SB.at({n / 128, kb});
    }
    C.store({m, n}, ts::cast<TC>(acc));
  }
};

/// SwiGLU's gate and up projections from fp8 weights as one dual GEMM (two dots sharing the A
/// tile; docs/dual-gemm.md): H = bf16(silu(scale * A W1^T) * (scale * A W3^T)).
template <int BM_, int BN_>
struct fp8_swiglu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<128>;

  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e4m3, 2> W1, ts::tensor<ts::f8e4m3, 2> W3,
                  ts::tensor<ts::bf16, 2> H, ts::scalar<ts::f32> scale) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate * scale) * (up * scale)));
  }
};

/// The elementwise conversions of an fp8 pipeline, one BM x BN tile per program:
/// Q = cast<TQ>(X * qscale) (quantize) and D = cast<f32>(Q) (dequantize what was stored).
template <class TQ, int BM_, int BN_>
struct fp8_roundtrip {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>;

  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<TQ, 2> Q, ts::tensor<ts::f32, 2> D,
                  ts::scalar<ts::f32> qscale) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto q = ts::cast<TQ>(X.load({m, n}, BM, BN) * qscale);
    Q.store({m, n}, q);
    D.store({m, n}, ts::cast<ts::f32>(q));
  }
};

}  // namespace examples
