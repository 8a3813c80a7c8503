// expect: reduction: the result of ts::sum / ts::max / ts::amax can only be stored with reduce_into
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// The same with a Hana constant (whose own operators would otherwise win and fail inside Hana).
struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> V) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    V.reduce_into({0}, ts::amax(x, ts::axis<1>) * 2_c);
  }
};
