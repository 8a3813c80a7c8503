// expect: at: only elements of ts::f32 and ts::i32 tensors can be read as scalars
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 1> X, ts::tensor<ts::bf16, 1> S) const {
    X.store({0}, X.load({0}, 64_c) * S.at({0}));
  }
};
void build() { ts::jit(k{}); }
