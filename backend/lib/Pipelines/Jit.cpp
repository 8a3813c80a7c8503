//===- Jit.cpp - tessel::jit's entry into libtessel ------------------------===//
//
// finish_and_compile: ends the trace (frontend), compiles the module to cubin
// (compileModule), and wraps it in a runtime kernel. Compiled kernels are
// cached in memory by (tessel IR without locations, options that change the
// code); a dump request (options::dump_dir or TESSEL_DUMP_DIR) is honoured on
// a cache hit too.
//
//===----------------------------------------------------------------------===//

#include "tessel/Frontend/Tracer.h"
#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Runtime/Env.h"
#include "tessel/Runtime/Kernel.h"

#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <map>
#include <mutex>

namespace {

std::mutex cacheMutex;
std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> &cache() {
  static std::map<std::string, std::shared_ptr<tessel::detail::kernel_impl>> c;
  return c;
}

std::string cacheKey(mlir::ModuleOp module, const tessel::options &o) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "schedule=" << tessel::scheduleName(o.schedule) << ";stages=" << o.stages
     << ";cluster=" << o.cluster[0] << "x" << o.cluster[1] << ";swizzle=" << o.swizzle
     << ";debug=" << (o.debug || tessel::runtime::knobs().debug) << ";";
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  return key;
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
  std::string dumpDir = !o.dump_dir.empty() ? o.dump_dir : knobs.dumpDir;
  bool verbose = o.verbose || knobs.verbose;

  std::string key = cacheKey(*traced->module, o);
  std::shared_ptr<kernel_impl> k;
  if (!knobs.disableCache) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache().find(key); it != cache().end())
      k = it->second;
  }
  if (!k) {
    CompiledKernel compiled = compileModule(*traced->module, o);
    if (verbose)
      std::cerr << "tessel: compiled '" << compiled.name << "' (" << compiled.blockThreads
                << " threads, " << compiled.dynamicSmemBytes << " B shared)\n"
                << compiled.ptxasLog;
    k = runtime::makeKernel(std::move(compiled));
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

} // namespace tessel::detail
