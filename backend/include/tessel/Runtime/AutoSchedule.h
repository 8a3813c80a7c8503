//===- AutoSchedule.h - what schedule::automatic picks, per shape --*- C++ -*-===//
//
// The one rule behind `schedule::automatic` (and `decomposition::automatic`
// under it). Its inputs are what the program leaves open and what the launch
// knows; its outputs are a schedule, a decomposition and, for memory-bound
// launches, the ring depth. The tile (BM x BN x BK) is the program's and is
// never changed; raster group and cluster keep their own defaults (see
// AutoSchedule.cpp for the measurements behind each line). No MLIR or CUDA types: unit-testable without a GPU.
//
// How it is used (backend/lib/Pipelines/Jit.cpp, backend/lib/Runtime/Kernel.cpp):
//  - ts::jit with schedule::automatic reads the GEMM's tile, element type and
//    where K comes from (the traced loop's bound `tessel.dim %argI, d`) off the
//    traced program, and compiles eagerly what the rule picks for a problem
//    of unknown (large) K;
//  - every launch evaluates the rule with the launch's K (a few integer
//    comparisons); when it picks another configuration than the eager one,
//    that configuration is compiled once (a launch-time variant, cached in
//    memory and on disk like the layout variants) and launched.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

#include "tessel/kernel/runtime_api.hpp"

namespace tessel::runtime {

/// What the traced GEMM fixes (read once at ts::jit time).
struct AutoGemmInfo {
  int bm = 0, bn = 0, bk = 0;  ///< the tile the kernel computes
  /// The program's tile had fewer than 64 rows and the kernel computes its transpose
  /// (tessel-swap-operands): bm x bn above is that transpose, mAxis follows B's rows and nAxis
  /// A's, so "N" is the program's M.
  bool swapped = false;
  /// tessel.dot ops sharing the mainloop: 2 for a dual GEMM, whose accumulators are 2 x BN
  /// columns wide (a pingpong consumer must hold both).
  int dots = 1;
  /// A scaled accumulation (acc += dot(a, b) * s: block-scaled fp8), which only the consumer
  /// warpgroups of cooperative and pingpong (and warp_specialized) can run (rule R7).
  bool scaled = false;
  /// The mainloop's trip count depends on the tile (its bounds read a program id: a triangular
  /// GEMM), which only the schedules of one tile per CTA run (rule R8).
  bool tileTrips = false;
  dtype type = dtype::bf16;    ///< the dot's operand element type
  /// Where K comes from at launch: sizes[kDim] of argument kArg (the traced k-loop's upper bound);
  /// kArg = -1 when the program's loop bound is not an argument's dimension (K then counts as
  /// unknown, i.e. large).
  int kArg = -1, kDim = -1;
  /// The launch-grid axes whose tiles A's rows (M) and B's rows (N) follow: the d of the loads'
  /// offsets `program_id(d) * BM` (`* BN`); -1 when the program does not say (R6 then does not
  /// apply: a 1-D grid that linearises the tiles cannot be read as M x N).
  int mAxis = -1, nAxis = -1;
  /// The user's options (schedule::automatic; the rest as given).
  options user;
};

/// What the rule picks.
struct AutoChoice {
  tessel::schedule schedule = tessel::schedule::tma;
  tessel::decomposition decomposition = tessel::decomposition::automatic;
  /// 0: the user's options::stages; tessel::stages_max: the deepest ring that fits (R6).
  int stages = 0;
  /// The rule's line that decided: 0..9 (R0..R9 in AutoSchedule.cpp).
  int rule = -1;
  bool operator==(const AutoChoice& o) const {
    return schedule == o.schedule && decomposition == o.decomposition && stages == o.stages;
  }
};

/// The rule. `k` is the launch's K (elements; < 0 = unknown, treated as large). With `why`,
/// the deciding line and its measurement are written there (the launch path passes none: no
/// string is built per launch).
/// `tiles`: the launch's grid (one program instance per tile, x * y * z), -1 when unknown;
/// `tilesM`, `tilesN`: its extents along AutoGemmInfo::mAxis and nAxis, -1 when unknown.
AutoChoice chooseAutomatic(const AutoGemmInfo& g, std::int64_t k, std::string* why = nullptr,
                           std::int64_t tiles = -1, std::int64_t tilesM = -1, std::int64_t tilesN = -1);

/// "pingpong", "cooperative-dp", "cooperative-sk", "pingpong-dp-smax": the name of a choice in
/// variant tags.
std::string autoChoiceName(const AutoChoice& c);

}  // namespace tessel::runtime
