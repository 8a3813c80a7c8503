// expect: elementwise op: fp8 tiles are storage and dot inputs; convert with ts::cast<ts::f32>(x) first
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f8e4m3, 2> X, ts::tensor<ts::f32, 2> Y) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    Y.store({0, 0}, ts::cast<ts::f32>(x * 2.0f));
  }
};
