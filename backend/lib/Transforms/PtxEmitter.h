//===- PtxEmitter.h - inline PTX, spin waits and timeout reports -*- C++ -*-===//
//
// The few ways tessel writes PTX that MLIR's nvvm dialect does not have (or
// gets wrong, DESIGN.md §6): one `llvm.inline_asm` per instruction group, a
// spin wait on a predicate, and the bounded-wait report of TESSEL_DEBUG.
// Shared by tessel-lower-to-nvvm (the ops it still writes as PTX) and
// tessel-convert-hopper-to-nvvm (the hopper ops), so that both emit exactly
// the same IR for the same instruction.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TRANSFORMS_PTXEMITTER_H
#define TESSEL_TRANSFORMS_PTXEMITTER_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <string>

namespace mlir::tessel {

/// `code` as one volatile `llvm.inline_asm` that clobbers memory; returns its
/// result when `result` is set.
Value emitPtx(OpBuilder &b, Location loc, StringRef code, StringRef constraints,
              ValueRange operands, Type result = {});

/// What a bounded wait reports when it gives up (TESSEL_DEBUG).
struct WaitReport {
  StringRef kernel; ///< the kernel's symbol
  StringRef what;   ///< the barrier or flag ("full", "empty", "flag")
  Value thread;     ///< %tid.x
  Value id, parity; ///< the stage (or CTA) and the parity waited for
};

/// Spins until `probe(n)` (PTX setting predicate `p`, its operands numbered
/// from $n) says done (`p` when doneIfP, else `!p`). Unbounded: one asm loop.
/// With `bounded`: gives up after 4 s of %globaltimer, then prints `report`
/// with vprintf and traps.
void emitSpinWait(OpBuilder &b, Location loc, StringRef decls,
                  std::function<std::string(int)> probe, bool doneIfP, StringRef constraints,
                  ValueRange operands, bool bounded, const WaitReport &report);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_PTXEMITTER_H
