//===- Tessel.h - the tessel dialect -------------------------------*- C++ -*-===//
//
// Include this to use the tessel dialect's ops, types and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_TESSEL_TESSEL_H
#define TESSEL_DIALECT_TESSEL_TESSEL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessel/Dialect/Tessel/TesselDialect.h.inc"
#include "tessel/Dialect/Tessel/TesselEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tessel/Dialect/Tessel/TesselTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/Dialect/Tessel/TesselAttrs.h.inc"

#define GET_OP_CLASSES
#include "tessel/Dialect/Tessel/TesselOps.h.inc"

namespace mlir::tessel {
/// f8E4M3FN or f8E5M2: the fp8 element types (storage, dot inputs and casts).
inline bool isFp8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }
} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TESSEL_TESSEL_H
