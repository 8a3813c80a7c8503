// expect: store: a reduction (ts::sum / ts::max / ts::amax) is one program instance's partial
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.store({0}, ts::max(x, ts::axis<1>));
  }
};
