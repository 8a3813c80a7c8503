//===- GpuLaunchTest.cpp - the launch path on a real GPU -------------------===//
//
// Hand-written sm_90a kernels go through the whole runtime: module loading
// (cubin and driver JIT), parameter building with a host-encoded TMA
// descriptor, the >48 KiB dynamic shared memory attribute, cluster launch,
// and the checks that need the driver (host pointers, architecture, shared
// memory limit, PTX parameter list). Every test skips, with the reason, where
// no GPU is usable (CI).
//
//===----------------------------------------------------------------------===//

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TestSupport.h"
#include "tessel/Runtime/CudaDriver.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/Runtime/Ptxas.h"

using namespace tessel;
using namespace tessel::testing;
using runtime::checkCuda;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

const runtime::CudaDriver& drv() { return *runtime::cudaDriver(); }

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!detail::gpu_available(&why))
      GTEST_SKIP() << "no GPU: " << why;
    runtime::ensureContext();
  }
};

/// Device memory for one test.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { checkCuda(drv().cuMemAlloc(&ptr, n), "cuMemAlloc"); }
  ~DeviceBuffer() {
    if (ptr)
      drv().cuMemFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return reinterpret_cast<void*>(ptr); }
  template <typename T> void upload(const std::vector<T>& h) {
    checkCuda(drv().cuMemcpyHtoD(ptr, h.data(), h.size() * sizeof(T)), "cuMemcpyHtoD");
  }
  template <typename T> std::vector<T> download(size_t count) const {
    std::vector<T> h(count);
    checkCuda(drv().cuMemcpyDtoH(h.data(), ptr, count * sizeof(T)), "cuMemcpyDtoH");
    return h;
  }
};

std::string assemble(const char* ptx) {
  std::string where;
  if (!runtime::ptxasAvailable(&where))
    return {};  // the driver JIT then compiles the PTX
  return runtime::compilePtxToCubin(ptx, "sm_90a", nullptr);
}

/// tma_copy(in: f32 rows x cols via TMA, out: f32 rows x cols, flag: i32[1]).
CompiledKernel tmaCopyKernel(bool cubin, unsigned dynamicSmem) {
  CompiledKernel k;
  k.name = "tma_copy";
  k.args = {{dtype::f32, 2, true}, {dtype::f32, 2, false}, {dtype::i32, 1, false}};
  k.params = {{ParamSpec::Kind::TmaDescriptor, 0, 0, {16, 8, 1}, 0},
              {ParamSpec::Kind::Pointer, 1, 0},
              {ParamSpec::Kind::Size, 0, 0},
              {ParamSpec::Kind::Size, 0, 1},
              {ParamSpec::Kind::Stride, 1, 0},
              {ParamSpec::Kind::Pointer, 2, 0}};
  k.blockThreads = 128;
  k.dynamicSmemBytes = dynamicSmem;
  k.ptx = kTmaCopyPtx;
  if (cubin)
    k.cubin = assemble(kTmaCopyPtx);
  return k;
}

CompiledKernel clusterKernel(std::array<unsigned, 3> cluster) {
  CompiledKernel k;
  k.name = "cluster_info";
  k.args = {{dtype::i32, 1, false}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}};
  k.blockThreads = 32;
  k.cluster = cluster;
  k.ptx = kClusterInfoPtx;
  k.cubin = assemble(kClusterInfoPtx);
  return k;
}

CompiledKernel addOneKernel() {
  CompiledKernel k;
  k.name = "add_one";
  k.args = {{dtype::f32, 1, false}};
  k.params = {{ParamSpec::Kind::Pointer, 0, 0}, {ParamSpec::Kind::Size, 0, 0}};
  k.blockThreads = 128;
  k.ptx = kAddOnePtx;
  k.cubin = assemble(kAddOnePtx);
  return k;
}

constexpr std::int64_t kRows = 37, kCols = 45, kLd = 48;  // 48 f32 = 192 bytes

struct TmaCopyCase {
  bool cubin;
  unsigned smem;
  friend void PrintTo(const TmaCopyCase& c, std::ostream* os) {
    *os << (c.cubin ? "cubin" : "driver JIT") << ", " << c.smem << " bytes of dynamic shared memory";
  }
};

class TmaCopy : public Gpu, public ::testing::WithParamInterface<TmaCopyCase> {};

TEST_P(TmaCopy, CopiesThroughAHostEncodedDescriptor) {
  auto kernel = runtime::makeKernel(tmaCopyKernel(GetParam().cubin, GetParam().smem));
  // Random-ish non-zero input; the padding columns hold -7, which must never
  // be read (globalDim is 45 columns, not 48).
  std::vector<float> in(kRows * kLd, -7.0f);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c)
      in[r * kLd + c] = 1.0f + static_cast<float>((r * 131 + c * 17) % 97) * 0.25f;
  DeviceBuffer dIn(in.size() * 4), dOut(kRows * kCols * 4), dFlag(4);
  dIn.upload(in);
  dOut.upload(std::vector<float>(kRows * kCols, std::nanf("")));
  dFlag.upload(std::vector<int>{0});

  std::vector<tensor_arg> args = {tensor2d(dtype::f32, dIn.get(), kRows, kCols, kLd),
                                  tensor2d(dtype::f32, dOut.get(), kRows, kCols, kCols),
                                  tensor1d(dtype::i32, dFlag.get(), 1)};
  grid g{static_cast<unsigned>((kCols + 15) / 16), static_cast<unsigned>((kRows + 7) / 8), 1};
  detail::launch(*kernel, nullptr, g, args);
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");

  std::vector<float> out = dOut.download<float>(kRows * kCols);
  int mismatches = 0;
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c)
      if (out[r * kCols + c] != in[r * kLd + c] && mismatches++ < 5)
        ADD_FAILURE() << "out[" << r << "][" << c << "] = " << out[r * kCols + c] << ", expected "
                      << in[r * kLd + c];
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(dFlag.download<int>(1)[0], 0) << "an out-of-bounds element of the TMA box was not zero";

  // Twice, identical (and the second launch reuses the loaded module).
  dOut.upload(std::vector<float>(kRows * kCols, std::nanf("")));
  detail::launch(*kernel, nullptr, g, args);
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  EXPECT_EQ(dOut.download<float>(kRows * kCols), out);

  // The cached launch (the same arguments) must not keep a descriptor of the old input when the
  // input pointer changes: another buffer with other values is copied.
  std::vector<float> in2(in.size(), -7.0f);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c)
      in2[r * kLd + c] = 100.0f + static_cast<float>(r * kCols + c);
  DeviceBuffer dIn2(in2.size() * 4);
  dIn2.upload(in2);
  std::vector<tensor_arg> args2 = args;
  args2[0].data = dIn2.get();
  detail::launch(*kernel, nullptr, g, args2);
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<float> out2 = dOut.download<float>(kRows * kCols);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kCols; ++c)
      if (out2[r * kCols + c] != in2[r * kLd + c] && mismatches++ < 5)
        ADD_FAILURE() << "second input: out[" << r << "][" << c << "] = " << out2[r * kCols + c];
  // And back to the first one.
  detail::launch(*kernel, nullptr, g, args);
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  EXPECT_EQ(dOut.download<float>(kRows * kCols), out);
}

INSTANTIATE_TEST_SUITE_P(Runtime, TmaCopy,
                         ::testing::Values(TmaCopyCase{true, 2048}, TmaCopyCase{true, 64 * 1024},
                                           TmaCopyCase{false, 2048}, TmaCopyCase{false, 100 * 1024}),
                         [](const auto& info) {
                           return std::string(info.param.cubin ? "cubin" : "driverJit") + "_smem" +
                                  std::to_string(info.param.smem);
                         });

TEST_F(Gpu, ClusterDimensionsReachTheKernel) {
  for (unsigned c : {1u, 2u, 4u}) {
    auto kernel = runtime::makeKernel(clusterKernel({c, 1, 1}));
    DeviceBuffer out(8 * 2 * 4);
    out.upload(std::vector<int>(16, -1));
    tensor_arg a = tensor1d(dtype::i32, out.get(), 16);
    detail::launch(*kernel, nullptr, {8, 1, 1}, std::span(&a, 1));
    checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
    std::vector<int> h = out.download<int>(16);
    for (unsigned cta = 0; cta < 8; ++cta) {
      EXPECT_EQ(h[2 * cta], static_cast<int>(c)) << "cluster " << c << ", CTA " << cta;
      EXPECT_EQ(h[2 * cta + 1], static_cast<int>(cta % c)) << "cluster " << c << ", CTA " << cta;
    }
  }
}

TEST_F(Gpu, RejectsHostAndFreedMemory) {
  auto kernel = runtime::makeKernel(addOneKernel());
  std::vector<float> host(256, 0.0f);
  tensor_arg a = tensor1d(dtype::f32, host.data(), 256);
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: kernel 'add_one' argument 0: data pointer 0x"),
                                                 HasSubstr("is not CUDA device memory"))));

  void* pinned = nullptr;
  checkCuda(drv().cuMemAllocHost(&pinned, 1024), "cuMemAllocHost");
  a.data = pinned;
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(HasSubstr("argument 0: data pointer")));
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(HasSubstr("is page-locked host memory")));
  drv().cuMemFreeHost(pinned);

  CUdeviceptr freed = 0;
  checkCuda(drv().cuMemAlloc(&freed, 1 << 20), "cuMemAlloc");
  checkCuda(drv().cuMemFree(freed), "cuMemFree");
  a.data = reinterpret_cast<void*>(freed);
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(HasSubstr("is not CUDA device memory")));

  // The process and the context are fine afterwards.
  DeviceBuffer ok(256 * 4);
  ok.upload(std::vector<float>(256, 1.0f));
  a.data = ok.get();
  detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1));
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  EXPECT_EQ(ok.download<float>(256), std::vector<float>(256, 2.0f));
}

// The cached launch (Kernel.cpp launchCached): a launch with the arguments of the previous one
// reuses its parameters; any change (size, pointer, grid) takes the full path, whose checks and
// messages are unchanged.
TEST_F(Gpu, CachedLaunchFollowsEveryChange) {
  auto kernel = runtime::makeKernel(addOneKernel());
  DeviceBuffer buf(256 * 4), other(256 * 4);
  buf.upload(std::vector<float>(256, 0.0f));
  other.upload(std::vector<float>(256, 10.0f));
  tensor_arg a = tensor1d(dtype::f32, buf.get(), 200);
  for (int i = 0; i < 3; ++i)
    detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1));  // 1 full, 2 cached
  a.sizes[0] = 256;
  detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1));
  a.data = other.get();
  detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1));
  detail::launch(*kernel, nullptr, {1, 1, 1}, std::span(&a, 1));  // only the first 128
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<float> h = buf.download<float>(256), o = other.download<float>(256);
  EXPECT_EQ(h[0], 4.0f);
  EXPECT_EQ(h[199], 4.0f);
  EXPECT_EQ(h[200], 1.0f);
  EXPECT_EQ(o[0], 12.0f);
  EXPECT_EQ(o[255], 11.0f);

  // A host pointer after cached launches: the same error as ever.
  std::vector<float> host(256, 0.0f);
  a.data = host.data();
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: kernel 'add_one' argument 0: data pointer 0x"),
                                                 HasSubstr("is not CUDA device memory"))));
  // A host-side rule too (a wrong dtype), with the cached arguments one field away.
  a.data = buf.get();
  a.type = dtype::i32;
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(HasSubstr("argument 0: expected dtype f32, got i32")));
}

TEST_F(Gpu, EmptyArgumentsLaunchNothing) {
  auto kernel = runtime::makeKernel(tmaCopyKernel(true, 2048));
  DeviceBuffer dOut(4 * 4), dFlag(4);
  dOut.upload(std::vector<float>(4, 3.0f));
  std::vector<tensor_arg> args = {tensor2d(dtype::f32, nullptr, 0, kCols, kLd),
                                  tensor2d(dtype::f32, dOut.get(), 2, 2, 2), tensor1d(dtype::i32, dFlag.get(), 1)};
  EXPECT_NO_THROW(detail::launch(*kernel, nullptr, {1, 1, 1}, args));
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  EXPECT_EQ(dOut.download<float>(4), std::vector<float>(4, 3.0f));
}

TEST_F(Gpu, ArchitectureMismatchIsExplained) {
  CompiledKernel k = addOneKernel();
  k.arch = "sm_100a";
  auto kernel = runtime::makeKernel(k);
  DeviceBuffer buf(1024);
  tensor_arg a = tensor1d(dtype::f32, buf.get(), 256);
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(AllOf(HasSubstr("tessel: kernel 'add_one' was compiled for sm_100a, but device "),
                                                 HasSubstr("cannot run it"))));
}

TEST_F(Gpu, SharedMemoryLimit) {
  auto kernel = runtime::makeKernel(tmaCopyKernel(true, 300 * 1024));
  DeviceBuffer dIn(kRows * kLd * 4), dOut(kRows * kCols * 4), dFlag(4);
  std::vector<tensor_arg> args = {tensor2d(dtype::f32, dIn.get(), kRows, kCols, kLd),
                                  tensor2d(dtype::f32, dOut.get(), kRows, kCols, kCols),
                                  tensor1d(dtype::i32, dFlag.get(), 1)};
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {3, 5, 1}, args); },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "tessel: kernel 'tma_copy': out of resource: shared memory, required 307200 bytes")));
}

TEST_F(Gpu, ParameterListMismatchIsAnInternalError) {
  if (!drv().cuFuncGetParamInfo)
    GTEST_SKIP() << "the driver has no cuFuncGetParamInfo (CUDA < 12.4)";
  CompiledKernel k = addOneKernel();
  k.params.push_back({ParamSpec::Kind::Size, 0, 0});
  auto kernel = runtime::makeKernel(k);
  DeviceBuffer buf(1024);
  tensor_arg a = tensor1d(dtype::f32, buf.get(), 256);
  EXPECT_THAT([&] { detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1)); },
              ThrowsMessage<tessel::error>(HasSubstr(
                  "tessel: internal error: kernel 'add_one' has 2 parameters, the runtime passes 3")));
}

TEST_F(Gpu, DebugModeSynchronizes) {
  ScopedEnv debug("TESSEL_DEBUG", "1");
  auto kernel = runtime::makeKernel(addOneKernel());
  DeviceBuffer buf(256 * 4);
  buf.upload(std::vector<float>(256, 0.5f));
  tensor_arg a = tensor1d(dtype::f32, buf.get(), 200);
  detail::launch(*kernel, nullptr, {2, 1, 1}, std::span(&a, 1));
  std::vector<float> h = buf.download<float>(256);
  EXPECT_EQ(h[0], 1.5f);
  EXPECT_EQ(h[199], 1.5f);
  EXPECT_EQ(h[200], 0.5f);  // n = 200 reached the kernel
}

TEST_F(Gpu, ConcurrentLaunchesFromThreadsWithoutAContext) {
  auto kernel = runtime::makeKernel(addOneKernel());
  constexpr int kThreads = 4, kLaunches = 50;
  DeviceBuffer buf(kThreads * 128 * 4);
  buf.upload(std::vector<float>(kThreads * 128, 0.0f));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        // A fresh thread has no current context: the runtime makes the
        // primary context current.
        tensor_arg a = tensor1d(dtype::f32, static_cast<float*>(buf.get()) + t * 128, 128);
        for (int i = 0; i < kLaunches; ++i)
          detail::launch(*kernel, nullptr, {1, 1, 1}, std::span(&a, 1));
        checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads)
    th.join();
  for (const std::string& e : errors)
    EXPECT_EQ(e, "");
  EXPECT_EQ(buf.download<float>(kThreads * 128), std::vector<float>(kThreads * 128, float(kLaunches)));
}

TEST_F(Gpu, LaunchOverhead) {
  // Informational: host time per launch including validation and the pointer
  // queries, against a bare cuLaunchKernelEx of the same function.
  auto kernel = runtime::makeKernel(addOneKernel());
  DeviceBuffer buf(1024 * 4);
  buf.upload(std::vector<float>(1024, 0.0f));
  tensor_arg a = tensor1d(dtype::f32, buf.get(), 1024);
  detail::launch(*kernel, nullptr, {8, 1, 1}, std::span(&a, 1));
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  constexpr int n = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    detail::launch(*kernel, nullptr, {8, 1, 1}, std::span(&a, 1));
  auto t1 = std::chrono::steady_clock::now();
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");

  CUcontext ctx = runtime::ensureContext();
  CUfunction fn = static_cast<CUfunction>(kernel->functionFor(ctx));
  std::uint64_t p = buf.ptr, count = 1024;
  void* params[] = {&p, &count};
  CUlaunchConfig cfg{};
  cfg.gridDimX = 8;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  auto t2 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    checkCuda(drv().cuLaunchKernelEx(&cfg, fn, params, nullptr), "cuLaunchKernelEx");
  auto t3 = std::chrono::steady_clock::now();
  checkCuda(drv().cuCtxSynchronize(), "cuCtxSynchronize");
  double ours = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
  double bare = std::chrono::duration<double, std::micro>(t3 - t2).count() / n;
  std::printf("launch: tessel %.2f us, bare cuLaunchKernelEx %.2f us\n", ours, bare);
  EXPECT_EQ(buf.download<float>(1)[0], float(2 * n + 1));
}

}  // namespace
