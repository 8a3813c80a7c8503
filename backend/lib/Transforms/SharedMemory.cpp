//===- SharedMemory.cpp - the one shared-memory budget of a schedule ------===//

#include "tessel/Transforms/SharedMemory.h"

using namespace mlir;
using namespace mlir::tessel;

/// Hopper: 227 KiB of dynamic shared memory per CTA.
static constexpr int64_t kSharedBytes = 227 * 1024;
/// TMA-fed schedules keep 1 KiB of it for the mbarriers.
static constexpr int64_t kBarrierReserve = 1024;

int64_t mlir::tessel::consumerWarpgroups(ScheduleKind kind, int64_t bm) {
  // Cooperative 256-row tiles: two consumers of two row blocks each (four of
  // one would leave ptxas 96 registers per thread, CUTLASS's 256 x N split).
  if (kind == ScheduleKind::pingpong || (kind == ScheduleKind::cooperative && bm == 256))
    return 2;
  return bm / 64;
}

int64_t mlir::tessel::consumerRowBlocks(ScheduleKind kind, int64_t bm) {
  if (kind == ScheduleKind::pingpong)
    return bm / 64;
  if (kind == ScheduleKind::tma || kind == ScheduleKind::multistage)
    return 1;
  return bm / 64 / consumerWarpgroups(kind, bm);
}

int64_t mlir::tessel::epilogueOperandBytes(ScheduleKind kind, ArrayRef<int64_t> tile, int64_t bytes) {
  return (kind == ScheduleKind::pingpong ? 2 : 1) * tile[0] * tile[1] * bytes;
}

SharedMemoryMap mlir::tessel::planSharedMemory(ScheduleKind kind, ArrayRef<int64_t> tile,
                                               int64_t eltBytes, int64_t stages, int64_t operandBytes,
                                               bool chunkOperand) {
  SharedMemoryMap m;
  int64_t aBytes = tile[0] * tile[2] * eltBytes, bBytes = tile[1] * tile[2] * eltBytes;
  m.stageBytes = aBytes + bBytes;
  m.a = 0;
  m.b = stages * aBytes;
  m.staging = stages * m.stageBytes;
  if (kind == ScheduleKind::multistage) {
    m.operands = m.full = m.empty = m.operandFull = m.bytes = m.staging;
    m.budget = kSharedBytes;
    return m;
  }
  bool specialized = kind != ScheduleKind::tma;
  m.stagingBytes = specialized ? consumerWarpgroups(kind, tile[0]) * 2 * kStagingChunkBytes : 0;
  m.operands = m.staging + m.stagingBytes;
  m.operandBytes = operandBytes;
  m.full = m.operands + operandBytes;
  m.empty = m.full + 8 * stages;
  m.operandFull = m.empty + 8 * stages;
  m.bytes = m.operandFull + (operandBytes || chunkOperand ? 8 * consumerWarpgroups(kind, tile[0]) : 0);
  m.budget = kSharedBytes - kBarrierReserve;
  return m;
}

int64_t mlir::tessel::stagesThatFit(ScheduleKind kind, ArrayRef<int64_t> tile, int64_t eltBytes) {
  SharedMemoryMap one = planSharedMemory(kind, tile, eltBytes, 1);
  return (one.budget - one.stagingBytes) / one.stageBytes;
}
