// SharedMemoryTest.cpp - the shared-memory map of a schedule (SharedMemory.h): where the epilogue
// operands that go through shared memory (tessel-lower-epilogue rules 6 and 7) and their barriers
// sit, and which of them fit beside the ring (the rule's only question).
#include "tessel/Transforms/SharedMemory.h"

#include <gtest/gtest.h>

using mlir::tessel::ScheduleKind;
namespace mt = mlir::tessel;

namespace {

constexpr int64_t kKiB = 1024;

TEST(SharedMemory, NoOperandsKeepTheLayoutOfBefore) {
  // Pingpong 128x128x64 bf16, 4 stages: the layout tests/lit/Transforms/allocate-resources.mlir
  // checks (A, B, two consumers' staging buffers, full and empty barriers).
  mt::SharedMemoryMap m = mt::planSharedMemory(ScheduleKind::pingpong, {128, 128, 64}, 2, 4);
  EXPECT_EQ(m.staging, 128 * kKiB);
  EXPECT_EQ(m.operands, 160 * kKiB);
  EXPECT_EQ(m.operandBytes, 0);
  EXPECT_EQ(m.full, 160 * kKiB);
  EXPECT_EQ(m.empty, m.full + 32);
  EXPECT_EQ(m.bytes, m.empty + 32);  // no operand barriers
  EXPECT_TRUE(m.fits());
}

TEST(SharedMemory, AWholeTileOperandPerPingpongConsumerFitsBesideFourStagesOf128x128) {
  const int64_t operand = mt::epilogueOperandBytes(ScheduleKind::pingpong, {128, 128, 64}, 2);
  EXPECT_EQ(operand, 64 * kKiB);  // one 128x128 bf16 tile per consumer
  mt::SharedMemoryMap m = mt::planSharedMemory(ScheduleKind::pingpong, {128, 128, 64}, 2, 4, operand);
  EXPECT_TRUE(m.fits());
  EXPECT_EQ(m.operands, 160 * kKiB);
  EXPECT_EQ(m.operands % 1024, 0);  // the 128B swizzle's alignment
  EXPECT_EQ(m.full, m.operands + operand);
  EXPECT_EQ(m.operandFull, m.empty + 32);
  EXPECT_EQ(m.bytes, m.operandFull + 16);  // one barrier per consumer
  EXPECT_LE(m.bytes, 227 * kKiB);
  // A second such operand does not fit.
  EXPECT_FALSE(mt::planSharedMemory(ScheduleKind::pingpong, {128, 128, 64}, 2, 4, 2 * operand).fits());
}

TEST(SharedMemory, CooperativeConsumersShareOneTile) {
  EXPECT_EQ(mt::epilogueOperandBytes(ScheduleKind::cooperative, {128, 128, 64}, 2), 32 * kKiB);
  EXPECT_EQ(mt::epilogueOperandBytes(ScheduleKind::warp_specialized, {128, 256, 64}, 2), 64 * kKiB);
}

TEST(SharedMemory, A128x192OperandDoesNotFitButItsChunksNeedOnlyTheBarriers) {
  const int64_t operand = mt::epilogueOperandBytes(ScheduleKind::pingpong, {128, 192, 64}, 2);
  EXPECT_FALSE(mt::planSharedMemory(ScheduleKind::pingpong, {128, 192, 64}, 2, 4, operand).fits());
  mt::SharedMemoryMap plain = mt::planSharedMemory(ScheduleKind::pingpong, {128, 192, 64}, 2, 4);
  mt::SharedMemoryMap chunked =
      mt::planSharedMemory(ScheduleKind::pingpong, {128, 192, 64}, 2, 4, 0, /*chunkOperand=*/true);
  EXPECT_TRUE(chunked.fits());
  EXPECT_EQ(chunked.full, plain.full);  // the ring and staging buffers do not move
  EXPECT_EQ(chunked.bytes, plain.bytes + 16);
}

}  // namespace
