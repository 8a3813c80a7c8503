//===- Compile.cpp - traced module to cubin, stage by stage ---------------===//
//
// Runs the pipeline in its three steps so that each stage's IR is recorded
// (for TESSEL_DUMP_DIR and kernel::stage), reads the kernel ABI the lowering
// left in `tessel.params`, emits PTX in process and assembles it with ptxas,
// keeping the ptxas log with the kernel.
//
//===----------------------------------------------------------------------===//

#include "tessel/Pipelines/Pipelines.h"

#include "tessel/Dialect/Tessel/Tessel.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Ptxas.h"
#include "tessel/Target/PTX.h"
#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <unistd.h>

using namespace mlir;

namespace {

/// recompileStagesFor's error when the traced text does not parse (a tessel bug).
constexpr const char *kCannotReRead = "tessel: internal error: cannot re-read a traced kernel to make its stages:\n";

std::string printIR(ModuleOp m, bool locations) {
  std::string s;
  llvm::raw_string_ostream os(s);
  OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  m->print(os, flags);
  os << "\n"; // as tessel-opt prints it: a replayed stage is byte-identical to the dump
  return s;
}

/// A location as users read it: "file:line:col" (the first file position of a
/// fused or named location), "" when there is none.
std::string userLocation(Location loc) {
  std::string out;
  loc->walk([&](Location l) {
    if (auto f = dyn_cast<FileLineColLoc>(l)) {
      out = (f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
             std::to_string(f.getColumn()));
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return out;
}

/// Collects diagnostics while alive; `take()` gives them as one message.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          llvm::raw_string_ostream os(text);
          std::string where = userLocation(d.getLocation());
          os << (where.empty() ? "" : where + ": ")
             << (d.getSeverity() == DiagnosticSeverity::Error ? "error: " : "note: ") << d << "\n";
          // MLIR's "see current operation" note prints the whole module: the
          // IR belongs in the reproducer (and under TESSEL_VERBOSE), not here.
          for (Diagnostic &n : d.getNotes())
            if (!StringRef(n.str()).starts_with("see current operation"))
              os << (userLocation(n.getLocation()).empty() ? "" : userLocation(n.getLocation()) + ": ")
                 << "note: " << n << "\n";
          return success();
        }) {}
  std::string take() { return std::move(text); }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// "ptr:0", "size:0:1", "stride:2:0", "tma:1:64x256:128", "tma:1:32x64:64:c0", "tma:0:64x64:128:r",
/// "tmastore:2:64x64:128", "tmaprefetch:3:128x128:0", "tmaoperand:3:64x64:128", "tmaok:2", "grid:0",
/// "workspace:131072",
/// "scalar:3" -> ParamSpec.
::tessel::ParamSpec parseParam(StringRef s) {
  SmallVector<StringRef> parts;
  s.split(parts, ':');
  ::tessel::ParamSpec p;
  auto num = [](StringRef x) {
    int v = 0;
    x.getAsInteger(10, v);
    return v;
  };
  p.arg = num(parts[1]);
  if (parts[0] == "ptr") {
    p.kind = ::tessel::ParamSpec::Kind::Pointer;
  } else if (parts[0] == "scalar") {
    p.kind = ::tessel::ParamSpec::Kind::Scalar;
  } else if (parts[0] == "grid") {
    p.kind = ::tessel::ParamSpec::Kind::GridDim;
    p.arg = 0;
    p.dim = num(parts[1]);
  } else if (parts[0] == "workspace") {
    p.kind = ::tessel::ParamSpec::Kind::Workspace;
    p.arg = 0;
  } else if (parts[0] == "tmaok") {
    p.kind = ::tessel::ParamSpec::Kind::TmaUsable;
  } else if (parts[0] == "size" || parts[0] == "stride") {
    p.kind = parts[0] == "size" ? ::tessel::ParamSpec::Kind::Size : ::tessel::ParamSpec::Kind::Stride;
    p.dim = num(parts[2]);
  } else {
    p.kind = ::tessel::ParamSpec::Kind::TmaDescriptor;
    // TMA-store, L2-prefetch and epilogue-operand descriptors are optional: zeroed when the
    // tensor breaks TMA's rules (a "tmaok" parameter tells the kernel, which then reads or writes
    // it with plain loads and stores), never a reason for a fallback variant.
    p.store = parts[0] == "tmastore" || parts[0] == "tmaprefetch" || parts[0] == "tmaoperand";
    auto [inner, outer] = parts[2].split('x');
    p.box = {static_cast<uint32_t>(num(inner)), static_cast<uint32_t>(num(outer)), 1};
    p.swizzleBytes = num(parts[3]);
    for (size_t i = 4; i < parts.size(); ++i) {
      if (parts[i] == "r")
        p.clipRows = true;
      else if (parts[i].consume_front("c"))
        p.contiguousDim = num(parts[i]);
    }
  }
  return p;
}

/// The kernel's size contracts (SizeContract) and which arguments it stores
/// into, read off the scheduled tessel IR (after CSE, so that a repeated
/// `program_id(0) * BM` is one value). For every tessel.load / tessel.store of
/// a kernel argument, tensor dimension d is accessed at offsets[d] with the
/// tile's extent along d (1 for the leading dimensions a lower-rank tile does
/// not cover). Two accesses of different arguments at the same non-constant
/// offset value with the same extent make a contract:
///
///   %a = tessel.load %A[%m, %k] : ... -> tensor<128x64xbf16>   // A.0 at %m, 128; A.1 at %k, 64
///   %b = tessel.load %B[%n, %k] : ... -> tensor<256x64xbf16>   // B.1 at %k, 64 -> A.1 == B.1
///   tessel.store %c, %C[%m, %n] : tensor<128x256xbf16>, ...    // C.0 == A.0, C.1 == B.0
void collectContracts(func::FuncOp fn, ::tessel::CompiledKernel &k) {
  struct First {
    int arg, dim;
    std::string where;
  };
  llvm::DenseMap<std::pair<Value, int64_t>, First> firstAccess;
  auto access = [&](Operation *op, Value ref, OperandRange offsets, ShapedType tile) {
    auto arg = dyn_cast<BlockArgument>(ref);
    if (!arg || arg.getOwner()->getParentOp() != fn.getOperation())
      return;
    const int argIndex = static_cast<int>(arg.getArgNumber());
    const int rank = static_cast<int>(offsets.size());
    const int lead = rank - static_cast<int>(tile.getRank());
    for (int d = 0; d < rank; ++d) {
      Value offset = offsets[d];
      if (matchPattern(offset, m_Constant()))
        continue;
      const int64_t extent = d < lead ? 1 : tile.getDimSize(d - lead);
      std::string where = userLocation(op->getLoc());
      auto [it, inserted] = firstAccess.try_emplace({offset, extent}, First{argIndex, d, where});
      if (inserted || it->second.arg == argIndex)
        continue;
      // The lower argument index first: messages then blame the later argument.
      ::tessel::SizeContract c{it->second.arg, it->second.dim, argIndex, d, it->second.where, where};
      if (c.argA > c.argB)
        c = {c.argB, c.dimB, c.argA, c.dimA, c.whereB, c.whereA};
      bool known = false;
      for (const ::tessel::SizeContract &o : k.sizeContracts)
        known |= o.argA == c.argA && o.dimA == c.dimA && o.argB == c.argB && o.dimB == c.dimB;
      if (!known)
        k.sizeContracts.push_back(c);
    }
  };
  fn.walk([&](Operation *op) {
    if (auto load = dyn_cast<mlir::tessel::LoadOp>(op))
      access(op, load.getRef(), load.getOffsets(), load.getType());
    else if (auto store = dyn_cast<mlir::tessel::StoreOp>(op)) {
      access(op, store.getRef(), store.getOffsets(), store.getValue().getType());
      if (auto arg = dyn_cast<BlockArgument>(store.getRef()))
        if (arg.getArgNumber() < k.args.size())
          k.args[arg.getArgNumber()].stored = true;
    }
  });
}

/// Writes `k.stages` and `input` (the failing step's input, with locations)
/// into a new folder and returns it (see compileModule's `fail`).
std::string writeReproducer(const ::tessel::CompiledKernel &k, const std::string &input,
                            const std::string &dumpDirOption) {
  static std::atomic<int> counter{0};
  std::string base = !dumpDirOption.empty() ? dumpDirOption : ::tessel::runtime::knobs().dumpDir;
  std::string dir;
  if (!base.empty()) {
    dir = base + "/failed-" + k.name;
  } else {
    const char *tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/tessel-failed-" + k.name + "-" +
          std::to_string(::getpid()) + "-" + std::to_string(counter++);
  }
  ::tessel::CompiledKernel partial;
  partial.name = k.name;
  partial.stages = k.stages;
  partial.stages.emplace_back("failing-step-input.mlir", input);
  ::tessel::runtime::writeStages(dir, partial);
  return dir;
}

} // namespace

::tessel::CompiledKernel(::tessel::compileModule)(ModuleOp module, const ::tessel::options &o,
                                                   ::tessel::CompileMode mode) {
  MLIRContext *ctx = module.getContext();
  DiagnosticCollector diags(ctx);
  ::tessel::CompiledKernel k;
  // A failure past tracing writes an IR reproducer: the stages so far and the
  // module as the failing step received it (`input`: the last stage, or for
  // PTX generation, which leaves the module as it was, the module printed
  // with its locations), into
  // <dump dir>/failed-<kernel>/ (options::dump_dir or TESSEL_DUMP_DIR), else into
  // a fresh folder under $TMPDIR (or /tmp); the error names the folder.
  std::string input;
  auto fail = [&](const std::string &what) -> ::tessel::error {
    // Without the stages recorded there is no reproducer to write: compile the traced text again,
    // recording them. It fails the same way (the compile is deterministic) and throws the error
    // a recording compile gives, reproducer included; should it not fail, this one's error stands.
    if (!mode.recordStages && !k.stages.empty()) {
      ::tessel::CompileMode again;
      again.assemble = false;
      try {
        (void)::tessel::recompileStagesFor(k.stages.front().second, o, again);
      } catch (const ::tessel::error &e) {
        if (!StringRef(e.what()).starts_with(kCannotReRead))
          throw;  // the recording compile's error (the expected outcome)
      }
    }
    std::string msg = "tessel: " + what + (k.name.empty() ? "" : " (kernel '" + k.name + "')") +
                      ":\n" + diags.take();
    // Scheduling errors are the user's (options, tile shapes): one line at their
    // source. Later failures are tessel's: they get the reproducer.
    if (input.empty() && !k.stages.empty())
      input = k.stages.back().second;
    if (k.stages.size() >= 2) {
      try {
        std::string dir = writeReproducer(k, input, o.dump_dir);
        msg += "IR reproducer: " + dir + "/\n";
      } catch (const std::exception &e) {
        msg += std::string("(no IR reproducer: ") + e.what() + ")\n";
      }
    }
    if (o.verbose || ::tessel::runtime::knobs().verbose)
      msg += "the failing step's input (TESSEL_VERBOSE):\n" + input;
    return ::tessel::error(msg);
  };

  // The user-visible signature, before the kernel is rewritten.
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr(mlir::tessel::TesselDialect::getKernelAttrName()))
      continue;
    k.name = fn.getSymName().str();
    for (Type t : fn.getArgumentTypes()) {
      // A runtime scalar (ts::scalar<f32 / i32>) is a plain f32 / i32 argument: rank 0.
      if (t.isF32() || t.isInteger(32)) {
        k.args.push_back({::tessel::dtypeOf(t), /*rank=*/0, false});
        continue;
      }
      auto ref = dyn_cast<mlir::tessel::RefType>(t);
      if (!ref)
        throw fail("kernel arguments must be tensors (!tessel.ref) or f32 / i32 scalars");
      k.args.push_back({::tessel::dtypeOf(ref.getElementType()), static_cast<int>(ref.getRank()), false});
    }
  }
  if (k.name.empty())
    throw fail("the traced module has no tessel.kernel function");

  // k.timings: the wall time of each step (the JIT latency benchmark prints them).
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](std::string what) {
    auto now = std::chrono::steady_clock::now();
    k.timings.emplace_back(std::move(what), std::chrono::duration<double, std::milli>(now - t0).count());
    t0 = now;
  };
  k.stages.emplace_back("01-tessel.mlir", printIR(module, /*locations=*/true));
  lap("print traced IR");
  const bool record = mode.recordStages;

  ::tessel::PipelineOptions po;
  po.schedule = scheduleName(o.schedule);
  po.stages = o.stages;
  po.cluster = std::to_string(o.cluster[0]) + "x" + std::to_string(o.cluster[1]);
  po.swizzle = o.swizzle;
  po.rasterGroup = o.raster_group;
  po.decomposition = decompositionName(o.decomposition);
  po.boundedWaits = o.debug || ::tessel::runtime::knobs().debug;
  auto runStep = [&](const char *stage, const char *what, auto build, bool locations = false) {
    PassManager pm(ctx);
    build(pm);
    if (failed(pm.run(module)))
      throw fail(what);
    lap(std::string("passes -> ") + stage);
    if (!record)
      return;
    k.stages.emplace_back(stage, printIR(module, locations));
    lap(std::string("print ") + stage);
  };
  // A mainloop whose accumulators no store reads is dead code: the canonicalizer
  // would remove it and compile what is left as an elementwise kernel, which
  // computes no GEMM and runs on the GEMM's grid. Almost always a slip (an
  // epilogue that stores another value than it meant): the user's error, at
  // the ts::dot, before anything is removed. "Reads" is through the values the
  // stores' operands are computed from (the tracer keeps unused expressions,
  // `auto y = relu(acc);` with y never stored, which are dead too).
  {
    llvm::SmallPtrSet<Operation *, 32> live;
    SmallVector<Value> work;
    module.walk([&](mlir::tessel::StoreOp store) { work.append(store->operand_begin(), store->operand_end()); });
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && live.insert(def).second)
        work.append(def->operand_begin(), def->operand_end());
    }
    mlir::tessel::DotOp dead;
    module.walk([&](mlir::tessel::DotOp dot) {
      Operation *producer = dot->getParentOfType<scf::ForOp>();
      if (!dead && !live.contains(producer ? producer : dot.getOperation()))
        dead = dot;
    });
    if (dead) {
      dead.emitError("the result of ts::dot is never used: no store of the kernel reads the "
                     "accumulator, so the mainloop computes nothing the kernel writes (store the "
                     "accumulator, or an expression of it, after the loop)");
      throw fail("scheduling failed");
    }
  }
  // Tessel- and Hopper-level stages keep the user's source locations (a
  // hopper.mma_schedule points at the ts::dot line); from 09 on, the kernel's
  // instructions carry the kernel's location only, and are printed without.
  runStep("02-select-schedule.mlir", "scheduling failed",
          [&](PassManager &pm) { buildSchedulePipeline(pm, po); }, /*locations=*/true);
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.getSymName() == k.name) {
      if (auto s = fn->getAttrOfType<mlir::tessel::ScheduleAttr>(mlir::tessel::TesselDialect::getScheduleAttrName()))
        k.schedule = mlir::tessel::stringifyScheduleKind(s.getKind()).str();
      collectContracts(fn, k);
    }
  int number = 3;
  for (const PlanStep &step : planSteps()) {
    std::string stage = "0" + std::to_string(number++) + "-" + step.stage + ".mlir";
    std::string what = std::string("planning the kernel failed (tessel-") + step.stage + ")";
    runStep(stage.c_str(), what.c_str(), [&](PassManager &pm) { pm.addPass(step.create()); },
            /*locations=*/true);
  }
  runStep("09-lower-to-nvvm.mlir", "building the kernel failed",
          [&](PassManager &pm) { buildKernelPipeline(pm, po); });
  runStep("10-convert-hopper-to-nvvm.mlir", "converting the hopper ops failed",
          [&](PassManager &pm) { buildHopperToNVVMPipeline(pm); });

  // The kernel ABI and launch shape, left by tessel-lower-to-nvvm.
  auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(k.name);
  if (!kernel)
    throw fail("the lowered kernel is missing");
  for (Attribute a : kernel->getAttrOfType<ArrayAttr>("tessel.params")) {
    StringRef text = cast<StringAttr>(a).getValue();
    k.params.push_back(parseParam(text));
    if (text.consume_front("workspace:"))
      text.getAsInteger(10, k.workspaceSlotBytes);
  }
  for (const ::tessel::ParamSpec &p : k.params)
    if (p.kind == ::tessel::ParamSpec::Kind::TmaDescriptor && !p.store)
      k.args[p.arg].loadedByTma = true;
  k.blockThreads = kernel->getAttrOfType<IntegerAttr>("tessel.threads").getInt();
  k.dynamicSmemBytes = kernel->getAttrOfType<IntegerAttr>("tessel.shared_bytes").getInt();
  k.persistent = kernel->hasAttr("tessel.persistent");
  if (auto c = kernel->getAttrOfType<DenseI32ArrayAttr>("tessel.cluster"))
    for (int i = 0; i < 3; ++i)
      k.cluster[i] = static_cast<unsigned>(c[i]);

  runStep("11-convert-to-llvm.mlir", "conversion to the LLVM dialect failed",
          [&](PassManager &pm) { buildToLLVMPipeline(pm); });
  for (StringRef name : {"tessel.params", "tessel.threads", "tessel.shared_bytes", "tessel.schedule",
                         "tessel.ring_arrivals",
                         "tessel.persistent", "tessel.cluster"})
    kernel->removeAttr(name);

  mlir::tessel::PTXOptions ptxOptions;
  ptxOptions.chip = k.arch;
  ptxOptions.printIR = record;
  ptxOptions.fpContract = o.fp_contract;
  lap("kernel ABI");
  auto ptx = mlir::tessel::translateToPTX(module, ptxOptions);
  if (failed(ptx)) {
    input = printIR(module, /*locations=*/true);
    throw fail("PTX generation failed");
  }
  for (const auto &[what, ms] : ptx->timings)
    k.timings.emplace_back(what, ms);
  t0 = std::chrono::steady_clock::now();
  k.ptx = ptx->ptx;
  if (record) {
    k.stages.emplace_back("12-kernel.ll", ptx->llvmIR);
    k.stages.emplace_back("13-kernel.opt.ll", ptx->llvmIROpt);
    k.stages.emplace_back("14-kernel.ptx", k.ptx);
  }
  if (!mode.assemble)
    return k;

  // PTX -> cubin with ptxas when the toolkit is here; otherwise the driver JITs
  // the PTX at load time (the log says so, and where ptxas was looked for). A
  // TESSEL_PTXAS that names no executable is an error, not a quiet driver JIT:
  // the user asked for that ptxas.
  std::string ptxasPath;
  if (::tessel::runtime::ptxasAvailable(&ptxasPath)) {
    k.cubin = ::tessel::runtime::compilePtxToCubin(k.ptx, k.arch, &k.ptxasLog);
  } else if (!::tessel::runtime::envString("TESSEL_PTXAS").empty()) {
    throw ::tessel::error("tessel: kernel '" + k.name + "': " + ptxasPath +
                          " (TESSEL_PTXAS names the ptxas to run; unset it to look in $CUDA_HOME/bin, "
                          "$CUDA_PATH/bin, /usr/local/cuda/bin and PATH)");
  } else {
    k.ptxasLog = "ptxas not found (" + ptxasPath + "): the driver will JIT the PTX at load time\n";
  }
  lap("ptxas");
  return k;
}

namespace {

/// The program_id axis whose tiles a dot operand's rows follow: the axis d of an offset
/// `program_id(d) * extent` of the tile's load (through a transpose), -1 when there is none or
/// more than one (e.g. a 1-D grid that linearises the tiles; R6 then does not apply).
int gridAxisOf(mlir::Value operand, int64_t extent) {
  while (auto t = operand.getDefiningOp<mlir::tessel::TransOp>())
    operand = t->getOperand(0);
  auto load = operand.getDefiningOp<mlir::tessel::LoadOp>();
  if (!load)
    return -1;
  int axis = -1;
  for (mlir::Value off : load.getOffsets()) {
    auto pid = mlir::dyn_cast_or_null<mlir::tessel::ProgramIdOp>(mlir::tessel::tileIndexOf(off, extent));
    if (!pid)
      continue;
    if (axis >= 0 && axis != static_cast<int>(pid.getAxis()))
      return -1;
    axis = static_cast<int>(pid.getAxis());
  }
  return axis;
}

} // namespace

namespace tessel {

std::optional<runtime::AutoGemmInfo> automaticGemmInfo(mlir::ModuleOp module, const options &o) {
  std::optional<runtime::AutoGemmInfo> info;
  module.walk([&](mlir::tessel::DotOp dot) {
    if (info) {
      ++info->dots;
      return;
    }
    auto a = mlir::cast<mlir::RankedTensorType>(dot.getA().getType());
    auto c = mlir::cast<mlir::RankedTensorType>(dot.getType());
    runtime::AutoGemmInfo g;
    g.bm = static_cast<int>(c.getDimSize(0));
    g.bn = static_cast<int>(c.getDimSize(1));
    g.bk = static_cast<int>(a.getDimSize(1));
    g.type = dtypeOf(a.getElementType());
    // acc += dot(a, b) * s: the dot accumulates into zero (GemmMatch.h).
    g.scaled = !mlir::isa<mlir::BlockArgument>(dot.getAcc());
    g.mAxis = gridAxisOf(dot.getA(), g.bm);
    g.nAxis = gridAxisOf(dot.getB(), g.bn);
    if (g.mAxis == g.nAxis)
      g.mAxis = g.nAxis = -1;
    if (auto loop = dot->getParentOfType<mlir::scf::ForOp>()) {
      g.tileTrips = mlir::tessel::tripCountDependsOnTile(loop);
      if (auto dim = loop.getUpperBound().getDefiningOp<mlir::tessel::DimOp>())
        if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(dim->getOperand(0))) {
          g.kArg = static_cast<int>(arg.getArgNumber());
          g.kDim = static_cast<int>(dim.getAxis());
        }
    }
    g.user = o;
    info = g;
  });
  // A tile of fewer than 64 rows that tessel-swap-operands computes as its
  // transpose: the rules see the tile the kernel computes (the same question
  // the pass asks; a kernel that does not match is left to its errors).
  if (info && info->bm < 64) {
    mlir::ScopedDiagnosticHandler quiet(module.getContext(), [](mlir::Diagnostic &) { return mlir::success(); });
    const std::string cluster = std::to_string(o.cluster[0]) + "x" + std::to_string(o.cluster[1]);
    for (auto fn : module.getOps<mlir::func::FuncOp>()) {
      auto m = mlir::tessel::matchGemm(fn);
      if (mlir::succeeded(m) && *m && mlir::tessel::swapsOperands(fn, **m, "auto", cluster)) {
        std::swap(info->bm, info->bn);
        std::swap(info->mAxis, info->nAxis);
        info->swapped = true;
      }
    }
  }
  return info;
}

dtype dtypeOf(Type t) {
  if (t.isF16()) return dtype::f16;
  if (t.isBF16()) return dtype::bf16;
  if (t.isF32()) return dtype::f32;
  if (t.isInteger(1)) return dtype::i1;
  if (isa<Float8E4M3FNType>(t)) return dtype::f8e4m3;
  if (isa<Float8E5M2Type>(t)) return dtype::f8e5m2;
  return dtype::i32;
}

CompiledKernel recompileStagesFor(const std::string &tracedText, const options &o, CompileMode mode) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry);
  std::string diagnostics;
  OwningOpRef<ModuleOp> module;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      llvm::raw_string_ostream os(diagnostics);
      os << d.getLocation() << ": " << d << "\n";
      return success();
    });
    module = parseSourceString<ModuleOp>(tracedText, &ctx);
  }
  if (!module)
    throw error(std::string(kCannotReRead) + diagnostics);
  return compileModule(*module, o, mode);
}

std::vector<std::pair<std::string, std::string>> recompileStages(const std::string &tracedText, const options &o) {
  CompileMode mode;
  mode.assemble = false;
  return recompileStagesFor(tracedText, o, mode).stages;
}

} // namespace tessel
