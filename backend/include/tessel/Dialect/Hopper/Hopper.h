//===- Hopper.h - the Hopper-level dialect -------------------------*- C++ -*-===//
//
// Include this to use the hopper dialect's ops (HopperOps.td).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_HOPPER_HOPPER_H
#define TESSEL_DIALECT_HOPPER_HOPPER_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessel/Dialect/Hopper/HopperDialect.h.inc"

#define GET_OP_CLASSES
#include "tessel/Dialect/Hopper/HopperOps.h.inc"

#endif // TESSEL_DIALECT_HOPPER_HOPPER_H
