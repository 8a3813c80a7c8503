// expect: tile assignment: the expression's dtype differs from the tile's dtype
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto acc = ts::zeros<ts::f32>(64_c);
    acc = X.load({0}, 64_c);   // bf16 into an f32 variable
    Y.store({0}, acc);
  }
};
