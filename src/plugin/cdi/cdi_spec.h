// The device plugin's CDI spec: what a CDI-aware runtime injects for the names the
// cdi-annotations and cdi-cri strategies hand out ("k8s.device-plugin.nvidia.com/gpu=<UUID or
// index>"). The spec itself is src/cdi's, the same `gpunode cdi generate` writes; this adapts
// the plugin's Node to it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cdi/spec.h"
#include "core/host_root.h"
#include "plugin/rm/node.h"

namespace gpunode::plugin {

struct CdiOptions {
  std::string kind = "k8s.device-plugin.nvidia.com/gpu";
  std::string driver_root = "/";  // where the driver's files are found; their host paths' prefix
  std::string dev_root = "/";     // prefix of the device nodes' host paths
  std::string hook_path = "/usr/bin/nvidia-cdi-hook";  // empty: no hooks (--cdi-disable-hooks)
};

struct NodeCdiSpec {
  cdi::Spec spec;
  // What a container given a device of the spec would lack, one line each for a warning: the
  // hooks, a MIG device's access capabilities.
  std::vector<std::string> warnings;
  // Files of the driver not found, for the log: routine, not every driver ships every file.
  std::vector<std::string> left_out;
};

// The node's GPUs and MIG devices as CDI devices, the MIG capability nodes read from `host`.
std::vector<cdi::GpuDevice> CdiDevices(const Node& node, const core::HostRoot& host);

// The spec for the node and the driver `driver_version` found under options.driver_root,
// checked against the CDI schema. Fails when the driver's libraries are not there or the spec
// does not validate.
absl::StatusOr<NodeCdiSpec> BuildNodeCdiSpec(const Node& node, const std::string& driver_version,
                                             const core::HostRoot& host, const CdiOptions& options);

// The file name CDI registries expect: "<vendor>-<class>.json", e.g.
// "k8s.device-plugin.nvidia.com-gpu.json".
std::string CdiSpecFileName(const std::string& kind);

// Writes the spec into `directory` (created if missing) atomically, unless the file there
// already holds exactly these bytes. Returns whether it wrote.
absl::StatusOr<bool> WriteCdiSpec(const std::string& directory, const cdi::Spec& spec,
                                  const std::string& kind);

}  // namespace gpunode::plugin
