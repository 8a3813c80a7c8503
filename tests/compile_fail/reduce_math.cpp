// expect: reduction: the result of ts::sum / ts::max / ts::amax can only be stored with reduce_into; apply ts::exp
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// A math function of one program instance's partial: apply it to the tile before reducing.
struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.reduce_into({0}, ts::exp(ts::amax(x, ts::axis<1>)));
  }
};
