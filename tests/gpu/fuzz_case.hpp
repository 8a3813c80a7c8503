// fuzz_case.hpp - the cases of the GEMM fuzzer (DESIGN.md §9; fuzz_test.cpp runs them on the GPU,
// scripts/gpu-fuzz drives long runs). Case `index` of `seed` is a pure function of the two, so that
// a failing case reruns alone (`scripts/gpu-fuzz --seed S --case I`). No GPU and no CUDA here:
// tests/unit/fuzz checks the generator in CI.
//
// Compiling is the expensive part of a case, so a seed fixes a pool of kPoolSize kernel
// configurations (each compiled once per process, plus its launch-time layout variant and, for
// operands that break TMA's rules, its multistage fallback). Every pool holds every schedule x
// operand layout x epilogue (plain, bias + ReLU, a residual M x N operand, reductions) once, and every value of tile, stages, cluster (cooperative and
// pingpong), swizzle, decomposition (cooperative and pingpong 1x1), batching and whether operand
// strides keep TMA's 16-byte rule, combined as the seed draws them, within what SelectSchedule
// accepts; plus kShortEntries entries with tiles of fewer than 64 rows (computed transposed by
// tessel-swap-operands), each TMA-fed schedule once, where the swap applies. Each case picks one
// configuration and draws its problem: M, N, K in 1..3000 biased toward 1, tile multiples +-1,
// primes, K of one k-tile or of whole ring wraps, at most kMaxMacs multiply-adds (most cases are
// small); leading dimensions tight, padded to 16-byte rows, or padded by odd amounts; C 16-byte
// aligned or one element past; batch strides with or without a gap.
#pragma once

#include <tessel/kernel/runtime_api.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace tessel_fuzz {

namespace ts = tessel;

/// splitmix64 streams: the same numbers on every machine (the standard distributions are not
/// specified bit for bit).
class rng {
public:
  rng(std::uint64_t seed, std::uint64_t stream) : s_(mix(seed ^ mix(stream ^ 0x632be59bd9b4e019ull))) {}
  std::uint64_t next() { return mix(s_ += 0x9e3779b97f4a7c15ull); }
  /// Uniform in [0, n).
  std::int64_t below(std::int64_t n) { return std::int64_t(next() % std::uint64_t(n)); }
  bool chance(int percent) { return below(100) < percent; }

private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t s_;
};

inline const char* decomposition_str(ts::decomposition d) {
  switch (d) {
  case ts::decomposition::automatic: return "auto";
  case ts::decomposition::data_parallel: return "dp";
  case ts::decomposition::stream_k: return "sk";
  }
  return "?";
}

/// A kernel and how its operands are laid out.
struct fuzz_config {
  ts::schedule schedule = ts::schedule::tma;
  int bm = 128, bn = 128, bk = 64;
  int stages = 2;
  std::array<int, 2> cluster{1, 1};
  int swizzle = 0;  ///< options::swizzle
  ts::decomposition decomposition = ts::decomposition::automatic;
  bool bias_relu = false;  ///< C = relu(A B^T + bias) instead of A B^T
  /// C = A B^T + R instead (R: M x N, read in the epilogue in its own layout, leading dimension
  /// and alignment; one R for every matrix of a batch). Never with bias_relu.
  bool residual = false;
  /// C = A B^T and two reductions of the accumulator stored with reduce_into: amax[i] =
  /// max_j |acc[i, j]| (M; starts at 0) and colmax[j] = max_i acc[i, j] (N; starts at -inf), over
  /// every matrix of a batch. Exact (integers) and deterministic (max); never with the others.
  bool reductions = false;
  bool batched = false;    ///< rank-3 tensors, program_id(2) picks the matrix
  bool a_k_major = true, b_k_major = true;
  /// Leading dimensions and batch strides of A and B are multiples of 16 bytes (else drawn
  /// freely: the TMA schedules may then fall back to multistage).
  bool tma_strides = true;

  bool persistent() const { return schedule == ts::schedule::cooperative || schedule == ts::schedule::pingpong; }
  /// "NT": A M-major, B N-major (BLAS names, as tessel_bench::gemm_layout).
  std::string layout() const { return std::string(a_k_major ? "T" : "N") + (b_k_major ? "N" : "T"); }
  /// Everything the compiled kernel depends on (layouts and strides are launch-time).
  std::string kernel_key() const {
    std::string s = std::string(ts::to_string(schedule)) + " " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                    std::to_string(bk) + " s" + std::to_string(stages) + " c" + std::to_string(cluster[0]) + "x" +
                    std::to_string(cluster[1]) + " sw" +
                    (swizzle == ts::swizzle_none ? std::string("none") : std::to_string(swizzle)) + " " +
                    decomposition_str(decomposition) + (bias_relu ? " bias_relu" : residual ? " residual" : reductions ? " reductions" : " plain");
    return batched ? s + " batched" : s;
  }
  std::string str() const { return kernel_key() + " " + layout() + (tma_strides ? "" : " free-strides"); }
};

/// One problem for one configuration.
struct fuzz_case {
  std::uint64_t seed = 0, index = 0;
  fuzz_config cfg;
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  /// Leading dimensions in elements: A is stored as m rows of lda (K-major) or k rows of lda
  /// (M-major), B as n or k rows of ldb, C as m rows of ldc.
  std::int64_t lda = 1, ldb = 1, ldc = 1;
  /// Distance between the matrices of a batch, in elements (batched configurations only).
  std::int64_t batch_a = 0, batch_b = 0, batch_c = 0;
  bool c_aligned = true;  ///< C's first element is 16-byte aligned (else one element past)
  /// The residual (cfg.residual): element (i, j) at i * ldr + j, or at j * ldr + i when stored
  /// column-major; its first element 16-byte aligned or one element past.
  std::int64_t ldr = 0;
  bool r_col_major = false, r_aligned = true;

  std::int64_t a_rows() const { return cfg.a_k_major ? m : k; }
  std::int64_t b_rows() const { return cfg.b_k_major ? n : k; }
  std::string str() const {
    std::string s = cfg.str() + " | ";
    if (cfg.batched) s += std::to_string(batch) + "x";
    s += std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " lda " + std::to_string(lda) +
         " ldb " + std::to_string(ldb) + " ldc " + std::to_string(ldc);
    if (cfg.batched)
      s += " batch strides " + std::to_string(batch_a) + "/" + std::to_string(batch_b) + "/" + std::to_string(batch_c);
    if (cfg.residual)
      s += std::string(" R") + (r_col_major ? "^T" : "") + " ldr " + std::to_string(ldr) + (r_aligned ? "" : " R+1");
    return s + (c_aligned ? "" : " C+1");
  }
};

/// schedule x layout x epilogue (4), then the short tiles: tma, warp_specialized, cooperative and
/// pingpong with 16x64, 32x128 or 8x64 (docs/small-m.md), TN, no cluster, not batched, strides TMA
/// accepts (a launch that falls back to multistage cannot run a 16-row tile).
inline constexpr int kBaseEntries = 80, kShortEntries = 4;
inline constexpr int kPoolSize = kBaseEntries + kShortEntries;
/// Most multiply-adds of one case (batch x M x N x K; of 85% of the cases: an eighth of it): the
/// CPU computes the reference.
inline constexpr std::int64_t kMaxMacs = std::int64_t(1) << 24;
inline constexpr ts::schedule kSchedules[] = {ts::schedule::tma, ts::schedule::warp_specialized,
                                              ts::schedule::cooperative, ts::schedule::pingpong,
                                              ts::schedule::multistage};
inline constexpr std::int64_t kPrimes[] = {2,   3,   5,   7,   13,  17,   31,   61,   67,   127,
                                           131, 251, 257, 509, 521, 1021, 1031, 2039, 2053, 2999};

namespace detail {

/// `count` values cycling through `values`, shuffled: each value appears about count / size times
/// (at least once when count >= size), in an order drawn from `r`.
template <class T, std::size_t N>
std::vector<T> balanced(const T (&values)[N], std::size_t count, rng& r) {
  std::vector<T> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(values[i % N]);
  for (std::size_t i = count; i > 1; --i) std::swap(out[i - 1], out[std::size_t(r.below(std::int64_t(i)))]);
  return out;
}

}  // namespace detail

/// The configurations of `seed`: entry i < kBaseEntries has schedule i % 5, layout (i / 5) % 4 (TN,
/// NN, NT, TT) and epilogue (i / 20) % 4 (plain, bias + ReLU, residual, reductions); the kShortEntries after them have
/// tiles of fewer than 64 rows (kPoolSize). Every other attribute takes each of its values about
/// equally often among the entries it applies to, in an order drawn from the seed.
inline std::vector<fuzz_config> config_pool(std::uint64_t seed) {
  using detail::balanced;
  rng r(seed, ~std::uint64_t(0));  // not a case's stream
  std::vector<fuzz_config> pool(kPoolSize);
  std::vector<fuzz_config*> ms, wide, persistent, tma_fed, shorts;  // multistage; may take BN 256; ...
  std::vector<fuzz_config*> unclustered;  // stream-K needs a 1x1 cluster
  for (int i = 0; i < kPoolSize; ++i) {
    fuzz_config& c = pool[std::size_t(i)];
    if (i >= kBaseEntries) {
      constexpr ts::schedule swap_schedules[] = {ts::schedule::tma, ts::schedule::warp_specialized,
                                                 ts::schedule::cooperative, ts::schedule::pingpong};
      c.schedule = swap_schedules[(i - kBaseEntries) % 4];
      shorts.push_back(&c);
      tma_fed.push_back(&c);
      if (c.persistent()) unclustered.push_back(&c);
      continue;
    }
    c.schedule = kSchedules[i % 5];
    const int layout = (i / 5) % 4;
    c.a_k_major = layout == 0 || layout == 3;
    c.b_k_major = layout == 0 || layout == 1;
    c.bias_relu = (i / 20) % 4 == 1;
    c.residual = (i / 20) % 4 == 2;
    c.reductions = (i / 20) % 4 == 3;
    if (c.schedule == ts::schedule::multistage) {
      ms.push_back(&c);
    } else {
      tma_fed.push_back(&c);
      // pingpong holds a whole tile per consumer warpgroup: at most 128x128.
      if (c.schedule != ts::schedule::pingpong) wide.push_back(&c);
    }
    if (c.persistent()) persistent.push_back(&c);
  }
  constexpr int stages[] = {2, 3, 4};
  constexpr int batched[] = {1, 0, 0, 0};
  constexpr int tma_strides[] = {1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  const auto st = balanced(stages, pool.size(), r);
  const auto ba = balanced(batched, pool.size(), r);
  const auto strides = balanced(tma_strides, pool.size(), r);
  for (std::size_t i = 0; i < pool.size(); ++i) {
    pool[i].stages = st[i];
    pool[i].batched = ba[i] == 1;
    pool[i].tma_strides = strides[i] == 1;
  }
  constexpr std::array<int, 2> short_tiles[] = {{16, 64}, {32, 128}, {8, 64}};
  constexpr int epilogues[] = {0, 1, 2};  // no reductions: tessel-swap-operands refuses them
  const auto sh = balanced(short_tiles, shorts.size(), r);
  const auto ep = balanced(epilogues, shorts.size(), r);
  for (std::size_t i = 0; i < shorts.size(); ++i) {
    shorts[i]->bm = sh[i][0], shorts[i]->bn = sh[i][1];
    shorts[i]->bias_relu = ep[i] == 1;
    shorts[i]->residual = ep[i] == 2;
    shorts[i]->batched = false;
    shorts[i]->tma_strides = true;
  }
  constexpr std::array<int, 3> ms_tiles[] = {{128, 128, 32}, {128, 128, 64}, {128, 256, 64}};
  const auto mt = balanced(ms_tiles, ms.size(), r);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i]->bm = mt[i][0], ms[i]->bn = mt[i][1], ms[i]->bk = mt[i][2];
  constexpr int bns[] = {128, 256};
  const auto bn = balanced(bns, wide.size(), r);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i]->bn = bn[i];
  constexpr int swizzles[] = {0, 0, ts::swizzle_none, 32, 64, 128};  // multistage has its own
  const auto sw = balanced(swizzles, tma_fed.size(), r);
  for (std::size_t i = 0; i < tma_fed.size(); ++i) tma_fed[i]->swizzle = sw[i];
  constexpr std::array<int, 2> clusters[] = {{1, 1}, {1, 1}, {2, 1}, {1, 2}};
  const auto cl = balanced(clusters, persistent.size(), r);
  for (std::size_t i = 0; i < persistent.size(); ++i) {
    persistent[i]->cluster = cl[i];
    if (cl[i][0] * cl[i][1] == 1) unclustered.push_back(persistent[i]);
  }
  constexpr ts::decomposition ds[] = {ts::decomposition::automatic, ts::decomposition::data_parallel,
                                      ts::decomposition::stream_k};
  const auto de = balanced(ds, unclustered.size(), r);
  for (std::size_t i = 0; i < unclustered.size(); ++i) unclustered[i]->decomposition = de[i];
  return pool;
}

namespace detail {

inline std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

/// M or N: 1, small, tile multiples +-1, primes, medium, rarely large.
inline std::int64_t draw_mn(rng& r, int tile) {
  const std::int64_t u = r.below(100);
  if (u < 18) return 1;
  if (u < 38) return 2 + r.below(63);
  if (u < 58) return tile * (1 + r.below(3)) + r.below(3) - 1;
  if (u < 72) return kPrimes[r.below(std::ssize(kPrimes))];
  if (u < 93) return 65 + r.below(960);
  return 1025 + r.below(1976);
}

/// K: 1, small, one k-tile +-1, whole ring wraps +-1, primes, medium, rarely large.
inline std::int64_t draw_k(rng& r, int bk, int stages) {
  const std::int64_t u = r.below(100);
  if (u < 12) return 1;
  if (u < 27) return 2 + r.below(62);
  if (u < 42) return bk + r.below(3) - 1;
  if (u < 57) return std::int64_t(bk) * stages * (1 + r.below(8)) + r.below(3) - 1;
  if (u < 67) return kPrimes[r.below(std::ssize(kPrimes))];
  if (u < 93) return 65 + r.below(960);
  return 1025 + r.below(1976);
}

/// Leading dimension of rows of `inner` elements.
inline std::int64_t draw_ld(rng& r, std::int64_t inner, bool tma_strides) {
  if (tma_strides) return round_up(inner, 8) + (r.chance(30) ? 8 : 0);
  switch (r.below(3)) {
  case 0: return inner;
  case 1: return inner + 1 + r.below(7);
  default: return round_up(inner, 8) + 8;
  }
}

}  // namespace detail

/// Case `index` of `seed`, whose pool is `pool` (config_pool(seed)).
inline fuzz_case make_case(const std::vector<fuzz_config>& pool, std::uint64_t seed, std::uint64_t index) {
  using namespace detail;
  rng r(seed, index);
  fuzz_case c;
  c.seed = seed;
  c.index = index;
  c.cfg = pool[std::size_t(r.below(std::ssize(pool)))];
  const fuzz_config& f = c.cfg;
  c.batch = f.batched ? 1 + r.below(4) : 1;
  c.m = draw_mn(r, f.bm);
  c.n = draw_mn(r, f.bn);
  c.k = draw_k(r, f.bk, f.stages);
  // Most cases small: shrink the smallest dimension above 1 (large ones survive) to the budget.
  const std::int64_t budget = r.chance(15) ? kMaxMacs : kMaxMacs / 8;
  while (c.batch * c.m * c.n * c.k > budget) {
    std::int64_t* d[] = {&c.m, &c.n, &c.k};
    std::int64_t** smallest = nullptr;
    for (auto& p : d)
      if (*p > 1 && (!smallest || *p < **smallest)) smallest = &p;
    **smallest = (**smallest + 1) / 2;
  }
  c.lda = draw_ld(r, f.a_k_major ? c.k : c.m, f.tma_strides);
  c.ldb = draw_ld(r, f.b_k_major ? c.k : c.n, f.tma_strides);
  switch (r.below(5)) {
  case 0:
  case 1: c.ldc = c.n; break;
  case 2: c.ldc = round_up(c.n, 8); break;  // a row end that is not 16-byte aligned when N % 8 != 0
  case 3: c.ldc = round_up(c.n, 8) + 8; break;
  default:
    c.ldc = c.n + 1 + r.below(7);
    if (c.ldc % 8 == 0) ++c.ldc;  // rows that are not 16-byte multiples
  }
  c.c_aligned = !r.chance(15);
  if (f.residual) {
    c.r_col_major = r.chance(30);
    const std::int64_t inner = c.r_col_major ? c.m : c.n;
    switch (r.below(3)) {
    case 0: c.ldr = inner; break;
    case 1: c.ldr = round_up(inner, 8) + (r.chance(50) ? 8 : 0); break;
    default:
      c.ldr = inner + 1 + r.below(7);
      if (c.ldr % 8 == 0) ++c.ldr;  // rows that are not 16-byte multiples
    }
    c.r_aligned = !r.chance(15);
  }
  if (f.batched) {
    const auto gap = [&] { return f.tma_strides ? 8 * r.below(2) : r.below(9); };
    c.batch_a = c.a_rows() * c.lda + gap();
    c.batch_b = c.b_rows() * c.ldb + gap();
    c.batch_c = c.m * c.ldc + r.below(9);
  }
  return c;
}

inline fuzz_case make_case(std::uint64_t seed, std::uint64_t index) {
  return make_case(config_pool(seed), seed, index);
}

}  // namespace tessel_fuzz
