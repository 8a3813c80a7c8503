// kernel_cache.hpp - compiled tessel kernels shared by the GPU tests of one process.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <tessel/tessel.hpp>

namespace tessel_gpu_test {

/// A kernel compiled once per process; a compile failure is remembered (with the key) and
/// reported by every test that needs the kernel.
struct cached_kernel {
  std::unique_ptr<tessel::kernel> kernel;
  std::string error;
};

/// The kernel `make` compiles, cached under `key` (which names everything that changes the code).
inline cached_kernel& cached(const std::string& key, const std::function<tessel::kernel()>& make) {
  static std::map<std::string, cached_kernel> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  cached_kernel ck;
  try {
    ck.kernel = std::make_unique<tessel::kernel>(make());
  } catch (const std::exception& e) {
    ck.error = key + ": " + e.what();
  }
  return cache.emplace(key, std::move(ck)).first->second;
}

}  // namespace tessel_gpu_test
