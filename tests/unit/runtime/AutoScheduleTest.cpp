//===- AutoScheduleTest.cpp - which configuration schedule::automatic picks --===//
//
// The rule of backend/lib/Runtime/AutoSchedule.cpp, shape by shape (the tessel-bench default
// shapes and tiles): a change of the rule shows up here and must come with its measurement.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include "tessel/Runtime/AutoSchedule.h"

namespace ts = tessel;
using tessel::runtime::AutoChoice;
using tessel::runtime::AutoGemmInfo;
using tessel::runtime::autoChoiceName;
using tessel::runtime::chooseAutomatic;

namespace {

AutoGemmInfo gemm(int bm, int bn, ts::dtype t = ts::dtype::bf16) {
  AutoGemmInfo g;
  g.bm = bm;
  g.bn = bn;
  g.bk = t == ts::dtype::f8e4m3 || t == ts::dtype::f8e5m2 ? 128 : 64;  // 128 bytes of K
  g.type = t;
  g.kArg = 0;
  g.kDim = 1;
  return g;
}

/// The choice for K = k on a grid of `tiles` tiles (-1: unknown).
std::string pick(const AutoGemmInfo& g, std::int64_t k, std::int64_t tiles = -1) {
  std::string why;
  AutoChoice c = chooseAutomatic(g, k, &why, tiles);
  EXPECT_FALSE(why.empty());
  std::printf("  %dx%d K=%lld tiles=%lld -> %s (%s)\n", g.bm, g.bn, static_cast<long long>(k),
              static_cast<long long>(tiles), autoChoiceName(c).c_str(), why.c_str());
  return autoChoiceName(c);
}

/// The choice for K = k on a grid of tilesM x tilesN tiles.
std::string pick_grid(const AutoGemmInfo& g, std::int64_t k, std::int64_t tilesM, std::int64_t tilesN) {
  std::string why;
  AutoChoice c = chooseAutomatic(g, k, &why, tilesM * tilesN, tilesM, tilesN);
  EXPECT_FALSE(why.empty());
  std::printf("  %dx%d K=%lld grid %lldx%lld -> %s (%s)\n", g.bm, g.bn, static_cast<long long>(k),
              static_cast<long long>(tilesM), static_cast<long long>(tilesN), autoChoiceName(c).c_str(), why.c_str());
  return autoChoiceName(c);
}

// R7: a scaled accumulation (block-scaled fp8) runs only in the consumer warpgroups: cooperative,
// or pingpong for 64-row tiles, whatever the shape (the memory-bound R6 included).
TEST(AutoSchedule, ScaledAccumulationsTakeTheConsumerWarpgroups) {
  AutoGemmInfo g = gemm(128, 128, ts::dtype::f8e4m3);
  g.scaled = true;
  EXPECT_EQ(pick(g, 8192, 4096), "cooperative");
  EXPECT_EQ(pick(g, 256, 4), "cooperative");
  g.user.decomposition = ts::decomposition::data_parallel;
  EXPECT_EQ(pick(g, 8192, 4096), "cooperative-dp");
  AutoGemmInfo s = gemm(64, 128, ts::dtype::f8e4m3);
  s.scaled = true;
  s.mAxis = 0;
  s.nAxis = 1;
  EXPECT_EQ(pick_grid(s, 8192, 1, 64), "pingpong");
}

TEST(AutoSchedule, MemoryBoundLaunchesTakeTheDeepestRing) {
  // R6 (runs 77-80): decode shapes, M x N x K on tiles of BM x BN.
  EXPECT_EQ(pick_grid(gemm(64, 64), 8192, 1, 128), "pingpong-dp-smax");      // 16x8192x8192
  EXPECT_EQ(pick_grid(gemm(64, 128), 8192, 1, 64), "pingpong-dp-smax");      // 64x8192x8192
  EXPECT_EQ(pick_grid(gemm(64, 128), 8192, 2, 64), "pingpong-dp-smax");      // 128x8192x8192
  EXPECT_EQ(pick_grid(gemm(128, 128), 8192, 1, 224), "pingpong-dp-smax");    // 128x28672x8192
  EXPECT_EQ(pick_grid(gemm(64, 64), 7168, 1, 33), "pingpong-smax");          // 16x2112x7168: the plan
  EXPECT_EQ(pick_grid(gemm(64, 64), 7168, 2, 33), "pingpong-smax");          // 128x2112x7168
  EXPECT_EQ(pick_grid(gemm(128, 128), 4096, 2, 112), "pingpong-dp-smax");    // 256x14336x4096 (run 85)
  EXPECT_EQ(pick_grid(gemm(128, 128), 4096, 2, 32), "pingpong-smax");        // 256x4096x4096
  // Higher intensity: the other rules, the default ring.
  EXPECT_EQ(pick_grid(gemm(128, 128), 8192, 4, 64), "pingpong");             // 512x8192x8192
  EXPECT_EQ(pick_grid(gemm(128, 128), 8192, 64, 64), "pingpong");            // 8192^3
  EXPECT_EQ(pick_grid(gemm(128, 128), 4096, 2, 2), "pingpong");              // 256x256x4096: small
  EXPECT_EQ(pick_grid(gemm(64, 64), 4096, 1, 31), "pingpong");               // 16x1984x4096: small
  EXPECT_EQ(pick_grid(gemm(64, 128, ts::dtype::f8e4m3), 8192, 2, 64), "pingpong-dp-smax");  // fp8, run 83
  // Tiles R6 was not measured with keep their rules: wider, dual GEMMs.
  EXPECT_EQ(pick_grid(gemm(128, 192), 8192, 1, 43), "cooperative");          // R5
  EXPECT_EQ(pick_grid(gemm(128, 256), 8192, 1, 32), "cooperative");
  AutoGemmInfo dual = gemm(64, 128);
  dual.dots = 2;
  EXPECT_EQ(pick_grid(dual, 8192, 1, 64), "pingpong");
  // A stage count or decomposition the user chose is kept.
  AutoGemmInfo user = gemm(64, 64);
  user.user.stages = 6;
  EXPECT_EQ(pick_grid(user, 8192, 1, 128), "pingpong-dp");
  user = gemm(64, 64);
  user.user.decomposition = ts::decomposition::stream_k;
  EXPECT_EQ(pick_grid(user, 8192, 1, 128), "pingpong-sk-smax");
}

// A program tile of fewer than 64 rows, computed transposed (tessel-swap-operands): the rules
// see the 64-row tile, its M tiles along the weights' rows; R6 counts those.
TEST(AutoSchedule, TransposedTilesCountTheWeightsTilesAlongM) {
  AutoGemmInfo g = gemm(64, 16);
  g.swapped = true;
  EXPECT_EQ(pick_grid(g, 8192, 128, 1), "pingpong-dp-smax");  // 16x8192x8192 on 16x64 tiles
  EXPECT_EQ(pick_grid(g, 7168, 33, 1), "pingpong-smax");      // 16x2112x7168: the plan
  std::string why;
  chooseAutomatic(g, 8192, &why, 128, 128, 1);
  EXPECT_EQ(why, "R6: low arithmetic intensity (about 15 flops per byte of A and B on 128 x 1 tiles of 64x16): "
                 "pingpong, the deepest ring that fits, whole tiles (>= 64 tiles along N) (N: the program's, the "
                 "transposed tile's M) (runs 77-85)");
}

TEST(AutoSchedule, WideTilesAreCooperativeWithTheStreamKPlan) {
  // tessel-bench's default K values: 8192, 4096, 14336, 4000 (more than 32 k-iterations).
  for (std::int64_t k : {8192, 4096, 14336, 4000, -1})
    EXPECT_EQ(pick(gemm(128, 256), k), "cooperative") << "K " << k;
  EXPECT_EQ(pick(gemm(192, 256), 8192), "cooperative");
  // R3: 32 k-iterations or fewer on a grid of at least half the GPU: whole tiles (run 30).
  EXPECT_EQ(pick(gemm(128, 256), 2048, 128), "cooperative-dp");    // 2048^3
  EXPECT_EQ(pick(gemm(128, 256), 2000, 480), "cooperative-dp");    // 3000x5000x2000
  EXPECT_EQ(pick(gemm(128, 256), 1024, 4096), "cooperative-dp");   // 16384x8192x1024
  EXPECT_EQ(pick(gemm(128, 256), 2048, 65), "cooperative");        // under half the GPU: stream-K
  EXPECT_EQ(pick(gemm(128, 256), 8192, 32), "cooperative");        // 128x8192x8192
}

TEST(AutoSchedule, SquareTilesArePingpongWholeTilesForShortK) {
  for (std::int64_t k : {8192, 4096, 14336, 4000, -1})
    EXPECT_EQ(pick(gemm(128, 128), k), "pingpong") << "K " << k;
  // 32 k-iterations or fewer: whole tiles (runs 19-21 and 30: 16384x8192x1024, 2048^3,
  // 3000x5000x2000), unless the grid leaves more than half the GPU idle.
  EXPECT_EQ(pick(gemm(128, 128), 1024), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 128), 1000), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 128), 2048, 256), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 128), 2049, 4096), "pingpong");  // 33 iterations, 31 waves
  EXPECT_EQ(pick(gemm(128, 128), 1024, 64), "pingpong");
  // <= 64 k-iterations on at most 8 waves: whole tiles (runs 30-31, 4000^3: 1024 tiles); more
  // waves keep the stream-K plan (4096x14336x4096: 3584 tiles).
  EXPECT_EQ(pick(gemm(128, 128), 4000, 1024), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 256), 4000, 512), "cooperative-dp");
  EXPECT_EQ(pick(gemm(128, 128), 4096, 3584), "pingpong");
  EXPECT_EQ(pick(gemm(128, 128), 4097, 1024), "pingpong");
  EXPECT_EQ(pick(gemm(128, 128), 8192, 1024), "pingpong");
  EXPECT_EQ(pick(gemm(64, 256), 8192), "pingpong");
  EXPECT_EQ(pick(gemm(64, 64), 512), "pingpong-dp");
  // 128x192 and 192x128 (192 accumulator registers per thread) are pingpong too (run 45: ahead
  // of cooperative 128x192 on 8 of the 10 default shapes; run 57, 192x128: on 6, equal on 1).
  EXPECT_EQ(pick(gemm(128, 192), 8192), "pingpong");
  EXPECT_EQ(pick(gemm(128, 192), 1024, 4096), "pingpong-dp");
  EXPECT_EQ(pick(gemm(192, 128), 8192), "pingpong");
  EXPECT_EQ(pick(gemm(192, 128), 8192, 64), "cooperative");   // R5: 128x8192x8192, 64 tiles
  EXPECT_EQ(pick(gemm(192, 128), 1024, 5504), "pingpong-dp");
  // R5: 128x192 on less than one wave (fewer tiles than 132 SMs): cooperative, stream-K (runs
  // 46-47); 128x128 there stays pingpong (measured equal).
  EXPECT_EQ(pick(gemm(128, 192), 8192, 43), "cooperative");   // 128x8192x8192
  EXPECT_EQ(pick(gemm(128, 192), 8192, 86), "cooperative");   // 256x8192x8192
  EXPECT_EQ(pick(gemm(128, 192), 8192, 132), "pingpong");
  EXPECT_EQ(pick(gemm(128, 192), 2048, 65), "cooperative");   // short K under half the GPU
  // ... but not where R3 takes whole tiles: short K on a grid of at least half the GPU and less
  // than one wave (run 62: whole tiles 4.5-12.5% ahead of R5's choice, pingpong's ahead).
  EXPECT_EQ(pick(gemm(128, 192), 1024, 131), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 192), 1024, 88), "pingpong-dp");   // 512x4096x1024
  EXPECT_EQ(pick(gemm(128, 192), 512, 88), "pingpong-dp");    // 1024x2048x512
  EXPECT_EQ(pick(gemm(128, 192), 2048, 129), "pingpong-dp");  // 384x8192x2048
  EXPECT_EQ(pick(gemm(192, 128), 1024, 96), "pingpong-dp");   // 512x4096x1024
  EXPECT_EQ(pick(gemm(128, 192), 4096, 129), "cooperative");  // 64 iterations: R5
  EXPECT_EQ(pick(gemm(128, 128), 1024, 88), "pingpong-dp");   // R3 likewise for 128x128
  EXPECT_EQ(pick(gemm(128, 128), 8192, 128), "pingpong");
  // R3 only where whole tiles fill their last wave to >= 90% (runs 45-46, 128x192): 4096^3 (704
  // tiles, 0.89) and 4000^3 (672, 0.85) keep the stream-K plan; 16384x8192x1024 (5504, 0.99) whole.
  EXPECT_EQ(pick(gemm(128, 192), 4096, 704), "pingpong");
  EXPECT_EQ(pick(gemm(128, 192), 4000, 672), "pingpong");
  EXPECT_EQ(pick(gemm(128, 192), 2048, 176), "pingpong");
  EXPECT_EQ(pick(gemm(128, 192), 2000, 648), "pingpong-dp");        // 3000x5000x2000: 0.98
  EXPECT_EQ(pick(gemm(128, 192), 1024, 5504), "pingpong-dp");
  EXPECT_EQ(pick(gemm(128, 128), 2000, 960), "pingpong-dp");        // 3000x5000x2000: 0.909
  EXPECT_EQ(pick(gemm(128, 256), 2000, 480), "cooperative-dp");     // 0.909
  EXPECT_EQ(pick(gemm(128, 128), 4096, 80), "pingpong");            // 64 iterations on 80 of 132 SMs
  EXPECT_EQ(pick(gemm(128, 128), 1024, 80), "pingpong-dp");         // 16: less than one wave (run 62)
}

TEST(AutoSchedule, DualGemmsHoldTwoAccumulators) {
  // A dual GEMM's consumers hold 2 x BN columns: 64x128 fits pingpong (run 29: pingpong 64x128
  // 0.979x the plain GEMM of the same flops, cooperative 128x128 0.889x); 128x128 does not.
  AutoGemmInfo d = gemm(64, 128);
  d.dots = 2;
  EXPECT_EQ(pick(d, 4096), "pingpong");
  d.bm = 128;
  EXPECT_EQ(pick(d, 4096), "cooperative");
  std::string why;
  chooseAutomatic(d, 4096, &why);
  EXPECT_NE(why.find("tile 128x128 (two accumulators: 256 columns) is too wide for pingpong"), std::string::npos)
      << why;
}

TEST(AutoSchedule, UnmeasuredCasesKeepTma) {
  // BM 256: cooperative with two consumers of 128 rows, BN <= 192, one dot (run 57: ahead of
  // tma on all ten default shapes); wider, or a dual GEMM: neither warp-specialized one.
  EXPECT_EQ(pick(gemm(256, 128), 8192), "cooperative");
  EXPECT_EQ(pick(gemm(256, 192), 8192), "cooperative");
  EXPECT_EQ(pick(gemm(256, 128), 1024, 4096), "cooperative-dp");
  EXPECT_EQ(pick(gemm(256, 256), 8192), "tma");
  AutoGemmInfo dual = gemm(256, 64);
  dual.dots = 2;
  EXPECT_EQ(pick(dual, 8192), "tma");
  EXPECT_EQ(pick(gemm(128, 128, ts::dtype::f32), 8192), "tma");  // no measurement of f32 operands
}

TEST(AutoSchedule, Fp8FollowsTheSixteenBitRules) {
  // BK = 128 fp8 elements: the same bytes per k-iteration as bf16's 64 (R0; runs 68-69).
  for (ts::dtype t : {ts::dtype::f8e4m3, ts::dtype::f8e5m2}) {
    EXPECT_EQ(pick(gemm(128, 192, t), 8192, 2752), "pingpong");        // 8192^3: R2
    EXPECT_EQ(pick(gemm(128, 256, t), 8192, 2048), "cooperative");     // R4
    EXPECT_EQ(pick(gemm(128, 128, t), 2048, 256), "pingpong-dp");      // 2048^3: 16 iterations, R3
    EXPECT_EQ(pick(gemm(128, 128, t), 8192, 64), "pingpong");          // 128x8192x8192: stream-K
    EXPECT_EQ(pick(gemm(128, 192, t), 8192, 43), "cooperative");       // R5
  }
}

TEST(AutoSchedule, TheUsersOptionsAreKept) {
  AutoGemmInfo g = gemm(128, 128);
  g.user.decomposition = ts::decomposition::stream_k;
  EXPECT_EQ(pick(g, 1024), "pingpong-sk");  // the user's decomposition wins over R3
  g = gemm(128, 128);
  g.user.cluster = {2, 1};
  EXPECT_EQ(pick(g, 1024), "pingpong");  // no stream-K choice with a cluster: automatic
  // The launch path asks without a reason: the same choice.
  EXPECT_EQ(chooseAutomatic(gemm(128, 128), 1024), chooseAutomatic(gemm(128, 128), 1024, nullptr));
}

}  // namespace

namespace {

// R9: 16-bit operands with BK = 32 (64-byte rows), which only multistage builds (the wgmma
// schedules need 128-byte rows): multistage, whatever the shape; a dual GEMM keeps the rule it had
// (multistage cannot hold two accumulators).
TEST(AutoSchedule, ThirtyTwoWideKTilesTakeMultistage) {
  for (ts::dtype t : {ts::dtype::bf16, ts::dtype::f16}) {
    AutoGemmInfo g = gemm(128, 128, t);
    g.bk = 32;
    EXPECT_EQ(pick(g, 8192), "multistage");
    EXPECT_EQ(pick(g, 256, 4096), "multistage");
  }
  AutoGemmInfo dual = gemm(64, 128);
  dual.bk = 32;
  dual.dots = 2;
  EXPECT_EQ(pick(dual, 4096), "pingpong");
}

}  // namespace

namespace {

// R9 leaves a scaled accumulation (multistage cannot scale each k-step) to R7, whose BK error then
// names the rule; and every rule keeps a decomposition the user chose (refused downstream where
// the schedule cannot run it, never dropped).
TEST(AutoSchedule, ThirtyTwoWideKLeavesScaledAccumulationsAndKeepsTheUsersDecomposition) {
  AutoGemmInfo scaled = gemm(128, 128);
  scaled.bk = 32;
  scaled.scaled = true;
  EXPECT_EQ(pick(scaled, 8192), "cooperative");
  AutoGemmInfo g = gemm(128, 128);
  g.bk = 32;
  g.user.decomposition = ts::decomposition::stream_k;
  EXPECT_EQ(pick(g, 8192), "multistage-sk");
  AutoGemmInfo f32 = gemm(128, 128, ts::dtype::f32);  // R0
  f32.user.decomposition = ts::decomposition::stream_k;
  EXPECT_EQ(pick(f32, 8192), "tma-sk");
}

}  // namespace
