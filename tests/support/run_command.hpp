// run_command.hpp - runs a shell command through popen and returns what it printed and its exit
// status, for tests that run tessel's tools and helper processes. Header only, no tessel
// dependency.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tessel_test {

struct command_result {
  std::string output;  ///< stdout (and stderr where the command redirects it: "... 2>&1")
  int status = -1;     ///< the exit status; -1 when it could not start or did not exit normally
};

/// Reads a command started with popen(cmd, "r") to its end and closes it.
inline command_result finish_command(FILE* pipe) {
  command_result r;
  if (!pipe)
    return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;)
    r.output.append(buf, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status))
    r.status = WEXITSTATUS(status);
  return r;
}

/// Runs `cmd` (through /bin/sh) to its end.
inline command_result run_command(const std::string& cmd) { return finish_command(popen(cmd.c_str(), "r")); }

}  // namespace tessel_test
