// expect: dot: the operands must be f16, bf16, f8e4m3 or f8e5m2 tiles
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> A, ts::tensor<ts::f32, 2> C) const {
    auto a = A.load({0, 0}, 64_c, 64_c);
    C.store({0, 0}, ts::dot(a, a));
  }
};
