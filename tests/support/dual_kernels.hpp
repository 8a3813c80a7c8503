// dual_kernels.hpp - dual GEMMs (two ts::dot sharing the A tile: SwiGLU / GeGLU gate + up),
// shared by the CPU tests (tracing, compiling every schedule, the errors) and the GPU numerics
// (tests/gpu/dual_test.cpp).
#pragma once

#include <tessel/tessel.hpp>

namespace tessel_test {

namespace ts = tessel;

/// SwiGLU: H = bf16(silu(A @ W1^T) * (A @ W3^T)); A: M x K, W1, W3: N x K (K-major), H: M x N.
template <int BM_, int BN_>
struct swiglu {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W3,
                  ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate) * up));
  }
};

/// SwiGLU plus a residual: H = bf16(silu(A @ W1^T) * (A @ W3^T) + R), R an M x N bf16 epilogue
/// operand. In the warp-specialized schedules R goes through shared memory: whole tiles where
/// they fit beside the ring, else chunk by chunk through the staging buffers (tessel-lower-
/// epilogue rules 6 and 7; a dual GEMM's ring is 1.5x a single one's, so 128 x 128 is chunked).
template <int BM_, int BN_>
struct swiglu_residual {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W3,
                  ts::tensor<ts::bf16, 2> R, ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate) * up + ts::cast<ts::f32>(R.load({m, n}, BM, BN))));
  }
};

/// Every output a dual GEMM's epilogue can give: G = gate and U = up in f32 (M x N), H =
/// bf16(silu(G) * U), and rowamax[i] = max_j |silu(G) * U| (f32, M; starts at 0).
template <int BM_, int BN_>
struct dual_outputs {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W3,
                  ts::tensor<ts::f32, 2> G, ts::tensor<ts::f32, 2> U, ts::tensor<ts::bf16, 2> H,
                  ts::tensor<ts::f32, 1> rowamax) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({n, k}, BN, BK).T());
      up += ts::dot(a, W3.load({n, k}, BN, BK).T());
    }
    G.store({m, n}, gate);
    U.store({m, n}, up);
    auto h = ts::silu(gate) * up;
    H.store({m, n}, ts::cast<ts::bf16>(h));
    rowamax.reduce_into({m}, ts::amax(h, ts::axis<1>));
  }
};

/// SwiGLU with N-major weights: W1, W3 are K x N (unit stride along N), loaded BK x BN.
template <int BM_, int BN_>
struct swiglu_n_major {
  static constexpr auto BM = ts::c<BM_>, BN = ts::c<BN_>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> W1, ts::tensor<ts::bf16, 2> W3,
                  ts::tensor<ts::bf16, 2> H) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto gate = ts::zeros<ts::f32>(BM, BN);
    auto up = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK)) {
      auto a = A.load({m, k}, BM, BK);
      gate += ts::dot(a, W1.load({k, n}, BK, BN));
      up += ts::dot(a, W3.load({k, n}, BK, BN));
    }
    H.store({m, n}, ts::cast<ts::bf16>(ts::silu(gate) * up));
  }
};

}  // namespace tessel_test
