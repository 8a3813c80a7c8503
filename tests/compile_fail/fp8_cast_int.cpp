// expect: cast: an fp8 tile converts to and from f16, bf16 or f32 only
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f8e4m3, 2> X, ts::tensor<ts::i32, 2> Y) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    Y.store({0, 0}, ts::cast<ts::i32>(x));
  }
};
