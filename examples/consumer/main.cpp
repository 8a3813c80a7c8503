// tessel-consumer: the smallest program built against an installed tessel (see CMakeLists.txt).
// It jits Y = a X + Y (no GPU needed: traced, compiled to PTX and, with ptxas, to a cubin) and
// prints what it got; with a GPU and the CUDA runtime it also runs the kernel and checks Y.
#include <cstdio>
#include <string>
#include <vector>

#include <tessel/tessel.hpp>

#ifdef TESSEL_CONSUMER_CUDART
#include <cuda_runtime.h>
#endif

namespace ts = tessel;
using namespace ts::literals;

struct axpy {
  float a = 2.0f;
  void operator()(ts::tensor<ts::f32, 1> X, ts::tensor<ts::f32, 1> Y) const {
    auto o = ts::program_id(0) * 256_c;
    Y.store({o}, X.load({o}, 256_c) * a + Y.load({o}, 256_c));
  }
};

int main() {
  try {
    ts::kernel k = ts::jit(axpy{});
    std::printf("tessel-consumer: jitted '%s': %zu bytes of PTX, %s\n", k.name().c_str(), k.stage("ptx").size(),
                k.stage("ptxas.log").find("registers") != std::string::npos ? "assembled by ptxas" : "no cubin");

    std::string why;
    if (!ts::gpu_available(&why)) {
      std::printf("tessel-consumer: no GPU (%s): compiled only\n", why.c_str());
      return 0;
    }
#ifdef TESSEL_CONSUMER_CUDART
    const int n = 1000;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) x[i] = float(i), y[i] = 1.0f;
    float *dx = nullptr, *dy = nullptr;
    if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess || cudaMalloc(&dy, n * sizeof(float)) != cudaSuccess) {
      std::printf("tessel-consumer: cudaMalloc failed\n");
      return 1;
    }
    cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    k.launch(nullptr, ts::grid{unsigned((n + 255) / 256)}, ts::view<ts::f32>(dx, {n}), ts::view<ts::f32>(dy, {n}));
    cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += y[i] != 2.0f * float(i) + 1.0f;
    std::printf("tessel-consumer: %s (%d of %d wrong)\n", bad ? "FAILED" : "PASSED", bad, n);
    return bad ? 1 : 0;
#else
    std::printf("tessel-consumer: built without the CUDA runtime: not launched\n");
    return 0;
#endif
  } catch (const ts::error& e) {
    std::fprintf(stderr, "tessel-consumer: %s\n", e.what());
    return 1;
  }
}
