//===- AutoSchedule.cpp - the rule of schedule::automatic -------------------===//
//
// Every line of the rule cites the runs of docs/benchmarks.md it comes from
// (H200, bf16, C = A B^T, TN layout, tessel-bench; ratios are tessel / cuBLASLt
// in the same run, so they compare across configurations of one run). The
// rule only chooses among configurations that were measured; where nothing was
// measured it keeps tessel's previous default (`tma`) and says so.
//
// Inputs: the program's tile and element type, the user's options, and the
// launch's K. What is NOT chosen here, and why:
//  - the tile: it is the program's (the functor's BM, BN, BK);
//  - stages, but for R6: options::stages = 0 already picks as many as fit,
//    at most 4 (SelectSchedule); every run below used 4, and run 8's sweep
//    found 3 and 4 within noise of each other on the large shapes (run 42:
//    5 and 6 no better at 8192^3). Memory-bound launches (R6) take the
//    deepest ring that fits;
//  - cluster: 1x1 (the default); clusters 2x1 / 1x2 are at parity with 1x1
//    since the remote-arrive fix and read 40% more DRAM on the wide shape
//    (runs 6, 7, 17), slower with 128x128 (run 42) and, with 128x192, at
//    parity at 8192^3 but slower on most other shapes (run 56), so automatic
//    never asks for one (a user's cluster is kept);
//  - raster group: tessel's default 8 (run 8's sweep: 8 within noise of the best), 16 for
//    tiles of at most 64 rows (run 40);
//  - M and N: only through the number of tiles (the launch's grid): the stream-K
//    plan inside the cooperative / pingpong kernels adapts to it (last wave,
//    fewer tiles than SMs); the rule asks whether the grid fills at least half
//    of the GPU (R3).
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/AutoSchedule.h"
#include "tessel/Runtime/Kernel.h"

#include <algorithm>

namespace tessel::runtime {

namespace {
/// A consumer warpgroup's f32 accumulator registers per thread when it holds
/// a whole tile (pingpong): (BM / 64) x accN / 2.
int wholeTileRegisters(int bm, int accN) { return (bm / 64) * accN / 2; }

/// The pingpong tiles of the rule below: BM <= 192 and each consumer
/// warpgroup's whole tile at most 192 registers per thread (SelectSchedule's
/// limit: 128 x 128, 128 x 192, 192 x 128, 64 x 256); a dual GEMM (`accN` =
/// 2 x BN) at most 128. (BM = 256 with 64 columns, which SelectSchedule also
/// allows for pingpong, was never timed: cooperative.)
bool pingpongFits(int bm, int accN, int dots) {
  return bm % 64 == 0 && bm <= 192 && wholeTileRegisters(bm, accN) <= (dots > 1 ? 128 : 192);
}

/// Cooperative 256-row tiles: two consumers of 128 rows, BN <= 192, one dot
/// (SelectSchedule).
bool cooperative256Fits(int bm, int accN, int dots) { return bm == 256 && accN <= 192 && dots <= 1; }
}  // namespace

/// Half the SMs of the GPU the rule was measured on (H200, 132 SMs; H100 SXM has 132 too).
constexpr std::int64_t kHalfTheGpu = 66;

AutoChoice chooseAutomatic(const AutoGemmInfo& g, std::int64_t k, std::string* why, std::int64_t tiles,
                           std::int64_t tilesM, std::int64_t tilesN) {
  AutoChoice c;
  auto explain = [&](int rule, auto text) {
    c.rule = rule;
    if (why)
      *why = text();
  };
  const options& u = g.user;
  const bool clustered = u.cluster[0] * u.cluster[1] > 1;
  // A decomposition the user chose is theirs, whatever the rule picks (every rule sets it through
  // this: a stream-K the schedule cannot run, or a value that is no enumerator, is then refused by
  // tessel-select-schedule, not dropped); stream-K exists only for 1x1 clusters.
  auto decomposition = [&](tessel::decomposition ruled) {
    if (u.decomposition != tessel::decomposition::automatic)
      return u.decomposition;
    return clustered ? tessel::decomposition::automatic : ruled;
  };

  // R9. 16-bit operands with BK = 32 (64-byte rows): the wgmma schedules need 128-byte rows
  //     (tessel-select-schedule rule 2), multistage (cp.async + mma.sync) takes BK = 32 or 64;
  //     one dot and no scaled accumulation (multistage cannot hold a dual GEMM's accumulators
  //     nor scale each k-step's product: the TMA schedules' BK error stands). Not measured
  //     against BK = 64: the only schedule that builds the tile.
  if ((g.type == dtype::bf16 || g.type == dtype::f16) && g.bk == 32 && g.dots <= 1 && !g.scaled) {
    c.schedule = tessel::schedule::multistage;
    c.decomposition = decomposition(tessel::decomposition::automatic);
    explain(9, [&] {
      return std::string("R9: BK = 32 (64-byte rows): multistage, the schedule that takes them (the wgmma "
                         "schedules need BK = 64 for 16-bit operands)");
    });
    return c;
  }
  // R8. A trip count that depends on the tile (the k-loop's bounds read a program id or a
  //     tensor element: a triangular GEMM's range(0, m + BM, BK), a masked grouped GEMM's
  //     range(0, live * K, BK)): cooperative and pingpong run it only with whole tiles and a 1x1
  //     cluster (tessel-select-schedule rule 9: their rings carry running positions), so
  //     warp_specialized, the producer/consumer schedule of one tile per CTA (which also runs a
  //     scaled accumulation and a dual GEMM), for tiles of at most 192 rows; tma beyond, except
  //     for a scaled accumulation, which only warp_specialized can run here (a 256-row one then
  //     fails with its BM rule). A user's cluster stays (a non-persistent schedule then refuses
  //     it, naming it). Measured on a masked grouped GEMM (decode): warp_specialized 64x128
  //     0.533 ms, pingpong 64x128 0.608, cooperative 128x128 0.535 with the rotated walk of a
  //     trip count per tile (run 102; 1.2-2.1x slower persistent schedules before it, run 100).
  if (g.tileTrips) {
    c.schedule = g.scaled || (g.bm % 64 == 0 && g.bm <= 192) ? tessel::schedule::warp_specialized
                                                             : tessel::schedule::tma;
    c.decomposition = decomposition(tessel::decomposition::automatic);  // a user's stream-K: refused
    explain(8, [&] {
      return std::string("R8: the mainloop's trip count depends on the tile: ") +
             (c.schedule == tessel::schedule::warp_specialized ? "warp_specialized" : "tma") +
             " (one tile per CTA)";
    });
    return c;
  }
  // R7. A scaled accumulation (acc += dot(a, b) * s, block-scaled fp8) runs in the consumer
  //     warpgroups only (tessel-select-schedule rule 8): cooperative, whose two consumers' wgmmas
  //     fill the tensor cores while the other adds its scaled partial, or pingpong for 64-row
  //     tiles (the tile is one consumer's; at most 64 x 128 either way). Decomposition: the
  //     user's, else tessel's (the stream-K plan where it pays).
  if (g.scaled) {
    c.schedule = g.bm == 64 ? tessel::schedule::pingpong : tessel::schedule::cooperative;
    c.decomposition = decomposition(tessel::decomposition::automatic);
    explain(7, [&] { return std::string(g.bm == 64 ? "R7: a scaled accumulation with 64-row tiles: pingpong"
                                                   : "R7: a scaled accumulation: cooperative"); });
    return c;
  }
  // R0. The rules below were measured with 16-bit operands (bf16, f16) and checked with fp8
  //     (e4m3, e5m2: BK = 128 moves the same bytes per k-iteration, so the tiles' shared-memory
  //     rings, registers and k-iteration counts are those of bf16). Run 68, fp8 e4m3, seven of
  //     the default shapes: tma 128x256 was the slowest configuration on every one (0.49-0.88x
  //     cuBLASLt's fp8 GEMM, against 0.74-1.33x for cooperative / pingpong); run 69: what the
  //     rules choose for fp8. Anything else keeps tessel's previous default.
  const bool fp8 = g.type == dtype::f8e4m3 || g.type == dtype::f8e5m2;
  if (g.type != dtype::bf16 && g.type != dtype::f16 && !fp8) {
    c.schedule = tessel::schedule::tma;
    c.decomposition = decomposition(tessel::decomposition::automatic);
    explain(0, [&] { return std::string(std::string("R0: ") + dtypeName(g.type) + " operands: no measurement of the persistent schedules, "
            "keeping tma"); });
    return c;
  }
  // R1. Tiles the warp-specialized schedules cannot take (BM > 192 for cooperative but its
  //     256x128 and 256x192, more than pingpongFits for pingpong): tma, as before (unmeasured
  //     against anything else). Cooperative 256x128 / 256x192 go on to R3 / R4: run 57, the ten
  //     default shapes, cooperative ahead of tma on all ten with both tiles (8192^3: 691.4 vs
  //     620.9 and 699.9 vs 628.0 TF/s; 128x8192x8192 with 256x128 equal, 192.8 vs 191.5).
  // (A dual GEMM's consumers hold two accumulators: 2 x BN columns.)
  const int accN = g.bn * std::max(g.dots, 1);
  const bool pingpong = pingpongFits(g.bm, accN, g.dots);
  if (!pingpong && !cooperative256Fits(g.bm, accN, g.dots) && (g.bm > 192 || g.bm % 64 != 0)) {
    c.schedule = tessel::schedule::tma;
    c.decomposition = decomposition(tessel::decomposition::automatic);
    explain(1, [&] { return std::string("R1: tile " + std::to_string(g.bm) + "x" + std::to_string(g.bn) +
            " fits neither cooperative nor pingpong, keeping tma"); });
    return c;
  }
  const std::int64_t kIterations = k < 0 || g.bk <= 0 ? -1 : (k + g.bk - 1) / g.bk;
  // R6. Low arithmetic intensity: a few rows of A against a weight matrix streamed once
  //     (decode; docs/small-m.md). The launch's flops per byte of A and B, about MN / (M + N)
  //     with M, N the grid's tiles along M and N (AutoGemmInfo::mAxis / nAxis, the program_id
  //     axes of the operand loads' offsets; a program that does not say, such as a 1-D grid
  //     over all tiles, never takes R6) times the tile, at most 256 (M <= 256 against a wide
  //     N; the H200's ridge is about 200: 989 TFLOP/s over 4.8 TB/s), and a streamed operand
  //     of at least 2048 rows (every measured one has >= 2112; small grids such as 256 x 256
  //     keep the rules below, AutoJitTest); no cluster (unmeasured): pingpong with the deepest
  //     ring that fits, whole
  //     tiles when there are >= 64 tiles along N, else the stream-K plan. Tiles of at most
  //     128x128 and one dot, bf16 / f16 and fp8 (what was measured; fp8 moves half the bytes
  //     per flop, and its ridge is twice as high, so the same bound holds). Run 80 (64x64 with 12 stages,
  //     64x128 with 8, TF/s, whole tiles vs stream-K plan): 16x8192x8192 58.8 vs 57.5 and
  //     58.0 vs 51.5, 64x8192x8192 231.7 vs 224.7 and 224.4 vs 205.2, 128x8192x8192 405.0 vs
  //     386.5 and 444.4 vs 426.0, 128x28672x8192 378.9 vs 304.1 and 439.7 vs 386.3; with fewer
  //     than 64 tiles along N the plan: 16x2112x7168 (33 / 17 tiles) 31.5 vs 26.3 and 30.8 vs
  //     23.3, 128x2112x7168 258.7 vs 206.7 (64x128: 182.1 vs 183.7); the one miss, 32x28672x8192
  //     with 64x64 (448 tiles), whole tiles 122.6 vs 126.2. Deeper rings (runs 77, 79, 80):
  //     64x128 at 128x8192x8192, 4 / 8 stages 369.6 / 437.5; 64x64, 8 / 12 stages 366.0 /
  //     405.0 (whole tiles), 128x2112x7168 239.9 / 258.7; 128x128 at 128x2112x7168 4 / 6 stages
  //     183.3 / 196.2; no shape measured slower by more than 4% (64x128 at 128x2112x7168,
  //     191.9 / 184.8). fp8 e4m3, run 83 (tessel-fp8-gemm, ratio to cuBLASLt's fp8 GEMM, the
  //     deepest ring, whole tiles vs the plan; then what R2 gave, 64x128 with 4 stages and the
  //     plan): 16x8192x8192 64x64 0.963 vs 0.917 (R2 0.796), 64x8192x8192 64x64 1.005 vs 0.963
  //     (0.832), 128x8192x8192 64x128 1.013 vs 0.969 (0.860), 128x28672x8192 64x128 0.937 vs 0.851
  //     (0.732); 128x2112x7168 64x64 0.909 vs 0.946 (the plan, as R6 picks); the misses
  //     16x2112x7168 64x64 (33 tiles along N) 0.860 vs 0.821 and 128x2112x7168 64x128 (17) 0.781
  //     vs 0.705. Up to 256 (M = 256), run 85 (pingpong 128x128; 4 stages / the deepest ring,
  //     the plan / whole tiles): 256x14336x4096 (112 tiles along N) 442.9 / 456.3 plan, 555.7 /
  //     624.3 whole tiles; 256x4096x4096 (32) 371.7 / 381.0 plan, 337.8 / 357.6 whole tiles;
  //     256x4096x14336 (32) 530.6 / 516.8 plan (the deeper ring 2.6% slower), 399.5 / 413.6.
  //     A tile the kernel computes transposed (AutoGemmInfo::swapped, a program tile of fewer
  //     than 64 rows): the weights' tiles are its M tiles; the same counts decide (not measured).
  if (g.dots <= 1 && g.bm <= 128 && g.bn <= 128 && pingpong && !clustered && tilesM > 0 && tilesN > 0 && k >= 0) {
    const double m = double(tilesM) * g.bm, n = double(tilesN) * g.bn, intensity = m * n / (m + n);
    if (intensity <= 256 && std::max(m, n) >= 2048) {
      const std::int64_t tilesWide = g.swapped ? tilesM : tilesN;  // along the weights' rows
      c.schedule = tessel::schedule::pingpong;
      c.decomposition = decomposition(tilesWide >= 64 ? tessel::decomposition::data_parallel
                                                      : tessel::decomposition::automatic);
      c.stages = u.stages == 0 ? tessel::stages_max : 0;
      explain(6, [&] {
        return "R6: low arithmetic intensity (about " + std::to_string(int(intensity)) + " flops per byte of A and B on " +
               std::to_string(tilesM) + " x " + std::to_string(tilesN) + " tiles of " + std::to_string(g.bm) + "x" +
               std::to_string(g.bn) + "): pingpong, " + (c.stages ? "the deepest ring that fits, " : "") +
               (tilesWide >= 64 ? "whole tiles (>= 64 tiles along N)" : "the stream-K plan (< 64 tiles along N)") +
               (g.swapped ? " (N: the program's, the transposed tile's M)" : "") +
               " (runs 77-85)";
      });
      return c;
    }
  }
  // R3. Short K (<= 32 k-iterations per tile) on a grid that fills at least half the GPU (or
  //     an unknown grid): whole tiles, pingpong and cooperative alike. The stream-K kernel's
  //     fixup does not pay for itself on short tiles. Run 30 (TF/s, stream-K plan vs whole
  //     tiles): 2048^3 pingpong 633.9 vs 661.1, cooperative 128x256 642.1 vs 669.7;
  //     3000x5000x2000 pingpong 506.3 vs 531.6, cooperative 128x256 565.0 vs 630.0;
  //     16384x8192x1024 pingpong 690.9 vs 701.7 (runs 19-21: 1.139-1.146 vs 1.160-1.175), the
  //     one loss cooperative 128x256 there, 661.0 vs 646.5 (2%). A grid under half the GPU keeps
  //     the stream-K plan: its idle SMs are what stream-K fills (run 30, 128x8192x8192, 32 or 64
  //     tiles: stream-K 1.10-1.57x whole tiles).
  //     Also <= 64 k-iterations on a grid of at most 8 waves (8 x 132 tiles): run 30 / 31
  //     4000^3 pingpong 128x128 (63 iterations, 1024 tiles) 593.9 / 598.5 vs whole tiles 629.0 /
  //     623.3, cooperative 128x256 (512 tiles) 649.9 / 650.5 vs 649.4 / 643.7; 4096^3 (64, 1024
  //     tiles) 696.2 vs 697.1; while 4096x14336x4096 (64 iterations, 3584 tiles: 27 waves) keeps the
  //     stream-K plan, 1-5% ahead there (runs 19, 24, 30).
  //     Both only where whole tiles fill their last wave to at least 90% (T >= 0.9 x ceil(T /
  //     132) x 132; every shape above does: 0.91-0.99). Where they do not, the stream-K plan
  //     fills the idle SMs: runs 45-46, 128x192, stream-K plan vs whole tiles: 4096^3 (704 tiles,
  //     0.89) 738.8 vs 652.5 TF/s, 4000^3 (672, 0.85) 660.2 vs 598.1; 2048^3 (176, 0.67) 506.5 vs
  //     505.3 about equal; 3000x5000x2000 (648, 0.98) keeps whole tiles, 657.5 vs 650.7.
  //     A grid of less than one wave (but at least half the GPU) has no last wave to fill: with
  //     <= 32 k-iterations whole tiles win there too. Run 62 (TF/s, whole tiles vs what R5 gave,
  //     cooperative with the stream-K plan): 512x4096x1024 (88 tiles of 128x192, 16 iterations)
  //     348.5 vs 322.7, 1024x2048x512 (88, 8) 245.0 vs 214.5, 384x8192x2048 (129, 32) 613.0 vs
  //     585.2; 192x128 alike; pingpong's whole tiles 0.1-1.2% ahead of cooperative's.
  const std::int64_t sms = 2 * kHalfTheGpu;
  const bool underOneWave = tiles >= 0 && tiles < sms;
  const bool fullLastWave = tiles < 0 || tiles * 10 >= (tiles + sms - 1) / sms * sms * 9;
  const bool fewWaves = tiles >= kHalfTheGpu && tiles <= 8 * sms;
  const bool shortK =
      kIterations >= 0 &&
      ((kIterations <= 32 && (tiles < 0 || tiles >= kHalfTheGpu) && (fullLastWave || underOneWave)) ||
       (kIterations <= 64 && fewWaves && fullLastWave));
  auto shortKWhy = [&](const char* schedule) {
    return std::string("R3: ") + schedule + ", whole tiles: " + std::to_string(kIterations) +
           " k-iterations per tile on " +
           (tiles < 0 ? std::string("a grid of unknown size") : std::to_string(tiles) + " tiles") +
           " (<= 32 iterations on >= 66 tiles, or <= 64 on 66..1056 tiles, whole tiles filling their last "
           "wave to >= 90% or, with <= 32, a grid of less than one wave; runs 30-31, 62: 2048^3, "
           "3000x5000x2000, 4000^3, 16384x8192x1024, 512x4096x1024 faster with whole tiles)";
  };
  // R5. A pingpong tile of more than 128 registers per thread (128x192, 192x128) on a grid of
  //     less than one wave (fewer tiles than the GPU's 132 SMs): cooperative with the stream-K
  //     plan. Such a plan gives each CTA one or two parts of about a tile's k-iterations, and
  //     pingpong runs a CTA's parts on alternating consumers; cooperative puts both on each
  //     part. Runs 46-47, TF/s, cooperative vs pingpong, 128x192: 128x8192x8192 (43 tiles)
  //     356.7 vs 275.5 and 352.1 vs 274.0; 256x8192x8192 (86 tiles) 517.3 vs 452.7. Run 57,
  //     192x128: 128x8192x8192 (64 tiles) 276.2 vs 243.6 (elsewhere pingpong is ahead on 6 of
  //     the 10 default shapes, equal on 3000x5000x2000, behind at 2048^3, 176 tiles, 546.8 vs
  //     500.6, as 128x192 is in run 45, and on 4096x4096x14336 by 0.8%). 128x128 keeps
  //     pingpong: the two measured equal there (128x8192x8192, 64 tiles: 374.5 vs 375.7;
  //     256x8192x8192, 128 tiles: 616.9 vs 618.5; run 30: 375.2 vs 374.6). Not where K gives <= 32 k-iterations on at least
  //     half the GPU: there R3's whole tiles on pingpong are ahead (run 62).
  //     (R3's own <= 64 case on a nearly full single wave is left to R5: unmeasured there.)
  if (pingpong && wholeTileRegisters(g.bm, accN) > 128 && g.dots <= 1 && underOneWave &&
      !(shortK && kIterations <= 32)) {
    c.schedule = tessel::schedule::cooperative;
    c.decomposition = decomposition(tessel::decomposition::automatic);
    explain(5, [&] { return std::string("R5: cooperative with the stream-K plan: " + std::to_string(tiles) +
            " tiles of " + std::to_string(g.bm) + "x" + std::to_string(g.bn) + " are less than one wave "
            "(pingpong would run each CTA's stream-K parts on alternating consumers; runs 46-47)"); });
    return c;
  }
  if (pingpong) {
    // R2. Tiles up to 128x128, and 128x192, 192x128: pingpong (its epilogue overlaps the other
    //     consumer's mainloop). Run 45, 128x192 on the ten default shapes: pingpong ahead of
    //     cooperative on 8 (see docs/benchmarks.md); run 57, 192x128: on 6, equal on 1.
    //     A dual GEMM of 64x128 (two accumulators, 64 x 256 per consumer): pingpong too; run 29,
    //     SwiGLU 8192x14336x4096: pingpong 64x128 0.979x tessel's plain GEMM of the same flops,
    //     cooperative 128x128 0.889x (its epilogue does not overlap a mainloop).
    //     Run 19, 128x128 tiles, best of {cooperative, pingpong} x {stream-K, whole tiles}: pingpong
    //     on all six of issue 3's shapes (8192^3 1.098, 4096^3 1.012, 4096x14336x4096 1.051,
    //     4096x4096x14336 1.023, 8192x28672x8192 0.988, 16384x8192x1024 1.175); cooperative
    //     128x128's best is 0.88-0.99x of it (16384x8192x1024: 1.036 vs 1.175). Runs 14, 16 agree.
    c.schedule = tessel::schedule::pingpong;
    if (shortK) {
      c.decomposition = decomposition(tessel::decomposition::data_parallel);
      explain(3, [&] { return shortKWhy("pingpong"); });
    } else {
      // R2 continued. Longer K: the kernel's stream-K plan (decomposition automatic), which
      //     splits the last wave where that shortens the longest CTA by >= 2%. Run 19: 8192^3
      //     1.098 vs 1.049 whole tiles, 4096x14336x4096 1.051 vs 1.001, 4096^3 1.012 vs 1.001;
      //     4096x4096x14336 1.021 vs 1.023 and 8192x28672x8192 0.988 vs 0.986 (within noise).
      c.decomposition = decomposition(tessel::decomposition::automatic);
      explain(2, [&] { return std::string(std::string("R2: pingpong with the stream-K plan: tile <= 128x128, 128x192 or 192x128, ") +
              (kIterations < 0 ? "K unknown" : std::to_string(kIterations) + " k-iterations per tile") +
              " (run 19: best on all six large shapes)"); });
    }
    return c;
  }
  // R4. Wider tiles (BN > 128, BM <= 192; and 256x128, 256x192): cooperative with the stream-K
  //     plan. Run 19, 128x256:
  //     8192^3 1.070 vs 1.031 whole tiles, 4096x14336x4096 1.017 vs 0.994, 4096x4096x14336 1.028
  //     vs 1.010, 16384x8192x1024 1.062 vs 1.033, 4096^3 1.000 vs 1.002, 8192x28672x8192 0.992 vs
  //     1.002 (the plan keeps whole tiles there since run 20); run 15: 128x8192x8192 0.781 vs
  //     0.493. Pingpong cannot hold a 128x256 tile.
  c.schedule = tessel::schedule::cooperative;
  if (shortK) {
    c.decomposition = decomposition(tessel::decomposition::data_parallel);
    explain(3, [&] { return shortKWhy("cooperative"); });
    return c;
  }
  c.decomposition = decomposition(tessel::decomposition::automatic);
  explain(4, [&] { return std::string("R4: cooperative with the stream-K plan: tile " + std::to_string(g.bm) + "x" + std::to_string(g.bn) +
          (g.dots > 1 ? " (two accumulators: " + std::to_string(accN) + " columns)" : std::string()) +
          " is too wide for pingpong (runs 15, 19: stream-K >= whole tiles - 1% on every measured shape)"); });
  return c;
}

std::string autoChoiceName(const AutoChoice& c) {
  std::string n = to_string(c.schedule);
  if (c.decomposition == tessel::decomposition::data_parallel)
    n += "-dp";
  else if (c.decomposition == tessel::decomposition::stream_k)
    n += "-sk";
  if (c.stages == tessel::stages_max)
    n += "-smax";
  return n;
}

}  // namespace tessel::runtime
