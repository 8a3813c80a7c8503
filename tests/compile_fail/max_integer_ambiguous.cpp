// expect: max: ts::max(x, <integer constant>) is ambiguous
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

// Reads like "the maximum along axis 1"; it would be the elementwise maximum with 1.
struct k {
  void operator()(ts::tensor<ts::f32, 2> X) const {
    auto x = X.load({0, 0}, 64_c, 64_c);
    X.store({0, 0}, ts::max(x, 1));
  }
};
