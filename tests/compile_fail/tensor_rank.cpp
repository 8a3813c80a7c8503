// expect: tensor: the rank must be 1, 2 or 3
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::f32, 4> X) const { (void)X; }
};
ts::tensor<ts::f32, 4>* p = nullptr;
auto n = sizeof(*p);
