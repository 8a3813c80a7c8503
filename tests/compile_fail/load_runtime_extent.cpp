// expect: tile extents must be compile-time integers
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X) const {
    X.store({0}, X.load({0}, 128));   // 128 instead of 128_c
  }
};
