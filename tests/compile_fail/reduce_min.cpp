// expect: min: there is no min reduction (ts::sum, ts::max and ts::amax reduce along an axis)
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.reduce_into({0}, ts::min(x, ts::axis<1>));
  }
};
