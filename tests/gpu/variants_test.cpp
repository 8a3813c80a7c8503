// variants_test.cpp - launch-time kernel variants on the GPU (kernel_impl::select):
//
//  * TmaFallback: arguments that break TMA's rules (A or B one element past a 16-byte boundary,
//    K odd so that row strides are not multiples of 16 bytes, column-major operands, operands
//    with no unit-stride dimension) given to kernels of every TMA schedule must run correctly
//    through the schedule `multistage` variant, and say so on stderr with one
//    "tessel: note: ..." line naming the argument and the rule.
//  * StridedOutput: C column-major, column-major with a padded leading dimension, with no
//    unit-stride dimension, one element past a 16-byte boundary, and row-major in rows padded by
//    1 or 8 elements, in every schedule (C goes through the register path or the TMA-store
//    epilogue's copy-out path with the real strides); no fallback, no note.
//  * GraphCapture: kernel::prepare, then the launch captured into a CUDA graph, which runs and
//    computes C (the kernel ts::jit compiled in four schedules with whole tiles, and the
//    multistage fallback; with prepare(stream, ...), stream-K and clustered kernels too).
//  * FallbackKnob: TESSEL_FALLBACK=error makes the fallback a tessel::error (the process and the
//    kernel stay usable), TESSEL_FALLBACK=quiet silences the note.
//
// Each case: random bf16 inputs in [-1, 1) laid out with the case's strides inside buffers whose
// unused elements are NaN (a kernel that reads the wrong element produces NaN); C laid out with its
// strides inside a sentinel-filled buffer and poisoned with NaN (bench_util.h, guarded_output):
// every element of C is compared with a CPU reference in double, and nothing in C's buffer outside
// C may change. Every test jits its own kernel (TESSEL_DISABLE_CACHE) so that the once-per-kernel
// note is always expected.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "scoped_env.hpp"
#include "bench_util.h"
#include "gpu_test_util.hpp"
#include "tessel_gemm.hpp"

namespace ts = tessel;
namespace tb = tessel_bench;

namespace {

constexpr std::uint16_t kInputPoison = 0x7fc0;  // bf16 quiet NaN in unused input elements

using tessel_test::scoped_env;

/// A 2-d bf16 tensor on the host and the device: `rows x cols` at element offset `offset` of a
/// buffer, element (r, c) at offset + r*s0 + c*s1.
struct strided {
  std::int64_t rows = 0, cols = 0, s0 = 0, s1 = 0, offset = 0;
  std::vector<std::uint16_t> host;  // the whole buffer
  tb::device_buffer dev;

  strided(std::int64_t r, std::int64_t c, std::int64_t stride0, std::int64_t stride1, std::int64_t off,
          std::uint16_t fill)
      : rows(r), cols(c), s0(stride0), s1(stride1), offset(off) {
    std::int64_t span = offset + (rows - 1) * s0 + (cols - 1) * s1 + 1;
    host.assign(std::size_t(span + 8), fill);
    dev = tb::device_buffer(host.size() * 2);
  }
  std::size_t at(std::int64_t r, std::int64_t c) const { return std::size_t(offset + r * s0 + c * s1); }
  void upload() { TB_CUDA(cudaMemcpy(dev.get(), host.data(), host.size() * 2, cudaMemcpyHostToDevice)); }
  const void* data() const { return static_cast<const char*>(dev.get()) + offset * 2; }
  ts::tensor_arg view() const { return ts::view<ts::bf16>(data(), {rows, cols}, {s0, s1}); }
};

/// How an operand or C is laid out.
struct layout {
  const char* name;
  int kind;  // 0 row-major, 1 column-major, 2 no unit stride (every other element of a row-major one)
  std::int64_t pad = 0;     // extra elements per leading dimension
  std::int64_t offset = 0;  // base offset in elements
};

strided make(const layout& l, std::int64_t rows, std::int64_t cols, std::uint16_t fill) {
  switch (l.kind) {
  case 1:
    return strided(rows, cols, 1, rows + l.pad, l.offset, fill);
  case 2:
    return strided(rows, cols, 2 * (cols + l.pad), 2, l.offset, fill);
  default:
    return strided(rows, cols, cols + l.pad, 1, l.offset, fill);
  }
}

/// C laid out as `l` inside a guarded buffer, 48 bytes (16-byte aligned) plus l.offset elements in.
tb::guarded_layout guarded(const layout& l, std::int64_t rows, std::int64_t cols) {
  tb::guarded_layout g;
  g.rows = rows;
  g.cols = cols;
  switch (l.kind) {
  case 1:
    g.row_stride = 1;
    g.col_stride = rows + l.pad;
    break;
  case 2:
    g.row_stride = 2 * (cols + l.pad);
    g.col_stride = 2;
    break;
  default:
    g.row_stride = cols + l.pad;
    g.col_stride = 1;
  }
  g.front = 24 + l.offset;
  g.back = 128;
  return g;
}

void fill_random(strided& t, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::int64_t r = 0; r < t.rows; ++r)
    for (std::int64_t c = 0; c < t.cols; ++c) {
      std::uint16_t h;
      do h = tb::float_to_bf16(u(rng));
      while (h == 0 || h == 0x8000);  // never zero
      t.host[t.at(r, c)] = h;
    }
}

const tb::tile_shape kTile{128, 128, 64};  // every schedule takes it (pingpong: at most 128x128)

struct result {
  std::string stderr_text;
  std::string error;  // tessel::error message, "" when launched
};

/// C = A @ B^T with the given layouts and kernel; checks every element of C and the guards
/// around it. Returns what the launch printed on stderr.
/// With `graph`: kernel::prepare first (its stderr is the result's; the choice in *choice), then
/// the launch is captured into a CUDA graph on a new stream (cudaStreamCaptureModeGlobal), and the
/// graph runs. With `on_stream` too, prepare is kernel::prepare(stream, ...) on that stream.
result run_and_check(ts::kernel& k, std::int64_t M, std::int64_t N, std::int64_t K, const layout& la,
                     const layout& lb, const layout& lc, bool expect_launch = true, bool graph = false,
                     ts::launch_choice* choice = nullptr, bool on_stream = false) {
  strided A = make(la, M, K, kInputPoison), B = make(lb, N, K, kInputPoison);
  tb::guarded_output C(guarded(lc, M, N));
  fill_random(A, 1000 + M + K);
  fill_random(B, 2000 + N + K);
  A.upload();
  B.upload();
  C.reset();

  result out;
  ::testing::internal::CaptureStderr();
  const ts::tensor_arg c_view = ts::view<ts::bf16>(C.data(), {M, N}, {C.layout().row_stride, C.layout().col_stride});
  cudaStream_t stream = nullptr;
  cudaGraph_t captured = nullptr;
  cudaGraphExec_t exec = nullptr;
  try {
    if (graph) {
      TB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      const ts::grid g = tb::gemm_grid(kTile, M, N);
      ts::launch_choice c = on_stream ? k.prepare(stream, g, A.view(), B.view(), c_view)
                                      : k.prepare(g, A.view(), B.view(), c_view);
      if (choice) *choice = c;
      TB_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    }
    k.launch(stream, tb::gemm_grid(kTile, M, N), A.view(), B.view(), c_view);
  } catch (const std::exception& e) {  // a tessel::error, or a failing CUDA call of the test's
    out.error = e.what();
  }
  if (graph && stream) {
    const cudaError_t end = cudaStreamEndCapture(stream, &captured);
    EXPECT_EQ(end, cudaSuccess) << "the capture: " << cudaGetErrorString(end);
    if (end == cudaSuccess && out.error.empty()) {
      EXPECT_EQ(cudaGraphInstantiate(&exec, captured, 0), cudaSuccess);
      EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (captured) cudaGraphDestroy(captured);
    cudaStreamDestroy(stream);
  }
  out.stderr_text = ::testing::internal::GetCapturedStderr();
  std::printf("%s", out.stderr_text.c_str());
  if (!out.error.empty()) {
    std::printf("  tessel::error: %s\n", out.error.c_str());
    EXPECT_FALSE(expect_launch) << "launch failed: " << out.error;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return out;
  }
  EXPECT_TRUE(expect_launch) << "the launch was expected to throw";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  const tb::guard_report g = C.check();
  EXPECT_TRUE(g.ok()) << lc.name << ": " << g.str();

  int bad = 0;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (std::int64_t kk = 0; kk < K; ++kk)
        want += double(tb::bf16_to_float(A.host[A.at(m, kk)])) * double(tb::bf16_to_float(B.host[B.at(n, kk)]));
      double got = tb::bf16_to_float(std::uint16_t(C.bits(0, m, n)));
      double tol = tessel_gpu_test::sample_tol(want, K);
      if (!(std::fabs(got - want) <= tol) && bad++ < 8)
        ADD_FAILURE() << "C[" << m << "][" << n << "] = " << got << ", CPU reference " << want << " (tol " << tol
                      << ")";
    }
  EXPECT_EQ(bad, 0) << bad << " of " << M * N << " elements of C are wrong";
  return out;
}

ts::kernel jit(ts::schedule s) {
  ts::options o;
  o.schedule = s;
  o.stages = 3;
  return tb::jit_gemm(tb::gemm_variant::plain, kTile, o);
}

const layout kRow{"row", 0};

// ---- TMA fallback ------------------------------------------------------------------------------

struct fallback_case {
  const char* name;
  std::int64_t K;
  layout a, b;
  const char* argument;  // expected in the note: "argument 0"
  const char* rule;      // expected in the note
  /// false: a layout the lowering may learn to load with TMA (tessel.contiguous_dim); then there
  /// is no fallback and no note, and only the result is checked.
  bool note_required = true;
};

const fallback_case kFallbackCases[] = {
    {"A_offset_1", 96, {"A+1", 0, 0, 1}, kRow, "argument 0", "is not 16-byte aligned"},
    {"B_offset_1", 96, kRow, {"B+1", 0, 0, 1}, "argument 1", "is not 16-byte aligned"},
    {"K_odd", 99, kRow, kRow, "argument 0", "not a multiple of 16 bytes"},
    {"A_pad_1", 96, {"A pad 1", 0, 1, 0}, kRow, "argument 0", "not a multiple of 16 bytes"},
    {"A_col_major", 96, {"A col", 1}, kRow, "argument 0", "must be 1, got", false},
    {"B_col_major", 96, kRow, {"B col", 1}, "argument 1", "must be 1, got", false},
    {"A_no_unit_stride", 96, {"A stride 2", 2}, kRow, "argument 0", "no dimension of size > 1 has stride 1"},
};

void PrintTo(const fallback_case& c, std::ostream* os) { *os << c.name << " (K " << c.K << ")"; }

using fallback_param = std::tuple<ts::schedule, fallback_case>;

class TmaFallback : public ::testing::TestWithParam<fallback_param> {};

TEST_P(TmaFallback, RunsCorrectlyThroughMultistageAndSaysSo) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, c] = GetParam();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");  // a new kernel: its note is not printed yet
  scoped_env policy("TESSEL_FALLBACK", nullptr);
  ts::kernel k = jit(schedule);
  result r = run_and_check(k, 200, 136, c.K, c.a, c.b, kRow);
  ASSERT_EQ(r.error, "");
  if (!c.note_required && r.stderr_text.empty()) {
    std::printf("  (no fallback: the schedule loads this layout with TMA)\n");
    return;
  }
  EXPECT_NE(r.stderr_text.find("tessel: note: kernel '" + k.name() + "'"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(c.argument), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(c.rule), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("launching the schedule multistage variant instead"), std::string::npos)
      << r.stderr_text;
  // Once per kernel and reason: the second launch is silent (and still right).
  result again = run_and_check(k, 200, 136, c.K, c.a, c.b, kRow);
  EXPECT_EQ(again.stderr_text, "");
  // Arguments that meet TMA's rules still run on the TMA kernel, correctly.
  result aligned = run_and_check(k, 200, 136, 96, kRow, kRow, kRow);
  EXPECT_EQ(aligned.stderr_text, "");
}

std::string fallback_name(const ::testing::TestParamInfo<fallback_param>& info) {
  return std::string(tb::schedule_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Schedules, TmaFallback,
                         ::testing::Combine(::testing::Values(ts::schedule::automatic, ts::schedule::tma,
                                                              ts::schedule::warp_specialized,
                                                              ts::schedule::cooperative, ts::schedule::pingpong),
                                            ::testing::ValuesIn(kFallbackCases)),
                         fallback_name);

// ---- CUDA graphs ---------------------------------------------------------------------------------

// kernel::prepare compiles the variant a launch needs (and, on a thread with a current context,
// loads its module), so that the launch inside a stream capture does only what every launch does:
// check, encode the TMA descriptors, enqueue. The captured graph must compute C. Whole tiles:
// a stream-K kernel's first launch on a stream allocates the stream's workspace, which no capture
// may contain (README, Schedules).

/// The jit() kernel with whole tiles (no stream-K workspace).
ts::kernel jit_whole_tiles(ts::schedule s) {
  ts::options o;
  o.schedule = s;
  o.stages = 3;
  o.decomposition = ts::decomposition::data_parallel;
  return tb::jit_gemm(tb::gemm_variant::plain, kTile, o);
}

TEST(GraphCapture, APreparedKernelRunsInACapturedGraph) {
  TESSEL_REQUIRE_GPU();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");
  for (ts::schedule s : {ts::schedule::tma, ts::schedule::warp_specialized, ts::schedule::cooperative,
                         ts::schedule::pingpong}) {
    SCOPED_TRACE(tb::schedule_name(s));
    ts::kernel k = jit_whole_tiles(s);
    ts::launch_choice c;
    result r = run_and_check(k, 200, 136, 96, kRow, kRow, kRow, true, /*graph=*/true, &c);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.stderr_text, "");
    EXPECT_FALSE(c.fallback);
  }
}

TEST(GraphCapture, APreparedFallbackRunsInACapturedGraph) {
  TESSEL_REQUIRE_GPU();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");
  scoped_env policy("TESSEL_FALLBACK", nullptr);
  ts::kernel k = jit_whole_tiles(ts::schedule::cooperative);
  ts::launch_choice c;
  result r = run_and_check(k, 200, 136, 96, {"A+1", 0, 0, 1}, kRow, kRow, true, /*graph=*/true, &c);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.variant, "multistage");
  EXPECT_EQ(c.resources.schedule, "multistage");
  // The note comes from prepare, once.
  EXPECT_NE(r.stderr_text.find("argument 0: data address"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("launching the schedule multistage variant instead"), std::string::npos);
}

// kernel::prepare(stream, ...) also makes what a stream-K kernel's first launch on a stream
// allocates (its workspace) and what a clustered persistent kernel's first launch queries (the
// co-resident clusters): every kernel's launch can then be captured.
TEST(GraphCapture, AStreamPreparedKernelOfAnyKindRunsInACapturedGraph) {
  TESSEL_REQUIRE_GPU();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");
  struct variant_case {
    const char* name;
    ts::schedule schedule;
    ts::decomposition decomposition;
    std::array<int, 2> cluster;
  };
  const variant_case cases[] = {
      {"cooperative stream-K", ts::schedule::cooperative, ts::decomposition::stream_k, {1, 1}},
      {"pingpong stream-K", ts::schedule::pingpong, ts::decomposition::stream_k, {1, 1}},
      {"cooperative cluster 2x1", ts::schedule::cooperative, ts::decomposition::data_parallel, {2, 1}},
      {"pingpong cluster 1x2", ts::schedule::pingpong, ts::decomposition::data_parallel, {1, 2}},
      {"tma", ts::schedule::tma, ts::decomposition::automatic, {1, 1}},
  };
  for (const variant_case& v : cases) {
    SCOPED_TRACE(v.name);
    ts::options o;
    o.schedule = v.schedule;
    o.stages = 3;
    o.decomposition = v.decomposition;
    o.cluster = v.cluster;
    ts::kernel k = tb::jit_gemm(tb::gemm_variant::plain, kTile, o);
    ts::launch_choice c;
    // K 520: several k-steps for stream-K to split; 300 x 264: partial tiles on both axes.
    result r = run_and_check(k, 300, 264, 520, kRow, kRow, kRow, true, /*graph=*/true, &c, /*on_stream=*/true);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.stderr_text, "");
    EXPECT_FALSE(c.fallback);
  }
}

// ---- strided C ---------------------------------------------------------------------------------

struct output_case {
  const char* name;
  layout c;
};

const output_case kOutputCases[] = {
    {"C_col_major", {"C col", 1}},
    {"C_col_major_padded", {"C col pad 8", 1, 8}},
    {"C_no_unit_stride", {"C stride 2", 2}},
    {"C_row_offset_1", {"C+1", 0, 0, 1}},
    {"C_row_padded_1", {"C pad 1", 0, 1}},  // rows not 16-byte multiples: no TMA store
    {"C_row_padded_8", {"C pad 8", 0, 8}},
};

void PrintTo(const output_case& c, std::ostream* os) { *os << c.name; }

using output_param = std::tuple<ts::schedule, output_case>;

class StridedOutput : public ::testing::TestWithParam<output_param> {};

TEST_P(StridedOutput, StoresWithTheRealStrides) {
  TESSEL_REQUIRE_GPU();
  const auto& [schedule, c] = GetParam();
  scoped_env policy("TESSEL_FALLBACK", "error");  // C never needs the fallback
  ts::kernel k = jit(schedule);
  for (auto [M, N, K] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{200, 136, 96}, {128, 128, 64},
                         {7, 9, 64}}) {
    SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
    result r = run_and_check(k, M, N, K, kRow, kRow, c.c);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.stderr_text.find("tessel: note"), std::string::npos) << r.stderr_text;
  }
}

std::string output_name(const ::testing::TestParamInfo<output_param>& info) {
  return std::string(tb::schedule_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Schedules, StridedOutput,
                         ::testing::Combine(::testing::Values(ts::schedule::tma, ts::schedule::multistage,
                                                              ts::schedule::warp_specialized,
                                                              ts::schedule::cooperative, ts::schedule::pingpong),
                                            ::testing::ValuesIn(kOutputCases)),
                         output_name);

// ---- the knob ----------------------------------------------------------------------------------

TEST(FallbackKnob, ErrorRefusesAndTheProcessSurvives) {
  TESSEL_REQUIRE_GPU();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");
  scoped_env policy("TESSEL_FALLBACK", "error");
  ts::kernel k = jit(ts::schedule::tma);
  result r = run_and_check(k, 200, 136, 96, {"A+1", 0, 0, 1}, kRow, kRow, /*expect_launch=*/false);
  EXPECT_NE(r.error.find("argument 0: data address"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("is not 16-byte aligned"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("TESSEL_FALLBACK=error"), std::string::npos) << r.error;
  r = run_and_check(k, 200, 136, 99, kRow, kRow, kRow, /*expect_launch=*/false);
  EXPECT_NE(r.error.find("not a multiple of 16 bytes"), std::string::npos) << r.error;
  // The same kernel still works on arguments TMA can address.
  r = run_and_check(k, 200, 136, 96, kRow, kRow, kRow);
  EXPECT_EQ(r.error, "");
}

TEST(FallbackKnob, QuietSaysNothing) {
  TESSEL_REQUIRE_GPU();
  scoped_env fresh("TESSEL_DISABLE_CACHE", "1");
  scoped_env policy("TESSEL_FALLBACK", "quiet");
  ts::kernel k = jit(ts::schedule::cooperative);
  result r = run_and_check(k, 200, 136, 99, {"A+1", 0, 0, 1}, kRow, kRow);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stderr_text, "");
}

}  // namespace
