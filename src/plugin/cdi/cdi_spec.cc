#include "plugin/cdi/cdi_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/file_io.h"

namespace gpunode::plugin {
namespace {

nlohmann::json DeviceNode(const std::string& dev_root, const std::string& path) {
  return {{"path", path}, {"hostPath", UnderRoot(dev_root, path)}};
}

nlohmann::json Device(const std::string& name, nlohmann::json nodes) {
  return {{"name", name}, {"containerEdits", {{"deviceNodes", std::move(nodes)}}}};
}

}  // namespace

nlohmann::json CdiSpec(const Node& node, const HostDevices& host, const CdiOptions& options) {
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json all_nodes = nlohmann::json::array();
  for (const NodeGpu& gpu : node.gpus) {
    std::string gpu_path = absl::StrCat("/dev/nvidia", gpu.minor);
    nlohmann::json gpu_nodes = nlohmann::json::array({DeviceNode(options.dev_root, gpu_path)});
    all_nodes.push_back(DeviceNode(options.dev_root, gpu_path));
    devices.push_back(Device(absl::StrCat(gpu.index), gpu_nodes));
    devices.push_back(Device(gpu.uuid, gpu_nodes));
    for (const MigSlice& mig : gpu.migs) {
      nlohmann::json mig_nodes = gpu_nodes;
      for (const std::string& cap :
           {absl::StrCat("gpu", gpu.minor, "/gi", mig.gi, "/access"),
            absl::StrCat("gpu", gpu.minor, "/gi", mig.gi, "/ci", mig.ci, "/access")}) {
        auto it = host.mig_minors.find(cap);
        if (it == host.mig_minors.end()) continue;
        std::string path = absl::StrCat("/dev/nvidia-caps/nvidia-cap", it->second);
        mig_nodes.push_back(DeviceNode(options.dev_root, path));
        all_nodes.push_back(DeviceNode(options.dev_root, path));
      }
      devices.push_back(Device(absl::StrCat(gpu.index, ":", mig.position), mig_nodes));
      devices.push_back(Device(mig.uuid, std::move(mig_nodes)));
    }
  }
  devices.push_back(Device("all", std::move(all_nodes)));

  nlohmann::json common_nodes = nlohmann::json::array();
  for (const std::string& path : host.control)
    common_nodes.push_back(DeviceNode(options.dev_root, path));
  return {{"cdiVersion", kCdiVersion},
          {"kind", options.kind},
          {"devices", std::move(devices)},
          {"containerEdits",
           {{"env", nlohmann::json::array({"NVIDIA_VISIBLE_DEVICES=void"})},
            {"deviceNodes", std::move(common_nodes)}}}};
}

std::string CdiSpecFileName(const std::string& kind) {
  return absl::StrCat(absl::StrReplaceAll(kind, {{"/", "-"}}), ".json");
}

absl::Status WriteCdiSpec(const std::string& directory, const nlohmann::json& spec,
                          const std::string& kind) {
  return core::WriteFileAtomic(absl::StrCat(directory, "/", CdiSpecFileName(kind)),
                               spec.dump(2) + "\n", {.mode = 0644, .backup_existing = false});
}

}  // namespace gpunode::plugin
