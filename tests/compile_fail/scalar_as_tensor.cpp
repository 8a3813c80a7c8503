// expect: has no member named 'load'
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// A scalar parameter is a value, not a tensor in memory.
struct k {
  void operator()(ts::scalar<ts::f32> alpha, ts::tensor<ts::f32, 1> Y) const {
    Y.store({0}, alpha.load({0}, 64_c));
  }
};
void build() { ts::jit(k{}); }
