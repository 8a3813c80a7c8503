// bench_util.h - what tessel-bench, the GEMM examples and tests/gpu share: device buffers, GPU
// random fill, NaN poisoning, comparison against a reference, the cuBLASLt reference GEMM, and
// interleaved event timing. Internal to the tools/examples/tests (not part of libtessel).
//
// Plain CUDA runtime + cuBLASLt; no tessel headers. Every failing CUDA/cuBLAS call throws
// tessel_bench::cuda_error naming the call.
//
// Conventions (all matrices row-major, all sizes in elements):
//   A: M x K (K contiguous), B: N x K (K contiguous), C: M x N (N contiguous), bias: N.
//   C = A * B^T (+ bias broadcast along rows, then relu, for the fused variant).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessel_bench {

// ---- errors ---------------------------------------------------------------------------------

struct cuda_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws cuda_error("<what>: <cudaGetErrorName>: <message> (file:line)") unless e == cudaSuccess.
void check_cuda(cudaError_t e, const char* what, const char* file, int line);
#define TB_CUDA(call) ::tessel_bench::check_cuda((call), #call, __FILE__, __LINE__)
/// After a kernel launch of our own: checks cudaGetLastError.
#define TB_CUDA_LAUNCHED(what) ::tessel_bench::check_cuda(cudaGetLastError(), what, __FILE__, __LINE__)

// ---- device -----------------------------------------------------------------------------------

struct device_info {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  int max_sm_clock_mhz = 0;  ///< cudaDevAttrClockRate (the peak, not the current clock)
  std::string pci_bus_id;
};
device_info query_device(int ordinal = 0);

/// Optional NVML (dlopen'ed libnvidia-ml.so.1; no NVML headers or link needed). When it cannot be
/// loaded, available() is false and why() says so; the readings then return 0.
class nvml_probe {
public:
  explicit nvml_probe(const device_info& dev);
  ~nvml_probe();
  nvml_probe(const nvml_probe&) = delete;
  nvml_probe& operator=(const nvml_probe&) = delete;
  bool available() const { return dev_ != nullptr; }
  const std::string& why() const { return why_; }
  unsigned sm_clock_mhz() const;    ///< current SM clock
  unsigned power_mw() const;        ///< current board power
  unsigned temperature_c() const;   ///< GPU temperature

private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  std::string why_;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*temp_)(void*, int, unsigned*) = nullptr;
};

// ---- memory -----------------------------------------------------------------------------------

/// Owning cudaMalloc'ed buffer (move-only).
class device_buffer {
public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes);
  ~device_buffer();
  device_buffer(device_buffer&& o) noexcept;
  device_buffer& operator=(device_buffer&& o) noexcept;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return p_; }
  template <class T> T* as() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }

private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// ---- bf16 on the host -----------------------------------------------------------------------------

float bf16_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);  ///< round to nearest even; NaN stays NaN

// ---- fp8 on the host --------------------------------------------------------------------------------

/// OCP E4M3FN (bias 7, no infinities, S.1111.111 NaN; what ts::f8e4m3 is) and E5M2 (ts::f8e5m2).
enum class fp8_kind { e4m3, e5m2 };
double fp8_to_double(std::uint8_t bits, fp8_kind k);
/// Round to nearest even with saturation to the largest finite value of the sign (PTX
/// cvt.rn.satfinite: +-448 for e4m3, +-57344 for e5m2); NaN stays NaN.
std::uint8_t double_to_fp8(double v, fp8_kind k);
/// n random fp8 codes with magnitudes in [1/8, 4) (exponents -3..1, any mantissa), random sign:
/// never zero, NaN or Inf, and a K-long dot product of them stays far from e4m3's range.
std::vector<std::uint8_t> random_fp8(std::size_t n, std::uint64_t seed, fp8_kind k);

// ---- fill, poison, compare (all on the GPU, on `stream`) ---------------------------------

/// n bf16 values uniform in (lo, hi), from a counter-based hash of (seed, index): deterministic,
/// independent of launch shape. For lo = -1, hi = 1 no value is exactly zero.
void fill_uniform_bf16(void* p, std::size_t n, std::uint64_t seed, float lo = -1.f, float hi = 1.f,
                       cudaStream_t stream = nullptr);
void fill_uniform_f32(float* p, std::size_t n, std::uint64_t seed, float lo = -1.f, float hi = 1.f,
                      cudaStream_t stream = nullptr);
/// Fills `bytes` with 0xFF: every bf16 (0xFFFF) and f32 (0xFFFFFFFF) element becomes a NaN.
void poison_nan(void* p, std::size_t bytes, cudaStream_t stream = nullptr);

struct compare_stats {
  double rel_err = 0;             ///< ||test - ref||_F / ||ref||_F over finite test elements
  double max_abs_err = 0;         ///< over finite test elements
  double ref_norm = 0;            ///< ||ref||_F
  std::uint64_t nonfinite = 0;    ///< test elements that are NaN or Inf (e.g. never written)
  std::uint64_t count = 0;
  std::int64_t first_nonfinite = -1;  ///< linear index of one non-finite test element, or -1
  /// rel_err < tol, no non-finite element, and a non-degenerate reference.
  bool ok(double tol) const { return nonfinite == 0 && ref_norm > 0 && rel_err < tol; }
  std::string str() const;        ///< "rel_err=1.2e-03 max_abs=... nonfinite=0/N"
};
/// Compares a dense bf16 tensor with a dense f32 reference of the same n elements.
compare_stats compare_bf16_f32(const void* test_bf16, const float* ref, std::size_t n,
                               cudaStream_t stream = nullptr);
/// Number of 16-bit words that differ between a and b (bitwise reproducibility check).
std::uint64_t count_mismatched_u16(const void* a, const void* b, std::size_t n_u16,
                                   cudaStream_t stream = nullptr);
/// ref[i] = alpha * ref[i] + beta * float(c0[i]) for n elements (c0 bf16).
void alpha_beta_f32_inplace(float* ref, const void* c0_bf16, float alpha, float beta, std::size_t n,
                            cudaStream_t stream = nullptr);
/// ref[m*N + n] = gelu(ref[m*N + n] + float(bias[n])), tanh form:
/// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), for an M x N f32 matrix and bf16 bias.
void bias_gelu_f32_inplace(float* ref, const void* bias_bf16, std::int64_t M, std::int64_t N,
                           cudaStream_t stream = nullptr);
/// ref[m*N + n] = max(ref[m*N + n] + float(bias[n]), 0) for an M x N f32 matrix and bf16 bias.
void bias_relu_f32_inplace(float* ref, const void* bias_bf16, std::int64_t M, std::int64_t N,
                           cudaStream_t stream = nullptr);
/// ref[m*N + n] *= scale[n] for an M x N f32 matrix and an f32 vector of N factors (a column scale).
/// out[m*N + n] = silu(gu[m*2N + n]) * gu[m*2N + N + n] (silu(x) = x / (1 + exp(-x)), in double):
/// SwiGLU from the f32 [gate | up] = A @ [W1; W3]^T (M x 2N) to an M x N f32 reference.
void swiglu_f32_reference(const float* gu, std::int64_t M, std::int64_t N, float* out, cudaStream_t stream = nullptr);
void scale_columns_f32_inplace(float* ref, const float* scale, std::int64_t M, std::int64_t N,
                               cudaStream_t stream = nullptr);
/// c[m*N + n] = bf16(float(c[m*N + n]) * scale[n]) for an M x N bf16 matrix: one more rounding.
void scale_columns_bf16_inplace(void* c_bf16, const float* scale, std::int64_t M, std::int64_t N,
                                cudaStream_t stream = nullptr);
/// amax[m] = max_n |x[m*ld + n]| for an M x N bf16 / f32 matrix whose rows are `ld` elements apart:
/// one block per row, 16-byte loads where the row allows, each amax[m] written (not combined: no
/// initialisation needed). Compares the bits of |x| as integers, so a NaN in a row makes its
/// amax NaN (as tessel's ts::amax does).
void row_amax_bf16(const void* x_bf16, std::int64_t M, std::int64_t N, std::int64_t ld, float* amax,
                   cudaStream_t stream = nullptr);
void row_amax_f32(const float* x, std::int64_t M, std::int64_t N, std::int64_t ld, float* amax,
                  cudaStream_t stream = nullptr);
/// Copies n bf16 elements to the host (synchronous).
std::vector<std::uint16_t> to_host_bf16(const void* p, std::size_t n);

// ---- guarded outputs (DESIGN.md §9: nothing outside an output may change) ----------------------

/// Where an output lies inside its guarded buffer, in elements: `batch` matrices of rows x cols,
/// element (b, r, c) at front + b * batch_stride + r * row_stride + c * col_stride, then `back`
/// guard elements after the last one. Elements must not overlap.
struct guarded_layout {
  std::int64_t batch = 1, rows = 0, cols = 0;
  std::int64_t batch_stride = 0, row_stride = 0, col_stride = 1;
  int elt_bytes = 2;  ///< 1 (fp8), 2 (bf16, f16) or 4 (f32)
  std::int64_t front = 0, back = 0;
};

/// A row-major rows x cols matrix (or `batch` of them, `batch_stride` elements apart; 0: rows *
/// ld) with leading dimension ld >= cols, 48 bytes after the start of its buffer (16-byte aligned,
/// as TMA needs) or, when not `aligned`, one element further; 256 bytes of guard after it.
guarded_layout guarded_matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, int elt_bytes = 2,
                              bool aligned = true, std::int64_t batch = 1, std::int64_t batch_stride = 0);
/// A leading dimension > cols whose rows are 16-byte multiples (rows padded by 16 to 31 bytes):
/// the output keeps TMA's stride rule.
std::int64_t padded_ld(std::int64_t cols, int elt_bytes = 2);
/// The smallest leading dimension > cols whose rows are not 16-byte multiples (TMA cannot store
/// such an output: the kernels take their bounds-checked copy-out path).
std::int64_t misaligned_ld(std::int64_t cols, int elt_bytes = 2);

/// Sentinel byte of everything in a guarded buffer that is not an output element.
inline constexpr unsigned char kGuardSentinel = 0xA5;

struct guard_report {
  std::uint64_t clobbered = 0;  ///< elements outside the output whose bytes lost the sentinel
  std::uint64_t unwritten = 0;  ///< output elements that still hold the NaN poison (0xFF bytes)
  std::string detail;           ///< the first few of each: position and bits
  bool ok() const { return clobbered == 0 && unwritten == 0; }
  std::string str() const;      ///< "guards intact, every element written" or the counts and detail
};

/// An output inside a device buffer guarded by a sentinel (guarded_layout).
class guarded_output {
public:
  explicit guarded_output(const guarded_layout& l);
  const guarded_layout& layout() const { return l_; }
  void* data() const { return static_cast<char*>(buf_.get()) + l_.front * l_.elt_bytes; }  ///< element (0, 0, 0)
  /// The sentinel everywhere, then 0xFF bytes (NaN) on every output element. Asynchronous.
  void reset(cudaStream_t stream = nullptr) const;
  /// Copies the whole buffer back (synchronizes `stream`) and checks it.
  guard_report check(cudaStream_t stream = nullptr);
  /// After check(): the bits of output element (b, r, c) as copied back.
  std::uint32_t bits(std::int64_t b, std::int64_t r, std::int64_t c) const;
  /// Copies the output (col_stride 1) to `dst`, a dense batch x rows x cols device buffer.
  void copy_to_dense(void* dst, cudaStream_t stream = nullptr) const;

private:
  struct run {  // `len` output elements, contiguous from element `start` of the buffer
    std::int64_t start, len, b, r, c;  // (b, r, c) of the first; along c when col_stride is 1, else along r
  };
  std::string where(std::int64_t e) const;  ///< readable position of buffer element e
  guarded_layout l_;
  std::vector<run> runs_;  // by address
  device_buffer buf_;
  std::vector<unsigned char> host_;
};

// ---- cuBLASLt reference --------------------------------------------------------------------------

enum class out_type { bf16, f32 };
/// The operand type of A and B: bf16, or fp8 e4m3 (cuBLASLt's CUDA_R_8F_E4M3, "TN" layout only,
/// unscaled: no A/B/D scale pointers).
enum class in_type { bf16, e4m3 };
/// The fused epilogues compared with cuBLASLt's: none, relu(. + bias[n]) (CUBLASLT_EPILOGUE_RELU_BIAS)
/// and gelu(. + bias[n]), tanh form (CUBLASLT_EPILOGUE_GELU_BIAS).
enum class epilogue { none, bias_relu, bias_gelu };

/// Operand layouts of C (M x N, row-major) = A (M x K) B (N x K)^T, named as BLAS names them
/// (column-major, first letter A, second B): "TN" is A and B both K-contiguous (row-major M x K
/// and N x K, the default); "N" for A means M-contiguous (A's buffer is K x M row-major), "T"
/// for B means N-contiguous (B's buffer is K x N row-major). The buffers hold the same elements
/// in every layout; only the strides differ.
struct gemm_layout {
  bool a_k_contiguous = true;
  bool b_k_contiguous = true;
  std::string str() const { return std::string(a_k_contiguous ? "T" : "N") + (b_k_contiguous ? "N" : "T"); }
  bool operator==(const gemm_layout& o) const {
    return a_k_contiguous == o.a_k_contiguous && b_k_contiguous == o.b_k_contiguous;
  }
  /// "TN", "NN", "NT", "TT" (case-insensitive); throws std::invalid_argument otherwise.
  static gemm_layout parse(const std::string& s);
  /// Element strides {outer, inner} of the M x K (A) and N x K (B) views.
  std::array<std::int64_t, 2> a_strides(std::int64_t M, std::int64_t K) const {
    return a_k_contiguous ? std::array<std::int64_t, 2>{K, 1} : std::array<std::int64_t, 2>{1, M};
  }
  std::array<std::int64_t, 2> b_strides(std::int64_t N, std::int64_t K) const {
    return b_k_contiguous ? std::array<std::int64_t, 2>{K, 1} : std::array<std::int64_t, 2>{1, N};
  }
};

/// One cuBLASLt handle + workspace; create once per process/device.
class lt_context {
public:
  explicit lt_context(std::size_t workspace_bytes = 64u << 20);
  ~lt_context();
  lt_context(const lt_context&) = delete;
  lt_context& operator=(const lt_context&) = delete;
  void* handle() const { return handle_; }  ///< cublasLtHandle_t
  void* workspace() const { return ws_.get(); }
  std::size_t workspace_bytes() const { return ws_.bytes(); }

private:
  void* handle_ = nullptr;
  device_buffer ws_;
};

/// Row-major C (M x N) = A (M x K) * B (N x K)^T with bf16 inputs and f32 accumulation
/// (CUBLAS_COMPUTE_32F), C in bf16 or f32, optionally relu(. + bias[n]) fused (bf16 out only).
///
/// cuBLASLt is column-major. Row-major C (M x N, ld N) is the column-major matrix C^T (N x M,
/// ld N), and C^T = B * A^T. The row-major N x K buffer of B read column-major is B^T (K x N,
/// ld K), so cuBLASLt's first operand is that buffer with op = T (giving B, N x K); the row-major
/// M x K buffer of A read column-major is A^T (K x M, ld K), cuBLASLt's second operand with
/// op = N. So: m = N, n = M, k = K, opA = T on B, opB = N on A, D is N x M with ld N (the "TN"
/// layout cuBLAS is fastest at). Bias (length = rows of D = N) is indexed by n, as wanted.
/// fp8 block scales for lt_gemm (DeepSeek-V3's recipe): `a` one f32 per row of our A and 128 of K
/// (cuBLASLt's VEC128_32F on its B), `b` one per 128 x 128 block of our B (BLK128x128_32F on its
/// A); null: no block scaling. Their layouts are cuBLASLt's (the caller checks the result).
struct lt_block_scales {
  const void* a = nullptr;
  const void* b = nullptr;
};

class lt_gemm {
public:
  /// Asks cuBLASLt's heuristic for up to `max_algos` algorithms (the first is the default).
  /// For epilogue::bias_relu, `bias` is the device bias pointer used by every run.
  lt_gemm(lt_context& ctx, std::int64_t M, std::int64_t N, std::int64_t K, out_type out,
          epilogue ep = epilogue::none, const void* bias = nullptr, int max_algos = 1, gemm_layout layout = {},
          in_type in = in_type::bf16, lt_block_scales scales = {});
  ~lt_gemm();
  lt_gemm(const lt_gemm&) = delete;
  lt_gemm& operator=(const lt_gemm&) = delete;

  void run(const void* A, const void* B, void* C, cudaStream_t stream = nullptr) const;
  /// D = alpha * A B^T + beta * C_in from now on (C_in: M x N like D, bf16; cuBLASLt's C matrix,
  /// a separate input); by default alpha = 1, beta = 0 and C is D.
  void set_alpha_beta(float alpha, float beta, const void* c_in) {
    alpha_ = alpha;
    beta_ = beta;
    c_in_ = c_in;
  }
  int num_algos() const { return static_cast<int>(algos_.size()); }
  void select_algo(int i);
  int selected_algo() const { return selected_; }
  std::string algo_description() const;  ///< "algo 66 tile 20 stages 3 splitK 1 cluster 2 ..."

private:
  void init(std::int64_t M, std::int64_t N, std::int64_t K, out_type out, epilogue ep, const void* bias, int max_algos,
            gemm_layout layout, in_type in, lt_block_scales scales);
  void destroy() noexcept;
  lt_context& ctx_;
  void* op_ = nullptr;                  // cublasLtMatmulDesc_t
  void* a_ = nullptr, *b_ = nullptr, *d_ = nullptr;  // cublasLtMatrixLayout_t
  float alpha_ = 1.f, beta_ = 0.f;
  const void* c_in_ = nullptr;
  std::vector<std::vector<unsigned char>> algos_;    // cublasLtMatmulAlgo_t blobs
  std::vector<std::size_t> algo_ws_;
  int selected_ = 0;
};

// ---- problem buffers -----------------------------------------------------------------------------

/// Rotated A/B/C (and bias) buffer sets for one M x N x K GEMM, filled with uniform [-1, 1)
/// bf16 (a different seed per set), so that consecutive launches do not find their operands in
/// L2. The number of sets is at least `min_sets` and enough that the other sets together exceed
/// 2x L2 (capped so that everything stays under `max_total_bytes`).
class gemm_problem {
public:
  gemm_problem(std::int64_t M, std::int64_t N, std::int64_t K, bool with_bias, const device_info& dev,
               std::uint64_t seed = 1, int min_sets = 3, std::size_t max_total_bytes = 24ull << 30,
               cudaStream_t stream = nullptr);
  std::int64_t M, N, K;
  /// How A's and B's buffers are read (the reference follows it); set before reference().
  gemm_layout layout;
  /// With a bias: the fused epilogue the reference applies (bias_relu or bias_gelu); set before
  /// reference().
  epilogue bias_epilogue = epilogue::bias_relu;
  int sets() const { return static_cast<int>(a_.size()); }
  const void* A(int i) const { return a_[i % sets()].get(); }
  const void* B(int i) const { return b_[i % sets()].get(); }
  void* C(int i) const { return c_[i % sets()].get(); }
  const void* bias(int i) const { return bias_.empty() ? nullptr : bias_[i % sets()].get(); }
  /// An M x N bf16 input C0 (uniform [-1, 1)) for C = alpha * A B^T + beta * C0: one buffer,
  /// shared by every set (it is larger than L2 at the shapes this is timed at); the reference
  /// then includes it. Call before reference().
  void add_c0(float alpha, float beta, std::uint64_t seed, cudaStream_t stream = nullptr);
  const void* c0() const { return c0_.empty() ? nullptr : c0_.front().get(); }
  float alpha = 1.f, beta = 0.f;
  /// An f32 vector of N column factors, uniform in [lo, hi), applied last: C = epilogue(...) *
  /// scale[n]. One buffer shared by every set; the reference then includes it, and
  /// compare_with_cublas applies it to cuBLASLt's output before checking that (cuBLASLt has no
  /// such epilogue). Call before reference().
  void add_col_scale(std::uint64_t seed, float lo = 0.25f, float hi = 2.f, cudaStream_t stream = nullptr);
  const float* col_scale() const { return col_scale_ ? col_scale_.as<float>() : nullptr; }
  bool with_bias() const { return !bias_.empty(); }
  std::size_t bytes_per_set() const;
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }

  /// f32 reference of set `i` (C = A B^T, plus bias+relu when with_bias), computed with cuBLASLt
  /// (f32 out) and cached for set 0. Synchronous.
  const float* reference(lt_context& lt, cudaStream_t stream = nullptr);
  /// Poisons C of set `i` with NaN.
  void poison(int i, cudaStream_t stream = nullptr) const;
  /// Compares C of set `i` with reference() (must be set 0's; only set 0 is checked).
  compare_stats check_set0(lt_context& lt, cudaStream_t stream = nullptr);

private:
  std::vector<device_buffer> a_, b_, c_, bias_, c0_;
  device_buffer col_scale_;
  device_buffer ref_;
};

/// Sets whose footprint lets the others exceed 2x L2: max(min_sets, ceil(2 L2 / bytes) + 1).
int rotation_sets(std::size_t bytes_per_set, std::size_t l2_bytes, int min_sets, std::size_t max_total_bytes);

// ---- timing ---------------------------------------------------------------------------------

/// One candidate: enqueues launch number `i` (a running counter, so that the caller can rotate
/// buffer sets with it) on `stream`. Must not synchronize.
using launch_fn = std::function<void(int i, cudaStream_t stream)>;

struct timing_config {
  int batch = 20;            ///< launches per timed batch (raised so that a batch lasts >= min_batch_ms)
  int repeats = 7;           ///< timed batches per candidate (at least); the median is reported
  double min_total_ms = 400; ///< raise repeats until the slowest candidate is timed this long
  int max_repeats = 50;
  double warmup_ms = 500;    ///< wall time of untimed round-robin launches before timing
  double min_batch_ms = 1.0;
  int max_batch = 2000;
};

struct timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;  ///< per launch
  std::vector<double> samples_ms;                ///< per launch, one per repeat
  double enqueue_us = 0;                         ///< host time to enqueue one launch
  unsigned median_sm_mhz = 0;                    ///< NVML SM clock read while batches ran (0: n/a)
  unsigned median_power_w = 0;
  int batch = 0;
};

/// Times the candidates interleaved: after a warm-up, each repeat times one batch of every
/// candidate in turn (rotating which goes first), with CUDA events around each batch. A short
/// GPU spin kernel is enqueued ahead of every batch so that the host can enqueue the whole batch
/// before the first launch starts: the events measure GPU time, not launch overhead. Returns
/// one timing per candidate. `nvml` may be null.
std::vector<timing> time_interleaved(const std::vector<launch_fn>& candidates, const timing_config& cfg,
                                     cudaStream_t stream, const nvml_probe* nvml = nullptr);

/// A candidate with the name its timing row is printed under.
struct named_launch {
  std::string name;
  launch_fn launch;
};

/// Spins one thread on the GPU for `us` microseconds (%globaltimer).
void gpu_spin(double us, cudaStream_t stream);

inline double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0; }

/// "%.3g"-style helpers for tables.
std::string fmt(double v, int precision = 1);

}  // namespace tessel_bench

// ---- tessel vs cuBLASLt on one problem ----------------------------------------------------------

namespace tessel_bench {

/// Picks the fastest of `g`'s heuristic algorithms (short interleaved timing) when it has more
/// than one; returns the selected index.
int select_fastest_algo(lt_gemm& g, const gemm_problem& p, cudaStream_t stream, const nvml_probe* nvml = nullptr);

struct compare_config {
  timing_config timing;
  bool check = true;
  double tol = 1e-2;   ///< relative Frobenius error bound for bf16
  bool time = true;
  /// The candidate's other outputs (a reduction vector, ...): called once after check_launch ran
  /// and C was compared (set 0's f32 reference is ready: gemm_problem::reference). Appends its
  /// report lines to `lines` and returns false on a mismatch, which fails the check.
  std::function<bool(std::string& lines)> verify;
  /// Further candidates timed interleaved with the candidate and cuBLASLt (launch i uses set i),
  /// each reported as its own row with the candidate's ratio to it.
  std::vector<named_launch> also_time;
};

struct compare_report {
  bool checked = false;
  compare_stats candidate_check;  ///< candidate vs the f32 reference (set 0)
  guard_report guard;             ///< the candidate's output inside its guards
  compare_stats cublas_check;     ///< cuBLASLt bf16 output vs the same reference (sanity)
  bool cublas_col_scaled = false; ///< cuBLASLt's output was column-scaled (in bf16) before cublas_check
  std::string verify_lines;       ///< compare_config::verify's report
  bool verify_ok = true;
  bool check_ok = true;
  bool timed = false;
  timing candidate, cublas;
  double candidate_tflops = 0, cublas_tflops = 0, ratio = 0;  ///< ratio = candidate / cuBLAS
  std::vector<std::string> also_names;  ///< compare_config::also_time, in order
  std::vector<timing> also;
  std::vector<double> also_tflops, also_ratio;  ///< also_ratio = candidate TFLOP/s / theirs
};

/// Launches the candidate on set 0's inputs with its M x N output at `C`, rows `ldc` elements apart.
using output_launch_fn = std::function<void(void* C, std::int64_t ldc, cudaStream_t stream)>;

/// Verifies the candidate once: `check_launch` writes set 0's result into a guarded output (rows
/// padded to padded_ld(N), NaN-poisoned, sentinel around: guarded_output), which must keep its
/// guards and match the f32 cuBLASLt reference (then cfg.verify checks the candidate's other
/// outputs; cuBLASLt's own output is checked against the same reference as a sanity line, after
/// the problem's column scale when it has one). Then times `candidate` (launch i computes set i of
/// `p`: C(i) = A(i) B(i)^T [+bias(i), relu]) interleaved with `cublas` (bf16 out, same epilogue)
/// and cfg.also_time on the rotated sets.
compare_report compare_with_cublas(const launch_fn& candidate, const output_launch_fn& check_launch, gemm_problem& p,
                                   const lt_gemm& cublas, lt_context& lt, const compare_config& cfg,
                                   cudaStream_t stream, const nvml_probe* nvml = nullptr);

}  // namespace tessel_bench

namespace tessel_bench {
/// "NVIDIA H200 (sm_90, 132 SMs, 60 MB L2, max SM clock 1980 MHz)".
std::string describe(const device_info& d);
/// The check/timing lines of a compare_report, as the examples print them.
std::string format_report(const compare_report& r, const char* candidate, const compare_config& cfg,
                          const nvml_probe* nvml, const device_info& dev);
}  // namespace tessel_bench
