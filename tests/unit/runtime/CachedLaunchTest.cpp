//===- CachedLaunchTest.cpp - the cached launch, against a fake driver ----===//
//
// detail::launch with a table of stub driver functions (setCudaDriverForTesting), so that the
// whole launch path runs without a GPU: which driver calls a launch makes (a launch repeating
// the previous one's arguments makes only cuCtxGetCurrent and cuLaunchKernelEx), that the
// parameters it passes are those of the full path, that every change takes the full path, and
// (informational) the host time of both paths without any real driver cost.
//
//===----------------------------------------------------------------------===//

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"

using namespace tessel;
using namespace tessel::testing;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

struct Calls {
  int ctxGetCurrent = 0, pointerAttributes = 0, pointerAttribute = 0, encodes = 0, launches = 0,
      streamSyncs = 0, moduleLoads = 0;
  /// Per launch: the first 8 bytes of every parameter (a descriptor's: its address, see encode).
  std::vector<std::vector<std::uint64_t>> params;
  unsigned gridX = 0;
};
Calls calls;
std::size_t paramCount = 0;  // of the kernel under test

CUcontext fakeContext() { return reinterpret_cast<CUcontext>(std::uintptr_t(0xc0ffee)); }

runtime::CudaDriver fakeDriver() {
  runtime::CudaDriver d;
  d.driverVersion = 13000;
  d.deviceCount = 1;
  d.cuGetErrorName = [](CUresult, const char** s) -> CUresult { *s = "FAKE_ERROR"; return CUDA_SUCCESS; };
  d.cuGetErrorString = [](CUresult, const char** s) -> CUresult { *s = "fake"; return CUDA_SUCCESS; };
  d.cuCtxGetCurrent = [](CUcontext* c) -> CUresult {
    ++calls.ctxGetCurrent;
    *c = fakeContext();
    return CUDA_SUCCESS;
  };
  d.cuCtxSetCurrent = [](CUcontext) -> CUresult { return CUDA_SUCCESS; };
  d.cuCtxGetDevice = [](CUdevice* dev) -> CUresult { *dev = 0; return CUDA_SUCCESS; };
  d.cuDeviceGetName = [](char* name, int len, CUdevice) -> CUresult {
    std::strncpy(name, "Fake H200", static_cast<size_t>(len));
    return CUDA_SUCCESS;
  };
  d.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice) -> CUresult {
    *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
         : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
         : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
                                                             : 232448;
    return CUDA_SUCCESS;
  };
  d.cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned, CUjit_option*, void**) -> CUresult {
    ++calls.moduleLoads;
    *m = reinterpret_cast<CUmodule>(std::uintptr_t(0x1000));
    return CUDA_SUCCESS;
  };
  d.cuModuleLoadData = [](CUmodule* m, const void*) -> CUresult {
    ++calls.moduleLoads;
    *m = reinterpret_cast<CUmodule>(std::uintptr_t(0x1000));
    return CUDA_SUCCESS;
  };
  d.cuModuleUnload = [](CUmodule) -> CUresult { return CUDA_SUCCESS; };
  d.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char*) -> CUresult {
    *f = reinterpret_cast<CUfunction>(std::uintptr_t(0x2000));
    return CUDA_SUCCESS;
  };
  d.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) -> CUresult {
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 90 : 0;
    return CUDA_SUCCESS;
  };
  d.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute, int) -> CUresult { return CUDA_SUCCESS; };
  d.cuPointerGetAttributes = [](unsigned n, CUpointer_attribute*, void** data, CUdeviceptr) -> CUresult {
    ++calls.pointerAttributes;
    if (n >= 1)
      *static_cast<std::uint64_t*>(data[0]) = CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
  };
  d.cuPointerGetAttribute = [](void* out, CUpointer_attribute, CUdeviceptr p) -> CUresult {
    ++calls.pointerAttribute;
    *static_cast<CUdeviceptr*>(out) = p;
    return CUDA_SUCCESS;
  };
  d.cuTensorMapEncodeTiled = [](CUtensorMap* map, CUtensorMapDataType, cuuint32_t, void* address, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) -> CUresult {
    ++calls.encodes;
    const std::uint64_t a = reinterpret_cast<std::uintptr_t>(address);
    std::memcpy(map, &a, sizeof a);
    return CUDA_SUCCESS;
  };
  d.cuLaunchKernelEx = [](const CUlaunchConfig* config, CUfunction, void** params, void**) -> CUresult {
    ++calls.launches;
    calls.gridX = config->gridDimX;
    std::vector<std::uint64_t> p(paramCount);
    for (std::size_t i = 0; i < paramCount; ++i)
      std::memcpy(&p[i], params[i], sizeof(std::uint64_t));
    calls.params.push_back(std::move(p));
    return CUDA_SUCCESS;
  };
  d.cuStreamSynchronize = [](CUstream) -> CUresult {
    ++calls.streamSyncs;
    return CUDA_SUCCESS;
  };
  return d;
}

tensor_arg vectorArg1d(const void* data, std::int64_t n) {
  tensor_arg a;
  a.data = data;
  a.type = dtype::f32;
  a.rank = 1;
  a.sizes = {n, 0, 0};
  a.strides = {1, 0, 0};
  return a;
}

class CachedLaunch : public ::testing::Test {
protected:
  runtime::CudaDriver driver = fakeDriver();
  ScopedEnv debug{"TESSEL_DEBUG", std::nullopt};
  ScopedEnv verbose{"TESSEL_VERBOSE", std::nullopt};
  std::shared_ptr<detail::kernel_impl> kernel;
  std::vector<tensor_arg> args = gemmArgs();
  const grid g{2, 1, 1};

  void SetUp() override {
    calls = {};
    runtime::setCudaDriverForTesting(&driver);
    kernel = runtime::makeKernel(gemmKernel());
    paramCount = kernel->compiled().params.size();
  }
  void TearDown() override {
    kernel.reset();  // unloads its module through the fake
    runtime::setCudaDriverForTesting(nullptr);
  }
  void launch() { detail::launch(*kernel, nullptr, g, args); }
  void launch(grid other) { detail::launch(*kernel, nullptr, other, args); }
};

TEST_F(CachedLaunch, RepeatedArgumentsMakeOnlyTheLaunchCall) {
  launch();
  EXPECT_EQ(calls.pointerAttributes, 3);  // one per tensor argument
  EXPECT_EQ(calls.encodes, 2);            // A and B
  EXPECT_EQ(calls.moduleLoads, 1);
  const int ctxCallsOfTheFullPath = calls.ctxGetCurrent;
  launch();
  launch();
  EXPECT_EQ(calls.launches, 3);
  EXPECT_EQ(calls.pointerAttributes, 3) << "a cached launch queried the pointers again";
  EXPECT_EQ(calls.pointerAttribute, 3);
  EXPECT_EQ(calls.encodes, 2) << "a cached launch encoded the descriptors again";
  EXPECT_EQ(calls.ctxGetCurrent, ctxCallsOfTheFullPath + 2);  // one per cached launch
  ASSERT_EQ(calls.params.size(), 3u);
  EXPECT_EQ(calls.params[1], calls.params[0]);
  EXPECT_EQ(calls.params[2], calls.params[0]);
  EXPECT_EQ(calls.params[0][0], 0x7f0000100000u);  // A's descriptor
  EXPECT_EQ(calls.params[0][2], 0x7f0000300000u);  // C's pointer
}

TEST_F(CachedLaunch, EveryChangeTakesTheFullPath) {
  launch();
  args[0].data = fakeAddress(0x7f0000400000);  // another A
  launch();
  EXPECT_EQ(calls.pointerAttributes, 6);
  EXPECT_EQ(calls.encodes, 4);
  EXPECT_EQ(calls.params.back()[0], 0x7f0000400000u) << "the descriptor of the old A was passed";
  launch();  // cached again, with the new A
  EXPECT_EQ(calls.encodes, 4);
  EXPECT_EQ(calls.params.back()[0], 0x7f0000400000u);

  args[2].sizes[1] = 64;  // N = 64: C's size (and B's contract) change
  args[1].sizes[1] = 64;
  args[1].strides[0] = 64;
  launch();
  EXPECT_EQ(calls.encodes, 6);
  EXPECT_EQ(calls.params.back()[4], 64u);  // Size parameter of C's dimension 1

  launch(grid{4, 1, 1});
  EXPECT_EQ(calls.encodes, 8);
  EXPECT_EQ(calls.gridX, 4u);
  EXPECT_EQ(calls.launches, 5);
}

TEST_F(CachedLaunch, ErrorsAreTheFullPathsOnes) {
  launch();
  args[2].type = dtype::bf16;  // one field away from the recorded launch
  EXPECT_THAT([&] { launch(); },
              ThrowsMessage<tessel::error>(HasSubstr("tessel: kernel 'gemm' argument 2: expected dtype f32, got bf16")));
  args[2].type = dtype::f32;
  args[0].data = fakeAddress(0x7f0000100008);  // not 16-byte aligned
  EXPECT_THAT([&] { launch(); }, ThrowsMessage<tessel::error>(HasSubstr("is not 16-byte aligned")));
  EXPECT_EQ(calls.launches, 1);
}

TEST_F(CachedLaunch, DebugAndVerboseLaunchesAreNeverCached) {
  {
    ScopedEnv on("TESSEL_DEBUG", "1");
    launch();
    launch();
    EXPECT_EQ(calls.streamSyncs, 2);
    EXPECT_EQ(calls.pointerAttributes, 6);
  }
  launch();  // full path (nothing recorded while debugging)
  EXPECT_EQ(calls.pointerAttributes, 9);
  {
    ScopedEnv on("TESSEL_VERBOSE", "1");
    launch();  // the recorded launch exists, but verbose takes the full path
    EXPECT_EQ(calls.pointerAttributes, 12);
  }
  launch();  // the record made before TESSEL_VERBOSE still applies
  EXPECT_EQ(calls.pointerAttributes, 12);
  EXPECT_EQ(calls.launches, 5);
}

// A ts::scalar parameter: a new value per launch (alpha changing every call) keeps the cached
// launch, with only that parameter replaced; a value the full path rejects still gets its error.
TEST_F(CachedLaunch, NewScalarValuesReplaceOnlyTheirParameter) {
  CompiledKernel k;
  k.name = "scale";
  k.args = {{dtype::f32, 1, false}, {dtype::f32, 0, false}, {dtype::i32, 0, false}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}, {ParamSpec::Kind::Size, 0, 0}, {ParamSpec::Kind::Scalar, 1, 0},
              {ParamSpec::Kind::Scalar, 2, 0}};
  k.blockThreads = 128;
  k.ptx = "// not assembled\n";
  kernel = runtime::makeKernel(k);
  paramCount = 2;  // the fake launch reads 8 bytes per parameter: the scalars are read below
  tensor_arg x = vectorArg1d(fakeAddress(0x7f0000100000), 256);
  auto scalarF = [](double v) { tensor_arg a; a.kind = arg_kind::floating; a.floating = v; return a; };
  auto scalarI = [](std::int64_t v) { tensor_arg a; a.kind = arg_kind::integer; a.integer = v; return a; };
  std::uint32_t seenF = 0, seenI = 0;
  driver.cuLaunchKernelEx = [](const CUlaunchConfig*, CUfunction, void** params, void**) -> CUresult {
    ++calls.launches;
    std::vector<std::uint64_t> p(4);
    std::memcpy(&p[0], params[0], 8);
    std::memcpy(&p[1], params[1], 8);
    std::memcpy(&p[2], params[2], 4);  // the 4-byte scalars
    std::memcpy(&p[3], params[3], 4);
    calls.params.push_back(std::move(p));
    return CUDA_SUCCESS;
  };
  auto run = [&](tensor_arg alpha, tensor_arg n) {
    std::vector<tensor_arg> a = {x, alpha, n};
    detail::launch(*kernel, nullptr, {2, 1, 1}, a);
    std::memcpy(&seenF, &calls.params.back()[2], 4);
    std::memcpy(&seenI, &calls.params.back()[3], 4);
  };
  run(scalarF(1.5), scalarI(7));
  EXPECT_EQ(calls.pointerAttributes, 1);
  for (double alpha : {2.5, -0.25, 1e30}) {
    run(scalarF(alpha), scalarI(-3));
    float f = 0;
    std::memcpy(&f, &seenF, 4);
    EXPECT_EQ(f, static_cast<float>(alpha));
    EXPECT_EQ(static_cast<std::int32_t>(seenI), -3);
  }
  EXPECT_EQ(calls.pointerAttributes, 1) << "a new scalar value took the full path";
  EXPECT_EQ(calls.launches, 4);
  EXPECT_THAT([&] { run(scalarF(1e40), scalarI(1)); },
              ThrowsMessage<tessel::error>(HasSubstr("is outside the f32 range")));
  EXPECT_THAT([&] { run(scalarF(1.0), scalarI(std::int64_t(1) << 40)); },
              ThrowsMessage<tessel::error>(HasSubstr("is outside the i32 range")));
  EXPECT_THAT([&] { run(scalarI(2), scalarI(1)); },
              ThrowsMessage<tessel::error>(HasSubstr("expected a floating-point value for ts::scalar<ts::f32>")));
  EXPECT_EQ(calls.launches, 4);
}

// Informational: the host time per launch of tessel's own code, the driver stubbed out (a real
// driver adds its calls' cost: on the H200 host, run 24 measured 10.09 us for the full path).
TEST_F(CachedLaunch, HostTimeWithoutDriverCost) {
  constexpr int n = 20000;
  calls.params.reserve(4 * n + 10);
  launch();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    launch();
  const double cached = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  const void* c[2] = {fakeAddress(0x7f0000300000), fakeAddress(0x7f0000500000)};
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    args[2].data = c[(i + 1) % 2];  // never the previous launch's C
    launch();
  }
  const double full = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("host time per launch without driver cost: cached %.3f us, full path %.3f us\n", cached, full);
  EXPECT_EQ(calls.launches, 2 * n + 1);
  EXPECT_EQ(calls.encodes, 2 * (n + 1));
}

}  // namespace
