// expect: dot: inner dimensions differ: a is MxK, b must be KxN
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::f32, 2> C) const {
    auto a = A.load({0, 0}, 128_c, 64_c);
    auto b = B.load({0, 0}, 32_c, 256_c);   // K is 64 in a, 32 in b
    C.store({0, 0}, ts::dot(a, b));
  }
};
