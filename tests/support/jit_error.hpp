// jit_error.hpp - what ts::jit throws for a kernel and options, and what kernel::launch throws
// for arguments, for tests that assert errors verbatim. Header only.
#pragma once

#include <string>

#include <tessel/tessel.hpp>

namespace tessel_test {

/// ts::jit(kernel, o)'s tessel::error message, "" when it compiles.
template <class Kernel>
std::string jit_error(const Kernel& kernel, const tessel::options& o) {
  try {
    tessel::jit(kernel, o);
  } catch (const tessel::error& e) {
    return e.what();
  }
  return "";
}

/// k.launch(nullptr, g, args...)'s tessel::error message, "" when it launches (errors that come
/// before any GPU is needed: argument checks, a fallback that cannot be compiled).
template <class... Args>
std::string launch_error(tessel::kernel& k, tessel::grid g, const Args&... args) {
  try {
    k.launch(nullptr, g, args...);
  } catch (const tessel::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace tessel_test
