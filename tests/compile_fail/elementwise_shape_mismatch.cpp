// expect: elementwise op: operand shapes differ
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 2> Y) const {
    auto a = X.load({0, 0}, 64_c, 64_c);
    auto b = X.load({0, 0}, 64_c, 32_c);
    Y.store({0, 0}, a + b);
  }
};
