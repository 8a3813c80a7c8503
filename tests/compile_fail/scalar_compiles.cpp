// expect-compiles
// The control case of the scalar misuse cases: every documented use of ts::scalar compiles.
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct k {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::scalar<ts::f32> alpha,
                  ts::scalar<ts::f32> beta, ts::scalar<ts::i32> n, ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * 128_c, col = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({col, k}, 128_c, 64_c).T());
    auto a2 = alpha + 1.0f;            // scalar arithmetic with host numbers
    auto b2 = 2 * beta - alpha / 4.0;  // doubles and ints convert to f32
    a2 += b2;
    a2 = -a2 * 2_c;
    auto lo = ts::max(alpha, 0.0f), hi = ts::min(beta, alpha);
    ts::scalar<ts::f32> nf = ts::cast<ts::f32>(n);
    ts::scalar<ts::i32> n2 = n % 3 + 1;
    ts::index row = m + n2;            // an i32 scalar is an index
    auto x = acc * a2 + beta;          // broadcast over the tile (f32)
    auto y = ts::where(x > lo, ts::min(x, hi), nf);
    acc = y * alpha;
    acc *= beta;
    C.store({row, col}, ts::cast<ts::bf16>(acc + ts::cast<ts::f32>(C.load({n, col}, 128_c, 128_c)) * alpha));
  }
};

void build(void* stream, const void* p) {
  ts::kernel kk = ts::jit(k{});
  auto A = ts::view<ts::bf16>(p, {256, 64});
  kk.launch(stream, ts::grid{2, 2}, A, A, 1.5f, ts::value(0.25), 3, A);
  kk.launch(stream, ts::grid{2, 2}, A, A, 1.5, -2.0f, ts::value(7L), A);
}
