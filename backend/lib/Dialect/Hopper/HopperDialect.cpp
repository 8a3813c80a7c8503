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
