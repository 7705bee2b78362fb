// The real helm (scripts/build-helm.sh) for a test, with its own config, cache and data
// directories so that no test reads or writes the user's repositories or plugins. Without the
// binary `missing()` says why, so that a test can skip with that reason.
#pragma once

#include <string>
#include <vector>

#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {

class HelmRunner {
 public:
  HelmRunner();

  const std::string& missing() const { return missing_; }
  // deploy/helm/gpunode.
  static std::string Chart();
  // The directory of the helm binary, for a PATH.
  std::string bin_dir() const;
  // The environment that gives helm this runner's own directories.
  std::vector<std::string> Env() const;
  // `helm ARGS...`; extra_env ("NAME=value") added, e.g. KUBECONFIG.
  ProcessResult Run(const std::vector<std::string>& args,
                    const std::vector<std::string>& extra_env = {}) const;

 private:
  TempDir home_{"gpunode-helm"};
  std::string binary_;
  std::string missing_;
};

}  // namespace gpunode::testing
