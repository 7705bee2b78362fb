#include "cli/nvml_session.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "core/loaded_library.h"
#include "gpunode_sim.h"

namespace gpunode::cli {
namespace {

constexpr const char* kSimLibrary = "libgpunode-sim.so";

// The simulator ships beside the binary (build tree) or in ../lib/gpunode (installed).
absl::StatusOr<std::string> FindSimulator() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot locate the gpunode binary: ", ec.message()));
  for (const std::filesystem::path& candidate :
       {self.parent_path() / kSimLibrary,
        self.parent_path() / ".." / "lib" / "gpunode" / kSimLibrary}) {
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  }
  return absl::NotFoundError(absl::StrCat("--sim: the simulator library ", kSimLibrary,
                                          " is not next to ", self.string(),
                                          "; rebuild or reinstall gpunode"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<nvml::Library>> OpenNvml(const GlobalOptions& global) {
  if (global.sim.empty()) {
    return nvml::Library::Open(
        {.driver_root = global.driver_root, .library_path = global.nvml_library});
  }
  absl::StatusOr<std::string> path = FindSimulator();
  if (!path.ok()) return path.status();
  // Our reference keeps the configured instance loaded until the Library holds its own.
  absl::StatusOr<core::LoadedLibrary> simulator =
      core::LoadedLibrary::Open(*path, RTLD_NOW | RTLD_LOCAL);
  if (!simulator.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot load ", *path, ": ", simulator.status().message()));
  }
  auto configure = simulator->Symbol<decltype(&gpunodeSimConfigure)>("gpunodeSimConfigure");
  if (configure == nullptr) {
    return absl::InternalError(absl::StrCat(*path, " does not export gpunodeSimConfigure"));
  }
  char error[1024] = {};
  if (configure(global.sim.c_str(), global.sim_topology.c_str(), error, sizeof error) != 0) {
    return absl::InvalidArgumentError(error);
  }
  return nvml::Library::Open({.library_path = *path});
}

nvml::Opener NvmlOpener(const GlobalOptions& global) {
  return [&global](const std::string& driver_root) {
    GlobalOptions options = global;
    options.driver_root = driver_root;
    return OpenNvml(options);
  };
}

}  // namespace gpunode::cli
