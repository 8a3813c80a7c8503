//===- tessel-compile.cpp - ahead-of-time compile of a tessel IR file -----===//
//
// Compiles a tessel-dialect file (e.g. a dumped 01-tessel.mlir, or one written
// by hand) through the JIT's whole pipeline, with no GPU, and writes every
// stage (*.mlir, *.ll, *.ptx, *.cubin, ptxas.log) to a directory:
//
//   tessel-compile kernel.mlir --dump-dir out [--schedule tma] [--stages 4] [--cluster 2x1]
//                  [--swizzle auto|none|32|64|128] [--raster-group G]
//                  [--decomposition auto|data-parallel|stream-k] [--no-fp-contract] [--debug]
//
// --schedule auto (the default) picks what ts::jit picks for schedule::automatic (and says what
// on stderr), not the select-schedule pass's own `auto` (the tma schedule's rules).
//
//===----------------------------------------------------------------------===//

#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Runtime/Env.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <iostream>
#include <sstream>

namespace cl = llvm::cl;

// --help lists these only; LLVM's own options still work (--help-hidden lists them).
static cl::OptionCategory category("tessel-compile options");

static cl::opt<std::string> input(cl::Positional, cl::desc("<tessel .mlir file>"), cl::Required,
                                  cl::cat(category));
static cl::opt<std::string> dumpDir("dump-dir", cl::desc("write every stage here"), cl::init(""),
                                    cl::cat(category));
static cl::opt<std::string> scheduleOpt(
    "schedule", cl::desc("tma | multistage | warp_specialized | cooperative | pingpong | auto"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> clusterOpt("cluster", cl::desc("CTA cluster: 1x1, 2x1 or 1x2"),
                                       cl::init("1x1"), cl::cat(category));
static cl::opt<int> stagesOpt("stages", cl::desc("ring depth (0: auto, -1: as many as fit)"), cl::init(0),
                              cl::cat(category));
static cl::opt<int> rasterOpt("raster-group",
                              cl::desc("rows of tiles per grouped-raster group (0: 8)"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string> decompositionOpt(
    "decomposition",
    cl::desc("how persistent CTAs split the tiles: auto | data-parallel | stream-k"),
    cl::init("auto"), cl::cat(category));
static cl::opt<bool> noFpContract(
    "no-fp-contract",
    cl::desc("round every f32 multiply and add on its own (options::fp_contract = false)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> debugOpt(
    "debug",
    cl::desc("bounded barrier waits that report and trap (options::debug; TESSEL_DEBUG=1 does the same): "
             "what a `.debug` dump was compiled with"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> swizzleOpt(
    "swizzle", cl::desc("shared-memory swizzle of the GEMM operands: auto | none | 32 | 64 | 128"),
    cl::init("auto"), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "tessel ahead-of-time compiler: a traced tessel .mlir file to PTX and a "
                              "cubin (no GPU needed)\n");
  mlir::DialectRegistry registry;
  tessel::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  llvm::SourceMgr sm;
  mlir::SourceMgrDiagnosticHandler handler(sm, &ctx);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(input, sm, &ctx);
  if (!module)
    return 1;
  // The whole pipeline starts from the traced program (a dump's 01-tessel.mlir). A later stage
  // already carries a plan (#tessel.schedule, hopper ops): compiling it again with other options
  // would mix two plans into one kernel, so it is refused; tessel-opt replays later stages.
  bool planned = false;
  module->walk([&](mlir::Operation *op) {
    planned |= op->hasAttr("tessel.schedule") || op->getDialect() == ctx.getLoadedDialect("hopper");
  });
  if (planned) {
    std::cerr << "tessel-compile: " << input
              << " is already scheduled (it carries #tessel.schedule or hopper ops: a dump's stage 02 or "
                 "later); compile the dump's 01-tessel.mlir, or replay later stages with tessel-opt "
                 "(README: Dumping and replaying the IR)\n";
    return 2;
  }
  tessel::options o;
  static const std::pair<const char *, tessel::schedule> names[] = {
      {"auto", tessel::schedule::automatic},         {"tma", tessel::schedule::tma},
      {"multistage", tessel::schedule::multistage},  {"warp_specialized", tessel::schedule::warp_specialized},
      {"cooperative", tessel::schedule::cooperative}, {"pingpong", tessel::schedule::pingpong}};
  bool known = false;
  for (auto &[n, s] : names)
    if (scheduleOpt == n)
      o.schedule = s, known = true;
  if (!known) {
    std::cerr << "tessel-compile: unknown --schedule '" << scheduleOpt << "'\n";
    return 2;
  }
  o.stages = stagesOpt;
  o.raster_group = rasterOpt;
  o.fp_contract = !noFpContract;
  o.debug = debugOpt;
  if (decompositionOpt == "auto")
    o.decomposition = tessel::decomposition::automatic;
  else if (decompositionOpt == "data-parallel")
    o.decomposition = tessel::decomposition::data_parallel;
  else if (decompositionOpt == "stream-k")
    o.decomposition = tessel::decomposition::stream_k;
  else {
    std::cerr << "tessel-compile: unknown --decomposition '" << decompositionOpt
              << "' (expected auto, data-parallel or stream-k)\n";
    return 2;
  }
  if (swizzleOpt == "auto")
    o.swizzle = 0;
  else if (swizzleOpt == "none")
    o.swizzle = tessel::swizzle_none;
  else if (swizzleOpt == "32" || swizzleOpt == "64" || swizzleOpt == "128")
    o.swizzle = std::stoi(swizzleOpt);
  else {
    std::cerr << "tessel-compile: --swizzle '" << swizzleOpt
              << "' is not one of auto, none, 32, 64, 128\n";
    return 2;
  }
  {
    unsigned cx = 0, cy = 0;
    char x = 0;
    std::istringstream in(clusterOpt);
    if (!(in >> cx >> x >> cy) || x != 'x' || !in.eof()) {
      std::cerr << "tessel-compile: --cluster '" << clusterOpt << "' is not of the form MxN\n";
      return 2;
    }
    o.cluster = {static_cast<int>(cx), static_cast<int>(cy)};
  }
  o.dump_dir = dumpDir; // where a failure's IR reproducer goes
  // --schedule auto on a GEMM: what ts::jit compiles for it (the rule's choice for a large K,
  // tessel/Runtime/AutoSchedule.h), so that a dump's 01-tessel.mlir compiles here to the kernel
  // ts::jit built (a launch whose K picks another choice gets a variant: that one is dumped in
  // variant-<tag>/).
  if (o.schedule == tessel::schedule::automatic)
    if (auto gemm = tessel::automaticGemmInfo(*module, o)) {
      std::string why;
      tessel::runtime::AutoChoice eager = tessel::runtime::chooseAutomatic(*gemm, -1, &why);
      o.schedule = eager.schedule;
      o.decomposition = eager.decomposition;
      std::cerr << "tessel-compile: schedule auto: " << tessel::runtime::autoChoiceName(eager) << " (" << why
                << "), as ts::jit compiles it\n";
    }
  try {
    tessel::CompiledKernel k = tessel::compileModule(*module, o);
    if (!dumpDir.empty()) {
      tessel::runtime::writeStages(dumpDir, k);
      std::cout << "wrote " << k.stages.size() << " stages, " << k.name << ".cubin ("
                << k.cubin.size() << " bytes) and ptxas.log to " << dumpDir << "\n";
    } else {
      std::cout << k.ptx;
    }
    std::cerr << k.ptxasLog;
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
