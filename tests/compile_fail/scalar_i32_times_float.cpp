// expect: scalar: a ts::scalar<ts::i32> meets a floating-point number; convert it first
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::scalar<ts::i32> n, ts::tensor<ts::f32, 1> Y) const {
    auto half = n * 0.5f;  // i32 scalar arithmetic stays i32: no silent truncation of 0.5
    Y.store({0}, ts::zeros<ts::f32>(64_c) * half);
  }
};
void build() { ts::jit(k{}); }
