//===- CachedLaunchTest.cpp - the cached launch, against a fake driver ----===//
//
// detail::launch with a table of stub driver functions (setCudaDriverForTesting), so that the
// whole launch path runs without a GPU: which driver calls a launch makes (a launch repeating
// the previous one's arguments makes only cuCtxGetCurrent and cuLaunchKernelEx), that the
// parameters it passes are those of the full path, that a repeated launch is not checked again
// while a change of any field, the grid or the stream is (kernel_impl::checkedLaunches), with the
// very messages of a kernel that never launched, and (informational) the host time of both paths
// without any real driver cost: HostOverheadOfTheLatencyBenchmarksLaunch is the CPU benchmark of
// the call tessel-latency times on the GPU.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/kernel/jit.hpp"

using namespace tessel;
using namespace tessel::testing;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

struct Calls {
  int ctxGetCurrent = 0, pointerAttributes = 0, pointerAttribute = 0, encodes = 0, launches = 0,
      streamSyncs = 0, moduleLoads = 0, memAllocs = 0, ctxSyncs = 0, occupancyQueries = 0;
  /// Per launch: the first 8 bytes of every parameter (a descriptor's: its address, see encode).
  std::vector<std::vector<std::uint64_t>> params;
  unsigned gridX = 0;
};
Calls calls;
std::size_t paramCount = 0;  // of the kernel under test
bool capturing = false;      // what cuStreamIsCapturing says of every stream
// The CUfunction of the fake module: the launch path keeps per-function facts for the process
// (the co-resident clusters), so a test that counts their queries takes a function of its own.
std::uintptr_t fakeFunction = 0x2000;

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
    *f = reinterpret_cast<CUfunction>(fakeFunction);
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
  d.cuStreamGetCtx = [](CUstream, CUcontext* c) -> CUresult {
    *c = fakeContext();
    return CUDA_SUCCESS;
  };
  d.cuStreamIsCapturing = [](CUstream, CUstreamCaptureStatus* status) -> CUresult {
    *status = capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  };
  d.cuMemAlloc = [](CUdeviceptr* p, std::size_t) -> CUresult {
    ++calls.memAllocs;
    *p = 0x7f0000900000 + 0x100000 * static_cast<CUdeviceptr>(calls.memAllocs);
    return CUDA_SUCCESS;
  };
  d.cuMemsetD8 = [](CUdeviceptr, unsigned char, std::size_t) -> CUresult { return CUDA_SUCCESS; };
  d.cuCtxSynchronize = []() -> CUresult {
    ++calls.ctxSyncs;
    return CUDA_SUCCESS;
  };
  d.cuOccupancyMaxActiveClusters = [](int* n, CUfunction, const CUlaunchConfig*) -> CUresult {
    ++calls.occupancyQueries;
    *n = 60;
    return CUDA_SUCCESS;
  };
  return d;
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
    capturing = false;
    fakeFunction = 0x2000;
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

TEST_F(CachedLaunch, AFallbackIsCachedAndTesselFallbackErrorStillRefusesIt) {
  // A tma kernel whose A breaks TMA's rules runs the multistage fallback; the second launch is a
  // cached one, but once TESSEL_FALLBACK=error is set the cached fallback must refuse as the full
  // path does (select reports the fallback; the launch record keeps it).
  ScopedEnv policy{"TESSEL_FALLBACK", "quiet"};
  CompiledKernel tma = gemmKernel();
  tma.schedule = "tma";
  kernel = runtime::makeKernel(tma, [](const detail::VariantRequest& r) {
    CompiledKernel k = multistageGemmKernel();
    k.variant = r.tag;
    return k;
  });
  paramCount = multistageGemmKernel().params.size();
  args[0].data = fakeAddress(0x7f0000100008);  // not 16-byte aligned
  launch();
  launch();
  EXPECT_EQ(calls.launches, 2);
  EXPECT_EQ(calls.pointerAttributes, 3) << "the second fallback launch was not a cached one";
  EXPECT_EQ(calls.encodes, 0);  // multistage: no TMA descriptor
  {
    ScopedEnv strict{"TESSEL_FALLBACK", "error"};
    EXPECT_THAT([&] { launch(); },
                ThrowsMessage<tessel::error>(HasSubstr("TESSEL_FALLBACK=error forbids falling back to schedule "
                                                       "multistage")));
  }
  EXPECT_EQ(calls.launches, 2);
}

TEST_F(CachedLaunch, AnEmptyKIsNotAFallbackAndIsCachedUnderTesselFallbackError) {
  // K == 0: TMA cannot describe the empty A and B, so select launches the multistage variant -
  // not a fallback for a broken rule (launch contract 3): TESSEL_FALLBACK=error lets it run, and
  // its repeat is a cached launch.
  ScopedEnv strict{"TESSEL_FALLBACK", "error"};
  CompiledKernel tma = gemmKernel();
  tma.schedule = "tma";
  tma.args[2].stored = true;  // C is the output: a K == 0 GEMM still writes it
  kernel = runtime::makeKernel(tma, [](const detail::VariantRequest& r) {
    CompiledKernel k = multistageGemmKernel();
    k.args[2].stored = true;
    k.variant = r.tag;
    return k;
  });
  paramCount = multistageGemmKernel().params.size();
  args[0].sizes[1] = 0;  // A: 256 x 0
  args[1].sizes[1] = 0;  // B: 128 x 0
  launch();
  launch();
  EXPECT_EQ(calls.launches, 2);
  EXPECT_EQ(calls.pointerAttributes, 1) << "the second K == 0 launch was not a cached one";  // C only
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

// The cached launch reads TESSEL_DEBUG and TESSEL_VERBOSE in one pass over the environment
// (Kernel.cpp launchFlags): flags as Env.h defines them, names matched whole.
TEST_F(CachedLaunch, DebugAndVerboseAreReadAsEnvFlags) {
  launch();
  {
    ScopedEnv d("TESSEL_DEBUG", "0"), v("TESSEL_VERBOSE", "off");
    ScopedEnv x("TESSEL_DEBUGGING", "1"), y("TESSEL_VERBOSE_", "1");  // other names (unknown knobs)
    launch();
    launch();
  }
  {
    ScopedEnv d("TESSEL_DEBUG", "");
    launch();
  }
  EXPECT_EQ(kernel->checkedLaunches(), 1u);
  EXPECT_EQ(calls.streamSyncs, 0);
  for (const char* value : {"1", "yes", "TRUE", "On"}) {
    ScopedEnv d("TESSEL_DEBUG", value);
    launch();
  }
  EXPECT_EQ(calls.streamSyncs, 4) << "a debug launch was cached";
  {
    ScopedEnv v("TESSEL_VERBOSE", "Yes");
    ::testing::internal::CaptureStderr();
    launch();
    ::testing::internal::GetCapturedStderr();
  }
  EXPECT_EQ(kernel->checkedLaunches(), 6u);
  launch();  // neither set: the launch recorded before them is cached again
  EXPECT_EQ(kernel->checkedLaunches(), 6u);
}

// What a launch's checks say about `args` and `g` on a kernel that has never launched (so has no
// record to repeat): the message the cached launch must leave unchanged; "" when it launches.
std::string freshLaunchError(const CompiledKernel& k, std::span<const tensor_arg> args, grid g) {
  auto fresh = runtime::makeKernel(k);
  try {
    detail::launch(*fresh, nullptr, g, args);
  } catch (const tessel::error& e) {
    return e.what();
  }
  return "";
}

// A launch repeating the recorded one is not checked again: checkedLaunches counts the launches
// that went through select, validateArgs and the rest.
TEST_F(CachedLaunch, IdenticalArgumentsAreNotCheckedAgain) {
  launch();
  EXPECT_EQ(kernel->checkedLaunches(), 1u);
  for (int i = 0; i < 5; ++i)
    launch();
  EXPECT_EQ(kernel->checkedLaunches(), 1u) << "a repeated launch was checked again";
  EXPECT_EQ(calls.launches, 6);
}

// Changing any one field of any argument, or the grid, sends the launch through every check
// again: a valid change is launched with parameters built anew (and becomes the record), an
// invalid one is rejected with the very message a kernel that never launched gives.
TEST_F(CachedLaunch, AnyChangedFieldIsCheckedAgain) {
  struct Change {
    const char* what;
    std::function<void(std::vector<tensor_arg>&, grid&)> apply;
    const char* error;  // a substring of the message; nullptr: a valid change
  };
  const std::vector<Change> changes = {
      {"pointer", [](auto& a, grid&) { a[0].data = fakeAddress(0x7f0000400000); }, nullptr},
      {"pointer, misaligned", [](auto& a, grid&) { a[0].data = fakeAddress(0x7f0000100008); },
       "tessel: kernel 'gemm' argument 0: data address 0x7f0000100008 is not 16-byte aligned (TMA requires a "
       "16-byte aligned base address)"},
      {"pointer, null", [](auto& a, grid&) { a[2].data = nullptr; },
       "tessel: kernel 'gemm' argument 2: data pointer is null (only an empty tensor, one with a dimension of size "
       "0, may be null)"},
      {"size", [](auto& a, grid&) { a[2].sizes[0] = 128; }, nullptr},
      {"size, negative", [](auto& a, grid&) { a[2].sizes[1] = -1; },
       "tessel: kernel 'gemm' argument 2: size of dimension 1 is -1; sizes must be >= 0"},
      {"size past the rank", [](auto& a, grid&) { a[2].sizes[2] = 7; }, nullptr},
      {"stride", [](auto& a, grid&) { a[2].strides[0] = 256; }, nullptr},
      {"stride, inner", [](auto& a, grid&) { a[2].strides[1] = 2; },
       "tessel: kernel 'gemm' argument 2: innermost stride (dimension 1) must be 1, got 2: the kernel assumes a "
       "contiguous innermost dimension"},
      {"stride, TMA multiple", [](auto& a, grid&) { a[0].strides[0] = 520; }, nullptr},  // 1040 bytes
      {"stride, TMA not a multiple", [](auto& a, grid&) { a[0].strides[0] = 513; },
       "tessel: kernel 'gemm' argument 0: stride of dimension 0 is 513 elements = 1026 bytes, not a multiple of 16 "
       "bytes"},
      {"dtype", [](auto& a, grid&) { a[2].type = dtype::bf16; },
       "tessel: kernel 'gemm' argument 2: expected dtype f32, got bf16"},
      {"rank", [](auto& a, grid&) { a[2].rank = 1; }, "tessel: kernel 'gemm' argument 2: expected rank 2, got 1"},
      {"kind", [](auto& a, grid&) { a[2].kind = arg_kind::floating; },
       "tessel: kernel 'gemm' argument 2: expected a tensor (rank 2, f32), got a scalar value; pass a ts::view"},
      {"grid", [](auto&, grid& g) { g.x = 4; }, nullptr},
      {"grid, too large", [](auto&, grid& g) { g.y = 70000; },
       "tessel: kernel 'gemm': grid (2, 70000, 1): grid.y is 70000; CUDA allows at most 65535"},
  };
  for (const Change& c : changes) {
    SCOPED_TRACE(c.what);
    calls = {};
    kernel = runtime::makeKernel(gemmKernel());
    launch();
    launch();  // cached
    ASSERT_EQ(kernel->checkedLaunches(), 1u);
    std::vector<tensor_arg> changed = args;
    grid cg = g;
    c.apply(changed, cg);
    const std::string expected = freshLaunchError(gemmKernel(), changed, cg);
    calls = {};
    if (!c.error) {
      ASSERT_EQ(expected, "");
      detail::launch(*kernel, nullptr, cg, changed);
      EXPECT_EQ(kernel->checkedLaunches(), 2u) << "the changed launch was not checked";
      EXPECT_EQ(calls.pointerAttributes, 3) << "its pointers were not queried";
      detail::launch(*kernel, nullptr, cg, changed);  // the new record, cached
      EXPECT_EQ(kernel->checkedLaunches(), 2u);
      EXPECT_EQ(calls.launches, 2);
      ASSERT_EQ(calls.params.size(), 2u);
      EXPECT_EQ(calls.params[1], calls.params[0]);
      continue;
    }
    EXPECT_THAT(expected, HasSubstr(c.error));
    for (int i = 0; i < 2; ++i) {  // rejected every time: a failed launch is never recorded
      EXPECT_THAT([&] { detail::launch(*kernel, nullptr, cg, changed); },
                  ThrowsMessage<tessel::error>(::testing::Eq(expected)));
      EXPECT_EQ(kernel->checkedLaunches(), 2u + i);
    }
    EXPECT_EQ(calls.launches, 0);
    launch();  // the recorded arguments again: still cached
    EXPECT_EQ(kernel->checkedLaunches(), 3u);
    EXPECT_EQ(calls.launches, 1);
  }
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
  tensor_arg x = tensor1d(dtype::f32, fakeAddress(0x7f0000100000), 256);
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
  // A new value is checked by the rule a value has (its range, in launchCached itself), without
  // the full path; a value outside it, or of the other kind, goes through the full path, which
  // rejects it with the message a kernel that never launched gives.
  EXPECT_EQ(kernel->checkedLaunches(), 1u);
  auto expectRejected = [&](tensor_arg alpha, tensor_arg n, const char* rule) {
    const std::uint64_t checked = kernel->checkedLaunches();
    std::vector<tensor_arg> a = {x, alpha, n};
    const std::string expected = freshLaunchError(k, a, {2, 1, 1});
    EXPECT_THAT(expected, HasSubstr(rule));
    EXPECT_THAT([&] { run(alpha, n); }, ThrowsMessage<tessel::error>(::testing::Eq(expected)));
    EXPECT_EQ(kernel->checkedLaunches(), checked + 1) << rule;
  };
  expectRejected(scalarF(1e40), scalarI(1),
                 "tessel: kernel 'scale' argument 1: the value 1e+40 for ts::scalar<ts::f32> is outside the f32 "
                 "range");
  expectRejected(scalarF(-1e39), scalarI(-3), "is outside the f32 range");
  expectRejected(scalarF(1.0), scalarI(std::int64_t(1) << 40),
                 "tessel: kernel 'scale' argument 2: the value 1099511627776 for ts::scalar<ts::i32> is outside the "
                 "i32 range");
  expectRejected(scalarI(2), scalarI(1), "expected a floating-point value for ts::scalar<ts::f32>");
  expectRejected(scalarF(2.5), scalarF(1.0), "expected an integer value for ts::scalar<ts::i32>");
  EXPECT_EQ(calls.launches, 4);
  run(scalarF(1e30), scalarI(-3));  // the record is still the last launch that passed
  EXPECT_EQ(calls.launches, 5);
  EXPECT_EQ(calls.pointerAttributes, 1);
}

// The stream is part of the key too: another stream is checked again (here: it belongs to another
// context than the current one, which a cached launch on it must not hide).
TEST_F(CachedLaunch, AnotherStreamIsCheckedAgain) {
  static CUcontext streamContext;
  streamContext = fakeContext();
  driver.cuStreamGetCtx = [](CUstream, CUcontext* c) -> CUresult {
    *c = streamContext;
    return CUDA_SUCCESS;
  };
  void* stream = reinterpret_cast<void*>(std::uintptr_t(0x5000));
  launch();
  detail::launch(*kernel, stream, g, args);
  EXPECT_EQ(kernel->checkedLaunches(), 2u);
  detail::launch(*kernel, stream, g, args);
  EXPECT_EQ(kernel->checkedLaunches(), 2u);
  streamContext = reinterpret_cast<CUcontext>(std::uintptr_t(0xbadc0de));
  void* other = reinterpret_cast<void*>(std::uintptr_t(0x6000));
  EXPECT_THAT([&] { detail::launch(*kernel, other, g, args); },
              ThrowsMessage<tessel::error>(::testing::Eq(
                  "tessel: kernel 'gemm': the stream belongs to another CUDA context than the one current on this "
                  "thread")));
  EXPECT_EQ(kernel->checkedLaunches(), 3u);
  EXPECT_EQ(calls.launches, 3);
}

// ---- kernel::prepare(stream, grid, args...) ---------------------------------------------------
//
// prepare on a stream does all a launch does but the launch call, and records it: the launch that
// follows (in a CUDA graph capture) makes only cuCtxGetCurrent and cuLaunchKernelEx. Each test
// uses a stream of its own: the stream-K workspace is kept per (context, stream) for the process.

void* fakeStream(std::uintptr_t s) { return reinterpret_cast<void*>(s); }

TEST_F(CachedLaunch, PrepareOnAStreamMakesTheLaunchACachedOne) {
  void* s = fakeStream(0x7100);
  const launch_choice c = detail::prepare(*kernel, s, g, args);
  EXPECT_EQ(c.variant, "");
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(calls.launches, 0) << "prepare launched the kernel";
  EXPECT_EQ(calls.moduleLoads, 1);
  EXPECT_EQ(calls.pointerAttributes, 3);
  EXPECT_EQ(calls.encodes, 2);
  const int ctxCalls = calls.ctxGetCurrent;
  detail::launch(*kernel, s, g, args);
  EXPECT_EQ(kernel->checkedLaunches(), 0u) << "the launch after prepare was checked again";
  EXPECT_EQ(calls.ctxGetCurrent, ctxCalls + 1);
  EXPECT_EQ(calls.pointerAttributes, 3);
  EXPECT_EQ(calls.encodes, 2);
  ASSERT_EQ(calls.launches, 1);
  EXPECT_EQ(calls.params[0][0], 0x7f0000100000u);  // A's descriptor
  EXPECT_EQ(calls.params[0][2], 0x7f0000300000u);  // C's pointer
  // The record is the stream's: a launch on another stream takes the full path.
  detail::launch(*kernel, nullptr, g, args);
  EXPECT_EQ(kernel->checkedLaunches(), 1u);
}

TEST_F(CachedLaunch, PrepareAllocatesTheStreamKWorkspaceThatACaptureCannot) {
  CompiledKernel streamK = gemmKernel();
  streamK.persistent = true;
  streamK.workspaceSlotBytes = 128 * 128 * 4;
  kernel = runtime::makeKernel(streamK);
  void* s = fakeStream(0x7200);
  // Captured without prepare: the allocation is refused before cuMemAlloc.
  capturing = true;
  EXPECT_THAT([&] { detail::launch(*kernel, s, g, args); },
              ThrowsMessage<tessel::error>(::testing::Eq(
                  "tessel: kernel 'gemm': this stream-K launch needs the stream's workspace, which is allocated "
                  "at the first such launch on a stream and cannot be inside a CUDA graph capture; call "
                  "kernel::prepare(stream, grid, args...) with this stream before the capture")));
  EXPECT_EQ(calls.memAllocs, 0);
  EXPECT_EQ(calls.launches, 0);
  // Prepared outside the capture: allocated (and synchronized) there, once.
  capturing = false;
  detail::prepare(*kernel, s, g, args);
  EXPECT_EQ(calls.memAllocs, 1);
  EXPECT_EQ(calls.ctxSyncs, 1);
  EXPECT_EQ(calls.launches, 0);
  capturing = true;
  detail::launch(*kernel, s, g, args);
  EXPECT_EQ(calls.launches, 1);
  // Other arguments in the same capture: the full path, which finds the stream's workspace.
  args[2].data = fakeAddress(0x7f0000500000);
  detail::launch(*kernel, s, g, args);
  EXPECT_EQ(calls.launches, 2);
  EXPECT_EQ(calls.memAllocs, 1);
  EXPECT_EQ(calls.ctxSyncs, 1);
  EXPECT_EQ(kernel->checkedLaunches(), 2u);  // the refused launch and this one
}

TEST_F(CachedLaunch, PrepareCountsTheCoResidentClustersBeforeTheLaunch) {
  fakeFunction = 0x2100;  // no count of this function's clusters yet
  CompiledKernel clustered = gemmKernel();
  clustered.persistent = true;
  clustered.cluster = {2, 1, 1};
  kernel = runtime::makeKernel(clustered);
  void* s = fakeStream(0x7300);
  const grid many{200, 1, 1};  // 200 tiles: 132 CTAs by SM count, 120 by co-resident clusters
  detail::prepare(*kernel, s, many, args);
  EXPECT_EQ(calls.occupancyQueries, 1);
  EXPECT_EQ(calls.launches, 0);
  detail::launch(*kernel, s, many, args);
  EXPECT_EQ(calls.occupancyQueries, 1);
  EXPECT_EQ(calls.gridX, 120u);
  EXPECT_EQ(kernel->checkedLaunches(), 0u);
}

TEST_F(CachedLaunch, PrepareRecordsNothingUnderTesselDebug) {
  ScopedEnv on("TESSEL_DEBUG", "1");
  void* s = fakeStream(0x7400);
  detail::prepare(*kernel, s, g, args);
  EXPECT_EQ(calls.streamSyncs, 0);
  detail::launch(*kernel, s, g, args);  // the full path, and its synchronization
  EXPECT_EQ(kernel->checkedLaunches(), 1u);
  EXPECT_EQ(calls.streamSyncs, 1);
  EXPECT_EQ(calls.launches, 1);
}

TEST_F(CachedLaunch, PrepareOnAStreamThrowsTheLaunchsErrors) {
  args[2].type = dtype::bf16;
  EXPECT_THAT([&] { detail::prepare(*kernel, fakeStream(0x7500), g, args); },
              ThrowsMessage<tessel::error>(::testing::Eq("tessel: kernel 'gemm' argument 2: expected dtype f32, got "
                                                         "bf16")));
  EXPECT_EQ(calls.launches, 0);
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

/// The parameter list of the cooperative 128x256 bf16 GEMM that tessel-latency launches
/// (tessel.params of examples::gemm<128, 256, 64>: 23 parameters, three of them descriptors;
/// persistent, stream-K workspace), without code: only the launch path's host side runs.
CompiledKernel cooperativeGemmKernel() {
  CompiledKernel k;
  k.name = "gemm";
  k.args = {{dtype::bf16, 2, true, false}, {dtype::bf16, 2, true, false}, {dtype::bf16, 2, false, true}};
  using K = ParamSpec::Kind;
  for (int a = 0; a < 3; ++a) {
    k.params.push_back({K::Pointer, a, 0});
    k.params.push_back({K::Size, a, 0});
    k.params.push_back({K::Size, a, 1});
    k.params.push_back({K::Stride, a, 0});
    k.params.push_back({K::Stride, a, 1});
  }
  k.params.push_back({K::TmaDescriptor, 0, 0, {64, 128, 1}, 128});
  k.params.push_back({K::TmaDescriptor, 1, 0, {64, 256, 1}, 128});
  ParamSpec store{K::TmaDescriptor, 2, 0, {64, 64, 1}, 128};
  store.store = true;
  k.params.push_back(store);
  k.params.push_back({K::TmaUsable, 2, 0});
  for (int d = 0; d < 3; ++d)
    k.params.push_back({K::GridDim, 0, d});
  k.params.push_back({K::Workspace, 0, 0});
  k.sizeContracts = {{0, 1, 1, 1, "", ""}, {0, 0, 2, 0, "", ""}, {1, 0, 2, 1, "", ""}};
  k.blockThreads = 384;
  k.dynamicSmemBytes = 229440;
  k.persistent = true;
  k.workspaceSlotBytes = 128 * 256 * 4;
  k.schedule = "cooperative";
  k.ptx = "// not assembled\n";
  return k;
}

// Informational (asserts no time): the host time per launch of tessel's own code for the call
// tessel-latency times on the GPU (tb::launch_gemm: ts::kernel::launch of three ts::views, the
// views made per call, 1024^3, a user stream), with the driver's functions stubbed out to a
// counter: the cached launch, and the launch with new arguments (C alternating between two
// buffers). Repeat with --gtest_repeat and take medians: this machine is shared.
TEST_F(CachedLaunch, HostOverheadOfTheLatencyBenchmarksLaunch) {
  static int launches = 0;
  driver.cuLaunchKernelEx = [](const CUlaunchConfig*, CUfunction, void**, void**) -> CUresult {
    ++launches;
    return CUDA_SUCCESS;
  };
  driver.cuStreamGetCtx = [](CUstream, CUcontext* c) -> CUresult {
    *c = fakeContext();
    return CUDA_SUCCESS;
  };
  driver.cuMemAlloc = [](CUdeviceptr* p, size_t) -> CUresult {
    *p = 0x7e0000000000;
    return CUDA_SUCCESS;
  };
  driver.cuMemsetD8 = [](CUdeviceptr, unsigned char, size_t) -> CUresult { return CUDA_SUCCESS; };
  driver.cuCtxSynchronize = []() -> CUresult { return CUDA_SUCCESS; };
  launches = 0;
  tessel::kernel k(runtime::makeKernel(cooperativeGemmKernel()), "gemm");
  void* stream = reinterpret_cast<void*>(std::uintptr_t(0x5000));
  const std::int64_t M = 1024, N = 1024, K = 1024;
  const void* A = fakeAddress(0x7f0000100000);
  const void* B = fakeAddress(0x7f0000300000);
  const void* C[2] = {fakeAddress(0x7f0000500000), fakeAddress(0x7f0000700000)};
  const grid g{M / 128, N / 256, 1};
  auto launch = [&](const void* c) {
    k.launch(stream, g, view<bf16>(A, {M, K}, {K, 1}), view<bf16>(B, {N, K}, {K, 1}), view<bf16>(c, {M, N}, {N, 1}));
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  constexpr int batches = 10, n = 10000;  // 1e5 launches each
  for (int i = 0; i < 1000; ++i)
    launch(C[0]);
  std::vector<double> cached;
  for (int b = 0; b < batches; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      launch(C[0]);
    cached.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n);
  }
  const int encodesBefore = calls.encodes;
  std::vector<double> full;
  for (int b = 0; b < batches; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      launch(C[(i + 1) % 2]);  // never the previous launch's C
    full.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n);
  }
  std::printf("tessel-latency's launch, driver stubbed (median of %d x %d launches): cached %.3f us, "
              "new arguments %.3f us per launch\n",
              batches, n, median(cached), median(full));
  EXPECT_EQ(launches, 1000 + 2 * batches * n);
  EXPECT_EQ(calls.encodes - encodesBefore, 3 * batches * n);  // every full-path launch encodes A, B, C
}

}  // namespace
