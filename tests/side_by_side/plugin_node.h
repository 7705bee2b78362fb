// The simulated node on which NVIDIA's device plugin and gpunode's run beside each other (the
// side-by-side test and bench/side_by_side/device_plugin_bench): the driver root of Debian's
// NVIDIA packages with the simulator as its NVML, its /proc/driver and device nodes
// (tests/side_by_side/cdi_node.sh), each simulated GPU's PCI address with its NUMA node, and a
// kubelet directory of each plugin's own at /var/lib/kubelet/device-plugins, all inside a mount
// namespace (tests/side_by_side/device_plugin_node.sh): NVIDIA's plugin puts its sockets there
// whatever its flags say.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kubelet_double.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {

// A node's GPUs as gpunode's inventory reports them: which GPU each GPU or MIG UUID is on, and
// the link between each two GPUs (nvidia-smi topo's words).
struct Topology {
  std::map<std::string, size_t> gpu_of;
  std::vector<std::vector<std::string>> links;
};

// How the plugin is started: whose, on which simulator profile (a built-in name or a path under
// the source tree), with which flags.
struct PluginRun {
  bool nvidias = false;
  std::string profile;
  std::string mig_strategy = "none";
  std::string config_file;                 // absolute; empty for none
  std::vector<std::string> flags;          // both plugins', in a form both parse
  std::vector<std::string> gpunode_flags;  // gpunode's only
  // Shared through MPS (config_file's sharing.mps): a control daemon runs under an MPS root of
  // the run's own, given to both as --mps-root (device_plugin_node.sh --mps).
  bool mps = false;
  // A real kubelet's device-plugins directory to register with, which the namespace's
  // /var/lib/kubelet/device-plugins then leads to; empty: a kubelet double of the plugin's own.
  std::string kubelet_dir;
};

// One plugin on the node with a kubelet double of its own (or a real kubelet's directory); the
// plugin is killed, then the kubelet double stopped, when this goes.
struct PluginOnNode {
  // /var/run/cdi inside the plugin's namespace, where a CDI device list strategy has it write
  // its spec (NVIDIA's plugin knows no other place).
  std::string cdi_spec_dir() const { return varlib.path() + "/run/cdi"; }

  TempDir varlib{"gpunode-varlib"};
  std::unique_ptr<KubeletDouble> kubelet;  // null with PluginRun::kubelet_dir
  std::unique_ptr<BackgroundProcess> process;
  std::string mps_root;  // with PluginRun::mps
};

class PluginNode {
 public:
  // Lays the node out in a temporary directory. `gpunode` is the binary under test (its
  // libgpunode-sim.so beside it). When something this machine lacks stops it (NVIDIA's programs
  // not built, no driver packages, no unshare), `skip()` says what; other failures `error()`.
  PluginNode(std::string source_dir, std::string gpunode);

  const std::string& skip() const { return skip_; }
  const std::string& error() const { return error_; }

  std::unique_ptr<PluginOnNode> Start(const PluginRun& run);
  // The driver root both plugins are given (and the CDI specs they write name).
  std::string driver_root() const { return work_.path() + "/driver"; }
  // The topology of `profile` (after a Start on it).
  const Topology& topology(const std::string& profile) { return topologies_[profile]; }

 private:
  std::string ProfilePath(const std::string& profile);
  std::string PciTree(const std::string& profile);

  std::string source_dir_;
  std::string gpunode_;
  std::string nvidia_plugin_;
  std::string skip_;
  std::string error_;
  TempDir work_{"gpunode-plugin-node"};
  std::map<std::string, Topology> topologies_;
};

}  // namespace gpunode::testing
