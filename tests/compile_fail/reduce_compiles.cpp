// expect-compiles
// The control case of the reduce_* cases: the correct uses (docs/reductions.md).
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct kernel {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 2> C,
                  ts::tensor<ts::f32, 1> rowamax, ts::tensor<ts::f32, 1> colsum) const {
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 128_c, 64_c).T());
    C.store({m, n}, ts::cast<ts::bf16>(ts::max(acc, 1.0f)));  // elementwise, a float constant
    rowamax.reduce_into({m}, ts::amax(acc, ts::axis<1>));
    colsum.reduce_into({n}, ts::sum(ts::relu(acc), ts::axis<0>));
    rowamax.reduce_into({m}, ts::max(ts::cast<ts::bf16>(acc), ts::axis<1>));
  }
};
static_assert(decltype(ts::amax(std::declval<ts::tile<ts::f32, 128, 64>>(), ts::axis<1>))::length == 128);
static_assert(decltype(ts::sum(std::declval<ts::tile<ts::f32, 128, 64>>(), ts::axis<0>))::length == 64);
void build() { ts::jit(kernel{}); }
