// expect: store: tile dtype must equal the tensor dtype; use ts::cast<T>(...)
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> C) const {
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    acc += ts::dot(A.load({0, 0}, 128_c, 64_c), A.load({0, 0}, 64_c, 128_c));
    C.store({0, 0}, acc);   // f32 tile into a bf16 tensor
  }
};
