//===- tessel-cache.cpp - inspect and clear the on-disk kernel cache ------===//
//
//   tessel-cache [--dir DIR] path     the cache directory and whether it is on
//   tessel-cache [--dir DIR] list     one line per entry, least recently used first
//   tessel-cache [--dir DIR] stats    entries, bytes, the size cap, invalid entries
//   tessel-cache [--dir DIR] trim [SIZE]  evict down to SIZE (default: the cap)
//   tessel-cache [--dir DIR] clear    remove every entry (and ts::autotune's saved choices)
//
// The directory is the one ts::jit would use (TESSEL_CACHE_DIR, else
// $XDG_CACHE_HOME/tessel, else ~/.cache/tessel) unless --dir names another.
// Entries are read with the runtime's own decoder (DiskCache.h), so `list`
// and `stats` also say which entries ts::jit would ignore, and why. Links
// TesselRuntime only: no MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/DiskCache.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace rt = tessel::runtime;

namespace {

int usage(const char *why = nullptr) {
  if (why)
    std::fprintf(stderr, "tessel-cache: %s\n", why);
  std::fprintf(why ? stderr : stdout,
               "usage: tessel-cache [--dir DIR] path|list|stats|clear|trim [SIZE]\n"
               "  path   print the cache directory (TESSEL_CACHE_DIR, $XDG_CACHE_HOME/tessel or ~/.cache/tessel)\n"
               "  list   one line per entry, least recently used first: access time, bytes, kernel, variant\n"
               "  stats  number of entries, total bytes, the size cap (TESSEL_CACHE_MAX_BYTES), invalid entries\n"
               "  trim   remove least recently used entries down to SIZE (default: the cap)\n"
               "  clear  remove every entry, and the choices ts::autotune saved (*.tune)\n");
  return why ? 2 : 0;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string localTime(std::int64_t ns) {
  std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string fileName(const std::string &path) { return path.substr(path.rfind('/') + 1); }

std::string humanBytes(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", double(b) / double(1ull << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", double(b) / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", b);
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  rt::DiskCacheConfig config = rt::diskCacheConfig();
  if (args.size() >= 2 && args[0] == "--dir") {
    config.dir = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty())
    return usage("no command");
  const std::string &cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help")
    return usage();
  if (config.dir.empty()) {
    std::fprintf(stderr, "tessel-cache: no cache directory (set TESSEL_CACHE_DIR, XDG_CACHE_HOME or HOME)\n");
    return 1;
  }

  if (cmd == "path") {
    std::printf("%s%s\n", config.dir.c_str(),
                config.enabled ? "" : "  (TESSEL_DISABLE_CACHE is set: ts::jit does not use it)");
    return 0;
  }
  if (cmd == "list" || cmd == "stats") {
    std::vector<rt::CacheEntryFile> entries = rt::listCacheEntries(config.dir);
    std::uint64_t total = 0;
    std::size_t invalid = 0;
    if (cmd == "list" && !entries.empty())
      std::printf("%-19s  %10s  %-32s  %-16s  %-13s  %s\n", "last access", "bytes", "kernel", "variant", "schedule",
                  "file");
    for (const rt::CacheEntryFile &e : entries) {
      total += e.bytes;
      std::string why;
      std::optional<rt::DecodedEntry> d = rt::decodeCacheEntry(readFile(e.path), "", &why);
      invalid += !d;
      if (cmd != "list")
        continue;
      if (d)
        std::printf("%-19s  %10" PRIu64 "  %-32s  %-16s  %-13s  %s\n", localTime(e.accessNs).c_str(), e.bytes,
                    d->kernel.name.c_str(), d->kernel.variant.empty() ? "-" : d->kernel.variant.c_str(),
                    d->kernel.schedule.empty() ? "-" : d->kernel.schedule.c_str(), fileName(e.path).c_str());
      else
        std::printf("%-19s  %10" PRIu64 "  (invalid: %s)  %s\n", localTime(e.accessNs).c_str(), e.bytes, why.c_str(),
                    fileName(e.path).c_str());
    }
    if (cmd == "stats") {
      std::printf("directory      %s%s\n", config.dir.c_str(), config.enabled ? "" : "  (disabled: TESSEL_DISABLE_CACHE)");
      std::printf("entries        %zu (%zu invalid: ts::jit recompiles and replaces them)\n", entries.size(), invalid);
      std::printf("bytes          %" PRIu64 " (%s)\n", total, humanBytes(total).c_str());
      std::printf("cap            %" PRIu64 " (%s; TESSEL_CACHE_MAX_BYTES)\n", config.maxBytes,
                  humanBytes(config.maxBytes).c_str());
      if (!entries.empty())
        std::printf("accessed       %s .. %s\n", localTime(entries.front().accessNs).c_str(),
                    localTime(entries.back().accessNs).c_str());
    }
    return 0;
  }
  if (cmd == "trim") {
    std::uint64_t cap = config.maxBytes;
    if (args.size() >= 2) {
      std::optional<std::uint64_t> bytes = rt::parseByteSize(args[1]);
      if (!bytes)
        return usage(("'" + args[1] + "' is not a size").c_str());
      cap = *bytes;
    }
    std::size_t removed = rt::evictCacheEntries(config.dir, cap);
    std::printf("removed %zu entries from %s (cap %s)\n", removed, config.dir.c_str(), humanBytes(cap).c_str());
    return 0;
  }
  if (cmd == "clear") {
    std::size_t removed = rt::clearCache(config.dir);
    std::printf("removed %zu entries from %s\n", removed, config.dir.c_str());
    return 0;
  }
  return usage(("unknown command '" + cmd + "'").c_str());
}
