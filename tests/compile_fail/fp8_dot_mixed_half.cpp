// expect: dot: both operands must have the same dtype (both f16 or both bf16), or both be fp8
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::bf16, 2> B,
                  ts::tensor<ts::f32, 2> C) const {
    auto a = A.load({0, 0}, 64_c, 128_c);
    auto b = B.load({0, 0}, 64_c, 128_c);
    C.store({0, 0}, ts::dot(a, b.T()));
  }
};
