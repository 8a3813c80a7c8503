// expect: scalar: a runtime scalar is ts::scalar<ts::f32> or ts::scalar<ts::i32>
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 1> X, ts::scalar<ts::bf16> s) const {
    X.store({0}, X.load({0}, 64_c) * s);
  }
};
void build() { ts::jit(k{}); }
