//===- SharedMemory.h - the one shared-memory budget of a schedule -*- C++ -*-===//
//
// Where a GEMM kernel's dynamic shared memory goes, for a schedule, tile,
// element size and ring depth. `tessel-select-schedule` asks it how many
// stages fit and `tessel-allocate-resources` lays the kernel out with it: the
// check and the layout cannot disagree.
//
//   TMA-fed schedules (tma, warp_specialized, cooperative, pingpong):
//
//     0          a: A[stages][BM x BK]
//                b: B[stages][BN x BK]
//                staging: 2 chunks of 64 x 128 B per consumer warpgroup
//                         (warp-specialized schedules' TMA-store epilogue)
//                operands: the epilogue operands read through shared memory
//                         (tessel-lower-epilogue rule 6, "tma_smem"): each
//                         consumer's rows of each one's tile, in 64 x 128 B
//                         chunks (epilogueOperandBytes)
//                full[stages], empty[stages]: 8-byte mbarriers
//                operand_full[consumers]: 8-byte mbarriers (with operands, or
//                         an operand loaded chunk by chunk into the staging
//                         buffers: tessel-lower-epilogue rule 7)
//     bytes
//
//   Every tile is a multiple of 1 KiB, so each one stays 1024-aligned for
//   the 128B swizzle. The ring, staging buffers and operands must fit in 227
//   KiB minus 1 KiB kept for the barriers.
//
//   multistage:  a: A[stages][BM x BK] | b: B[stages][BN x BK], no barriers,
//   in 227 KiB.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TRANSFORMS_SHAREDMEMORY_H
#define TESSEL_TRANSFORMS_SHAREDMEMORY_H

#include "tessel/Dialect/Tessel/Tessel.h"

namespace mlir::tessel {

struct SharedMemoryMap {
  int64_t stageBytes = 0;      ///< one stage of the ring: A and B tiles
  int64_t a = 0, b = 0;        ///< offsets of the A and B slots of stage 0
  int64_t staging = 0;         ///< offset of the staging buffers
  int64_t stagingBytes = 0;
  int64_t operands = 0;        ///< offset of the epilogue operands' tiles
  int64_t operandBytes = 0;
  int64_t full = 0, empty = 0; ///< offsets of the barrier arrays (TMA-fed)
  int64_t operandFull = 0;     ///< offset of the operands' mbarriers, one per consumer
  int64_t bytes = 0;           ///< dynamic shared memory of the kernel
  int64_t budget = 0;          ///< what the ring and staging may use
  /// The ring, the staging buffers and the operands fit in the budget.
  bool fits() const { return operands + operandBytes <= budget; }
};

/// Staging chunk of the TMA-store epilogue: 64 rows x 128 bytes.
constexpr int64_t kStagingChunkBytes = 64 * 128;

/// Consumer warpgroups of a TMA-fed schedule: 2 (pingpong, a whole tile
/// each; cooperative with BM = 256, 128 rows each) or one per 64 rows of the
/// tile.
int64_t consumerWarpgroups(ScheduleKind kind, int64_t bm);

/// The 64-row blocks of a tile that one consumer warpgroup computes: the
/// whole tile's BM / 64 (pingpong), else BM / 64 / consumerWarpgroups.
int64_t consumerRowBlocks(ScheduleKind kind, int64_t bm);

/// The shared memory that one epilogue operand read through shared memory
/// takes: a BM x BN tile of `bytes`-byte elements per tile in flight (two in
/// pingpong, whose consumers compute different tiles; one otherwise).
int64_t epilogueOperandBytes(ScheduleKind kind, ArrayRef<int64_t> tile, int64_t bytes);

/// The shared-memory map of `kind` with tile {BM, BN, BK}, operands of
/// `eltBytes` bytes, `stages` stages and `operandBytes` of epilogue operands
/// (the sum of their epilogueOperandBytes); `chunkOperand`: an operand goes
/// through the staging buffers (it needs the operand barriers only).
SharedMemoryMap planSharedMemory(ScheduleKind kind, ArrayRef<int64_t> tile, int64_t eltBytes,
                                 int64_t stages, int64_t operandBytes = 0, bool chunkOperand = false);

/// The most stages whose map fits (0 or 1 when even two do not).
int64_t stagesThatFit(ScheduleKind kind, ArrayRef<int64_t> tile, int64_t eltBytes);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_SHAREDMEMORY_H
