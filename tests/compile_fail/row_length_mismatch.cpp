// expect: row(): the length of the 1-d tile must equal the number of columns
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 1> bias) const {
    auto x = X.load({0, 0}, 128_c, 256_c);
    X.store({0, 0}, x + bias.load({0}, 128_c).row());   // a row of 128 against 256 columns
  }
};
