// expect: reduce_into: reductions are combined in f32
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::bf16, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.reduce_into({0}, ts::sum(x, ts::axis<1>));
  }
};
