// expect: exp: math functions on a ts::scalar are not built (docs/scalars.md)
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// Math on a runtime scalar: apply it to the tile expression, or compute the value on the host.
struct k {
  void operator()(ts::tensor<ts::f32, 1> X, ts::scalar<ts::f32> alpha, ts::tensor<ts::f32, 1> Y) const {
    Y.store({0}, X.load({0}, 64_c) * ts::exp(alpha));
  }
};
