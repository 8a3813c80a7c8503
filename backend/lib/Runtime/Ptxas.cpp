//===- Ptxas.cpp - run ptxas, parse its log --------------------------------===//

#include "tessel/Runtime/Ptxas.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "tessel/Runtime/Env.h"
#include "tessel/kernel/runtime_api.hpp"

extern char** environ;

namespace tessel::runtime {
namespace {

bool isExecutableFile(const std::string& p) {
  struct stat st;
  return !p.empty() && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(p.c_str(), X_OK) == 0;
}

/// Lookup in the documented order; "" plus the places tried when not found.
std::string findPtxas(std::string* tried) {
  std::vector<std::string> places;
  if (std::string explicitPath = envString("TESSEL_PTXAS"); !explicitPath.empty()) {
    if (isExecutableFile(explicitPath))
      return explicitPath;
    if (tried)
      *tried = "$TESSEL_PTXAS=" + explicitPath + " is not an executable file";
    return {};
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string root = envString(var); !root.empty())
      places.push_back(root + "/bin/ptxas");
  places.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string& p : places)
    if (isExecutableFile(p))
      return p;
  std::string path = envString("PATH");
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    // An empty PATH entry means the current directory.
    std::string dir = end > start ? path.substr(start, end - start) : std::string(1, '.');
    if (std::string p = dir + "/ptxas"; isExecutableFile(p))
      return p;
    start = end + 1;
  }
  places.push_back("ptxas on $PATH");
  if (tried) {
    std::string list;
    for (const std::string& p : places)
      list += (list.empty() ? "" : ", ") + p;
    *tried = "looked at " + list;
  }
  return {};
}

/// A temporary file that is removed when this goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const char* suffix) {
    std::string dir = envString("TMPDIR");
    if (dir.empty())
      dir = "/tmp";
    path = dir + "/tessel-XXXXXX" + suffix;
    int fd = mkstemps(path.data(), static_cast<int>(std::strlen(suffix)));
    if (fd < 0)
      throw tessel::error("tessel: cannot create a temporary file in " + dir + ": " +
                          std::strerror(errno));
    close(fd);
  }
  ~TempFile() { unlink(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct RunResult {
  int exitCode = -1;  ///< -1 when killed by a signal
  int signal = 0;
  std::string output;  ///< stdout + stderr, interleaved as written
};

/// Runs `argv` (argv[0] an absolute path) with stdin from /dev/null and
/// stdout+stderr into one temporary file. Throws tessel::error when the
/// process cannot be started.
RunResult runProcess(const std::vector<std::string>& argv) {
  TempFile out(".log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    throw tessel::error("tessel: cannot run " + argv[0] + ": " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw tessel::error("tessel: waiting for " + argv[0] + " failed: " + std::strerror(errno));
  }
  RunResult r;
  if (WIFEXITED(status))
    r.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  r.output = readFile(out.path);
  return r;
}

/// The name of the first .entry in `ptx`, for error messages ("" if none).
std::string firstEntryName(const std::string& ptx) {
  size_t pos = ptx.find(".entry");
  if (pos == std::string::npos)
    return {};
  pos += 6;
  while (pos < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[pos])))
    ++pos;
  size_t end = pos;
  while (end < ptx.size() &&
         (std::isalnum(static_cast<unsigned char>(ptx[end])) || ptx[end] == '_' || ptx[end] == '$'))
    ++end;
  return ptx.substr(pos, end - pos);
}

}  // namespace

bool ptxasAvailable(std::string* path) {
  std::string tried;
  std::string found = findPtxas(&tried);
  if (path)
    *path = found.empty() ? tried : found;
  return !found.empty();
}

std::string compilePtxToCubin(const std::string& ptx, const std::string& arch, std::string* log) {
  if (log)
    log->clear();
  std::string tried;
  std::string ptxas = findPtxas(&tried);
  if (ptxas.empty())
    throw tessel::error("tessel: ptxas not found (" + tried +
                        "); install the CUDA toolkit or set TESSEL_PTXAS");
  TempFile in(".ptx");
  TempFile cubin(".cubin");
  writeFileAtomic(in.path, ptx);
  std::vector<std::string> argv = {ptxas, "-arch=" + arch, "-O3", "-v", "--warn-on-spills",
                                   "-o", cubin.path, in.path};
  if (envFlag("TESSEL_VERBOSE")) {
    std::string cmd;
    for (const std::string& a : argv)
      cmd += (cmd.empty() ? "" : " ") + a;
    std::fprintf(stderr, "tessel: running %s\n", cmd.c_str());
  }
  RunResult r = runProcess(argv);
  if (log)
    *log = r.output;
  if (envFlag("TESSEL_VERBOSE") && !r.output.empty())
    std::fprintf(stderr, "%s", r.output.c_str());
  if (r.exitCode != 0) {
    std::string entry = firstEntryName(ptx);
    std::string how = r.signal ? "was killed by signal " + std::to_string(r.signal)
                               : "failed with exit code " + std::to_string(r.exitCode);
    throw tessel::error("tessel: ptxas " + how + (entry.empty() ? "" : " for kernel '" + entry + "'") +
                        " (" + ptxas + " -arch=" + arch + "):\n" + r.output);
  }
  std::string bin = readFile(cubin.path);
  if (bin.empty())
    throw tessel::error("tessel: ptxas succeeded but wrote no cubin (" + ptxas + "):\n" + r.output);
  return bin;
}

std::string disassembleCubin(const std::string& cubin, const std::string& kernel) {
  std::string tried;
  std::string ptxas = findPtxas(&tried);
  std::string cuobjdump = ptxas.empty() ? std::string() : ptxas.substr(0, ptxas.rfind('/') + 1) + "cuobjdump";
  if (cuobjdump.empty() || !isExecutableFile(cuobjdump))
    throw tessel::error("tessel: kernel '" + kernel + "': stage 'sass' needs cuobjdump from the CUDA toolkit "
                        "(next to ptxas; " + (ptxas.empty() ? tried : "not in " + ptxas.substr(0, ptxas.rfind('/'))) +
                        ")");
  TempFile in(".cubin");
  writeFileAtomic(in.path, cubin);
  RunResult r = runProcess({cuobjdump, "-sass", in.path});
  if (r.exitCode != 0)
    throw tessel::error("tessel: kernel '" + kernel + "': cuobjdump -sass failed:\n" + r.output);
  return r.output;
}

std::string ptxasVersion() {
  std::string tried;
  std::string ptxas = findPtxas(&tried);
  if (ptxas.empty())
    throw tessel::error("tessel: ptxas not found (" + tried + ")");
  RunResult r = runProcess({ptxas, "--version"});
  if (r.exitCode != 0)
    throw tessel::error("tessel: " + ptxas + " --version failed:\n" + r.output);
  // "Cuda compilation tools, release 13.0, V13.0.88" names the version; the
  // "Build ..." line after it names the build. Both go into the result.
  std::istringstream in(r.output);
  std::string line, version;
  while (std::getline(in, line))
    if (line.find("release") != std::string::npos || line.rfind("Build ", 0) == 0)
      version += (version.empty() ? "" : "; ") + line;
  if (version.empty())
    throw tessel::error("tessel: cannot read the version of " + ptxas + " from:\n" + r.output);
  return version;
}

namespace {
/// The integer right before `word` in `line` ("12 bytes spill stores"), or -1.
long numberBefore(std::string_view line, std::string_view word) {
  size_t pos = line.find(word);
  if (pos == std::string_view::npos)
    return -1;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  if (begin == end)
    return -1;
  return std::strtol(std::string(line.substr(begin, end - begin)).c_str(), nullptr, 10);
}

/// The text between the first pair of single quotes after `marker`, or "".
std::string quotedAfter(std::string_view line, std::string_view marker) {
  size_t pos = line.find(marker);
  if (pos == std::string_view::npos)
    return {};
  size_t open = line.find('\'', pos + marker.size());
  if (open == std::string_view::npos)
    return {};
  size_t close = line.find('\'', open + 1);
  if (close == std::string_view::npos)
    return {};
  return std::string(line.substr(open + 1, close - open - 1));
}
}  // namespace

PtxasReport parsePtxasLog(std::string_view log, std::string_view kernel) {
  struct Stats {
    int registers = -1, spillStores = 0, spillLoads = 0, stackFrame = 0;
  };
  std::map<std::string, Stats> perFunction;
  std::string current;
  PtxasReport report;

  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos)
      end = log.size();
    std::string_view line = log.substr(start, end - start);
    start = end + 1;

    // "ptxas info    : Compiling entry function 'k' for 'sm_90a'" and
    // "ptxas info    : Function properties for k" name the function that the
    // following lines describe.
    if (std::string f = quotedAfter(line, "Compiling entry function"); !f.empty())
      current = f;
    else if (size_t p = line.find("Function properties for "); p != std::string_view::npos)
      current = std::string(line.substr(p + 24));

    // "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads".
    // (The --warn-on-spills warning repeats the spill figures without the
    // stack frame; it is skipped so that spills are not counted twice.)
    if (line.find("bytes stack frame") != std::string_view::npos) {
      Stats& s = perFunction[current];
      s.stackFrame = static_cast<int>(std::max(0L, numberBefore(line, "bytes stack frame")));
      s.spillStores = static_cast<int>(std::max(0L, numberBefore(line, "bytes spill stores")));
      s.spillLoads = static_cast<int>(std::max(0L, numberBefore(line, "bytes spill loads")));
    }
    // "ptxas info    : Used 8 registers, used 0 barriers, ..."
    if (long regs = numberBefore(line, "registers"); regs >= 0 && line.find("Used ") != std::string_view::npos)
      perFunction[current].registers = static_cast<int>(regs);

    // Diagnostic codes: "ptxas info    : (C7508) Potential Performance Loss: ...".
    for (size_t p = line.find("(C"); p != std::string_view::npos; p = line.find("(C", p + 1)) {
      size_t q = p + 2;
      while (q < line.size() && std::isdigit(static_cast<unsigned char>(line[q])))
        ++q;
      if (q - (p + 2) == 4 && q < line.size() && line[q] == ')') {
        std::string code(line.substr(p + 1, 5));
        if (std::find(report.codes.begin(), report.codes.end(), code) == report.codes.end())
          report.codes.push_back(code);
        if (code == "C7508")
          report.setmaxnregIgnored = true;
        if (code == "C7514" || code == "C7515")
          report.wgmmaSerialized = true;
      }
    }
    if (line.find("wgmma.mma_async instructions are serialized") != std::string_view::npos)
      report.wgmmaSerialized = true;
  }

  auto it = kernel.empty() ? perFunction.end() : perFunction.find(std::string(kernel));
  if (it != perFunction.end()) {
    report.registers = it->second.registers;
    report.spillStores = it->second.spillStores;
    report.spillLoads = it->second.spillLoads;
    report.stackFrame = it->second.stackFrame;
  } else {
    for (const auto& [name, s] : perFunction) {
      report.registers = std::max(report.registers, s.registers);
      report.spillStores += s.spillStores;
      report.spillLoads += s.spillLoads;
      report.stackFrame += s.stackFrame;
    }
  }
  return report;
}

}  // namespace tessel::runtime
