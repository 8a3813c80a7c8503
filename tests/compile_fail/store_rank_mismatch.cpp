// expect: store: the tile rank must not exceed the tensor rank
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> Y) const {
    Y.store({0}, X.load({0, 0}, 16_c, 16_c));
  }
};
