// Skips the calling test, printing the CUDA runtime's reason, where no usable GPU is.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "devices/cuda/cuda_context.hpp"

#define TANDEM_REQUIRE_GPU()                                                          \
  do {                                                                                \
    const std::string reason = ::tandem::devices::cuda::cuda_unavailable_reason();    \
    if (!reason.empty()) GTEST_SKIP() << "no usable GPU: " << reason;                  \
  } while (0)
