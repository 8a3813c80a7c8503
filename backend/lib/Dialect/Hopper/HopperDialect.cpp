//===- HopperDialect.cpp - the Hopper-level dialect and its verifiers -----===//

#include "tessel/Dialect/Hopper/Hopper.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::tessel::hopper;

#include "tessel/Dialect/Hopper/HopperDialect.cpp.inc"

#define GET_OP_CLASSES
#include "tessel/Dialect/Hopper/HopperOps.cpp.inc"

void HopperDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tessel/Dialect/Hopper/HopperOps.cpp.inc"
      >();
}

LogicalResult TmaLoadOp::verify() {
  if (getCoords().size() != 2 && getCoords().size() != 3)
    return emitOpError() << "takes 2 or 3 coordinates (a 2-d or 3-d tensor map), got "
                         << getCoords().size();
  return success();
}

LogicalResult SetMaxNRegOp::verify() {
  if (getRegs() % 8 != 0)
    return emitOpError() << "register count must be a multiple of 8 in [24, 256], got " << getRegs();
  return success();
}

//===----------------------------------------------------------------------===//
// The schedule's decisions (HopperScheduleOps.td)
//===----------------------------------------------------------------------===//

LogicalResult TileSchedulerOp::verify() {
  if (getKind() != "grid" && getKind() != "persistent")
    return emitOpError() << "kind must be \"grid\" or \"persistent\", got \"" << getKind() << "\"";
  if (getRasterGroup() < 0 || getRasterGroup() > 1024)
    return emitOpError() << "raster_group must be in [0, 1024], got " << getRasterGroup();
  ArrayRef<int64_t> c = getCluster();
  if (c.size() != 2 || c[0] < 1 || c[1] < 1 || c[0] * c[1] > 2)
    return emitOpError("cluster must be [1, 1], [2, 1] or [1, 2]");
  if (getKind() == "grid" && (c[0] * c[1] > 1 || getStreamK()))
    return emitOpError("clusters and stream_k need the persistent tile scheduler");
  if (getStreamK() && c[0] * c[1] > 1)
    return emitOpError("stream_k needs a 1x1 cluster (a cluster's CTAs walk tiles in lockstep)");
  return success();
}

LogicalResult RingOp::verify() {
  if (getCopy() != "tma" && getCopy() != "cp.async")
    return emitOpError() << "copy must be \"tma\" or \"cp.async\", got \"" << getCopy() << "\"";
  // A stage is released one k-step late (wait_depth 1), so one stage would
  // wait for its own reader.
  if (getStages() < 2)
    return emitOpError() << "ring '" << getRing() << "' needs at least 2 stages, got "
                         << getStages();
  if (getStageBytes() <= 0 || getStageBytes() % 1024 != 0)
    return emitOpError() << "stage_bytes must be a positive multiple of 1024, got "
                         << getStageBytes();
  return success();
}

LogicalResult WarpSpecializeOp::verify() {
  if (getProducer() != "warpgroup" && getProducer() != "inline")
    return emitOpError() << "producer must be \"warpgroup\" or \"inline\", got \""
                         << getProducer() << "\"";
  if (getOrder() != "cooperative" && getOrder() != "pingpong")
    return emitOpError() << "order must be \"cooperative\" or \"pingpong\", got \"" << getOrder()
                         << "\"";
  if (getConsumers() < 1 || getConsumers() > 4)
    return emitOpError() << "consumers must be in [1, 4], got " << getConsumers();
  if (getOrder() == "pingpong" && (getConsumers() != 2 || getProducer() != "warpgroup"))
    return emitOpError("order \"pingpong\" needs a producer warpgroup and 2 consumers");
  bool inline_ = getProducer() == "inline";
  for (int64_t regs : {getProducerRegs(), getConsumerRegs()})
    if (inline_ ? regs != 0 : (regs < 24 || regs > 256 || regs % 8 != 0))
      return emitOpError() << (inline_ ? "an inline producer keeps the register budget (regs 0)"
                                       : "register budgets must be multiples of 8 in [24, 256]")
                           << ", got " << regs;
  // setmaxnreg: the budgets must fit the 64K-register file.
  if (!inline_ && (getProducerRegs() + getConsumers() * getConsumerRegs()) * 128 > 65536)
    return emitOpError() << "register budgets exceed the 65536-register file: (" << getProducerRegs()
                         << " + " << getConsumers() << " x " << getConsumerRegs() << ") x 128";
  return success();
}

LogicalResult MmaScheduleOp::verify() {
  if (getInstr() != "wgmma" && getInstr() != "mma.sync")
    return emitOpError() << "instr must be \"wgmma\" or \"mma.sync\", got \"" << getInstr() << "\"";
  if (getShape().size() != 3)
    return emitOpError("shape must be [m, n, k]");
  if (getWaitDepth() < 0 || getKSteps() < 1 || getRowBlocks() < 1)
    return emitOpError("k_steps and row_blocks must be >= 1 and wait_depth >= 0");
  if (getInstr() == "wgmma" && getShape()[0] != 64)
    return emitOpError() << "wgmma shape must be m64nNk16 (k32 for fp8), got m" << getShape()[0];
  if (auto n = getAccumulators()) {
    if (*n < 1 || *n > 2 || getShape()[1] % (8 * *n) != 0)
      return emitOpError() << "accumulators must be 1 or 2, each a multiple of 8 columns of N = "
                           << getShape()[1] << ", got " << *n;
    if (*n > 1 && getInstr() != "wgmma")
      return emitOpError("two accumulators (a dual GEMM) need instr \"wgmma\"");
  }
  return success();
}

LogicalResult WgmmaOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  auto isFp8 = [](StringRef t) { return t == "e4m3" || t == "e5m2"; };
  if (getType() != "bf16" && getType() != "f16" && !isFp8(getType()))
    return emitOpError() << "type must be \"bf16\", \"f16\", \"e4m3\" or \"e5m2\", got \""
                         << getType() << "\"";
  if (auto tb = getTypeB(); tb && (!isFp8(getType()) || !isFp8(*tb)))
    return emitOpError() << "type_b pairs two fp8 types (e4m3, e5m2), got \"" << getType()
                         << "\", \"" << *tb << "\"";
  const int64_t k = isFp8(getType()) ? 32 : 16;
  if (shape.size() != 3 || shape[0] != 64 || shape[2] != k || shape[1] < 8 || shape[1] > 256 ||
      shape[1] % 8 != 0)
    return emitOpError() << "shape must be [64, n, " << k << "] for " << getType()
                         << " with n a multiple of 8 in [8, 256]";
  if (isFp8(getType()) && (getAMnMajor() || getBMnMajor()))
    return emitOpError("fp8 operands are K-major only (no transpose immediates)");
  auto acc = cast<LLVM::LLVMStructType>(getAcc().getType());
  if (static_cast<int64_t>(acc.getBody().size()) != shape[1] / 2)
    return emitOpError() << "a 64 x " << shape[1] << " f32 accumulator is " << shape[1] / 2
                         << " registers per thread, got " << acc.getBody().size();
  return success();
}
