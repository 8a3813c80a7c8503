//===- tessel-cache.cpp - inspect and clear the on-disk kernel cache ------===//
//
//   tessel-cache [--dir DIR] path     the cache directory and whether it is on
//   tessel-cache [--dir DIR] list     one line per entry, least recently used first
//   tessel-cache [--dir DIR] stats    entries, bytes, the size cap, invalid entries
//   tessel-cache [--dir DIR] trim [SIZE]  evict down to SIZE (default: the cap)
//   tessel-cache [--dir DIR] clear    remove every entry (and ts::autotune's saved choices)
//
// The directory is the one ts::jit would use (TESSEL_CACHE_DIR, else
// $XDG_CACHE_HOME/tessel, else ~/.cache/tessel) unless --dir names another
// (before or after the command: `clear --dir X` must never clear the default
// directory instead). Any other argument is a usage error (exit status 2).
// Entries are read with the runtime's own decoder (DiskCache.h), so `list`
// and `stats` also say which entries ts::jit would ignore, and why; they are
// read without moving their access times, which are the LRU order of `trim`
// and of ts::jit's eviction. Links TesselRuntime only: no MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime/DiskCache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace rt = tessel::runtime;

namespace {

int usage(const char *why = nullptr) {
  if (why)
    std::fprintf(stderr, "tessel-cache: %s\n", why);
  std::fprintf(why ? stderr : stdout,
               "usage: tessel-cache [--dir DIR] path|list|stats|clear|trim [SIZE]   (--dir may also follow the command)\n"
               "  path   print the cache directory (TESSEL_CACHE_DIR, $XDG_CACHE_HOME/tessel or ~/.cache/tessel)\n"
               "  list   one line per entry, least recently used first: access time, bytes, kernel, variant\n"
               "  stats  number of entries, total bytes, the size cap (TESSEL_CACHE_MAX_BYTES), invalid entries\n"
               "  trim   remove least recently used entries down to SIZE (default: the cap)\n"
               "  clear  remove every entry, and the choices ts::autotune saved (*.tune)\n");
  return why ? 2 : 0;
}

/// An entry's bytes, leaving its access time as it was: `list` and `stats` read
/// every entry, and a read that set each one's access time to "now" (ext4's
/// relatime does) would erase the LRU order that `trim` and ts::jit's eviction
/// go by (DiskCache.cpp: listCacheEntries, evictCacheEntries). Opened with
/// O_NOATIME where permitted (the file's owner, or CAP_FOWNER); otherwise
/// (EPERM, or no O_NOATIME) the times are put back after the read (futimens),
/// where we may set them: an entry another user owns keeps what the read made
/// of its access time.
std::string readEntry(const std::string &path) {
  const int flags = O_RDONLY | O_CLOEXEC;
#ifdef O_NOATIME
  int fd = open(path.c_str(), flags | O_NOATIME);
  const bool noatime = fd >= 0;
  if (!noatime && errno == EPERM)
    fd = open(path.c_str(), flags);
#else
  int fd = open(path.c_str(), flags);
  const bool noatime = false;
#endif
  if (fd < 0)
    return {};
  struct stat before {};
  const bool restore = !noatime && fstat(fd, &before) == 0;
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  // Only after a read that moved it (relatime often leaves it alone): each
  // futimens could also undo the access time a ts::jit hit set meanwhile.
  struct stat after {};
  if (restore && fstat(fd, &after) == 0 &&
      (after.st_atim.tv_sec != before.st_atim.tv_sec || after.st_atim.tv_nsec != before.st_atim.tv_nsec)) {
    const timespec times[2] = {before.st_atim, before.st_mtim};
    futimens(fd, times);
  }
  close(fd);
  return data;
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
  rt::DiskCacheConfig config = rt::diskCacheConfig();
  // --dir anywhere (before or after the command), then the command and its
  // operands; nothing is ignored: an option or operand this tool does not take
  // is a usage error rather than a command run on another directory.
  std::optional<std::string> dir;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h")
      return usage();
    std::optional<std::string> value;
    if (a == "--dir") {
      if (i + 1 >= argc)
        return usage("--dir needs a directory");
      value = argv[++i];
    } else if (a.rfind("--dir=", 0) == 0) {
      value = a.substr(6);
    } else if (a.size() > 1 && a[0] == '-') {
      return usage(("unknown option '" + a + "' (the only option is --dir DIR)").c_str());
    } else {
      words.push_back(a);
      continue;
    }
    if (value->empty())
      return usage("--dir needs a directory, not an empty string");
    if (dir && *dir != *value)
      return usage(("--dir given twice ('" + *dir + "' and '" + *value + "')").c_str());
    dir = value;
  }
  if (dir)
    config.dir = *dir;
  if (words.empty())
    return usage("no command");
  const std::string &cmd = words[0];
  if (cmd == "help")
    return usage();
  if (cmd != "path" && cmd != "list" && cmd != "stats" && cmd != "trim" && cmd != "clear")
    return usage(("unknown command '" + cmd + "'").c_str());
  // trim takes one optional SIZE; the others take nothing.
  const std::size_t operands = cmd == "trim" ? 1 : 0;
  if (words.size() > 1 + operands)
    return usage((cmd + (operands ? " takes at most one SIZE" : " takes no argument") + " (got '" +
                  words[1 + operands] + "')")
                     .c_str());
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
      std::optional<rt::DecodedEntry> d = rt::decodeCacheEntry(readEntry(e.path), "", &why);
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
    if (words.size() >= 2) {
      std::optional<std::uint64_t> bytes = rt::parseByteSize(words[1]);
      if (!bytes)
        return usage(("trim: '" + words[1] + "' is not a size (bytes, or with K, M, G or T)").c_str());
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
  return usage(("unknown command '" + cmd + "'").c_str());  // not reached: checked above
}
