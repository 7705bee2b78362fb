// `gpunode version` (and `gpunode --version`): what this binary is and what it expects of the
// node, for bug reports and for checking a rollout.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/build_info.h"
#include "cli/command.h"
#include "nlohmann/json.hpp"

namespace gpunode::cli {
namespace {

// The NVML ABI src/nvml/abi.h declares and tests/nvml checks: NVIDIA's header of CUDA 11.8 and
// the exports of driver 535, with calls of the CUDA 12.4 header used where a driver has them.
constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";
constexpr char kNvmlHeader[] = "nvml.h of CUDA 11.8 (NVML API 11)";
constexpr char kNvmlNewestCalls[] = "CUDA 12.4, used when the driver exports them";
constexpr char kCuda[] = "not linked: the driver's CUDA version is read through NVML";

}  // namespace

int PrintVersion(const std::string& format) {
  if (format == "json") {
    nlohmann::json out = {
        {"version", kVersion},
        {"commit", kGitCommit},
        {"flavour", kBuildFlavour},
        {"nvml",
         {{"library", kNvmlLibrary}, {"header", kNvmlHeader}, {"newest_calls", kNvmlNewestCalls}}},
        {"cuda", kCuda}};
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "gpunode " << kVersion << "\n"
            << "commit   " << kGitCommit << "\n"
            << "flavour  " << kBuildFlavour << "\n"
            << "nvml     " << kNvmlLibrary << ", declared after " << kNvmlHeader
            << "; newer calls of " << kNvmlNewestCalls << "\n"
            << "cuda     " << kCuda << "\n";
  return kExitOk;
}

void AddVersionCommand(CLI::App& app, CommandRunner& run) {
  CLI::App* cmd = app.add_subcommand("version", "print the version, commit and build of gpunode");
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("-o,--output", *format, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([&run, format] { run = [format] { return PrintVersion(*format); }; });
}

}  // namespace gpunode::cli
