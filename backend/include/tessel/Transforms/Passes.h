//===- Passes.h - tessel passes ------------------------------------*- C++ -*-===//
#ifndef TESSEL_TRANSFORMS_PASSES_H
#define TESSEL_TRANSFORMS_PASSES_H

#include "tessel/Dialect/Hopper/Hopper.h"
#include "tessel/Dialect/Tessel/Tessel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessel {

#define GEN_PASS_DECL
#include "tessel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Transforms/Passes.h.inc"

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_PASSES_H
