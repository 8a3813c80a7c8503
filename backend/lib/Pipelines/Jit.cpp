//===- Jit.cpp - tessel::jit's entry into libtessel ------------------------===//
//
// finish_and_compile: ends the trace (frontend), compiles the module to cubin
// (compileModule), and wraps it in a runtime kernel. Compiled kernels are
// cached in memory by (tessel IR without locations, options that change the
// code), and on disk (runtime::compileWithDiskCache, DiskCache.h: across
// processes, launch-time variants too); a dump request (options::dump_dir or
// TESSEL_DUMP_DIR) is honoured on a cache hit too.
//
// The kernel keeps the traced module's text and the options: at launch time
// kernel_impl::select may need a variant of it (an argument layout with another
// unit-stride dimension, or schedule multistage where TMA's rules fail), which
// compileVariant builds in its own MLIRContext, once per variant.
//
//===----------------------------------------------------------------------===//

#include "tessel/Frontend/Tracer.h"
#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Runtime/DiskCache.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"
#include "tessel/Runtime/Ptxas.h"
#include "tessel/Transforms/GemmMatch.h"
#include "tessel/Transforms/OperandLayout.h"
#include "tessel/kernel/autotune.hpp"

#include "tessel/Dialect/Tessel/Tessel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>

namespace {

std::mutex cacheMutex;
std::atomic<std::uint64_t> builtCount{0}; // tessel::detail::kernels_built
std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> &cache() {
  static std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> c;
  return c;
}

/// Every option is part of the key, `dump_dir` and `verbose` included (as
/// resolved with TESSEL_DUMP_DIR / TESSEL_VERBOSE): launch-time variants are
/// compiled later with the options of the call that built the kernel, so a
/// caller asking for another dump directory or for logs gets its own kernel
/// rather than one that dumps and logs where the first caller asked.
/// `program` is the traced module printed without locations.
std::string cacheKey(const std::string &program, const tessel::options &o, const std::string &dumpDir,
                     bool verbose) {
  return "dump=" + std::to_string(dumpDir.size()) + ":" + dumpDir + ";verbose=" + std::to_string(verbose) + ";" +
         tessel::runtime::optionsKey(o) + program;
}

/// The on-disk key (compileWithDiskCache adds the toolchain): only what
/// changes the code, so neither the dump directory nor verbosity, plus the
/// LLVM that generated it and, for a launch-time variant, its request.
std::string diskKey(const std::string &program, const tessel::options &o,
                    const tessel::detail::VariantRequest *r = nullptr) {
  std::string variant;
  if (r) {
    variant = r->tag + (r->multistage ? " multistage" : "") + " layout";
    for (int d : r->contiguousDims)
      variant += " " + std::to_string(d);
  }
  return "llvm=" LLVM_VERSION_STRING "\n" + tessel::runtime::optionsKey(o) + "\nvariant=" + variant + "\n" +
         program;
}

/// Where a kernel's stages are dumped: options::dump_dir itself (the caller
/// named a folder for this kernel), else a subfolder of TESSEL_DUMP_DIR per
/// kernel and options, so that the kernels of one process do not overwrite
/// each other's files: <kernel>.<schedule>[.s<stages>][.c<X>x<Y>][.sw<bytes>]
/// [.r<raster>][.<decomposition>][.debug][.nocontract][.p<hash>], e.g.
/// examples_gemm_128_256_64.cooperative.c2x1 (.p<hash>: a second program of the same name, below).
/// "" when nothing is dumped.
std::string dumpDirFor(mlir::ModuleOp module, const tessel::options &o, const tessel::runtime::Knobs &knobs,
                       const std::string &program) {
  if (!o.dump_dir.empty())
    return o.dump_dir;
  if (knobs.dumpDir.empty())
    return {};
  std::string name = "kernel";
  for (auto fn : module.getOps<mlir::func::FuncOp>())
    if (fn->hasAttr("tessel.kernel"))
      name = fn.getSymName().str();
  std::string dir = knobs.dumpDir + "/" + name + "." + tessel::scheduleName(o.schedule);
  if (o.stages)
    dir += o.stages == tessel::stages_max ? std::string(".smax") : ".s" + std::to_string(o.stages);
  if (o.cluster[0] != 1 || o.cluster[1] != 1)
    dir += ".c" + std::to_string(o.cluster[0]) + "x" + std::to_string(o.cluster[1]);
  if (o.swizzle)
    dir += o.swizzle == tessel::swizzle_none ? std::string(".swnone") : ".sw" + std::to_string(o.swizzle);
  if (o.raster_group)
    dir += ".r" + std::to_string(o.raster_group);
  if (o.decomposition != tessel::decomposition::automatic)
    dir += "." + tessel::decompositionName(o.decomposition);
  if (o.debug || knobs.debug)
    dir += ".debug";
  if (!o.fp_contract)
    dir += ".nocontract";
  // Two programs of one name (a functor type whose data members differ: `scale{2}`, `scale{3}`)
  // would overwrite each other's stages: the second program a folder takes in this process gets
  // its program's hash as a suffix (`.p<8 hex digits>`); the first keeps the plain name.
  static std::mutex mutex;
  static std::map<std::string, std::string> programOf;  // folder -> the program it holds
  const std::string hash = tessel::runtime::hash128Hex(program).substr(0, 8);
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = programOf.emplace(dir, hash);
  if (!inserted && it->second != hash) {
    dir += ".p" + hash;
    programOf.emplace(dir, hash);
  }
  return dir;
}

/// Lets `k` make its stages again on demand (CompiledKernel::restage) from its traced stage and
/// `o`, the options it was compiled with, and, when `now` (a dump is due), makes them now if it
/// has only that one (compiled without recording them, here or by the process that filled the
/// disk cache).
void installStages(tessel::CompiledKernel &k, const tessel::options &o, bool now) {
  if (k.stages.empty() || k.stages.front().first != "01-tessel.mlir")
    return;
  k.restage = [text = k.stages.front().second, o] { return tessel::recompileStages(text, o); };
  if (now && !k.hasAllStages())
    k.stages = k.restage();
}

/// What a kernel needs to compile variants of itself later.
struct VariantSource {
  std::string name;     ///< the kernel's symbol
  std::string text;     ///< the traced module, with locations
  std::string program;  ///< the traced module, without locations (the cache keys' part)
  std::string dumpDir;  ///< the kernel's dump folder ("" for none); variants go in subfolders
  tessel::options options;
};

/// Compiles `src` again for `r` (see kernel_impl::select): the traced module
/// is parsed into a fresh context, its kernel's arguments get
/// `tessel.contiguous_dim` where `r` asks, and it is compiled with the
/// kernel's options (schedule multistage, the stage heuristic and no cluster
/// for the fallback). Logged with TESSEL_VERBOSE / options::verbose; dumped
/// under <dump dir>/variant-<tag>/.
tessel::CompiledKernel compileVariant(const VariantSource &src, const tessel::detail::VariantRequest &r) {
  tessel::runtime::Knobs knobs = tessel::runtime::knobs();
  const bool verbose = src.options.verbose || knobs.verbose;
  const std::string &dumpDir = src.dumpDir;
  std::string why;
  for (size_t i = 0; i < r.contiguousDims.size(); ++i)
    if (r.contiguousDims[i] >= 0)
      why += (why.empty() ? "" : ", ") + ("argument " + std::to_string(i) + " contiguous along dimension " +
                                          std::to_string(r.contiguousDims[i]));
  if (r.schedule)
    why += std::string(why.empty() ? "" : ", ") + "schedule::automatic's choice for the launch's shape: " +
           tessel::to_string(*r.schedule) + ", decomposition " +
           tessel::decompositionName(r.decomposition.value_or(tessel::decomposition::automatic)) +
           (r.stages ? r.stages == tessel::stages_max ? std::string(", the deepest ring that fits")
                                                      : ", " + std::to_string(*r.stages) + " stages"
                     : std::string());
  if (r.multistage)
    why += std::string(why.empty() ? "" : ", ") + "schedule multistage (TMA fallback)";
  ++builtCount;
  if (verbose)
    std::cerr << "tessel: compiling variant '" << r.tag << "' of '" << src.name << "' (" << why << ")\n";

  mlir::DialectRegistry registry;
  tessel::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(src.text, &ctx);
  if (!module)
    throw tessel::error("tessel: internal error: cannot re-read the traced kernel '" + src.name +
                        "' to compile variant '" + r.tag + "':\n" + diagnostics);
  mlir::func::FuncOp kernel;
  for (auto fn : module->getOps<mlir::func::FuncOp>())
    if (fn.getSymName() == src.name)
      kernel = fn;
  if (!kernel)
    throw tessel::error("tessel: internal error: the traced module has no function '" + src.name + "'");
  for (size_t i = 0; i < r.contiguousDims.size() && i < kernel.getNumArguments(); ++i)
    if (r.contiguousDims[i] >= 0)
      kernel.setArgAttr(static_cast<unsigned>(i), mlir::tessel::kContiguousDimAttrName,
                        mlir::IntegerAttr::get(mlir::IntegerType::get(&ctx, 64), r.contiguousDims[i]));

  tessel::options o = src.options;
  if (r.schedule)  // schedule::automatic's choice for the launch's shape (AutoSchedule.h)
    o.schedule = *r.schedule;
  if (r.decomposition)
    o.decomposition = *r.decomposition;
  if (r.stages)
    o.stages = *r.stages;
  if (r.multistage) {
    o.schedule = tessel::schedule::multistage;
    o.stages = 0;        // the stage count was chosen for the other schedule's ring
    o.cluster = {1, 1};  // multistage has no clusters
    o.swizzle = 0;       // nor TMA swizzles (its XOR swizzle is its own)
    o.decomposition = tessel::decomposition::automatic;  // nor stream-K
  }
  tessel::CompiledKernel k;
  bool cached = false;
  tessel::CompileMode mode;
  mode.recordStages = !dumpDir.empty() || verbose;  // else made on demand (installStages)
  try {
    k = tessel::runtime::compileWithDiskCache(
        diskKey(src.program, src.options, &r), src.text, verbose,
        [&] {
          tessel::CompiledKernel c = tessel::compileModule(*module, o, mode);
          c.variant = r.tag;  // before it is stored: tessel-cache lists it
          return c;
        },
        &cached);
  } catch (const tessel::error &e) {
    throw tessel::error(std::string(e.what()) + "(while compiling variant '" + r.tag + "': " + why + ")");
  }
  k.variant = r.tag;
  installStages(k, o, !dumpDir.empty());
  if (verbose && !cached)
    std::cerr << "tessel: compiled variant '" << r.tag << "' of '" << k.name << "' (" << k.blockThreads
              << " threads, " << k.dynamicSmemBytes << " B shared)\n"
              << k.ptxasLog;
  if (!dumpDir.empty())
    tessel::runtime::writeStages(dumpDir + "/variant-" + r.tag, k);
  return k;
}

/// Fast in-memory hits for stateless functors (jit.hpp: `detail::find_kernel`): the kernel of a
/// functor type with no data members and given options, found without tracing again.
std::mutex fastMutex;
std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> &fastCache() {
  static std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> c;
  return c;
}

} // namespace

namespace tessel::detail {

std::shared_ptr<kernel_impl> finish_and_compile(const options &o) {
  std::unique_ptr<frontend::TracedModule> traced = frontend::finishTrace();
  // The tracer's context knows the tessel-level dialects; the pipeline needs the rest.
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  traced->context->appendDialectRegistry(registry);
  runtime::Knobs knobs = runtime::knobs();
  std::string program;
  {
    llvm::raw_string_ostream os(program);
    traced->module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  }
  std::string dumpDir = dumpDirFor(*traced->module, o, knobs, program);
  bool verbose = o.verbose || knobs.verbose;
  std::string key = cacheKey(program, o, dumpDir, verbose);
  std::shared_ptr<kernel_impl> k;
  if (!knobs.disableCache) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache().find(key); it != cache().end())
      k = it->second;
  }
  if (!k) {
    // The source of later variants: printed before compileModule rewrites the module.
    auto source = std::make_shared<VariantSource>();
    {
      llvm::raw_string_ostream os(source->text);
      traced->module->print(os, mlir::OpPrintingFlags().enableDebugInfo(/*enable=*/true, /*prettyForm=*/false));
    }
    // schedule::automatic on a GEMM: compile what the rule picks for a large K now (the tile and
    // dtype are known, K is not); launches with another choice get a variant (AutoSchedule.h).
    options resolved = o;
    std::optional<runtime::AutoGemmInfo> gemm;
    runtime::AutoChoice eager;
    if (o.schedule == schedule::automatic) {
      gemm = automaticGemmInfo(*traced->module, o);
      if (gemm) {
        std::string why;
        eager = runtime::chooseAutomatic(*gemm, -1, &why);
        resolved.schedule = eager.schedule;
        resolved.decomposition = eager.decomposition;
        if (verbose)
          std::cerr << "tessel: schedule auto: tile " << gemm->bm << "x" << gemm->bn << "x" << gemm->bk
                    << ", compiling " << runtime::autoChoiceName(eager) << " now (" << why
                    << "); the launch's K may pick another (K from argument " << gemm->kArg << " dimension "
                    << gemm->kDim << ")\n";
      }
    }
    source->options = resolved;
    source->dumpDir = dumpDir;
    ++builtCount;
    bool cached = false;
    // Printing every stage is ~10% of a cold compile: only when a dump or TESSEL_VERBOSE wants
    // them; otherwise kernel::stage makes them on demand (installStages).
    CompileMode mode;
    mode.recordStages = !dumpDir.empty() || verbose;
    CompiledKernel compiled = runtime::compileWithDiskCache(
        diskKey(program, resolved), source->text, verbose,
        [&] { return compileModule(*traced->module, resolved, mode); }, &cached);
    installStages(compiled, resolved, !dumpDir.empty());
    source->name = compiled.name;
    source->program = std::move(program);
    if (verbose && !cached)
      std::cerr << "tessel: compiled '" << compiled.name << "' (" << compiled.blockThreads
                << " threads, " << compiled.dynamicSmemBytes << " B shared)\n"
                << compiled.ptxasLog;
    k = runtime::makeKernel(
        std::move(compiled), [source](const VariantRequest &r) { return compileVariant(*source, r); },
        o.verbose);
    if (gemm)
      k->setAutomatic(*gemm, eager);
    if (!knobs.disableCache) {
      std::lock_guard<std::mutex> lock(cacheMutex);
      cache().emplace(key, k);
    }
  } else if (verbose) {
    std::cerr << "tessel: '" << k->compiled().name << "' from the in-memory cache\n";
  }
  if (!dumpDir.empty())
    runtime::writeStages(dumpDir, k->compiled());
  return k;
}

void abandon_trace() noexcept { frontend::abandonTrace(); }

std::string finish_trace_identity() {
  std::unique_ptr<frontend::TracedModule> traced = frontend::finishTrace();
  std::string program;
  {
    llvm::raw_string_ostream os(program);
    traced->module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  }
  return runtime::hash128Hex(program);
}

std::uint64_t kernels_built() noexcept { return builtCount.load(); }

namespace {
/// The fast cache's key, or "" when a hit must go through finish_and_compile (which dumps and
/// logs on a hit, and honours TESSEL_DISABLE_CACHE).
std::string fastKey(const char *type, const options &o) {
  if (!o.dump_dir.empty() || o.verbose)
    return {};
  const runtime::Knobs knobs = runtime::knobs();
  if (knobs.disableCache || knobs.verbose || !knobs.dumpDir.empty())
    return {};
  return std::string(type) + "\n" + runtime::optionsKey(o);
}
} // namespace

std::shared_ptr<kernel_impl> find_kernel(const char *type, const options &o) {
  std::string key = fastKey(type, o);
  if (key.empty())
    return nullptr;
  std::lock_guard<std::mutex> lock(fastMutex);
  auto it = fastCache().find(key);
  return it == fastCache().end() ? nullptr : it->second;
}

void remember_kernel(const char *type, const options &o, const std::shared_ptr<kernel_impl> &k) {
  std::string key = fastKey(type, o);
  if (key.empty() || !k)
    return;
  std::lock_guard<std::mutex> lock(fastMutex);
  fastCache().emplace(std::move(key), k);
}

std::vector<std::pair<std::string, double>> compile_timings(const kernel_impl &k) {
  return k.compiled().timings;
}

kernel_resources resources(const kernel_impl &k) { return resourcesOf(k.compiled()); }

} // namespace tessel::detail
