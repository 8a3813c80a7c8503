// tessel/kernel/name.hpp - the kernel's symbol name, derived from the functor's type.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <typeinfo>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define TESSEL_HAS_CXXABI 1
#endif

namespace tessel::detail {

/// A C identifier made from `type_name` (a demangled C++ type name): every run of characters
/// other than [A-Za-z0-9] becomes one '_', "(anonymous namespace)" is dropped, a leading digit
/// gets a "k_" prefix, and names over 64 characters keep 55 and end with a hash of the whole,
/// so that `gemm<128, 256, 64>` -> `gemm_128_256_64`. Stable across runs and processes.
inline std::string sanitize_kernel_name(std::string_view type_name) {
  std::string text(type_name);
  for (std::string_view anon : {"(anonymous namespace)::", "{anonymous}::"})
    for (std::size_t p; (p = text.find(anon)) != std::string::npos;) text.erase(p, anon.size());
  std::string out;
  for (char ch : text) {
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (alnum)
      out += ch;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) out = "kernel";
  if (out.front() >= '0' && out.front() <= '9') out = "k_" + out;
  if (out.size() > 64) {
    std::uint32_t h = 2166136261u;  // FNV-1a of the full type name
    for (char ch : type_name) h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", h);
    out = out.substr(0, 55) + "_" + hex;
  }
  return out;
}

/// The demangled name of type F.
template <class F>
std::string type_name() {
  const char* raw = typeid(F).name();
#ifdef TESSEL_HAS_CXXABI
  int status = 0;
  char* demangled = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  if (status == 0 && demangled) {
    std::string s(demangled);
    std::free(demangled);
    return s;
  }
#endif
  return raw;
}

/// The kernel name of functor type F (see sanitize_kernel_name).
template <class F>
std::string kernel_name() {
  return sanitize_kernel_name(type_name<F>());
}

}  // namespace tessel::detail
