// expect-compiles
// The control case of the math misuse cases, and what a user's warning flags meet: every math
// function of docs/math.md in a GEMM epilogue and in an elementwise kernel, casts, a designated
// ts::options initializer naming only some fields, a launch grid from ts::cdiv, prepare on a
// stream and the launch (compiled with -Wall -Wextra -Werror, never run).
#include <tessel/tessel.hpp>
namespace ts = tessel;
using namespace ts::literals;

struct gemm_bias_gelu {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::bf16, 1> bias,
                  ts::tensor<ts::bf16, 2> C) const {
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 128_c, 64_c).T());
    auto y = acc + ts::cast<ts::f32>(bias.load({n}, 128_c)).row();
    C.store({m, n}, ts::cast<ts::bf16>(ts::gelu(y) + ts::gelu_erf(y) * ts::silu(y)));
  }
};

struct every_function {
  void operator()(ts::tensor<ts::f32, 2> X, ts::tensor<ts::f32, 2> Y, ts::tensor<ts::i32, 2> I) const {
    auto o = ts::program_id(0) * 64_c;
    auto x = X.load({o, 0}, 64_c, 64_c);
    auto a = ts::exp(x) + ts::exp2(x) + ts::log(ts::abs(x) + 1.0f) + ts::sqrt(ts::relu(x)) + ts::rsqrt(x * x + 1.0f);
    auto b = ts::tanh(x) + ts::sigmoid(x) + ts::silu(x) + ts::gelu(x) + ts::gelu_erf(x) + ts::erf(x);
    auto c = ts::where(x > 0.0f, ts::max(a, b), ts::min(a, b));
    Y.store({o, 0}, ts::cast<ts::f32>(ts::cast<ts::bf16>(c)));
    I.store({o, 0}, ts::cast<ts::i32>(x > 0.5f));
  }
};

void build(void* stream, const void* a, const void* b, const void* bias, void* c, long M, long N, long K) {
  ts::kernel k = ts::jit(gemm_bias_gelu{}, {.schedule = ts::schedule::pingpong, .stages = 4});
  const ts::grid g{unsigned(ts::cdiv(M, 128)), unsigned(ts::cdiv(N, 128))};
  auto args = std::make_tuple(ts::view<ts::bf16>(a, {M, K}), ts::view<ts::bf16>(b, {N, K}),
                              ts::view<ts::bf16>(bias, {N}), ts::view<ts::bf16>(c, {M, N}));
  ts::launch_choice choice = std::apply([&](const auto&... v) { return k.prepare(stream, g, v...); }, args);
  (void)choice;
  std::apply([&](const auto&... v) { k.launch(stream, g, v...); }, args);
  ts::kernel e = ts::jit(every_function{}, {.verbose = true});
  (void)e;
}
