// expect: jit: every parameter of the kernel functor must be a ts::tensor<T, Rank>
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 1> X, int n) const { (void)X; (void)n; }
};
void build() { ts::jit(k{}); }
