// expect: max: the two scalars have different dtypes; use ts::cast<ts::f32>(s)
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::scalar<ts::f32> alpha, ts::scalar<ts::i32> n, ts::tensor<ts::f32, 1> Y) const {
    Y.store({0}, ts::zeros<ts::f32>(64_c) * ts::max(alpha, n));
  }
};
void build() { ts::jit(k{}); }
