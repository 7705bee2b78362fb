// The path of a file under tests/fixtures/cluster, for the test targets that define
// CLUSTER_FIXTURES (tests/cluster/CMakeLists.txt).
#pragma once

#include <string>

namespace gpunode::testing {

inline std::string ClusterFixture(const std::string& name) {
  return std::string(CLUSTER_FIXTURES) + "/" + name;
}

}  // namespace gpunode::testing
