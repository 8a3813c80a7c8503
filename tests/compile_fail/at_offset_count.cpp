// expect: at: the number of offsets must equal the tensor rank
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 2> S) const {
    X.store({0}, X.load({0}, 64_c) * S.at({0}));
  }
};
void build() { ts::jit(k{}); }
