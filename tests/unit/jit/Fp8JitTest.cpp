//===- Fp8JitTest.cpp - fp8 kernels through the JIT, no GPU --------------===//
//
// fp8 (ts::f8e4m3, ts::f8e5m2; docs/fp8.md) from the DSL to a cubin:
//   * the fp8 GEMM of examples/08_fp8_gemm in every TMA-fed schedule, with
//     each operand pairing, becomes wgmma m64nNk32 of those types (no
//     transpose immediates), its 1-byte operands loaded by TMA as UINT8
//     boxes of 128 x rows, 32 bytes of K per instruction;
//   * an fp8 output is stored through cvt.rn.satfinite, an fp8 input of an
//     elementwise kernel is widened through cvt.rn.f16x2.{e4m3,e5m2}x2;
//   * block scales (a scaled accumulation) in the consumer warpgroups;
//   * what cannot run is a tessel::error naming the rule, asserted verbatim:
//     schedule multistage, a BK other than 128, launch arguments TMA cannot
//     describe (the multistage variant they would take has no fp8).
//
//===----------------------------------------------------------------------===//

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "08_fp8_gemm/fp8_gemm.hpp"
#include "jit_error.hpp"
#include "scoped_env.hpp"

namespace ts = tessel;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

class Fp8Jit : public ::testing::Test {
protected:
  tessel_test::scoped_env fresh{"TESSEL_DISABLE_CACHE", "1"};
  tessel_test::scoped_env quiet{"TESSEL_FALLBACK", "quiet"};
};
using tessel_test::jit_error;
using tessel_test::launch_error;

TEST_F(Fp8Jit, EverySchedulePairsAnyFp8Types) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(examples::fp8_gemm<ts::f8e4m3, ts::f8e5m2, ts::bf16, 128, 128>{}, {.schedule = s});
    EXPECT_THAT(k.stage("schedule-mma"), HasSubstr("shape [64, 128, 32] k_steps 4"));
    const std::string ptx = k.stage("ptx");
    EXPECT_THAT(ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2"));
    EXPECT_THAT(ptx, Not(HasSubstr("k16")));
    // A and B: one 128-byte-swizzled box of 128 bytes x 128 rows each (rows clipped to the
    // tensor's at launch: ":r").
    EXPECT_THAT(k.stage("lower-to-nvvm"), HasSubstr("\"tma:0:128x128:128:r\", \"tma:1:128x128:128:r\""));
  }
  ts::kernel e5 = ts::jit(examples::fp8_gemm<ts::f8e5m2, ts::f8e4m3, ts::f32, 128, 256>{},
                          {.schedule = ts::schedule::cooperative});
  EXPECT_THAT(e5.stage("ptx"), HasSubstr("wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e4m3"));
}

TEST_F(Fp8Jit, ADualGemmFromFp8Weights) {
  // Both dots as one wgmma of N = 2 x BN, k32 (docs/dual-gemm.md).
  for (ts::schedule s : {ts::schedule::cooperative, ts::schedule::tma, ts::schedule::warp_specialized}) {
    SCOPED_TRACE(ts::to_string(s));
    EXPECT_THAT(ts::jit(examples::fp8_swiglu<128, 128>{}, {.schedule = s}).stage("ptx"),
                HasSubstr("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"));
  }
  EXPECT_THAT(ts::jit(examples::fp8_swiglu<64, 128>{}, {.schedule = ts::schedule::pingpong}).stage("ptx"),
              HasSubstr("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"));
}

// e4m3 -> e5m2 (through f32: an exact widening, one rounding).
struct recode {
  void operator()(ts::tensor<ts::f8e4m3, 2> X, ts::tensor<ts::f8e5m2, 2> Y) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 64_c, n = ts::program_id(1) * 64_c;
    Y.store({m, n}, ts::cast<ts::f8e5m2>(X.load({m, n}, 64_c, 64_c)));
  }
};

// fp8 element loads in an elementwise kernel (widened through cvt.rn.f16x2.e5m2x2).
struct widen {
  void operator()(ts::tensor<ts::f8e5m2, 2> X, ts::tensor<ts::f32, 2> Y) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 64_c, n = ts::program_id(1) * 64_c;
    Y.store({m, n}, ts::cast<ts::f32>(X.load({m, n}, 64_c, 64_c)) * 2.0f);
  }
};

TEST_F(Fp8Jit, AnFp8OutputIsStagedForTmaStores) {
  // tessel-lower-epilogue rule 1 with 1-byte elements: BN x 1 byte a multiple of 128 (128x128,
  // 128x256); each fragment pair converted by one cvt x2 and written with st.shared.b16.
  for (ts::schedule s : {ts::schedule::warp_specialized, ts::schedule::cooperative, ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, ts::f8e4m3, 128, 128>{}, {.schedule = s});
    EXPECT_THAT(k.stage("lower-epilogue"), HasSubstr("{hopper.store = \"tma_store\"}"));
    EXPECT_THAT(k.stage("lower-to-nvvm"), HasSubstr("\"tmastore:2:128x64:128\""));
    const std::string ptx = k.stage("ptx");
    EXPECT_THAT(ptx, HasSubstr("st.shared.b16"));
    EXPECT_THAT(ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  }
  // 192 bytes per row are not whole 128-byte chunks: stores from registers.
  EXPECT_THAT(ts::jit(examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, ts::f8e4m3, 128, 192>{},
                      {.schedule = ts::schedule::pingpong})
                  .stage("lower-epilogue"),
              HasSubstr("{hopper.store = \"registers\"}"));
}

TEST_F(Fp8Jit, RowwiseScalesInEverySchedule) {
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong}) {
    SCOPED_TRACE(ts::to_string(s));
    ts::kernel k = ts::jit(examples::fp8_gemm_rowwise<ts::f8e4m3, 128, 128>{}, {.schedule = s});
    EXPECT_THAT(k.stage("ptx"), HasSubstr("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"));
    EXPECT_THAT(k.stage("ptx"), HasSubstr("cvt.rn.satfinite.e4m3x2.f32"));
  }
}

// Block scales (fp8_gemm_blockwise, a scaled accumulation; docs/fp8.md): each k-step's wgmmas
// start from zero into a partial accumulator (scale-d = 0), the next k-step stays in flight while
// the previous one is added (wait_group 1), one fma per register; no wgmma serialisation and no
// spills. tma and multistage cannot run it, nor pingpong with 128 rows per consumer: tessel::errors
// naming the rule.
TEST_F(Fp8Jit, BlockScalesInTheConsumerWarpgroups) {
  struct cfg {
    ts::schedule s;
    int bm;
  };
  for (cfg c : {cfg{ts::schedule::warp_specialized, 128}, cfg{ts::schedule::cooperative, 128},
                cfg{ts::schedule::pingpong, 64}, cfg{ts::schedule::automatic, 128}}) {
    SCOPED_TRACE(std::string(ts::to_string(c.s)) + " " + std::to_string(c.bm));
    ts::kernel k = c.bm == 64 ? ts::jit(examples::fp8_gemm_blockwise<ts::bf16, 64, 128>{}, {.schedule = c.s})
                              : ts::jit(examples::fp8_gemm_blockwise<ts::bf16, 128, 128>{}, {.schedule = c.s});
    const std::string ptx = k.stage("ptx");
    EXPECT_THAT(ptx, HasSubstr("setp.ne.b32 p, 0, 0;\nwgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"));
    EXPECT_THAT(ptx, HasSubstr("wgmma.wait_group.sync.aligned \t1;"));
    EXPECT_THAT(ptx, HasSubstr("fma.rn.f32"));
    EXPECT_THAT(k.stage("ptxas.log"), Not(HasSubstr("C7514")));
    EXPECT_THAT(k.stage("ptxas.log"), HasSubstr("0 bytes spill stores"));
    if (c.s == ts::schedule::automatic)
      EXPECT_THAT(k.stage("select-schedule"), HasSubstr("kind = cooperative"));
  }
  // A factor that varies only along rows, (sa * sb).col(), is computed once per row coordinate
  // of the thread's fragments: one fma per accumulator element and almost no multiplies; written
  // as dot * sa.col() * sb, each element takes a multiply too (64 per k-step and thread).
  auto muls = [](const std::string& ptx) {
    std::size_t n = 0;
    for (const char* w : {"mul.f32", "mul.rn.f32"})
      for (std::size_t p = ptx.find(w); p != std::string::npos; p = ptx.find(w, p + 1)) ++n;
    return n;
  };
  const std::string row = ts::jit(examples::fp8_gemm_blockwise<ts::bf16, 128, 128>{}, {}).stage("ptx");
  const std::string two = ts::jit(examples::fp8_gemm_blockwise<ts::bf16, 128, 128, false>{}, {}).stage("ptx");
  EXPECT_LT(muls(row), 16u);
  EXPECT_GE(muls(two), 64u);
  EXPECT_THAT(jit_error(examples::fp8_gemm_blockwise<ts::bf16, 128, 128>{}, {.schedule = ts::schedule::tma}),
              HasSubstr("error: schedule 'tma' cannot scale each k-step's product (acc += dot(a, b) * s): use "
                        "'cooperative', 'pingpong' or 'warp_specialized'"));
  EXPECT_THAT(jit_error(examples::fp8_gemm_blockwise<ts::bf16, 128, 128>{}, {.schedule = ts::schedule::pingpong}),
              HasSubstr("error: a scaled accumulation (acc += dot(a, b) * s) keeps a partial accumulator beside the "
                        "tile's, 2 x BN / 2 f32 registers per thread and 64-row block: at most 128, i.e. 64 x 128 per "
                        "consumer warpgroup; schedule 'pingpong' with 128 x 128 gives each consumer 128 x 128 (use BN "
                        "<= 128, and BM = 64 for pingpong)"));
}

TEST_F(Fp8Jit, ConversionsUseTheHardwareCvt) {
  ts::kernel q = ts::jit(examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, ts::f8e4m3, 128, 192>{},
                         {.schedule = ts::schedule::pingpong});
  EXPECT_THAT(q.stage("ptx"), HasSubstr("cvt.rn.satfinite.e4m3x2.f32"));
  ts::kernel rt4 = ts::jit(examples::fp8_roundtrip<ts::f8e4m3, 64, 64>{});
  EXPECT_THAT(rt4.stage("ptx"), HasSubstr("cvt.rn.satfinite.e4m3x2.f32"));
  EXPECT_THAT(rt4.stage("ptx"), HasSubstr("cvt.rn.f16x2.e4m3x2"));
  ts::kernel rt5 = ts::jit(examples::fp8_roundtrip<ts::f8e5m2, 64, 64>{});
  EXPECT_THAT(rt5.stage("ptx"), HasSubstr("cvt.rn.satfinite.e5m2x2.f32"));
  EXPECT_THAT(rt5.stage("ptx"), HasSubstr("cvt.rn.f16x2.e5m2x2"));
  const std::string wd = ts::jit(widen{}).stage("ptx");
  EXPECT_THAT(wd, HasSubstr("ld.global.b8"));
  EXPECT_THAT(wd, HasSubstr("cvt.rn.f16x2.e5m2x2"));
  const std::string rc = ts::jit(recode{}).stage("ptx");
  EXPECT_THAT(rc, HasSubstr("cvt.rn.f16x2.e4m3x2"));
  EXPECT_THAT(rc, HasSubstr("cvt.rn.satfinite.e5m2x2.f32"));
}

// A scaled accumulation of bf16 operands (a per-k-step row scale): the same path as block-scaled
// fp8 (nothing in it is fp8-specific). Its launches whose tensors break TMA's rules have no
// fallback: schedule multistage cannot scale each k-step (a tessel::error naming the rule).
struct bf16_scaled {
  void operator()(ts::tensor<ts::bf16, 2> A, ts::tensor<ts::bf16, 2> B, ts::tensor<ts::f32, 2> S,
                  ts::tensor<ts::bf16, 2> C) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 128_c, 64_c).T()) * S.load({k / 64_c, m}, 128_c).col();
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

TEST_F(Fp8Jit, ScaledAccumulationsOfBf16) {
  ts::kernel k = ts::jit(bf16_scaled{}, {.schedule = ts::schedule::cooperative});
  EXPECT_THAT(k.stage("ptx"), HasSubstr("setp.ne.b32 p, 0, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  EXPECT_THAT(k.stage("ptxas.log"), Not(HasSubstr("C7514")));
  const void* fake = reinterpret_cast<const void*>(0x7f0000100000);
  // K = 36: rows of 72 bytes, which TMA cannot describe; the multistage fallback cannot scale.
  const std::string what =
      launch_error(k, ts::grid{1, 1}, ts::view<ts::bf16>(fake, {128, 36}), ts::view<ts::bf16>(fake, {128, 36}),
                   ts::view<ts::f32>(fake, {1, 128}), ts::view<ts::bf16>(fake, {128, 128}));
  EXPECT_THAT(what, HasSubstr("tessel: kernel 'bf16_scaled' (schedule cooperative) argument 0: stride of dimension 0 "
                              "is 36 elements = 72 bytes, not a multiple of 16 bytes (TMA requirement: pad it to a "
                              "multiple of 8 elements); the fallback to schedule multistage failed: "));
  EXPECT_THAT(what, HasSubstr("error: schedule 'multistage' cannot scale each k-step's product (acc += dot(a, b) * s): "
                              "use 'cooperative', 'pingpong' or 'warp_specialized'"));
}

// BK = 64 of fp8: 64-byte rows.
struct fp8_bk64 {
  void operator()(ts::tensor<ts::f8e4m3, 2> A, ts::tensor<ts::f8e4m3, 2> B, ts::tensor<ts::bf16, 2> C) const {
    using namespace ts::literals;
    auto m = ts::program_id(0) * 128_c, n = ts::program_id(1) * 128_c;
    auto acc = ts::zeros<ts::f32>(128_c, 128_c);
    for (auto k : ts::range(0, A.size(1), 64_c))
      acc += ts::dot(A.load({m, k}, 128_c, 64_c), B.load({n, k}, 128_c, 64_c).T());
    C.store({m, n}, ts::cast<ts::bf16>(acc));
  }
};

TEST_F(Fp8Jit, WhatCannotRunIsAClearError) {
  using k128 = examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, ts::bf16, 128, 128>;
  EXPECT_THAT(jit_error(k128{}, {.schedule = ts::schedule::multistage}),
              HasSubstr("error: schedule 'multistage' needs bf16 or f16 operands (mma.sync m16n8k16), got "
                        "'f8E4M3FN'"));
  EXPECT_THAT(jit_error(fp8_bk64{}, {.schedule = ts::schedule::cooperative}),
              HasSubstr("error: schedule 'cooperative' needs BK * sizeof(element) == 128 bytes (BK = 128 for "
                        "'f8E4M3FN'), got BK = 64"));
  // K = 40: rows of 40 bytes, which TMA cannot describe (16-byte multiples); the bounds-checked
  // multistage variant such launches take elsewhere has no fp8 path: a tessel::error naming the
  // argument and both rules, before any GPU is looked for.
  ts::kernel k = ts::jit(k128{}, {.schedule = ts::schedule::cooperative});
  const void* fake = reinterpret_cast<const void*>(0x7f0000100000);
  auto launch_error = [&](ts::tensor_arg a, ts::tensor_arg b) {
    return tessel_test::launch_error(k, ts::grid{1, 1}, a, b, ts::view<ts::bf16>(fake, {128, 128}), 1.0f);
  };
  const std::string fp8Rule =
      " tensor has no fallback (schedule multistage has no fp8 path): fp8 tensors must meet TMA's rules (16-byte "
      "aligned base, strides of 16-byte multiples, the last dimension contiguous)";
  EXPECT_THAT(launch_error(ts::view<ts::f8e4m3>(fake, {128, 40}), ts::view<ts::f8e4m3>(fake, {128, 40})),
              HasSubstr("(schedule cooperative) argument 0: stride of dimension 0 is 40 elements = 40 bytes, not a "
                        "multiple of 16 bytes (TMA requirement: pad it to a multiple of 16 elements); an f8e4m3" +
                        fp8Rule));
  // A column-major B (N-contiguous): wgmma reads fp8 only K-major.
  EXPECT_THAT(launch_error(ts::view<ts::f8e4m3>(fake, {128, 256}), ts::view<ts::f8e4m3>(fake, {128, 256}, {1, 128})),
              HasSubstr("(schedule cooperative) argument 1: innermost stride (dimension 1) must be 1, got 128: the "
                        "innermost dimension must be contiguous for TMA; an f8e4m3" +
                        fp8Rule));
}

TEST_F(Fp8Jit, AnEmptyKIsAClearError) {
  // K == 0 needs the multistage variant (TMA cannot describe an empty tensor), which has no fp8
  // path: a tessel::error that says why that variant, then its rule. The empty operands have the
  // default layout (ts::view gives {128, 0} strides {1, 1}, which once read as column-major and
  // named a variant 'multistage-L00_' "contiguous along dimension 0").
  using k128 = examples::fp8_gemm<ts::f8e4m3, ts::f8e4m3, ts::bf16, 128, 128>;
  ts::kernel k = ts::jit(k128{}, {.schedule = ts::schedule::cooperative});
  const void* fake = reinterpret_cast<const void*>(0x7f0000100000);
  const std::string what =
      launch_error(k, ts::grid{1, 1}, ts::view<ts::f8e4m3>(fake, {128, 0}), ts::view<ts::f8e4m3>(fake, {128, 0}),
                   ts::view<ts::bf16>(fake, {128, 128}), 1.0f);
  EXPECT_THAT(what, ::testing::StartsWith("tessel: kernel '" + k.name() +
                                          "' (schedule cooperative): argument 0 has size 0 along dimension 1 (K == "
                                          "0 for a GEMM's operands), and TMA cannot describe an empty tensor: the "
                                          "launch needs the schedule multistage variant, which cannot be built for "
                                          "this kernel:\n"));
  EXPECT_THAT(what, HasSubstr("error: schedule 'multistage' needs bf16 or f16 operands (mma.sync m16n8k16), got "
                              "'f8E4M3FN'"));
  EXPECT_THAT(what, Not(HasSubstr("contiguous along dimension")));
}

}  // namespace
