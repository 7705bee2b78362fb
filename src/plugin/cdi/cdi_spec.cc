#include "plugin/cdi/cdi_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cdi/driver_files.h"
#include "cdi/mig_caps.h"
#include "cdi/spec_file.h"
#include "cdi/validate.h"
#include "core/file_io.h"

namespace gpunode::plugin {

std::vector<cdi::GpuDevice> CdiDevices(const Node& node, const core::HostRoot& host) {
  std::vector<cdi::GpuDevice> gpus;
  for (const NodeGpu& gpu : node.gpus) {
    cdi::GpuDevice device{.index = gpu.index, .uuid = gpu.uuid, .minor = gpu.minor};
    for (const MigSlice& mig : gpu.migs) {
      device.migs.push_back(
          {.position = mig.position,
           .uuid = mig.uuid,
           .capability_nodes = cdi::MigCapabilityNodes(host, gpu.minor, mig.gi, mig.ci)});
    }
    gpus.push_back(std::move(device));
  }
  return gpus;
}

absl::StatusOr<NodeCdiSpec> BuildNodeCdiSpec(const Node& node, const std::string& driver_version,
                                             const core::HostRoot& host,
                                             const CdiOptions& options) {
  absl::StatusOr<cdi::DriverFiles> driver = cdi::DiscoverDriverFiles(
      driver_version, host, {.driver_root = options.driver_root, .dev_root = options.dev_root});
  if (!driver.ok()) return driver.status();
  NodeCdiSpec result;
  cdi::SpecOptions spec_options{.kind = options.kind, .dev_root = options.dev_root};
  if (options.hook_path.empty()) {
    // --cdi-disable-hooks all: the spec names no hook.
  } else if (cdi::IsExecutableFile(host, options.hook_path)) {
    spec_options.hook_path = options.hook_path;
  } else {
    result.warnings.push_back(absl::StrCat(
        options.hook_path,
        " is not installed: the spec has no update-ldcache and create-symlinks hooks, so "
        "programs in the container find the driver's libraries only in directories their loader "
        "already searches; install nvidia-container-toolkit-base or name the hook's path"));
  }
  result.left_out = driver->missing;
  std::vector<cdi::GpuDevice> gpus = CdiDevices(node, host);
  std::vector<std::string> without_caps;
  for (const cdi::GpuDevice& gpu : gpus) {
    for (const cdi::MigDevice& mig : gpu.migs) {
      if (mig.capability_nodes.size() < 2) {
        without_caps.push_back(absl::StrCat(gpu.index, ":", mig.position));
      }
    }
  }
  if (!without_caps.empty()) {
    // As the plugin's Allocate refuses such a device with passDeviceSpecs.
    result.warnings.push_back(absl::StrCat(
        "MIG device(s) ", absl::StrJoin(without_caps, ", "),
        ": the driver lists no access capability of their GPU or compute instance (in "
        "/proc/driver/nvidia/capabilities or /proc/driver/nvidia-caps/mig-minors), so their "
        "entries have only their GPU's /dev/nvidia<N> and a container given one fails at start; "
        "load the driver's nvidia-caps support and generate the spec again"));
  }
  result.spec = cdi::BuildSpec(gpus, *driver, spec_options);
  std::vector<cdi::SpecProblem> problems = cdi::ValidateSpec(result.spec);
  if (!problems.empty()) {
    return absl::InternalError(absl::StrCat("the generated CDI spec is invalid at ",
                                            problems[0].json_path, ": ", problems[0].message));
  }
  return result;
}

std::string CdiSpecFileName(const std::string& kind) {
  return absl::StrCat(absl::StrReplaceAll(kind, {{"/", "-"}}), ".json");
}

absl::StatusOr<bool> WriteCdiSpec(const std::string& directory, const cdi::Spec& spec,
                                  const std::string& kind) {
  std::string path = absl::StrCat(directory, "/", CdiSpecFileName(kind));
  absl::StatusOr<std::string> current = core::ReadFile(path);
  if (current.ok() && *current == cdi::RenderSpec(spec, cdi::SpecFormat::kJson)) return false;
  absl::Status st = cdi::WriteSpecFile(path, spec, cdi::SpecFormat::kJson);
  if (!st.ok()) return st;
  return true;
}

}  // namespace gpunode::plugin
