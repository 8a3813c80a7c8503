// expect: T(): only 2-d tiles can be transposed
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f16, 1> X) const {
    auto v = X.load({0}, 128_c);
    X.store({0}, v.T());
  }
};
