// bench_util.cu - see bench_util.h.
#include "bench_util.h"

#include <cctype>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

namespace tessel_bench {

// ---- errors ---------------------------------------------------------------------------------

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  std::ostringstream os;
  os << what << ": " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e) << " (" << file << ":" << line << ")";
  throw cuda_error(os.str());
}

namespace {
void check_lt(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::ostringstream os;
  os << what << ": cuBLAS status " << int(s) << " (" << file << ":" << line << ")";
  throw cuda_error(os.str());
}
#define TB_LT(call) check_lt((call), #call, __FILE__, __LINE__)

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n, unsigned cap = 132u * 16u) {
  std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(b, cap)));
}
}  // namespace

// ---- device -----------------------------------------------------------------------------------

device_info query_device(int ordinal) {
  device_info d;
  d.ordinal = ordinal;
  cudaDeviceProp p{};
  TB_CUDA(cudaGetDeviceProperties(&p, ordinal));
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.global_mem_bytes = p.totalGlobalMem;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal) == cudaSuccess) d.max_sm_clock_mhz = khz / 1000;
  (void)cudaGetLastError();
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) == cudaSuccess) d.pci_bus_id = bus;
  (void)cudaGetLastError();
  return d;
}

nvml_probe::nvml_probe(const device_info& dev) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = dlerror();
    why_ = std::string("cannot load libnvidia-ml.so.1: ") + (e ? e : "?");
    return;
  }
  auto sym = [&](const char* n) { return dlsym(lib_, n); };
  auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  power_ = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
  temp_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetTemperature"));
  if (!init || !clock_ || (!by_bus && !by_index)) {
    why_ = "libnvidia-ml.so.1 lacks the expected symbols";
    return;
  }
  if (int rc = init(); rc != 0) {
    why_ = "nvmlInit failed (" + std::to_string(rc) + ")";
    return;
  }
  void* h = nullptr;
  if (by_bus && !dev.pci_bus_id.empty() && by_bus(dev.pci_bus_id.c_str(), &h) == 0) {
    dev_ = h;
  } else if (by_index && by_index(static_cast<unsigned>(dev.ordinal), &h) == 0) {
    dev_ = h;  // fallback; may be another GPU under CUDA_VISIBLE_DEVICES
  } else {
    why_ = "NVML does not know device " + dev.pci_bus_id;
  }
}

nvml_probe::~nvml_probe() {
  if (lib_) {
    if (auto shut = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown")); shut && dev_) shut();
    dlclose(lib_);
  }
}

unsigned nvml_probe::sm_clock_mhz() const {
  unsigned v = 0;
  if (dev_ && clock_(dev_, /*NVML_CLOCK_SM*/ 1, &v) == 0) return v;
  return 0;
}
unsigned nvml_probe::power_mw() const {
  unsigned v = 0;
  if (dev_ && power_ && power_(dev_, &v) == 0) return v;
  return 0;
}
unsigned nvml_probe::temperature_c() const {
  unsigned v = 0;
  if (dev_ && temp_ && temp_(dev_, /*NVML_TEMPERATURE_GPU*/ 0, &v) == 0) return v;
  return 0;
}

// ---- memory -----------------------------------------------------------------------------------

device_buffer::device_buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) TB_CUDA(cudaMalloc(&p_, bytes));
}
device_buffer::~device_buffer() {
  if (p_) cudaFree(p_);
}
device_buffer::device_buffer(device_buffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
  o.p_ = nullptr;
  o.bytes_ = 0;
}
device_buffer& device_buffer::operator=(device_buffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

// ---- bf16 on the host -----------------------------------------------------------------------------

float bf16_to_float(std::uint16_t h) {
  std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return std::uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

// ---- fp8 on the host --------------------------------------------------------------------------------

double fp8_to_double(std::uint8_t bits, fp8_kind k) {
  const double sign = (bits & 0x80u) ? -1.0 : 1.0;
  const int mbits = k == fp8_kind::e4m3 ? 3 : 2, bias = k == fp8_kind::e4m3 ? 7 : 15;
  const int emax = k == fp8_kind::e4m3 ? 15 : 31;
  const int exp = (bits & 0x7f) >> mbits, mant = bits & ((1 << mbits) - 1);
  if (k == fp8_kind::e4m3 && exp == emax && mant == (1 << mbits) - 1) return std::nan("");
  if (k == fp8_kind::e5m2 && exp == emax) return mant ? std::nan("") : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(double(mant), 1 - bias - mbits);  // subnormal
  return sign * std::ldexp(double((1 << mbits) + mant), exp - bias - mbits);
}

std::uint8_t double_to_fp8(double v, fp8_kind k) {
  if (std::isnan(v)) return 0x7f;
  // The nearest of the 127 finite non-negative codes (ties to the even code), by search: slow and
  // obviously right, for references only.
  const double a = std::fabs(v);
  // Saturation first: far past the largest finite value, |x - a| no longer tells codes apart.
  const int max_code = k == fp8_kind::e4m3 ? 0x7e : 0x7b;
  const int sign = std::signbit(v) ? 0x80 : 0;  // -0 keeps its sign
  if (a >= fp8_to_double(std::uint8_t(max_code), k)) return std::uint8_t(max_code | sign);
  int best = 0;
  double best_d = HUGE_VAL;
  for (int c = 0; c < 0x80; ++c) {
    const double x = fp8_to_double(std::uint8_t(c), k);
    if (!std::isfinite(x)) continue;
    const double d = std::fabs(x - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return std::uint8_t(best | sign);
}

std::vector<std::uint8_t> random_fp8(std::size_t n, std::uint64_t seed, fp8_kind k) {
  std::vector<std::uint8_t> out(n);
  const int mbits = k == fp8_kind::e4m3 ? 3 : 2, bias = k == fp8_kind::e4m3 ? 7 : 15;
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    const int exp = bias - 3 + int((s >> 8) % 5), mant = int(s >> 16) & ((1 << mbits) - 1);
    out[i] = std::uint8_t(((s >> 24) & 1 ? 0x80 : 0) | (exp << mbits) | mant);
  }
  return out;
}

// ---- kernels ---------------------------------------------------------------------------------

namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// u in (0, 1) with 24 random bits: (k + 0.5) / 2^24. Then lo + (hi - lo) u; for (-1, 1) the result is
// an odd multiple of 2^-24, never zero, exactly representable in f32 and nonzero in bf16.
__device__ __forceinline__ float uniform_at(std::uint64_t seed, std::size_t i, float lo, float hi) {
  std::uint64_t h = splitmix64(seed * 0xd1b54a32d192ed03ull ^ splitmix64(i));
  float u = (float(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16_rn(uniform_at(seed, i, lo, hi));
}

__global__ void fill_f32_kernel(float* p, std::size_t n, std::uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = uniform_at(seed, i, lo, hi);
}

struct compare_acc {
  double sq_diff;
  double sq_ref;
  unsigned long long max_abs_bits;  // non-negative double, ordered as an integer
  unsigned long long nonfinite;
  unsigned long long first_nonfinite;
};

__global__ void compare_kernel(const __nv_bfloat16* t, const float* r, std::size_t n, compare_acc* out) {
  double sd = 0, sr = 0, mx = 0;
  unsigned long long nf = 0, first = ~0ull;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    double tv = double(__bfloat162float(t[i]));
    double rv = double(r[i]);
    sr += rv * rv;
    if (!isfinite(tv)) {
      ++nf;
      first = min(first, (unsigned long long)i);
      continue;
    }
    double d = tv - rv;
    sd += d * d;
    mx = fmax(mx, fabs(d));
  }
  __shared__ double s_sd[kThreads], s_sr[kThreads], s_mx[kThreads];
  __shared__ unsigned long long s_nf[kThreads], s_first[kThreads];
  s_sd[threadIdx.x] = sd;
  s_sr[threadIdx.x] = sr;
  s_mx[threadIdx.x] = mx;
  s_nf[threadIdx.x] = nf;
  s_first[threadIdx.x] = first;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      s_sd[threadIdx.x] += s_sd[threadIdx.x + s];
      s_sr[threadIdx.x] += s_sr[threadIdx.x + s];
      s_mx[threadIdx.x] = fmax(s_mx[threadIdx.x], s_mx[threadIdx.x + s]);
      s_nf[threadIdx.x] += s_nf[threadIdx.x + s];
      s_first[threadIdx.x] = min(s_first[threadIdx.x], s_first[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&out->sq_diff, s_sd[0]);
    atomicAdd(&out->sq_ref, s_sr[0]);
    atomicMax(&out->max_abs_bits, (unsigned long long)__double_as_longlong(s_mx[0]));
    atomicAdd(&out->nonfinite, s_nf[0]);
    atomicMin(&out->first_nonfinite, s_first[0]);
  }
}

__global__ void mismatch_kernel(const std::uint16_t* a, const std::uint16_t* b, std::size_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    c += a[i] != b[i];
  __shared__ unsigned long long s[kThreads];
  s[threadIdx.x] = c;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0 && s[0]) atomicAdd(out, s[0]);
}

__global__ void bias_relu_kernel(float* ref, const __nv_bfloat16* bias, std::int64_t M, std::int64_t N) {
  std::size_t n_all = std::size_t(M) * std::size_t(N);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n_all; i += std::size_t(gridDim.x) * blockDim.x)
    ref[i] = fmaxf(ref[i] + __bfloat162float(bias[i % std::size_t(N)]), 0.f);
}

__global__ void bias_gelu_kernel(float* ref, const __nv_bfloat16* bias, std::int64_t M, std::int64_t N) {
  std::size_t n_all = std::size_t(M) * std::size_t(N);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n_all; i += std::size_t(gridDim.x) * blockDim.x) {
    const float x = ref[i] + __bfloat162float(bias[i % std::size_t(N)]);
    ref[i] = 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
}

__global__ void alpha_beta_kernel(float* ref, const __nv_bfloat16* c0, float alpha, float beta, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    ref[i] = alpha * ref[i] + beta * __bfloat162float(c0[i]);
}

// out[m N + n] = silu(gu[m 2N + n]) * gu[m 2N + N + n] (in double).
__global__ void swiglu_reference_kernel(const float* gu, std::int64_t M, std::int64_t N, float* out) {
  std::size_t n_all = std::size_t(M) * std::size_t(N);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n_all; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t m = i / std::size_t(N), n = i % std::size_t(N);
    const double g = gu[m * 2 * N + n], u = gu[m * 2 * N + N + n];
    out[i] = float(g / (1.0 + exp(-g)) * u);
  }
}

__global__ void scale_columns_f32_kernel(float* ref, const float* scale, std::int64_t M, std::int64_t N) {
  std::size_t n_all = std::size_t(M) * std::size_t(N);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n_all; i += std::size_t(gridDim.x) * blockDim.x)
    ref[i] *= scale[i % std::size_t(N)];
}

__global__ void scale_columns_bf16_kernel(__nv_bfloat16* c, const float* scale, std::int64_t M, std::int64_t N) {
  std::size_t n_all = std::size_t(M) * std::size_t(N);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n_all; i += std::size_t(gridDim.x) * blockDim.x)
    c[i] = __float2bfloat16_rn(__bfloat162float(c[i]) * scale[i % std::size_t(N)]);
}

// |x| as bits: non-negative floats order like their bits as integers, and +NaN lies above +inf.
__device__ __forceinline__ unsigned abs_bits(__nv_bfloat16 v) {
  return (unsigned(__bfloat16_as_ushort(v)) << 16) & 0x7fffffffu;
}
__device__ __forceinline__ unsigned abs_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }
// The largest |x| of the elements packed in one 32-bit word.
__device__ __forceinline__ unsigned abs_bits_word(unsigned w, __nv_bfloat16*) {
  return max(w & 0x7fff0000u, (w << 16) & 0x7fffffffu);
}
__device__ __forceinline__ unsigned abs_bits_word(unsigned w, float*) { return w & 0x7fffffffu; }

template <class T>
__global__ void row_amax_kernel(const T* x, std::int64_t M, std::int64_t N, std::int64_t ld, float* amax) {
  __shared__ unsigned s_warp[kThreads / 32];
  for (std::int64_t row = blockIdx.x; row < M; row += gridDim.x) {
    const T* r = x + row * ld;
    unsigned m = 0;
    std::int64_t tail = 0;
    if ((reinterpret_cast<std::uintptr_t>(r) & 15u) == 0) {  // 16-byte loads of the aligned part
      constexpr int kPer = 16 / sizeof(T);
      const std::int64_t vecs = N / kPer;
      const uint4* rv = reinterpret_cast<const uint4*>(r);
      for (std::int64_t i = threadIdx.x; i < vecs; i += blockDim.x) {
        const uint4 q = rv[i];
        m = max(m, max(max(abs_bits_word(q.x, (T*)nullptr), abs_bits_word(q.y, (T*)nullptr)),
                       max(abs_bits_word(q.z, (T*)nullptr), abs_bits_word(q.w, (T*)nullptr))));
      }
      tail = vecs * kPer;
    }
    for (std::int64_t i = tail + threadIdx.x; i < N; i += blockDim.x) m = max(m, abs_bits(r[i]));
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x % 32 == 0) s_warp[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kThreads / 32; ++w) m = max(m, s_warp[w]);
      amax[row] = __uint_as_float(m);
    }
    __syncthreads();  // s_warp is reused by the next row
  }
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace

// ---- fill, poison, compare ---------------------------------------------------------------------

void fill_uniform_bf16(void* p, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (!n) return;
  fill_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(p), n, seed, lo, hi);
  TB_CUDA_LAUNCHED("fill_uniform_bf16");
}

void fill_uniform_f32(float* p, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (!n) return;
  fill_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, n, seed, lo, hi);
  TB_CUDA_LAUNCHED("fill_uniform_f32");
}

void poison_nan(void* p, std::size_t bytes, cudaStream_t stream) {
  TB_CUDA(cudaMemsetAsync(p, 0xFF, bytes, stream));
}

std::string compare_stats::str() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "rel_err=%.3e max_abs_err=%.3e nonfinite=%llu/%llu", rel_err, max_abs_err,
                (unsigned long long)nonfinite, (unsigned long long)count);
  std::string s = buf;
  if (first_nonfinite >= 0) s += " (first at index " + std::to_string(first_nonfinite) + ")";
  if (ref_norm == 0) s += " (reference is all zero!)";
  return s;
}

compare_stats compare_bf16_f32(const void* test_bf16, const float* ref, std::size_t n, cudaStream_t stream) {
  compare_stats st;
  st.count = n;
  if (!n) return st;
  device_buffer acc_buf(sizeof(compare_acc));
  compare_acc init{0, 0, 0, 0, ~0ull};
  TB_CUDA(cudaMemcpyAsync(acc_buf.get(), &init, sizeof init, cudaMemcpyHostToDevice, stream));
  compare_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(test_bf16), ref, n,
                                                          acc_buf.as<compare_acc>());
  TB_CUDA_LAUNCHED("compare_bf16_f32");
  compare_acc h{};
  TB_CUDA(cudaMemcpyAsync(&h, acc_buf.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
  TB_CUDA(cudaStreamSynchronize(stream));
  double mx;
  std::memcpy(&mx, &h.max_abs_bits, sizeof mx);
  st.ref_norm = std::sqrt(h.sq_ref);
  st.rel_err = st.ref_norm > 0 ? std::sqrt(h.sq_diff) / st.ref_norm : INFINITY;
  st.max_abs_err = mx;
  st.nonfinite = h.nonfinite;
  st.first_nonfinite = h.nonfinite ? std::int64_t(h.first_nonfinite) : -1;
  return st;
}

std::uint64_t count_mismatched_u16(const void* a, const void* b, std::size_t n_u16, cudaStream_t stream) {
  if (!n_u16) return 0;
  device_buffer cnt(sizeof(unsigned long long));
  TB_CUDA(cudaMemsetAsync(cnt.get(), 0, cnt.bytes(), stream));
  mismatch_kernel<<<blocks_for(n_u16), kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(a),
                                                               static_cast<const std::uint16_t*>(b), n_u16,
                                                               cnt.as<unsigned long long>());
  TB_CUDA_LAUNCHED("count_mismatched_u16");
  unsigned long long h = 0;
  TB_CUDA(cudaMemcpyAsync(&h, cnt.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
  TB_CUDA(cudaStreamSynchronize(stream));
  return h;
}

void bias_relu_f32_inplace(float* ref, const void* bias_bf16, std::int64_t M, std::int64_t N, cudaStream_t stream) {
  std::size_t n = std::size_t(M) * std::size_t(N);
  if (!n) return;
  bias_relu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ref, static_cast<const __nv_bfloat16*>(bias_bf16), M, N);
  TB_CUDA_LAUNCHED("bias_relu_f32_inplace");
}

void bias_gelu_f32_inplace(float* ref, const void* bias_bf16, std::int64_t M, std::int64_t N, cudaStream_t stream) {
  std::size_t n = std::size_t(M) * std::size_t(N);
  if (!n) return;
  bias_gelu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ref, static_cast<const __nv_bfloat16*>(bias_bf16), M, N);
  TB_CUDA_LAUNCHED("bias_gelu_f32_inplace");
}

void alpha_beta_f32_inplace(float* ref, const void* c0_bf16, float alpha, float beta, std::size_t n,
                            cudaStream_t stream) {
  if (!n) return;
  alpha_beta_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ref, static_cast<const __nv_bfloat16*>(c0_bf16), alpha,
                                                            beta, n);
  TB_CUDA_LAUNCHED("alpha_beta_f32_inplace");
}

void swiglu_f32_reference(const float* gu, std::int64_t M, std::int64_t N, float* out, cudaStream_t stream) {
  std::size_t n = std::size_t(M) * std::size_t(N);
  if (!n) return;
  swiglu_reference_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gu, M, N, out);
  TB_CUDA_LAUNCHED("swiglu_f32_reference");
}

void scale_columns_f32_inplace(float* ref, const float* scale, std::int64_t M, std::int64_t N, cudaStream_t stream) {
  std::size_t n = std::size_t(M) * std::size_t(N);
  if (!n) return;
  scale_columns_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(ref, scale, M, N);
  TB_CUDA_LAUNCHED("scale_columns_f32_inplace");
}

void scale_columns_bf16_inplace(void* c_bf16, const float* scale, std::int64_t M, std::int64_t N,
                                cudaStream_t stream) {
  std::size_t n = std::size_t(M) * std::size_t(N);
  if (!n) return;
  scale_columns_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(c_bf16), scale, M, N);
  TB_CUDA_LAUNCHED("scale_columns_bf16_inplace");
}

void row_amax_bf16(const void* x_bf16, std::int64_t M, std::int64_t N, std::int64_t ld, float* amax,
                   cudaStream_t stream) {
  if (M <= 0) return;
  const unsigned blocks = unsigned(std::min<std::int64_t>(M, 132 * 16));
  row_amax_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x_bf16), M, N, ld, amax);
  TB_CUDA_LAUNCHED("row_amax_bf16");
}

void row_amax_f32(const float* x, std::int64_t M, std::int64_t N, std::int64_t ld, float* amax, cudaStream_t stream) {
  if (M <= 0) return;
  const unsigned blocks = unsigned(std::min<std::int64_t>(M, 132 * 16));
  row_amax_kernel<<<blocks, kThreads, 0, stream>>>(x, M, N, ld, amax);
  TB_CUDA_LAUNCHED("row_amax_f32");
}

std::vector<std::uint16_t> to_host_bf16(const void* p, std::size_t n) {
  std::vector<std::uint16_t> h(n);
  TB_CUDA(cudaDeviceSynchronize());
  TB_CUDA(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

void gpu_spin(double us, cudaStream_t stream) {
  if (us <= 0) return;
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(us * 1e3));
  TB_CUDA_LAUNCHED("gpu_spin");
}

// ---- cuBLASLt ------------------------------------------------------------------------------------

lt_context::lt_context(std::size_t workspace_bytes) : ws_(workspace_bytes) {
  cublasLtHandle_t h = nullptr;
  TB_LT(cublasLtCreate(&h));
  handle_ = h;
}

lt_context::~lt_context() {
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

lt_gemm::lt_gemm(lt_context& ctx, std::int64_t M, std::int64_t N, std::int64_t K, out_type out, epilogue ep,
                 const void* bias, int max_algos, gemm_layout layout, in_type in, lt_block_scales scales)
    : ctx_(ctx) {
  try {
    init(M, N, K, out, ep, bias, max_algos, layout, in, scales);
  } catch (...) {
    destroy();
    throw;
  }
}

gemm_layout gemm_layout::parse(const std::string& s) {
  std::string u;
  for (char c : s) u += char(std::toupper(static_cast<unsigned char>(c)));
  if (u.size() != 2 || (u[0] != 'T' && u[0] != 'N') || (u[1] != 'T' && u[1] != 'N'))
    throw std::invalid_argument("layout '" + s + "' is not one of TN, NN, NT, TT");
  return gemm_layout{u[0] == 'T', u[1] == 'N'};
}

void lt_gemm::init(std::int64_t M, std::int64_t N, std::int64_t K, out_type out, epilogue ep, const void* bias,
                   int max_algos, gemm_layout layout, in_type in, lt_block_scales scales) {
  if (M <= 0 || N <= 0 || K <= 0) throw std::invalid_argument("lt_gemm: empty problem");
  if (in == in_type::e4m3 && !(layout == gemm_layout{}))
    throw std::invalid_argument("lt_gemm: cuBLASLt takes fp8 operands in the TN layout only");
  const cudaDataType_t operand = in == in_type::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  if (ep != epilogue::none && !bias) throw std::invalid_argument("lt_gemm: a bias epilogue needs a bias pointer");
  cublasLtMatmulDesc_t op = nullptr;
  TB_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  op_ = op;
  // K-contiguous B is K x N column-major, op T; N-contiguous B is N x K column-major, op N.
  // K-contiguous A is K x M column-major, op N; M-contiguous A is M x K column-major, op T.
  cublasOperation_t ta = layout.b_k_contiguous ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = layout.a_k_contiguous ? CUBLAS_OP_N : CUBLAS_OP_T;
  TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (scales.a || scales.b) {
    if (in != in_type::e4m3 || !scales.a || !scales.b)
      throw std::invalid_argument("lt_gemm: block scales need fp8 operands and both scale tensors");
    // cuBLASLt's A is our B (128 x 128 blocks), its B our A (1 x 128 per row).
    const std::int32_t ma = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof ma));
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof mb));
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales.b, sizeof scales.b));
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales.a, sizeof scales.a));
  }
  if (ep != epilogue::none) {
    cublasLtEpilogue_t e = ep == epilogue::bias_relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS;
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    cudaDataType_t bt = CUDA_R_16BF;
    TB_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  }
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  // cuBLASLt A := our B buffer, K x N column-major (ld K), op T (TN layout).
  if (layout.b_k_contiguous)
    TB_LT(cublasLtMatrixLayoutCreate(&la, operand, std::uint64_t(K), std::uint64_t(N), K));
  else
    TB_LT(cublasLtMatrixLayoutCreate(&la, operand, std::uint64_t(N), std::uint64_t(K), N));
  a_ = la;
  // cuBLASLt B := our A buffer, K x M column-major (ld K), op N (TN layout).
  if (layout.a_k_contiguous)
    TB_LT(cublasLtMatrixLayoutCreate(&lb, operand, std::uint64_t(K), std::uint64_t(M), K));
  else
    TB_LT(cublasLtMatrixLayoutCreate(&lb, operand, std::uint64_t(M), std::uint64_t(K), M));
  b_ = lb;
  // D := our C buffer, N x M column-major (ld N).
  TB_LT(cublasLtMatrixLayoutCreate(&ld, out == out_type::bf16 ? CUDA_R_16BF : CUDA_R_32F, std::uint64_t(N),
                                   std::uint64_t(M), N));
  d_ = ld;

  cublasLtMatmulPreference_t pref = nullptr;
  TB_LT(cublasLtMatmulPreferenceCreate(&pref));
  std::size_t ws = ctx_.workspace_bytes();
  TB_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  max_algos = std::max(1, max_algos);
  std::vector<cublasLtMatmulHeuristicResult_t> res(static_cast<std::size_t>(max_algos));
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(ctx_.handle()), op, la, lb, ld, ld,
                                                    pref, max_algos, res.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check_lt(s, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  for (int i = 0; i < found; ++i) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
    std::vector<unsigned char> blob(sizeof(cublasLtMatmulAlgo_t));
    std::memcpy(blob.data(), &res[i].algo, sizeof(cublasLtMatmulAlgo_t));
    algos_.push_back(std::move(blob));
    algo_ws_.push_back(res[i].workspaceSize);
  }
  if (algos_.empty()) throw cuda_error("cuBLASLt heuristic found no algorithm for this GEMM");
}

lt_gemm::~lt_gemm() { destroy(); }

void lt_gemm::destroy() noexcept {
  if (d_) cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(d_));
  if (b_) cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(b_));
  if (a_) cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(a_));
  if (op_) cublasLtMatmulDescDestroy(static_cast<cublasLtMatmulDesc_t>(op_));
  d_ = b_ = a_ = op_ = nullptr;
}

void lt_gemm::select_algo(int i) {
  if (i < 0 || i >= num_algos()) throw std::out_of_range("lt_gemm::select_algo");
  selected_ = i;
}

void lt_gemm::run(const void* A, const void* B, void* C, cudaStream_t stream) const {
  const float alpha = alpha_, beta = beta_;
  const void* c_in = c_in_ ? c_in_ : C;
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, algos_[selected_].data(), sizeof algo);
  TB_LT(cublasLtMatmul(static_cast<cublasLtHandle_t>(ctx_.handle()), static_cast<cublasLtMatmulDesc_t>(op_), &alpha,
                       B, static_cast<cublasLtMatrixLayout_t>(a_),   // cuBLASLt A = our B (op T)
                       A, static_cast<cublasLtMatrixLayout_t>(b_),   // cuBLASLt B = our A (op N)
                       &beta, c_in, static_cast<cublasLtMatrixLayout_t>(d_), C, static_cast<cublasLtMatrixLayout_t>(d_),
                       &algo, ctx_.workspace(), ctx_.workspace_bytes(), stream));
}

std::string lt_gemm::algo_description() const {
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, algos_[selected_].data(), sizeof algo);
  std::int32_t id = -1, splitk = 1;
  std::uint32_t tile = 0, stages = 0;
  std::uint16_t cluster = 0;
  std::size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  std::ostringstream os;
  os << "heuristic#" << selected_ << " algo=" << id << " tile_id=" << tile << " stages_id=" << stages
     << " splitK=" << splitk << " cluster_id=" << cluster << " ws=" << algo_ws_[selected_];
  return os.str();
}

// ---- guarded outputs -----------------------------------------------------------------------------

guarded_layout guarded_matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, int elt_bytes, bool aligned,
                              std::int64_t batch, std::int64_t batch_stride) {
  if (ld < cols) throw std::invalid_argument("guarded_matrix: ld " + std::to_string(ld) + " < cols " + std::to_string(cols));
  guarded_layout l;
  l.batch = batch;
  l.rows = rows;
  l.cols = cols;
  l.batch_stride = batch_stride ? batch_stride : rows * ld;
  l.row_stride = ld;
  l.col_stride = 1;
  l.elt_bytes = elt_bytes;
  // 48 bytes: 16-byte aligned (cudaMalloc gives 256) but not 32, 64 or 128.
  l.front = 48 / elt_bytes + (aligned ? 0 : 1);
  l.back = 256 / elt_bytes;
  return l;
}

std::int64_t padded_ld(std::int64_t cols, int elt_bytes) {
  const std::int64_t per16 = 16 / elt_bytes;
  return (cols + per16 - 1) / per16 * per16 + per16;
}

std::int64_t misaligned_ld(std::int64_t cols, int elt_bytes) {
  std::int64_t ld = cols + 1;
  while (ld * elt_bytes % 16 == 0) ++ld;
  return ld;
}

std::string guard_report::str() const {
  if (ok()) return "guards intact, every output element written";
  return std::to_string(clobbered) + " elements outside the output written, " + std::to_string(unwritten) +
         " output elements never written (still NaN-poisoned): " + detail;
}

guarded_output::guarded_output(const guarded_layout& l) : l_(l) {
  if (l.elt_bytes != 1 && l.elt_bytes != 2 && l.elt_bytes != 4)
    throw std::invalid_argument("guarded_output: elements of 1, 2 or 4 bytes");
  if (l.batch < 1 || l.rows < 1 || l.cols < 1 || l.front < 0 || l.back < 0 || l.batch_stride < 0 ||
      l.row_stride < 0 || l.col_stride < 0)
    throw std::invalid_argument("guarded_output: empty output or negative stride");
  // Runs of contiguous output elements: rows when col_stride is 1, columns when row_stride is 1,
  // single elements otherwise.
  for (std::int64_t b = 0; b < l.batch; ++b) {
    if (l.col_stride == 1) {
      for (std::int64_t r = 0; r < l.rows; ++r) runs_.push_back({b * l.batch_stride + r * l.row_stride, l.cols, b, r, 0});
    } else {
      for (std::int64_t c = 0; c < l.cols; ++c) {
        if (l.row_stride == 1) {
          runs_.push_back({b * l.batch_stride + c * l.col_stride, l.rows, b, 0, c});
        } else {
          for (std::int64_t r = 0; r < l.rows; ++r)
            runs_.push_back({b * l.batch_stride + r * l.row_stride + c * l.col_stride, 1, b, r, c});
        }
      }
    }
  }
  std::sort(runs_.begin(), runs_.end(), [](const run& x, const run& y) { return x.start < y.start; });
  for (std::size_t i = 1; i < runs_.size(); ++i)
    if (runs_[i - 1].start + runs_[i - 1].len > runs_[i].start)
      throw std::invalid_argument("guarded_output: the output's elements overlap");
  const std::int64_t total = l.front + runs_.back().start + runs_.back().len + l.back;
  buf_ = device_buffer(std::size_t(total) * std::size_t(l.elt_bytes));
}

void guarded_output::reset(cudaStream_t stream) const {
  const std::size_t e = std::size_t(l_.elt_bytes);
  TB_CUDA(cudaMemsetAsync(buf_.get(), kGuardSentinel, buf_.bytes(), stream));
  if (l_.col_stride == 1 || l_.row_stride == 1) {
    const bool by_row = l_.col_stride == 1;
    for (std::int64_t b = 0; b < l_.batch; ++b)
      TB_CUDA(cudaMemset2DAsync(static_cast<char*>(data()) + std::size_t(b * l_.batch_stride) * e,
                                std::size_t(by_row ? l_.row_stride : l_.col_stride) * e, 0xFF,
                                std::size_t(by_row ? l_.cols : l_.rows) * e, std::size_t(by_row ? l_.rows : l_.cols),
                                stream));
    return;
  }
  std::vector<unsigned char> image(buf_.bytes(), kGuardSentinel);
  for (const run& r : runs_) std::memset(&image[std::size_t(l_.front + r.start) * e], 0xFF, std::size_t(r.len) * e);
  TB_CUDA(cudaMemcpyAsync(buf_.get(), image.data(), image.size(), cudaMemcpyHostToDevice, stream));
  TB_CUDA(cudaStreamSynchronize(stream));  // `image` is freed on return
}

std::string guarded_output::where(std::int64_t e) const {
  const std::int64_t d = e - l_.front;
  if (d < 0) return "front guard, " + std::to_string(-d) + " before element (0, 0)";
  auto it = std::upper_bound(runs_.begin(), runs_.end(), d, [](std::int64_t v, const run& r) { return v < r.start; });
  const run& r = *std::prev(it);  // runs_[0].start is 0
  const std::int64_t past = d - r.start - r.len + 1;  // > 0: after the run
  if (it == runs_.end()) return "back guard, " + std::to_string(past) + " past the last element";
  std::string m = l_.batch > 1 ? "matrix " + std::to_string(r.b) + ", " : "";
  if (l_.col_stride == 1)
    return m + "row " + std::to_string(r.r) + ", col " + std::to_string(d - r.start) + " (" + std::to_string(past) +
           " past the row's end)";
  if (l_.row_stride == 1)
    return m + "col " + std::to_string(r.c) + ", row " + std::to_string(d - r.start) + " (" + std::to_string(past) +
           " past the column's end)";
  return std::to_string(past) + " after element " + m + "(" + std::to_string(r.r) + ", " + std::to_string(r.c) + ")";
}

guard_report guarded_output::check(cudaStream_t stream) {
  host_.resize(buf_.bytes());
  TB_CUDA(cudaMemcpyAsync(host_.data(), buf_.get(), host_.size(), cudaMemcpyDeviceToHost, stream));
  TB_CUDA(cudaStreamSynchronize(stream));
  const std::size_t eb = std::size_t(l_.elt_bytes);
  auto word = [&](std::int64_t e) {
    std::uint32_t w = 0;
    std::memcpy(&w, &host_[std::size_t(e) * eb], eb);
    return w;
  };
  // (0xFF.. is NaN in every float type here: f32, f16, bf16, e4m3, e5m2.)
  const std::uint32_t sentinel = 0xA5A5A5A5u >> (32 - 8 * eb), poison = 0xFFFFFFFFu >> (32 - 8 * eb);
  guard_report g;
  std::string outside, unwritten;
  char hex[16];
  auto gap = [&](std::int64_t from, std::int64_t to) {
    for (std::int64_t e = from; e < to; ++e) {
      const std::uint32_t w = word(e);
      if (w == sentinel) continue;
      if (g.clobbered++ < 6) {
        std::snprintf(hex, sizeof hex, "0x%0*x", int(eb * 2), w);
        outside += (outside.empty() ? "" : "; ") + where(e) + " = " + hex;
      }
    }
  };
  std::int64_t pos = 0;
  for (const run& r : runs_) {
    const std::int64_t first = l_.front + r.start;
    gap(pos, first);
    for (std::int64_t i = 0; i < r.len; ++i) {
      if (word(first + i) != poison) continue;
      if (g.unwritten++ < 6) {
        const bool by_row = l_.col_stride == 1;
        unwritten += (unwritten.empty() ? "(b, row, col) " : ", ") + std::string("(") + std::to_string(r.b) + ", " +
                     std::to_string(by_row ? r.r : r.r + i) + ", " + std::to_string(by_row ? r.c + i : r.c) + ")";
      }
    }
    pos = first + r.len;
  }
  gap(pos, std::int64_t(host_.size() / eb));
  if (g.clobbered) g.detail = "written outside: " + outside + (g.clobbered > 6 ? "; ..." : "");
  if (g.unwritten)
    g.detail += (g.detail.empty() ? "" : "; ") + std::string("never written: ") + unwritten +
                (g.unwritten > 6 ? ", ..." : "");
  return g;
}

std::uint32_t guarded_output::bits(std::int64_t b, std::int64_t r, std::int64_t c) const {
  const std::size_t e = std::size_t(l_.front + b * l_.batch_stride + r * l_.row_stride + c * l_.col_stride);
  std::uint32_t w = 0;
  std::memcpy(&w, &host_.at(e * std::size_t(l_.elt_bytes)), std::size_t(l_.elt_bytes));
  return w;
}

void guarded_output::copy_to_dense(void* dst, cudaStream_t stream) const {
  if (l_.col_stride != 1) throw std::invalid_argument("guarded_output::copy_to_dense: rows must be contiguous");
  const std::size_t e = std::size_t(l_.elt_bytes), row = std::size_t(l_.cols) * e;
  for (std::int64_t b = 0; b < l_.batch; ++b)
    TB_CUDA(cudaMemcpy2DAsync(static_cast<char*>(dst) + std::size_t(b * l_.rows) * row, row,
                              static_cast<const char*>(data()) + std::size_t(b * l_.batch_stride) * e,
                              std::size_t(l_.row_stride) * e, row, std::size_t(l_.rows), cudaMemcpyDeviceToDevice,
                              stream));
}

// ---- problem buffers -----------------------------------------------------------------------------

int rotation_sets(std::size_t bytes_per_set, std::size_t l2_bytes, int min_sets, std::size_t max_total_bytes) {
  if (bytes_per_set == 0) return std::max(1, min_sets);
  std::size_t l2 = l2_bytes ? l2_bytes : (50u << 20);
  std::size_t want = (2 * l2 + bytes_per_set - 1) / bytes_per_set + 1;
  want = std::max<std::size_t>(want, std::size_t(std::max(1, min_sets)));
  std::size_t cap = std::max<std::size_t>(1, max_total_bytes / bytes_per_set);
  return static_cast<int>(std::min(want, cap));
}

gemm_problem::gemm_problem(std::int64_t M_, std::int64_t N_, std::int64_t K_, bool with_bias, const device_info& dev,
                           std::uint64_t seed, int min_sets, std::size_t max_total_bytes, cudaStream_t stream)
    : M(M_), N(N_), K(K_) {
  if (M <= 0 || N <= 0 || K <= 0) throw std::invalid_argument("gemm_problem: empty problem");
  std::size_t free_b = 0, total_b = 0;
  TB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  std::size_t ref_bytes = std::size_t(M) * std::size_t(N) * 4;
  std::size_t budget = std::min(max_total_bytes, free_b > ref_bytes ? (free_b - ref_bytes) / 2 : 0);
  std::size_t per = bytes_per_set();
  int n_sets = rotation_sets(per, dev.l2_bytes, min_sets, budget);
  for (int s = 0; s < n_sets; ++s) {
    a_.emplace_back(std::size_t(M) * std::size_t(K) * 2);
    b_.emplace_back(std::size_t(N) * std::size_t(K) * 2);
    c_.emplace_back(std::size_t(M) * std::size_t(N) * 2);
    std::uint64_t sd = seed * 1000003ull + std::uint64_t(s) * 16;
    fill_uniform_bf16(a_.back().get(), std::size_t(M) * std::size_t(K), sd + 1, -1.f, 1.f, stream);
    fill_uniform_bf16(b_.back().get(), std::size_t(N) * std::size_t(K), sd + 2, -1.f, 1.f, stream);
    poison_nan(c_.back().get(), c_.back().bytes(), stream);
    if (with_bias) {
      bias_.emplace_back(std::size_t(N) * 2);
      fill_uniform_bf16(bias_.back().get(), std::size_t(N), sd + 3, -1.f, 1.f, stream);
    }
  }
  TB_CUDA(cudaStreamSynchronize(stream));
}

std::size_t gemm_problem::bytes_per_set() const {
  return (std::size_t(M) * std::size_t(K) + std::size_t(N) * std::size_t(K) + std::size_t(M) * std::size_t(N)) * 2;
}

const float* gemm_problem::reference(lt_context& lt, cudaStream_t stream) {
  if (!ref_) {
    device_buffer r(std::size_t(M) * std::size_t(N) * 4);
    poison_nan(r.get(), r.bytes(), stream);
    lt_gemm g(lt, M, N, K, out_type::f32, epilogue::none, nullptr, 1, layout);
    g.run(A(0), B(0), r.get(), stream);
    if (c0()) alpha_beta_f32_inplace(r.as<float>(), c0(), alpha, beta, std::size_t(M) * std::size_t(N), stream);
    if (with_bias() && bias_epilogue == epilogue::bias_gelu)
      bias_gelu_f32_inplace(r.as<float>(), bias(0), M, N, stream);
    else if (with_bias())
      bias_relu_f32_inplace(r.as<float>(), bias(0), M, N, stream);
    if (col_scale()) scale_columns_f32_inplace(r.as<float>(), col_scale(), M, N, stream);
    TB_CUDA(cudaStreamSynchronize(stream));
    ref_ = std::move(r);
  }
  return ref_.as<float>();
}

void gemm_problem::add_c0(float alpha_, float beta_, std::uint64_t seed, cudaStream_t stream) {
  c0_.clear();
  c0_.emplace_back(std::size_t(M) * std::size_t(N) * 2);
  fill_uniform_bf16(c0_.back().get(), std::size_t(M) * std::size_t(N), seed * 1000003ull + 977, -1.f, 1.f, stream);
  alpha = alpha_;
  beta = beta_;
  ref_ = device_buffer();  // a reference computed before no longer applies
}

void gemm_problem::add_col_scale(std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  col_scale_ = device_buffer(std::size_t(N) * 4);
  fill_uniform_f32(col_scale_.as<float>(), std::size_t(N), seed * 1000003ull + 983, lo, hi, stream);
  ref_ = device_buffer();  // a reference computed before no longer applies
}

void gemm_problem::poison(int i, cudaStream_t stream) const { poison_nan(C(i), std::size_t(M) * std::size_t(N) * 2, stream); }

compare_stats gemm_problem::check_set0(lt_context& lt, cudaStream_t stream) {
  const float* r = reference(lt, stream);
  return compare_bf16_f32(C(0), r, std::size_t(M) * std::size_t(N), stream);
}

// ---- timing ---------------------------------------------------------------------------------

namespace {
using clk = std::chrono::steady_clock;
double ms_since(clk::time_point t0) { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); }

template <class T> T median_of(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : T((v[n / 2 - 1] + v[n / 2]) / 2);
}

struct event_pair {
  cudaEvent_t a = nullptr, b = nullptr;
  event_pair() {
    TB_CUDA(cudaEventCreate(&a));
    TB_CUDA(cudaEventCreate(&b));
  }
  ~event_pair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
};
}  // namespace

std::vector<timing> time_interleaved(const std::vector<launch_fn>& fns, const timing_config& cfg, cudaStream_t stream,
                                     const nvml_probe* nvml) {
  const std::size_t n = fns.size();
  std::vector<timing> out(n);
  if (!n) return out;
  std::vector<int> counter(n, 0);
  event_pair ev;

  // First launches (module load, heuristics, lazy init), then warm-up until the clocks settle.
  for (std::size_t c = 0; c < n; ++c) fns[c](counter[c]++, stream);
  TB_CUDA(cudaStreamSynchronize(stream));
  for (auto t0 = clk::now(); ms_since(t0) < cfg.warmup_ms;) {
    for (std::size_t c = 0; c < n; ++c)
      for (int i = 0; i < 4; ++i) fns[c](counter[c]++, stream);
    TB_CUDA(cudaStreamSynchronize(stream));
  }

  // Calibrate: host enqueue cost per launch, then GPU time per launch behind a generous spin.
  std::vector<double> enqueue_us(n), gpu_ms(n);
  const int probe = std::max(4, std::min(cfg.batch, 20));
  for (std::size_t c = 0; c < n; ++c) {
    gpu_spin(20000, stream);  // keep the GPU busy while the host enqueues
    auto h0 = clk::now();
    for (int i = 0; i < probe; ++i) fns[c](counter[c]++, stream);
    enqueue_us[c] = ms_since(h0) * 1e3 / probe;
    TB_CUDA(cudaStreamSynchronize(stream));
    gpu_spin(std::min(200000.0, 2 * enqueue_us[c] * probe + 100), stream);
    TB_CUDA(cudaEventRecord(ev.a, stream));
    for (int i = 0; i < probe; ++i) fns[c](counter[c]++, stream);
    TB_CUDA(cudaEventRecord(ev.b, stream));
    TB_CUDA(cudaEventSynchronize(ev.b));
    float ms = 0;
    TB_CUDA(cudaEventElapsedTime(&ms, ev.a, ev.b));
    gpu_ms[c] = std::max(1e-4, double(ms) / probe);
  }
  double fastest = *std::min_element(gpu_ms.begin(), gpu_ms.end());
  int batch = std::max(cfg.batch, int(std::ceil(cfg.min_batch_ms / fastest)));
  batch = std::max(1, std::min(batch, cfg.max_batch));
  double max_enqueue = *std::max_element(enqueue_us.begin(), enqueue_us.end());
  double spin_us = std::min(200000.0, std::max(50.0, 1.5 * max_enqueue * batch + 50));
  // Power and clocks oscillate on a ~100 ms scale: time enough batches to average over several periods.
  double slowest = *std::max_element(gpu_ms.begin(), gpu_ms.end());
  int repeats = std::max(1, cfg.repeats);
  repeats = std::max(repeats, std::min(cfg.max_repeats, int(std::ceil(cfg.min_total_ms / (slowest * batch)))));

  std::vector<std::vector<unsigned>> clocks(n), power(n);
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      std::size_t c = (std::size_t(r) + j) % n;  // rotate who goes first
      gpu_spin(spin_us, stream);
      TB_CUDA(cudaEventRecord(ev.a, stream));
      for (int i = 0; i < batch; ++i) fns[c](counter[c]++, stream);
      TB_CUDA(cudaEventRecord(ev.b, stream));
      if (nvml && nvml->available()) {
        // Read the clock while the batch runs (roughly in its middle), not while the GPU idles.
        double wait_us = spin_us + 0.5 * gpu_ms[c] * 1e3 * batch;
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long long>(wait_us)));
        if (unsigned mhz = nvml->sm_clock_mhz()) clocks[c].push_back(mhz);
        if (unsigned mw = nvml->power_mw()) power[c].push_back(mw / 1000);
      }
      TB_CUDA(cudaEventSynchronize(ev.b));
      TB_CUDA(cudaGetLastError());
      float ms = 0;
      TB_CUDA(cudaEventElapsedTime(&ms, ev.a, ev.b));
      out[c].samples_ms.push_back(double(ms) / batch);
    }
  }
  for (std::size_t c = 0; c < n; ++c) {
    auto& t = out[c];
    t.median_ms = median_of(t.samples_ms);
    t.min_ms = *std::min_element(t.samples_ms.begin(), t.samples_ms.end());
    t.max_ms = *std::max_element(t.samples_ms.begin(), t.samples_ms.end());
    t.enqueue_us = enqueue_us[c];
    t.median_sm_mhz = median_of(clocks[c]);
    t.median_power_w = median_of(power[c]);
    t.batch = batch;
  }
  return out;
}

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

}  // namespace tessel_bench

// ---- tessel vs cuBLASLt on one problem ----------------------------------------------------------

namespace tessel_bench {

int select_fastest_algo(lt_gemm& g, const gemm_problem& p, cudaStream_t stream, const nvml_probe* nvml) {
  if (g.num_algos() <= 1) return g.selected_algo();
  std::vector<launch_fn> fns;
  for (int a = 0; a < g.num_algos(); ++a)
    fns.push_back([&g, &p, a](int i, cudaStream_t s) {
      g.select_algo(a);
      g.run(p.A(i), p.B(i), p.C(i), s);
    });
  timing_config quick;
  quick.warmup_ms = 100;
  quick.repeats = 3;
  quick.batch = 10;
  auto t = time_interleaved(fns, quick, stream, nvml);
  int best = 0;
  for (int a = 1; a < g.num_algos(); ++a)
    if (t[a].median_ms < t[best].median_ms) best = a;
  g.select_algo(best);
  return best;
}

compare_report compare_with_cublas(const launch_fn& candidate, const output_launch_fn& check_launch, gemm_problem& p,
                                   const lt_gemm& cublas, lt_context& lt, const compare_config& cfg,
                                   cudaStream_t stream, const nvml_probe* nvml) {
  compare_report r;
  if (cfg.check) {
    p.reference(lt, stream);
    guarded_output out(guarded_matrix(p.M, p.N, padded_ld(p.N)));
    out.reset(stream);
    check_launch(out.data(), out.layout().row_stride, stream);
    TB_CUDA(cudaStreamSynchronize(stream));
    TB_CUDA(cudaGetLastError());
    r.guard = out.check(stream);
    out.copy_to_dense(p.C(0), stream);
    r.candidate_check = p.check_set0(lt, stream);
    if (cfg.verify) r.verify_ok = cfg.verify(r.verify_lines);
    p.poison(0, stream);
    cublas.run(p.A(0), p.B(0), p.C(0), stream);
    if (p.col_scale()) {  // cuBLASLt has no column scale: apply it to its output (one more bf16 rounding)
      scale_columns_bf16_inplace(p.C(0), p.col_scale(), p.M, p.N, stream);
      r.cublas_col_scaled = true;
    }
    TB_CUDA(cudaStreamSynchronize(stream));
    r.cublas_check = p.check_set0(lt, stream);
    r.checked = true;
    r.check_ok = r.candidate_check.ok(cfg.tol) && r.guard.ok() && r.verify_ok;
  }
  if (cfg.time) {
    launch_fn ref = [&](int i, cudaStream_t s) { cublas.run(p.A(i), p.B(i), p.C(i), s); };
    std::vector<launch_fn> fns{candidate, ref};
    for (const named_launch& a : cfg.also_time) fns.push_back(a.launch);
    auto t = time_interleaved(fns, cfg.timing, stream, nvml);
    r.candidate = t[0];
    r.cublas = t[1];
    r.candidate_tflops = tflops(p.flops(), r.candidate.median_ms);
    r.cublas_tflops = tflops(p.flops(), r.cublas.median_ms);
    r.ratio = r.cublas_tflops > 0 ? r.candidate_tflops / r.cublas_tflops : 0;
    for (std::size_t a = 0; a < cfg.also_time.size(); ++a) {
      r.also_names.push_back(cfg.also_time[a].name);
      r.also.push_back(t[2 + a]);
      r.also_tflops.push_back(tflops(p.flops(), t[2 + a].median_ms));
      r.also_ratio.push_back(r.also_tflops.back() > 0 ? r.candidate_tflops / r.also_tflops.back() : 0);
    }
    r.timed = true;
  }
  return r;
}

}  // namespace tessel_bench

namespace tessel_bench {

std::string describe(const device_info& d) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.0f MB L2, %.0f GB, max SM clock %d MHz)", d.name.c_str(),
                d.cc_major, d.cc_minor, d.sms, d.l2_bytes / 1048576.0, d.global_mem_bytes / 1e9, d.max_sm_clock_mhz);
  return buf;
}

std::string format_report(const compare_report& r, const char* candidate, const compare_config& cfg,
                          const nvml_probe* nvml, const device_info& dev) {
  std::ostringstream os;
  char buf[512];
  if (r.checked) {
    std::snprintf(buf, sizeof buf, "  check:  %-9s %s  %s (tol %.0e)\n", candidate, r.candidate_check.str().c_str(),
                  r.check_ok ? "PASS" : "FAIL", cfg.tol);
    os << buf;
    os << "          guards    " << r.guard.str() << "  (C in padded rows, a sentinel around it)\n";
    os << r.verify_lines;
    std::snprintf(buf, sizeof buf, "          %-9s %s  (cuBLASLt bf16 out%s vs the same f32 reference)\n", "cuBLASLt",
                  r.cublas_check.str().c_str(),
                  r.cublas_col_scaled ? ", times the column scale in bf16 afterwards," : "");
    os << buf;
  } else {
    os << "  check:  skipped (--no-check)\n";
  }
  if (!r.timed) return os.str();
  std::snprintf(buf, sizeof buf,
                "  timing: CUDA events around batches of %d launches, %zu batches each, interleaved, median\n",
                r.candidate.batch, r.candidate.samples_ms.size());
  os << buf;
  int w = 9;  // name column
  for (const std::string& n : r.also_names) w = std::max(w, int(n.size()));
  os << std::string(std::size_t(4 + w), ' ')
     << "ms/launch    TFLOP/s    min..max ms/launch   SM MHz  power W  host us/launch\n";
  auto row = [&](const char* name, const timing& t, double tf) {
    std::snprintf(buf, sizeof buf, "    %-*s %9.4f  %9.1f    %8.4f..%-8.4f   %6s  %7s  %8.1f\n", w, name, t.median_ms, tf,
                  t.min_ms, t.max_ms, t.median_sm_mhz ? std::to_string(t.median_sm_mhz).c_str() : "n/a",
                  t.median_power_w ? std::to_string(t.median_power_w).c_str() : "n/a", t.enqueue_us);
    os << buf;
  };
  row(candidate, r.candidate, r.candidate_tflops);
  row("cuBLASLt", r.cublas, r.cublas_tflops);
  for (std::size_t a = 0; a < r.also.size(); ++a) row(r.also_names[a].c_str(), r.also[a], r.also_tflops[a]);
  std::snprintf(buf, sizeof buf, "  ratio %s/cuBLAS = %.3f\n", candidate, r.ratio);
  os << buf;
  for (std::size_t a = 0; a < r.also.size(); ++a) {
    std::snprintf(buf, sizeof buf, "  ratio %s/(%s) = %.3f\n", candidate, r.also_names[a].c_str(), r.also_ratio[a]);
    os << buf;
  }
  if (!nvml || !nvml->available())
    os << "  SM clock: not read (" << (nvml ? nvml->why() : std::string("no NVML")) << "); max SM clock "
       << dev.max_sm_clock_mhz << " MHz (cudaDevAttrClockRate)\n";
  return os.str();
}

}  // namespace tessel_bench
