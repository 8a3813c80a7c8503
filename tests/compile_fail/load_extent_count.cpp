// expect: load: give at most one tile extent per tensor dimension
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 2> Y) const {
    Y.store({0, 0}, X.load({0, 0}, 2_c, 16_c, 16_c));
  }
};
