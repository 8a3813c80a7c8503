//===- Env.cpp - environment knobs and stage dumps -------------------------===//

#include "tessel/Runtime/Env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "tessel/kernel/runtime_api.hpp"

extern char** environ;

namespace tessel::runtime {

std::string envString(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool parseFlag(std::string_view value) {
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off");
}

bool envFlag(const char* name) { return parseFlag(envString(name)); }

Knobs knobs() {
  Knobs k;
  k.dumpDir = envString("TESSEL_DUMP_DIR");
  k.cacheDir = envString("TESSEL_CACHE_DIR");
  if (k.cacheDir.empty()) {
    if (std::string xdg = envString("XDG_CACHE_HOME"); !xdg.empty())
      k.cacheDir = xdg + "/tessel";
    else if (std::string home = envString("HOME"); !home.empty())
      k.cacheDir = home + "/.cache/tessel";
  }
  k.disableCache = envFlag("TESSEL_DISABLE_CACHE");
  k.debug = envFlag("TESSEL_DEBUG");
  k.verbose = envFlag("TESSEL_VERBOSE");
  k.ptxas = envString("TESSEL_PTXAS");
  k.fallback = fallbackPolicy();
  return k;
}

std::optional<FallbackPolicy> parseFallbackPolicy(std::string_view value) {
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  v.erase(v.begin(), std::find_if_not(v.begin(), v.end(), blank));
  v.erase(std::find_if_not(v.rbegin(), v.rend(), blank).base(), v.end());
  if (v.empty() || v == "warn")
    return FallbackPolicy::warn;
  if (v == "quiet")
    return FallbackPolicy::quiet;
  if (v == "error")
    return FallbackPolicy::error;
  return std::nullopt;
}

FallbackPolicy fallbackPolicy() {
  std::string value = envString("TESSEL_FALLBACK");
  if (std::optional<FallbackPolicy> p = parseFallbackPolicy(value))
    return *p;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "tessel: warning: TESSEL_FALLBACK='%s' is not one of warn, quiet, error; using warn\n",
                 value.c_str());
  });
  return FallbackPolicy::warn;
}

const char* fallbackPolicyName(FallbackPolicy p) {
  switch (p) {
  case FallbackPolicy::warn:
    return "warn";
  case FallbackPolicy::quiet:
    return "quiet";
  case FallbackPolicy::error:
    return "error";
  }
  return "?";
}

std::vector<std::string> unknownKnobs() {
  std::vector<std::string> unknown;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    if (!entry.starts_with("TESSEL_"))
      continue;
    std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(std::begin(kKnobNames), std::end(kKnobNames), name) == std::end(kKnobNames))
      unknown.emplace_back(name);
  }
  return unknown;
}

void warnUnknownKnobsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> unknown = unknownKnobs();
    if (unknown.empty())
      return;
    std::string list;
    for (const std::string& n : unknown)
      list += (list.empty() ? "" : ", ") + n;
    std::string known;
    for (const char* n : kKnobNames)
      known += (known.empty() ? "" : ", ") + std::string(n);
    std::fprintf(stderr, "tessel: warning: unknown environment variable(s) %s ignored (known: %s)\n",
                 list.c_str(), known.c_str());
  });
}

void createDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw tessel::error("tessel: cannot create directory '" + dir + "': " + ec.message());
}

void writeFileAtomic(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    throw tessel::error("tessel: cannot create a temporary file for '" + path +
                        "': " + std::strerror(errno));
  auto fail = [&](const char* what) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    unlink(tmp.c_str());
    throw tessel::error("tessel: cannot write '" + path + "' (" + what + "): " + std::strerror(err));
  };
  // mkstemp creates 0600; dumps and cache entries are meant to be shared.
  if (fchmod(fd, 0644) != 0)
    fail("chmod");
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    fd = -1;
    fail("close");
  }
  fd = -1;
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("rename");
}

namespace {
/// A stage or kernel name as a plain file name inside the dump directory.
std::string fileName(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  if (name.empty() || name == "." || name == "..")
    name = "stage-" + name;
  return name;
}
}  // namespace

void writeStages(const std::string& dir, const CompiledKernel& k) {
  createDirectories(dir);
  auto put = [&](const std::string& name, std::string_view data) {
    writeFileAtomic(dir + "/" + fileName(name), data);
  };
  for (const auto& [name, text] : k.stages)
    put(name, text);
  std::string base = k.name.empty() ? std::string("kernel") : k.name;
  if (!k.ptx.empty())  // empty only in a failed compile's reproducer
    put(base + ".ptx", k.ptx);
  if (!k.cubin.empty())
    put(base + ".cubin", k.cubin);
  if (!k.ptx.empty())
    put("ptxas.log", k.ptxasLog);
}

}  // namespace tessel::runtime
