//===- Tracer.h - the DSL tracer's hand-off to the compiler -------*- C++ -*-===//
//
// The tessel DSL (dsl/, no MLIR) describes a kernel by calling the functions of
// tessel/core/trace.hpp while the user's functor runs once. This library
// implements them: every call builds one `tessel`/`arith`/`math`/`scf` op with
// the user's FileLineColLoc into a module owned by the calling thread's trace
// session. `finishTrace` ends the session and hands the verified module to the
// compiler:
//
//   tessel::trace::begin("gemm");               // done by ts::jit
//   ... the user's functor runs, calling trace::* ...
//   auto traced = tessel::frontend::finishTrace();
//   // traced->module: func.func @gemm(...) attributes {tessel.kernel}
//
// Loop-carried values: a `ts::range` loop is traced once into the region of an
// scf.for. Variables (tracer slots) that existed before the loop are read in the
// body through a placeholder; at the end of the loop, each slot whose value
// changed becomes an iter_arg (its placeholder is replaced by the block
// argument, its final value is yielded, and after the loop it holds the loop's
// result); the placeholders of the others are replaced by their outer values.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_FRONTEND_TRACER_H
#define TESSEL_FRONTEND_TRACER_H

#include <memory>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace tessel::frontend {

/// A finished trace: the module (one `func.func` with the `tessel.kernel`
/// attribute) and the context that owns it. `module` is declared after
/// `context`, so it is destroyed first.
struct TracedModule {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string kernelName;
};

/// Ends the calling thread's trace session and returns its module, verified.
/// Throws tessel::error when there is no session, when the DSL recorded an
/// error (trace::fail), when a loop is still open, or when the module does not
/// verify; the message quotes the user's file:line:col for every diagnostic.
/// The session is over in every case.
std::unique_ptr<TracedModule> finishTrace();

/// Drops the calling thread's trace session, if any.
void abandonTrace() noexcept;

/// True while the calling thread has a trace session.
bool isTracing() noexcept;

/// Adds the dialects that traced modules use: tessel, arith, math, scf, func.
void registerDialects(mlir::DialectRegistry &registry);

} // namespace tessel::frontend

#endif // TESSEL_FRONTEND_TRACER_H
