// expect: reduction: ts::sum / ts::max / ts::amax reduce a 2-d tile
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0}, 64_c);
    V.reduce_into({0}, ts::amax(x, ts::axis<0>));
  }
};
