// expect: reduction: needs a floating-point tile
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::i32, 2> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.reduce_into({0}, ts::max(x, ts::axis<1>));
  }
};
