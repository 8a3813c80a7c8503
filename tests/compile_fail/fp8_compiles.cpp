// expect-compiles
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// The fp8 forms that must compile: a GEMM of e4m3 x e5m2 operands with an f32 epilogue that
// quantizes its output to e4m3, and an elementwise dequantization.
struct gemm {
  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e5m2, 2> B,
                  ts::tensor<ts::f8e4m3, 2> C, ts::scalar<ts::f32> scale) const {
    auto m = ts::program_id(0) * 128_c;
    auto n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0_c, A.size(1), 128_c))
      acc += ts::dot(A.load({m, k}, 128_c, 128_c), B.load({n, k}, 128_c, 128_c).T());
    C.store({m, n}, ts::cast<ts::f8e4m3>(acc * scale));
  }
};
struct dequant {
  void operator()(ts::tensor<ts::f8e5m2, 2> X, ts::tensor<ts::bf16, 2> Y) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    Y.store({0, 0}, ts::cast<ts::bf16>(ts::cast<ts::f32>(x) * 0.5f));
  }
};
