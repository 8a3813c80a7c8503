// errors_test.cpp - user errors at launch time on the GPU: each must be a tessel::error (never a
// crash, an abort or a silent wrong result), and the process and its CUDA context must stay usable:
// every test ends with a correct GEMM.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;
using tessel_gpu_test::cublas;
using tessel_gpu_test::device;

namespace {

const tb::tile_shape kTile{128, 128, 64};
constexpr std::int64_t M = 256, N = 384, K = 192;

ts::kernel& kernel() {
  static ts::kernel k = [] {
    ts::options o;
    o.schedule = ts::schedule::tma;
    o.stages = 3;
    return tb::jit_gemm(tb::gemm_variant::plain, kTile, o);
  }();
  return k;
}

/// Runs f, which must throw tessel::error; returns its message (printed for the log).
template <class F>
std::string expect_tessel_error(F&& f, const char* what) {
  try {
    f();
  } catch (const ts::error& e) {
    std::printf("  [%s] tessel::error: %s\n", what, e.what());
    EXPECT_STRNE(e.what(), "") << what << ": empty error message";
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a non-tessel exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << what << ": no tessel::error was thrown";
  return {};
}

/// The context is healthy and the kernel still computes the right thing, writing nothing outside
/// C (in padded rows inside a sentinel-filled buffer).
void expect_process_survives() {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the CUDA context is broken";
  tb::gemm_problem p(M, N, K, false, device(), 99, 1, 0);
  tb::guarded_output c(tb::guarded_matrix(M, N, tb::padded_ld(N)));
  c.reset();
  ASSERT_NO_THROW(
      tb::launch_gemm(kernel(), kTile, nullptr, p.A(0), p.B(0), c.data(), M, N, K, {}, c.layout().row_stride));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const tb::guard_report g = c.check();
  EXPECT_TRUE(g.ok()) << g.str();
  c.copy_to_dense(p.C(0));
  auto st = p.check_set0(cublas());
  EXPECT_TRUE(st.ok(1e-2)) << "after the error a correct launch gave: " << st.str();
}

struct buffers {
  tb::device_buffer a{std::size_t(M * K * 2 + 64)}, b{std::size_t(N * K * 2 + 64)}, c{std::size_t(M * N * 2 + 64)};
  buffers() {
    tb::fill_uniform_bf16(a.get(), a.bytes() / 2, 1);
    tb::fill_uniform_bf16(b.get(), b.bytes() / 2, 2);
    tb::poison_nan(c.get(), c.bytes());
    TB_CUDA(cudaDeviceSynchronize());
  }
};

}  // namespace

class LaunchErrors : public ::testing::Test {
protected:
  void SetUp() override {
    TESSEL_REQUIRE_GPU();
    ASSERT_NO_THROW(kernel()) << "tessel could not build the kernel";
  }
};

TEST_F(LaunchErrors, HostPointerIsRejected) {
  buffers d;
  std::vector<std::uint16_t> host_a(std::size_t(M * K), 0x3f80);  // 1.0 in bf16
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(host_a.data(), {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(d.c.get(), {M, N}));
        cudaDeviceSynchronize();
      },
      "host pointer as A");
  std::vector<std::uint16_t> host_c(std::size_t(M * N));
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(d.a.get(), {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(host_c.data(), {M, N}));
        cudaDeviceSynchronize();
      },
      "host pointer as C");
  expect_process_survives();
}

TEST_F(LaunchErrors, NullPointerIsRejected) {
  buffers d;
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(nullptr, {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(d.c.get(), {M, N}));
        cudaDeviceSynchronize();
      },
      "null A");
  expect_process_survives();
}

TEST_F(LaunchErrors, MisalignedPointerIsRejected) {
  buffers d;
  // An odd byte address is not even aligned to a bf16 element: always an error.
  const char* a_odd = static_cast<const char*>(d.a.get()) + 1;
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(a_odd, {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(d.c.get(), {M, N}));
        cudaDeviceSynchronize();
      },
      "A at an odd address");
  char* c_odd = static_cast<char*>(d.c.get()) + 1;
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(d.a.get(), {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(c_odd, {M, N}));
        cudaDeviceSynchronize();
      },
      "C at an odd address");
  expect_process_survives();
}

// Element-aligned but not 16-byte aligned: TMA cannot address it (globalAddress must be 16-byte
// aligned). tessel must either refuse with a tessel::error or (if it falls back to a schedule that
// needs no TMA) compute the right result; running TMA on it anyway would be wrong or fault.
TEST_F(LaunchErrors, ElementAlignedButNot16ByteAlignedIsRejectedOrCorrect) {
  buffers d;
  const char* a_2 = static_cast<const char*>(d.a.get()) + 2;
  struct variant {
    const char* what;
    const void* a;
    std::int64_t c_offset;  ///< elements past a 16-byte boundary (dense C inside a guarded buffer)
  };
  for (const variant& v : {variant{"A 2 bytes past a 16-byte boundary", a_2, 0},
                           variant{"C 8 bytes past a 16-byte boundary", d.a.get(), 4}}) {
    SCOPED_TRACE(v.what);
    // The reference of this A (copied to an aligned buffer for cuBLASLt).
    tb::device_buffer a_aligned(std::size_t(M * K * 2)), ref(std::size_t(M * N * 4));
    ASSERT_EQ(cudaMemcpy(a_aligned.get(), v.a, a_aligned.bytes(), cudaMemcpyDeviceToDevice), cudaSuccess);
    tb::lt_gemm g(cublas(), M, N, K, tb::out_type::f32);
    g.run(a_aligned.get(), d.b.get(), ref.get());
    tb::guarded_layout cl = tb::guarded_matrix(M, N, N);
    cl.front += v.c_offset;
    tb::guarded_output c(cl);
    c.reset();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    try {
      kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(v.a, {M, K}),
                      ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(c.data(), {M, N}));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the launch faulted";
      const tb::guard_report gr = c.check();
      EXPECT_TRUE(gr.ok()) << gr.str();
      auto st = tb::compare_bf16_f32(c.data(), ref.as<float>(), std::size_t(M * N));
      std::printf("  [%s] accepted; %s\n", v.what, st.str().c_str());
      EXPECT_TRUE(st.ok(1e-2)) << "accepted but wrong: " << st.str();
    } catch (const ts::error& e) {
      std::printf("  [%s] tessel::error: %s\n", v.what, e.what());
    }
  }
  expect_process_survives();
}

TEST_F(LaunchErrors, WrongRankDtypeOrArityIsRejected) {
  buffers d;
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(d.a.get(), {M * K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(d.c.get(), {M, N}));
      },
      "1-d view for the 2-d A");
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::f32>(d.a.get(), {M, K / 2}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}), ts::view<ts::bf16>(d.c.get(), {M, N}));
      },
      "f32 view for the bf16 A");
  expect_tessel_error(
      [&] {
        kernel().launch(nullptr, tb::gemm_grid(kTile, M, N), ts::view<ts::bf16>(d.a.get(), {M, K}),
                        ts::view<ts::bf16>(d.b.get(), {N, K}));
      },
      "two arguments for a three-argument kernel");
  expect_process_survives();
}
