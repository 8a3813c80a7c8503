//===- Tracer.cpp - tessel::trace::* calls -> tessel IR ------------------===//
//
// One trace session per thread (a context, a module with one kernel function,
// an OpBuilder). Values are handed to the DSL as integer handles into
// `Session::values`; tracer slots (`trace::var`) are the DSL's tile and index
// variables and make loop-carried values possible (see Tracer.h).
//
// Errors the user can cause throw tessel::error and quote the position of the
// user's call. No exception is thrown through MLIR frames: diagnostics are
// collected by a handler and thrown after the MLIR call returns.
//
//===----------------------------------------------------------------------===//

#include "tessel/Frontend/Tracer.h"

#include "tessel/Dialect/Tessel/Tessel.h"
#include "tessel/core/trace.hpp"
#include "tessel/kernel/runtime_api.hpp"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace mlir;
namespace tir = mlir::tessel;
namespace trace = ::tessel::trace;

namespace {

//===----------------------------------------------------------------------===//
// Formatting for error messages
//===----------------------------------------------------------------------===//

std::string where(trace::loc l) {
  if (!l.file || !*l.file || l.line == 0)
    return "";
  return std::string(l.file) + ":" + std::to_string(l.line) + ":" +
         std::to_string(l.column) + ": ";
}

std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// "file:line:col" of the first FileLineColLoc in `loc`, else its printed form.
std::string formatLocation(Location loc) {
  std::string found;
  loc->walk([&](Location inner) {
    if (auto f = dyn_cast<FileLineColLoc>(inner)) {
      found = f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
              std::to_string(f.getColumn());
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!found.empty())
    return found;
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

const char *severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

void appendDiagnostic(std::string &out, Diagnostic &diag, bool isNote = false) {
  out += (isNote ? "  " : "") + formatLocation(diag.getLocation()) + ": " +
         severityName(diag.getSeverity()) + ": " + diag.str() + "\n";
  for (Diagnostic &note : diag.getNotes())
    appendDiagnostic(out, note, /*isNote=*/true);
}

//===----------------------------------------------------------------------===//
// The session
//===----------------------------------------------------------------------===//

/// A slot that a loop body read or wrote although it was made before the loop.
struct CarriedSlot {
  Value outer;              ///< its value just before the loop
  Operation *placeholder;   ///< what the body reads it through (a cast of `outer`)
};

struct LoopFrame {
  scf::ForOp loop;               ///< traced without iter_args; rebuilt in endLoop
  trace::var firstVar;           ///< slots from here on were made in the body
  llvm::MapVector<trace::var, CarriedSlot> slots;
};

class Session {
public:
  explicit Session(const std::string &name)
      : context(makeContext()), builder(context.get()), kernelName(name) {
    Location unknown = UnknownLoc::get(context.get());
    module = ModuleOp::create(unknown);
    builder.setInsertionPointToEnd(module->getBody());
    func = func::FuncOp::create(
        builder, NameLoc::get(builder.getStringAttr(kernelName)), kernelName,
        builder.getFunctionType({}, {}));
    func->setAttr(tir::TesselDialect::getKernelAttrName(), builder.getUnitAttr());
    builder.setInsertionPointToStart(func.addEntryBlock());
  }

  static std::unique_ptr<MLIRContext> makeContext() {
    DialectRegistry registry;
    ::tessel::frontend::registerDialects(registry);
    auto ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    return ctx;
  }

  /// Throws the user error `message` at `l` (or, for calls that carry no
  /// position, at the last position seen).
  [[noreturn]] void fail(trace::loc l, const std::string &message) {
    throw ::tessel::error(where(l.line ? l : lastLoc) + "tessel: " + message);
  }

  Location loc(trace::loc l) {
    if (!l.file || !*l.file || l.line == 0)
      return UnknownLoc::get(context.get());
    lastLoc = l;
    return FileLineColLoc::get(context.get(), l.file, l.line, l.column);
  }

  trace::value put(Value v) {
    values.push_back(v);
    return static_cast<trace::value>(values.size() - 1);
  }

  /// The value of handle `h`, as an operand of an op built at the insertion
  /// point: a value made in a loop body cannot be used after the loop.
  Value get(trace::value h, const char *what, trace::loc l) {
    Value v = getAny(h, what, l);
    Region *here = builder.getInsertionBlock()->getParent();
    if (!v.getParentRegion()->isAncestor(here))
      fail(l, std::string(what) +
                  ": uses a value computed inside a ts::range loop body after the loop; "
                  "assign it to a tile or index variable declared before the loop instead");
    return v;
  }

  /// The value of handle `h`, wherever it was made.
  Value getAny(trace::value h, const char *what, trace::loc l) {
    if (h < 0 || static_cast<size_t>(h) >= values.size() || !values[h])
      fail(l, std::string(what) + ": invalid value handle " + std::to_string(h));
    return values[h];
  }

  RankedTensorType tileType(Value v, const char *what, trace::loc l) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      fail(l, std::string(what) + ": expected a tile, got " + str(v.getType()));
    return t;
  }

  Type elementType(::tessel::dtype t) {
    switch (t) {
    case ::tessel::dtype::f16:
      return builder.getF16Type();
    case ::tessel::dtype::bf16:
      return builder.getBF16Type();
    case ::tessel::dtype::f32:
      return builder.getF32Type();
    case ::tessel::dtype::i32:
      return builder.getI32Type();
    case ::tessel::dtype::i1:
      return builder.getI1Type();
    case ::tessel::dtype::index:
      return builder.getIndexType();
    case ::tessel::dtype::f8e4m3:
      return builder.getType<Float8E4M3FNType>();
    case ::tessel::dtype::f8e5m2:
      return builder.getType<Float8E5M2Type>();
    }
    return Type();
  }

  /// A constant of type `t` (scalar, or a dense splat for a tile) equal to `v`.
  Value constant(Type t, double v, Location l) {
    Type elem = getElementTypeOrSelf(t);
    TypedAttr scalar;
    if (auto ft = dyn_cast<FloatType>(elem))
      scalar = builder.getFloatAttr(ft, v);
    else if (elem.isIndex())
      scalar = builder.getIndexAttr(static_cast<int64_t>(v));
    else {
      unsigned width = elem.getIntOrFloatBitWidth();
      APInt bits = width == 1 ? APInt(1, v != 0 ? 1 : 0)
                              : APInt(width, static_cast<uint64_t>(static_cast<int64_t>(v)),
                                      /*isSigned=*/true);
      scalar = builder.getIntegerAttr(elem, bits);
    }
    if (auto st = dyn_cast<RankedTensorType>(t))
      return arith::ConstantOp::create(
          builder, l, cast<TypedAttr>(DenseElementsAttr::get(st, ArrayRef<Attribute>(scalar))));
    return arith::ConstantOp::create(builder, l, scalar);
  }

  /// Element type conversion with arith ops (scalars, and tiles of i1).
  Value convert(Value v, Type to, Location l) {
    Type from = v.getType();
    Type fromElem = getElementTypeOrSelf(from), toElem = getElementTypeOrSelf(to);
    if (fromElem == toElem)
      return v;
    auto like = [&](Type elem) -> Type {
      if (auto st = dyn_cast<RankedTensorType>(from))
        return st.clone(elem);
      return elem;
    };
    if (fromElem.isIndex()) {
      if (isa<IntegerType>(toElem))
        return arith::IndexCastOp::create(builder, l, to, v);
      Value i = arith::IndexCastOp::create(builder, l, like(builder.getI64Type()), v);
      return arith::SIToFPOp::create(builder, l, to, i);
    }
    if (auto fi = dyn_cast<IntegerType>(fromElem)) {
      bool isBool = fi.getWidth() == 1;
      if (toElem.isIndex()) {
        Value w = isBool ? arith::ExtUIOp::create(builder, l, like(builder.getI64Type()), v).getResult()
                         : v;
        return arith::IndexCastOp::create(builder, l, to, w);
      }
      if (auto ti = dyn_cast<IntegerType>(toElem)) {
        if (ti.getWidth() > fi.getWidth())
          return isBool ? arith::ExtUIOp::create(builder, l, to, v).getResult()
                        : arith::ExtSIOp::create(builder, l, to, v).getResult();
        return arith::TruncIOp::create(builder, l, to, v);
      }
      return isBool ? arith::UIToFPOp::create(builder, l, to, v).getResult()
                    : arith::SIToFPOp::create(builder, l, to, v).getResult();
    }
    auto ff = cast<FloatType>(fromElem);
    if (toElem.isIndex()) {
      Value i = arith::FPToSIOp::create(builder, l, like(builder.getI64Type()), v);
      return arith::IndexCastOp::create(builder, l, to, i);
    }
    if (isa<IntegerType>(toElem))
      return arith::FPToSIOp::create(builder, l, to, v);
    auto tf = cast<FloatType>(toElem);
    if (tf.getWidth() > ff.getWidth())
      return arith::ExtFOp::create(builder, l, to, v);
    if (tf.getWidth() < ff.getWidth())
      return arith::TruncFOp::create(builder, l, to, v);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(builder, l, like(builder.getF32Type()), v);
    return arith::TruncFOp::create(builder, l, to, wide);
  }

  //===--------------------------------------------------------------------===//
  // Slots and loops
  //===--------------------------------------------------------------------===//

  trace::var newSlot(Value v) {
    slots.push_back(v);
    return static_cast<trace::var>(slots.size() - 1);
  }

  void checkSlot(trace::var x) {
    if (x < 0 || static_cast<size_t>(x) >= slots.size())
      fail({}, "invalid variable slot " + std::to_string(x));
  }

  /// Before a loop body reads or writes slot `x` made before the loop, route it
  /// through a placeholder at the start of the body (outermost loop first).
  void touch(trace::var x) {
    for (LoopFrame &frame : loops) {
      if (x >= frame.firstVar || frame.slots.count(x))
        continue;
      Value outer = slots[x];
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(frame.loop.getBody());
      auto placeholder = UnrealizedConversionCastOp::create(
          builder, frame.loop.getLoc(), TypeRange{outer.getType()}, ValueRange{outer});
      frame.slots.insert({x, CarriedSlot{outer, placeholder}});
      slots[x] = placeholder.getResult(0);
    }
  }

  void endLoop(trace::loc l) {
    if (loops.empty())
      fail(l, "for_end without a matching for_begin");
    LoopFrame frame = std::move(loops.back());
    loops.pop_back();
    scf::ForOp old = frame.loop;
    Block *oldBody = old.getBody();

    // The slots whose value the body changed become iter_args.
    SmallVector<trace::var> carried;
    SmallVector<Value> inits;
    for (auto &[x, slot] : frame.slots) {
      if (slots[x] != slot.placeholder->getResult(0)) {
        carried.push_back(x);
        inits.push_back(slot.outer);
      }
    }

    DenseMap<Value, Value> replaced;
    scf::ForOp loop = old;
    builder.setInsertionPointAfter(old);
    if (!carried.empty()) {
      loop = scf::ForOp::create(builder, old.getLoc(), old.getLowerBound(), old.getUpperBound(),
                                old.getStep(), inits);
      Block *body = loop.getBody();
      body->getOperations().splice(body->end(), oldBody->getOperations(), oldBody->begin(),
                                   std::prev(oldBody->end()));
      oldBody->getArgument(0).replaceAllUsesWith(loop.getInductionVar());
      replaced[oldBody->getArgument(0)] = loop.getInductionVar();
    }

    // Placeholders: the block argument for carried slots, the outer value else.
    for (auto &[x, slot] : frame.slots) {
      auto *it = llvm::find(carried, x);
      replaced[slot.placeholder->getResult(0)] =
          it != carried.end() ? loop.getRegionIterArgs()[it - carried.begin()] : slot.outer;
    }
    auto map = [&](Value v) {
      auto it = replaced.find(v);
      return it == replaced.end() ? v : it->second;
    };

    if (!carried.empty()) {
      SmallVector<Value> finals;
      for (trace::var x : carried)
        finals.push_back(map(slots[x]));
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToEnd(loop.getBody());
      scf::YieldOp::create(builder, loc(l), finals);
    }
    for (auto &[x, slot] : frame.slots) {
      Value p = slot.placeholder->getResult(0);
      p.replaceAllUsesWith(replaced[p]);
      slot.placeholder->erase();
    }
    for (auto &[x, slot] : frame.slots) {
      auto *it = llvm::find(carried, x);
      slots[x] = it != carried.end() ? loop.getResult(it - carried.begin()) : slot.outer;
    }
    if (loop != old)
      old.erase();
    // Handles given out in the body that named a placeholder or the old
    // induction variable now name their replacements.
    for (Value &v : values)
      if (v)
        v = map(v);
    builder.setInsertionPointAfter(loop);
  }

  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  OpBuilder builder;
  std::string kernelName;
  std::vector<Value> values;
  std::vector<Value> slots;
  std::vector<LoopFrame> loops;
  std::string deferredError;
  trace::loc lastLoc;
  bool haveArgumentLoc = false;
};

thread_local std::unique_ptr<Session> currentSession;

Session &session(const char *what) {
  if (!currentSession)
    throw ::tessel::error(std::string("tessel: trace::") + what +
                          " called outside a trace (kernels are traced by ts::jit)");
  return *currentSession;
}

} // namespace

//===----------------------------------------------------------------------===//
// tessel::frontend
//===----------------------------------------------------------------------===//

namespace tessel::frontend {

void registerDialects(DialectRegistry &registry) {
  registry.insert<tir::TesselDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  func::FuncDialect>();
}

bool isTracing() noexcept { return currentSession != nullptr; }

void abandonTrace() noexcept { currentSession.reset(); }

std::unique_ptr<TracedModule> finishTrace() {
  std::unique_ptr<Session> s = std::move(currentSession);
  if (!s)
    throw ::tessel::error("tessel: finishTrace: no trace in progress on this thread");
  if (!s->deferredError.empty())
    throw ::tessel::error(s->deferredError);
  if (!s->loops.empty())
    throw ::tessel::error("tessel: kernel '" + s->kernelName +
                          "' ends inside a ts::range loop (for_begin without for_end)");

  Block &entry = s->func.getBody().front();
  s->builder.setInsertionPointToEnd(&entry);
  func::ReturnOp::create(s->builder, s->func.getLoc());
  s->func.setFunctionType(s->builder.getFunctionType(entry.getArgumentTypes(), {}));

  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(s->context.get(), [&](Diagnostic &diag) {
      appendDiagnostic(diagnostics, diag);
      return success();
    });
    if (failed(verify(*s->module)))
      throw ::tessel::error("tessel: kernel '" + s->kernelName + "' is invalid:\n" + diagnostics);
  }

  auto traced = std::make_unique<TracedModule>();
  traced->kernelName = s->kernelName;
  traced->module = std::move(s->module);
  traced->context = std::move(s->context);
  return traced;
}

} // namespace tessel::frontend

//===----------------------------------------------------------------------===//
// tessel::trace
//===----------------------------------------------------------------------===//

namespace tessel::trace {

void begin(const char *name) {
  if (currentSession)
    throw ::tessel::error("tessel: trace::begin('" + std::string(name ? name : "") +
                          "'): kernel '" + currentSession->kernelName +
                          "' is still being traced on this thread (ts::jit inside a kernel?)");
  std::string n = name && *name ? name : "kernel";
  currentSession = std::make_unique<Session>(n);
}

value arg_tensor(dtype t, int rank, loc l) {
  Session &s = session("arg_tensor");
  if (rank < 1 || rank > 3)
    s.fail(l, "a kernel tensor has rank 1, 2 or 3, got " + std::to_string(rank));
  if (t == dtype::i1 || t == dtype::index)
    s.fail(l, "a kernel tensor holds f16, bf16, f32, i32, f8e4m3 or f8e5m2");
  Location where = s.loc(l);
  if (!s.haveArgumentLoc) {
    s.func->setLoc(FusedLoc::get(s.context.get(), {s.func.getLoc(), where}));
    s.haveArgumentLoc = true;
  }
  Type type = tir::RefType::get(s.context.get(), static_cast<unsigned>(rank), s.elementType(t));
  return s.put(s.func.getBody().front().addArgument(type, where));
}

value arg_scalar(dtype t, loc l) {
  Session &s = session("arg_scalar");
  if (t != dtype::f32 && t != dtype::i32)
    s.fail(l, "a kernel scalar is f32 or i32");
  Location where = s.loc(l);
  if (!s.haveArgumentLoc) {
    s.func->setLoc(FusedLoc::get(s.context.get(), {s.func.getLoc(), where}));
    s.haveArgumentLoc = true;
  }
  return s.put(s.func.getBody().front().addArgument(s.elementType(t), where));
}

void fail(const char *message, loc l) {
  Session &s = session("fail");
  if (s.deferredError.empty())
    s.deferredError = where(l) + "tessel: " + (message ? message : "error");
}

void abandon() noexcept { ::tessel::frontend::abandonTrace(); }

// ---- scalars ---------------------------------------------------------------

value program_id(int axis, loc l) {
  Session &s = session("program_id");
  if (axis < 0 || axis > 2)
    s.fail(l, "program_id: the axis must be 0, 1 or 2, got " + std::to_string(axis));
  return s.put(tir::ProgramIdOp::create(s.builder, s.loc(l), static_cast<uint32_t>(axis)));
}

value num_programs(int axis, loc l) {
  Session &s = session("num_programs");
  if (axis < 0 || axis > 2)
    s.fail(l, "num_programs: the axis must be 0, 1 or 2, got " + std::to_string(axis));
  return s.put(tir::NumProgramsOp::create(s.builder, s.loc(l), static_cast<uint32_t>(axis)));
}

value dim(value tensor, int axis, loc l) {
  Session &s = session("dim");
  Value ref = s.get(tensor, "dim", l);
  auto type = dyn_cast<tir::RefType>(ref.getType());
  if (!type)
    s.fail(l, "dim: expected a kernel tensor, got " + str(ref.getType()));
  if (axis < 0 || static_cast<unsigned>(axis) >= type.getRank())
    s.fail(l, "size(" + std::to_string(axis) + "): the tensor has rank " +
                  std::to_string(type.getRank()));
  return s.put(tir::DimOp::create(s.builder, s.loc(l), ref, static_cast<uint32_t>(axis)));
}

value const_index(std::int64_t v, loc l) {
  Session &s = session("const_index");
  return s.put(arith::ConstantIndexOp::create(s.builder, s.loc(l), v));
}

value const_scalar(dtype t, double v, loc l) {
  Session &s = session("const_scalar");
  return s.put(s.constant(s.elementType(t), v, s.loc(l)));
}

value binary(binary_op op, value a, value b, loc l) {
  Session &s = session("binary");
  Value x = s.get(a, "binary", l), y = s.get(b, "binary", l);
  if (x.getType() != y.getType())
    s.fail(l, "binary op: operand types differ: " + str(x.getType()) + " and " + str(y.getType()));
  Type elem = getElementTypeOrSelf(x.getType());
  Location at = s.loc(l);
  OpBuilder &bld = s.builder;
  if (isa<FloatType>(elem)) {
    switch (op) {
    case binary_op::add:
      return s.put(arith::AddFOp::create(bld, at, x, y));
    case binary_op::sub:
      return s.put(arith::SubFOp::create(bld, at, x, y));
    case binary_op::mul:
      return s.put(arith::MulFOp::create(bld, at, x, y));
    case binary_op::div:
      return s.put(arith::DivFOp::create(bld, at, x, y));
    case binary_op::rem:
      return s.put(arith::RemFOp::create(bld, at, x, y));
    case binary_op::min:
      return s.put(arith::MinimumFOp::create(bld, at, x, y));
    case binary_op::max:
      return s.put(arith::MaximumFOp::create(bld, at, x, y));
    }
  }
  if (elem.isInteger(1))
    s.fail(l, "binary op: masks (i1) have no arithmetic");
  switch (op) {
  case binary_op::add:
    return s.put(arith::AddIOp::create(bld, at, x, y));
  case binary_op::sub:
    return s.put(arith::SubIOp::create(bld, at, x, y));
  case binary_op::mul:
    return s.put(arith::MulIOp::create(bld, at, x, y));
  case binary_op::div:
    return s.put(arith::DivSIOp::create(bld, at, x, y));
  case binary_op::rem:
    return s.put(arith::RemSIOp::create(bld, at, x, y));
  case binary_op::min:
    return s.put(arith::MinSIOp::create(bld, at, x, y));
  case binary_op::max:
    return s.put(arith::MaxSIOp::create(bld, at, x, y));
  }
  s.fail(l, "binary op: unknown op");
}

value unary(unary_op op, value a, loc l) {
  Session &s = session("unary");
  Value x = s.get(a, "unary", l);
  Type type = x.getType();
  Type elem = getElementTypeOrSelf(type);
  Location at = s.loc(l);
  OpBuilder &bld = s.builder;
  bool isFloat = isa<FloatType>(elem);
  if (elem.isInteger(1))
    s.fail(l, "unary op: not defined on masks (i1)");

  switch (op) {
  case unary_op::neg:
    return s.put(isFloat ? arith::NegFOp::create(bld, at, x).getResult()
                         : arith::SubIOp::create(bld, at, s.constant(type, 0, at), x).getResult());
  case unary_op::abs:
    return s.put(isFloat ? math::AbsFOp::create(bld, at, x).getResult()
                         : math::AbsIOp::create(bld, at, x).getResult());
  case unary_op::relu:
    return s.put(isFloat ? arith::MaxNumFOp::create(bld, at, x, s.constant(type, 0, at)).getResult()
                         : arith::MaxSIOp::create(bld, at, x, s.constant(type, 0, at)).getResult());
  default:
    break;
  }
  if (!isFloat)
    s.fail(l, "unary op: needs a floating-point operand, got " + str(type));
  auto sigmoid = [&](Value v) -> Value {
    Value one = s.constant(type, 1.0, at);
    Value e = math::ExpOp::create(bld, at, arith::NegFOp::create(bld, at, v));
    return arith::DivFOp::create(bld, at, one, arith::AddFOp::create(bld, at, one, e));
  };
  switch (op) {
  case unary_op::exp:
    return s.put(math::ExpOp::create(bld, at, x));
  case unary_op::exp2:
    return s.put(math::Exp2Op::create(bld, at, x));
  case unary_op::log:
    return s.put(math::LogOp::create(bld, at, x));
  case unary_op::sqrt:
    return s.put(math::SqrtOp::create(bld, at, x));
  case unary_op::rsqrt:
    return s.put(math::RsqrtOp::create(bld, at, x));
  case unary_op::tanh:
    return s.put(math::TanhOp::create(bld, at, x));
  case unary_op::sigmoid:
    return s.put(sigmoid(x));
  case unary_op::silu:
    return s.put(arith::MulFOp::create(bld, at, x, sigmoid(x)));
  case unary_op::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), written as
    //   u = x (k + k c x^2),  h = 0.5 x,  h + h tanh(u)    (k = sqrt(2/pi), c = 0.044715)
    // so that each multiply-add pair contracts into one fma (options::fp_contract): x^2, fma,
    // mul, tanh.approx, mul, fma per element instead of eight roundings (run 34).
    Value x2 = arith::MulFOp::create(bld, at, x, x);
    Value poly = arith::AddFOp::create(
        bld, at, arith::MulFOp::create(bld, at, s.constant(type, 0.7978845608028654 * 0.044715, at), x2),
        s.constant(type, 0.7978845608028654, at));
    Value t = math::TanhOp::create(bld, at, arith::MulFOp::create(bld, at, x, poly));
    Value half = arith::MulFOp::create(bld, at, s.constant(type, 0.5, at), x);
    return s.put(arith::AddFOp::create(bld, at, arith::MulFOp::create(bld, at, half, t), half));
  }
  case unary_op::erf:
    return s.put(math::ErfOp::create(bld, at, x));
  case unary_op::gelu_erf: {
    // 0.5 x (1 + erf(x / sqrt(2))), as h + h erf(x / sqrt(2)) with h = 0.5 x: one fma.
    Value e = math::ErfOp::create(
        bld, at, arith::MulFOp::create(bld, at, s.constant(type, 0.7071067811865476, at), x));
    Value half = arith::MulFOp::create(bld, at, s.constant(type, 0.5, at), x);
    return s.put(arith::AddFOp::create(bld, at, arith::MulFOp::create(bld, at, half, e), half));
  }
  default:
    break;
  }
  s.fail(l, "unary op: unknown op");
}

value compare(compare_op op, value a, value b, loc l) {
  Session &s = session("compare");
  Value x = s.get(a, "compare", l), y = s.get(b, "compare", l);
  if (x.getType() != y.getType())
    s.fail(l, "compare: operand types differ: " + str(x.getType()) + " and " + str(y.getType()));
  Location at = s.loc(l);
  if (isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    // Ordered predicates (false on NaN), except != which is true on NaN as in C++.
    static constexpr arith::CmpFPredicate preds[] = {
        arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE, arith::CmpFPredicate::OLT,
        arith::CmpFPredicate::OLE, arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
    return s.put(arith::CmpFOp::create(s.builder, at, preds[static_cast<int>(op)], x, y));
  }
  static constexpr arith::CmpIPredicate preds[] = {
      arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,  arith::CmpIPredicate::slt,
      arith::CmpIPredicate::sle, arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
  return s.put(arith::CmpIOp::create(s.builder, at, preds[static_cast<int>(op)], x, y));
}

value select(value cond, value a, value b, loc l) {
  Session &s = session("select");
  Value c = s.get(cond, "select", l), x = s.get(a, "select", l), y = s.get(b, "select", l);
  if (x.getType() != y.getType())
    s.fail(l, "where: the two branches have different types: " + str(x.getType()) + " and " +
                  str(y.getType()));
  if (!getElementTypeOrSelf(c.getType()).isInteger(1))
    s.fail(l, "where: the condition must be a mask (i1), got " + str(c.getType()));
  return s.put(arith::SelectOp::create(s.builder, s.loc(l), c, x, y));
}

// ---- tiles -----------------------------------------------------------------

value full(dtype t, std::span<const std::int64_t> shape, double v, loc l) {
  Session &s = session("full");
  auto type = RankedTensorType::get(llvm::ArrayRef<int64_t>(shape.data(), shape.size()),
                                    s.elementType(t));
  return s.put(s.constant(type, v, s.loc(l)));
}

value splat(value scalar, std::span<const std::int64_t> shape, loc l) {
  Session &s = session("splat");
  Value v = s.get(scalar, "splat", l);
  if (isa<ShapedType>(v.getType()))
    s.fail(l, "splat: expected a scalar, got " + str(v.getType()));
  auto type = RankedTensorType::get(llvm::ArrayRef<int64_t>(shape.data(), shape.size()),
                                    v.getType());
  return s.put(tir::SplatOp::create(s.builder, s.loc(l), type, v));
}

/// The kernel tensor `tensor` and the index values `offsets` of an access named `what`.
static std::pair<Value, SmallVector<Value>> tensorAccess(Session &s, value tensor,
                                                         std::span<const value> offsets,
                                                         const char *what, loc l) {
  Value ref = s.get(tensor, what, l);
  if (!isa<tir::RefType>(ref.getType()))
    s.fail(l, std::string(what) + ": expected a kernel tensor, got " + str(ref.getType()));
  SmallVector<Value> offs;
  for (value o : offsets)
    offs.push_back(s.get(o, what, l));
  return {ref, offs};
}

value load(value tensor, std::span<const value> offsets, std::span<const std::int64_t> shape,
           loc l) {
  Session &s = session("load");
  auto [ref, offs] = tensorAccess(s, tensor, offsets, "load", l);
  auto type = RankedTensorType::get(llvm::ArrayRef<int64_t>(shape.data(), shape.size()),
                                    cast<tir::RefType>(ref.getType()).getElementType());
  return s.put(tir::LoadOp::create(s.builder, s.loc(l), type, ref, offs));
}

value load_element(value tensor, std::span<const value> offsets, loc l) {
  Session &s = session("at");
  auto [ref, offs] = tensorAccess(s, tensor, offsets, "at", l);
  return s.put(tir::LoadElementOp::create(
      s.builder, s.loc(l), cast<tir::RefType>(ref.getType()).getElementType(), ref, offs));
}

void store(value tensor, std::span<const value> offsets, value tile, loc l) {
  Session &s = session("store");
  Value ref = s.get(tensor, "store", l);
  if (!isa<tir::RefType>(ref.getType()))
    s.fail(l, "store: expected a kernel tensor, got " + str(ref.getType()));
  Value v = s.get(tile, "store", l);
  s.tileType(v, "store", l);
  SmallVector<Value> offs;
  for (value o : offsets)
    offs.push_back(s.get(o, "store", l));
  tir::StoreOp::create(s.builder, s.loc(l), v, ref, offs);
}

value dot(value a, value b, value acc, loc l) {
  Session &s = session("dot");
  Value x = s.get(a, "dot", l), y = s.get(b, "dot", l);
  RankedTensorType xt = s.tileType(x, "dot", l), yt = s.tileType(y, "dot", l);
  Location at = s.loc(l);
  Value c;
  if (acc == no_value) {
    if (xt.getRank() != 2 || yt.getRank() != 2)
      s.fail(l, "dot: both operands must be 2-d tiles");
    c = s.constant(RankedTensorType::get({xt.getDimSize(0), yt.getDimSize(1)},
                                         s.builder.getF32Type()),
                   0.0, at);
  } else {
    c = s.get(acc, "dot", l);
    s.tileType(c, "dot", l);
  }
  return s.put(tir::DotOp::create(s.builder, at, c.getType(), x, y, c));
}

value trans(value tile, loc l) {
  Session &s = session("trans");
  Value v = s.get(tile, "trans", l);
  RankedTensorType t = s.tileType(v, "trans", l);
  if (t.getRank() != 2)
    s.fail(l, "T(): only 2-d tiles can be transposed, got " + str(t));
  auto type = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, t.getElementType());
  return s.put(tir::TransOp::create(s.builder, s.loc(l), type, v));
}

value broadcast(value tile, std::span<const std::int64_t> dims,
                std::span<const std::int64_t> shape, loc l) {
  Session &s = session("broadcast");
  Value v = s.get(tile, "broadcast", l);
  RankedTensorType t = s.tileType(v, "broadcast", l);
  auto type = RankedTensorType::get(llvm::ArrayRef<int64_t>(shape.data(), shape.size()),
                                    t.getElementType());
  return s.put(tir::BroadcastOp::create(s.builder, s.loc(l), type, v,
                                        llvm::ArrayRef<int64_t>(dims.data(), dims.size())));
}

value reduce(reduce_op op, value tile, int axis, loc l) {
  Session &s = session("reduce");
  Value v = s.get(tile, "reduce", l);
  RankedTensorType t = s.tileType(v, "reduce", l);
  if (t.getRank() != 2)
    s.fail(l, "reduction: ts::sum / ts::max / ts::amax reduce a 2-d tile, got " + str(t));
  if (axis < 0 || axis > 1)
    s.fail(l, "reduction: axis " + std::to_string(axis) +
                  " is out of range for a 2-d tile (ts::axis<1> reduces each row, ts::axis<0> "
                  "each column)");
  if (!isa<FloatType>(t.getElementType()))
    s.fail(l, "reduction: needs a floating-point tile, got " + str(t));
  auto type = RankedTensorType::get({t.getDimSize(1 - axis)}, s.builder.getF32Type());
  tir::ReduceKind kind = op == reduce_op::sum   ? tir::ReduceKind::sum
                         : op == reduce_op::max ? tir::ReduceKind::max
                                                : tir::ReduceKind::amax;
  return s.put(tir::ReduceOp::create(s.builder, s.loc(l), type, v, kind,
                                     static_cast<int32_t>(axis)));
}

void store_combine(value tensor, std::span<const value> offsets, value reduced, loc l) {
  Session &s = session("reduce_into");
  Value ref = s.get(tensor, "reduce_into", l);
  if (!isa<tir::RefType>(ref.getType()))
    s.fail(l, "reduce_into: expected a kernel tensor, got " + str(ref.getType()));
  Value v = s.get(reduced, "reduce_into", l);
  if (!v.getDefiningOp<tir::ReduceOp>())
    s.fail(l, "reduce_into: the value must be a reduction (ts::sum / ts::max / ts::amax)");
  SmallVector<Value> offs;
  for (value o : offsets)
    offs.push_back(s.get(o, "reduce_into", l));
  auto store = tir::StoreOp::create(s.builder, s.loc(l), v, ref, offs);
  store.setCombine(true);
}

value cast(value v, dtype to, loc l) {
  Session &s = session("cast");
  Value x = s.get(v, "cast", l);
  Type toElem = s.elementType(to);
  Location at = s.loc(l);
  Type fromElem = getElementTypeOrSelf(x.getType());
  if (fromElem == toElem)
    return v;
  auto tile = dyn_cast<RankedTensorType>(x.getType());
  if (!tile || fromElem.isInteger(1) || toElem.isInteger(1) || toElem.isIndex() ||
      fromElem.isIndex())
    return s.put(s.convert(x, tile ? Type(tile.clone(toElem)) : toElem, at));
  return s.put(tir::CastOp::create(s.builder, at, tile.clone(toElem), x));
}

// ---- variables and loops ---------------------------------------------------

var var_new(value v) {
  Session &s = session("var_new");
  return s.newSlot(s.get(v, "variable", {}));
}

value var_get(var x) {
  Session &s = session("var_get");
  s.checkSlot(x);
  s.touch(x);
  return s.put(s.slots[x]);
}

void var_set(var x, value v) {
  Session &s = session("var_set");
  s.checkSlot(x);
  Value nv = s.get(v, "assignment", {});
  s.touch(x);
  if (nv.getType() != s.slots[x].getType())
    s.fail({}, "assignment changes the type of a variable from " + str(s.slots[x].getType()) +
                   " to " + str(nv.getType()));
  s.slots[x] = nv;
}

value for_begin(value lb, value ub, value step, loc l) {
  Session &s = session("for_begin");
  Value lo = s.get(lb, "range", l), hi = s.get(ub, "range", l), st = s.get(step, "range", l);
  for (Value b : {lo, hi, st})
    if (!b.getType().isIndex())
      s.fail(l, "range: loop bounds must be indices, got " + str(b.getType()));
  auto loop = scf::ForOp::create(s.builder, s.loc(l), lo, hi, st);
  s.loops.push_back(LoopFrame{loop, static_cast<var>(s.slots.size()), {}});
  s.builder.setInsertionPoint(loop.getBody()->getTerminator());
  return s.put(loop.getInductionVar());
}

void for_end(loc l) { session("for_end").endLoop(l); }

} // namespace tessel::trace
