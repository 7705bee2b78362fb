// The path of a file under tests/fixtures/cluster.
#pragma once

#include <string>

#include "build_paths.h"

namespace gpunode::testing {

inline std::string ClusterFixture(const std::string& name) {
  return std::string(build_paths::kClusterFixtures) + "/" + name;
}

}  // namespace gpunode::testing
