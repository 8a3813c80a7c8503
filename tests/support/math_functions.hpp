// math_functions.hpp - every public DSL math function as a test case: the DSL expression, a
// double-precision reference and the tolerance tessel documents for it (docs/math.md).
//
// Shared by the compile test (tests/unit/jit/MathCompileTest.cpp: every function in an
// elementwise kernel and in a GEMM epilogue of every schedule, down to a cubin, no GPU) and the
// GPU numerics (tests/gpu/math_test.cpp: the same kernels run and compared element by element).
//
// Each case applies `pre` first (the same in the DSL and in the reference) to bring the input
// into the function's domain: log, sqrt and rsqrt see |x| + 1/64.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <tessel/tessel.hpp>

namespace tessel_test {
namespace ts = tessel;

/// Rounds to bf16 (nearest even), as ts::cast<ts::bf16> does.
inline double round_bf16(double v) {
  float f = static_cast<float>(v);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace math_fns {
struct identity_pre {
  template <class E>
  static auto pre(const E& x) { return x; }
  static double pre_ref(double x) { return x; }
};
struct positive_pre {
  template <class E>
  static auto pre(const E& x) { return ts::abs(x) + 0.015625f; }
  static double pre_ref(double x) { return std::fabs(x) + 0.015625; }
};

#define TESSEL_MATH_CASE(NAME, PRE, EXPR, REF, ABS_TOL, REL_TOL)                     \
  struct NAME : PRE {                                                                 \
    static constexpr const char* name = #NAME;                                        \
    static constexpr double abs_tol = ABS_TOL, rel_tol = REL_TOL;                     \
    template <class E>                                                                \
    static auto apply(const E& x) { return EXPR; }                                    \
    static double ref(double x) { return REF; }                                       \
  };
// Tolerances are on an f32 result: |got - ref| <= abs_tol + rel_tol * max(|ref|, |x|).
TESSEL_MATH_CASE(exp, identity_pre, ts::exp(x), std::exp(x), 1e-30, 2e-6)
TESSEL_MATH_CASE(exp2, identity_pre, ts::exp2(x), std::exp2(x), 1e-30, 1e-6)
TESSEL_MATH_CASE(log, positive_pre, ts::log(x), std::log(x), 3e-7, 1e-6)
TESSEL_MATH_CASE(sqrt, positive_pre, ts::sqrt(x), std::sqrt(x), 0, 2e-7)
TESSEL_MATH_CASE(rsqrt, positive_pre, ts::rsqrt(x), 1 / std::sqrt(x), 0, 3e-7)
TESSEL_MATH_CASE(tanh, identity_pre, ts::tanh(x), std::tanh(x), 1e-6, 1e-3)
TESSEL_MATH_CASE(sigmoid, identity_pre, ts::sigmoid(x), 1 / (1 + std::exp(-x)), 1e-7, 2e-6)
TESSEL_MATH_CASE(silu, identity_pre, ts::silu(x), x / (1 + std::exp(-x)), 1e-7, 2e-6)
TESSEL_MATH_CASE(gelu, identity_pre, ts::gelu(x),
                 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), 1e-6,
                 1e-3)
TESSEL_MATH_CASE(erf, identity_pre, ts::erf(x), std::erf(x), 2e-6, 1e-6)
TESSEL_MATH_CASE(gelu_erf, identity_pre, ts::gelu_erf(x), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))),
                 2e-6, 2e-6)
TESSEL_MATH_CASE(abs, identity_pre, ts::abs(x), std::fabs(x), 0, 0)
TESSEL_MATH_CASE(relu, identity_pre, ts::relu(x), x > 0 ? x : 0.0, 0, 0)
TESSEL_MATH_CASE(neg, identity_pre, -x, -x, 0, 0)
TESSEL_MATH_CASE(max, identity_pre, ts::max(x, 0.25f), std::fmax(x, 0.25), 0, 0)
TESSEL_MATH_CASE(min, identity_pre, ts::min(x, -0.25f), std::fmin(x, -0.25), 0, 0)
TESSEL_MATH_CASE(where, identity_pre, ts::where(x > 0.0f, x, x * 0.125f), x > 0 ? x : x * 0.125, 0, 0)
TESSEL_MATH_CASE(cast_bf16, identity_pre, ts::cast<ts::f32>(ts::cast<ts::bf16>(x)), round_bf16(x), 0, 0)
TESSEL_MATH_CASE(cast_i32, identity_pre, ts::cast<ts::f32>(ts::cast<ts::i32>(x * 4.0f)),
                 std::trunc(static_cast<double>(static_cast<float>(x * 4))), 0, 0)
#undef TESSEL_MATH_CASE
}  // namespace math_fns

/// Y = F(pre(X)) on 1-d f32 tensors, 256 elements per program instance.
template <class F>
struct elementwise_math {
  static constexpr auto BLOCK = ts::c<256>;
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * BLOCK;
    Y.store({o}, F::apply(F::pre(X.load({o}, BLOCK))));
  }
};

/// C = bf16(F(pre(A @ B^T / 64))) with 128 x 128 x 64 tiles: the function in a GEMM epilogue.
template <class F>
struct gemm_math {
  static constexpr auto BM = ts::c<128>, BN = ts::c<128>, BK = ts::c<64>;
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * BM, n = ts::program_id(1) * BN;
    auto acc = ts::zeros<ts::f32>(BM, BN);
    for (auto k : ts::range(0, A.size(1), BK))
      acc += ts::dot(A.load({m, k}, BM, BK), B.load({n, k}, BN, BK).T());
    C.store({m, n}, ts::cast<ts::bf16>(F::apply(F::pre(acc * 0.015625f))));
  }
};

/// One math function, type-erased for parameterised tests.
struct math_case {
  std::string name;
  double abs_tol, rel_tol;
  double (*ref)(double);  ///< F(pre(x)) in double
  ts::kernel (*jit_elementwise)(const ts::options&);
  ts::kernel (*jit_gemm)(const ts::options&);
  /// The f32 tolerance for input x and reference value r.
  double tol(double x, double r) const {
    return abs_tol + rel_tol * std::fmax(std::fabs(r), std::fabs(x));
  }
};

template <class F>
math_case make_math_case() {
  return {F::name, F::abs_tol, F::rel_tol, [](double x) { return F::ref(F::pre_ref(x)); },
          [](const ts::options& o) { return ts::jit(elementwise_math<F>{}, o); },
          [](const ts::options& o) { return ts::jit(gemm_math<F>{}, o); }};
}

inline const std::vector<math_case>& math_cases() {
  using namespace math_fns;
  static const std::vector<math_case> cases = {
      make_math_case<exp>(),      make_math_case<exp2>(),     make_math_case<log>(),
      make_math_case<sqrt>(),     make_math_case<rsqrt>(),    make_math_case<tanh>(),
      make_math_case<sigmoid>(),  make_math_case<silu>(),     make_math_case<gelu>(),
      make_math_case<erf>(),      make_math_case<gelu_erf>(), make_math_case<abs>(),
      make_math_case<relu>(),     make_math_case<neg>(),      make_math_case<max>(),
      make_math_case<min>(),      make_math_case<where>(),    make_math_case<cast_bf16>(),
      make_math_case<cast_i32>()};
  return cases;
}

inline const std::vector<ts::schedule>& all_schedules() {
  static const std::vector<ts::schedule> s = {ts::schedule::multistage, ts::schedule::tma,
                                              ts::schedule::warp_specialized, ts::schedule::cooperative,
                                              ts::schedule::pingpong};
  return s;
}

}  // namespace tessel_test
