// expect-compiles
// The control case: correct uses of everything the other cases misuse.
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct kernel {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::f32, 1> bias,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 256_c;
    auto acc = ts::zeros<ts::f32>(128_c, 256_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 256_c, 64_c).T());
    auto x = acc + bias.load({n}, 256_c).row();
    acc = ts::where(x > 0.0f, x, ts::cast<ts::f32>(ts::cast<ts::i32>(x) + 1));
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};
void build() { ts::jit(kernel{}); }
