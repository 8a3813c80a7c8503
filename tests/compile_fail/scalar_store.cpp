// expect: store: the value must be a tile or a tile expression (a scalar or a
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// A scalar has no shape: storing it needs a tile (ts::full, or alpha * a tile).
struct k {
  void operator()(ts::scalar<ts::f32> alpha, ts::tensor<ts::f32, 1> Y) const { Y.store({0}, alpha); }
};
void build() { ts::jit(k{}); }
