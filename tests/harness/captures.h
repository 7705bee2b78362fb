// The `nvidia-smi -q -x` captures in tests/fixtures/nvidia-smi-xml, for tests that run once per
// capture: a capture added to the directory is tested without touching the tests.
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gpunode::testing {

// File names (not paths) of the .xml captures under `directory`, sorted.
std::vector<std::string> CaptureFiles(const std::string& directory);

// A test name for a capture file: "rtx-3060.xml" -> "rtx_3060_xml".
std::string CaptureTestName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace gpunode::testing
