// main.cpp - GoogleTest main of the GPU test executables: adds the hang watchdog
// ($TESSEL_GPU_TEST_TIMEOUT_S, default 300 s per test) and says up front when there is no GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_test_util.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!tessel_gpu_test::no_gpu_reason().empty())
    std::printf("note: no GPU (%s): the GPU tests will be skipped\n", tessel_gpu_test::no_gpu_reason().c_str());
  tessel_gpu_test::install_watchdog(300);
  return RUN_ALL_TESTS();
}
