// expect: masks (comparison results) cannot be used in arithmetic
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X) const {
    auto x = X.load({0}, 64_c);
    X.store({0}, x * ts::cast<ts::f32>((x > 0.0f) + 1));
  }
};
