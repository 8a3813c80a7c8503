// expect: compound assignment: the result dtype differs from the tile's dtype
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// An f32 scalar promotes a bf16 tile to f32 (alpha is not rounded to bf16): x *= alpha cannot
// stay bf16; write x = ts::cast<ts::bf16>(x * alpha).
struct k {
  void operator()(ts::tensor<ts::bf16, 1> X, ts::scalar<ts::f32> alpha) const {
    auto x = X.load({0}, 64_c);
    x *= alpha;
    X.store({0}, x);
  }
};
void build() { ts::jit(k{}); }
