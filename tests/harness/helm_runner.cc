#include "helm_runner.h"

#include <filesystem>

#include "build_paths.h"

namespace gpunode::testing {

HelmRunner::HelmRunner() {
  ProcessResult where =
      RunProcess({"/bin/bash", std::string(build_paths::kSourceDir) + "/scripts/build-helm.sh",
                  "--print-dir"});
  std::string dir = where.out.substr(0, where.out.find('\n'));
  binary_ = dir + "/helm";
  if (where.exit_code != 0 || !std::filesystem::exists(binary_)) {
    missing_ =
        "helm is not built (" + binary_ + "): run scripts/build-helm.sh (scripts/test.sh does)";
  }
}

std::string HelmRunner::Chart() {
  return std::string(build_paths::kSourceDir) + "/deploy/helm/gpunode";
}

std::string HelmRunner::bin_dir() const {
  return std::filesystem::path(binary_).parent_path().string();
}

std::vector<std::string> HelmRunner::Env() const {
  return {"HELM_CONFIG_HOME=" + home_.path() + "/config",
          "HELM_CACHE_HOME=" + home_.path() + "/cache", "HELM_DATA_HOME=" + home_.path() + "/data"};
}

ProcessResult HelmRunner::Run(const std::vector<std::string>& args,
                              const std::vector<std::string>& extra_env) const {
  std::vector<std::string> argv = {binary_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = Env();
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return RunProcess(argv, env);
}

}  // namespace gpunode::testing
