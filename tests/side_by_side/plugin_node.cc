#include "plugin_node.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"

namespace gpunode::testing {

namespace fs = std::filesystem;

PluginNode::PluginNode(std::string source_dir, std::string gpunode)
    : source_dir_(std::move(source_dir)), gpunode_(std::move(gpunode)) {
  ProcessResult tools =
      RunProcess({"/bin/bash", source_dir_ + "/scripts/build-nvidia-tools.sh", "--print-dir"});
  nvidia_plugin_ = tools.out.substr(0, tools.out.find('\n')) + "/nvidia-device-plugin";
  if (!fs::exists(nvidia_plugin_)) {
    skip_ = "NVIDIA's nvidia-device-plugin is not built (" + nvidia_plugin_ +
            "): run scripts/build-nvidia-tools.sh";
    return;
  }
  ProcessResult node = RunProcess({"/bin/bash", "-c",
                                   "source \"$0/tests/side_by_side/cdi_node.sh\" && "
                                   "cdi_node_check \"$0\" && cdi_node_prepare \"$0\" \"$1\"",
                                   source_dir_, work_.path()});
  if (node.exit_code == 77) {
    skip_ = node.out;
  } else if (node.exit_code != 0) {
    error_ = node.out + node.err;
  }
}

// A built-in profile at the driver packages' version (cdi_node_prepare wrote them), or a fixture
// copied there with that version: a profile YAML, or an `nvidia-smi -q -x` capture whose GPUs are
// replayed on this node's driver (its <driver_version> replaced, or added where it has none).
std::string PluginNode::ProfilePath(const std::string& profile) {
  const bool capture = profile.ends_with(".xml");
  if (!profile.ends_with(".yaml") && !capture) {
    return work_.path() + "/profiles/" + profile + ".yaml";
  }
  const std::string copy = work_.path() + "/profiles/" + fs::path(profile).filename().string();
  if (fs::exists(copy)) return copy;
  std::ifstream version_file(work_.path() + "/version");
  std::string version;
  std::getline(version_file, version);
  std::ifstream in(source_dir_ + "/" + profile);
  std::ofstream out(copy);
  const std::string element = "<driver_version>" + version + "</driver_version>";
  bool versioned = false;
  for (std::string line; std::getline(in, line);) {
    if (!capture && line.starts_with("driver_version:")) {
      line = "driver_version: \"" + version + "\"";
    } else if (capture && line.find("<driver_version>") != std::string::npos) {
      line = line.substr(0, line.find('<')) + element;
      versioned = true;
    }
    out << line << "\n";
    if (capture && !versioned && line.find("<nvidia_smi_log>") != std::string::npos) {
      out << element << "\n";
      versioned = true;
    }
  }
  return copy;
}

// The simulated GPUs of `profile` as sysfs shows them: a directory per PCI address with its
// numa_node (what gpunode's inventory says), made once per profile, with the topology.
std::string PluginNode::PciTree(const std::string& profile) {
  const std::string tree = work_.path() + "/pci-" + fs::path(profile).stem().string();
  if (fs::exists(tree)) return tree;
  fs::create_directories(tree);
  ProcessResult inventory =
      RunProcess({gpunode_, "--sim", ProfilePath(profile), "inventory", "-o", "json"});
  nlohmann::json node = nlohmann::json::parse(inventory.out, nullptr, false);
  if (inventory.exit_code != 0 || node.is_discarded()) {
    error_ = "gpunode inventory of " + profile + " failed: " + inventory.err;
    return tree;
  }
  Topology& topology = topologies_[profile];
  // A profile without a topology has null links (nvidia-smi's N/A).
  for (const nlohmann::json& row : node["topology"]) {
    std::vector<std::string>& links = topology.links.emplace_back();
    for (const nlohmann::json& link : row)
      links.push_back(link.is_string() ? link.get<std::string>() : "");
  }
  for (const nlohmann::json& gpu : node["gpus"]) {
    size_t index = gpu["index"].get<size_t>();
    topology.gpu_of[gpu["uuid"].get<std::string>()] = index;
    for (const nlohmann::json& mig : gpu["mig_devices"])
      topology.gpu_of[mig["uuid"].get<std::string>()] = index;
    std::string address = gpu["pci_bus_id"].get<std::string>().substr(4);  // 00000000:07:00.0
    std::transform(address.begin(), address.end(), address.begin(), ::tolower);
    fs::create_directories(tree + "/" + address);
    std::ofstream(tree + "/" + address + "/numa_node")
        << (gpu["numa_node"].is_number() ? gpu["numa_node"].get<int>() : -1) << "\n";
  }
  return tree;
}

std::unique_ptr<PluginOnNode> PluginNode::Start(const PluginRun& run) {
  auto node = std::make_unique<PluginOnNode>();
  const std::string dir = node->varlib.path() + "/kubelet/device-plugins";
  if (!run.kubelet_dir.empty()) {
    // Inside the namespace the link leads out of the bound /var/lib to the real kubelet's
    // directory, where both plugins then make their sockets and find the kubelet's.
    fs::create_directories(node->varlib.path() + "/kubelet");
    fs::create_directory_symlink(run.kubelet_dir, dir);
  } else {
    fs::create_directories(dir);
    // The plugins' sockets are made by root inside the namespace; the double dials them.
    ::chmod(dir.c_str(), 0755);
    node->kubelet = std::make_unique<KubeletDouble>(dir);
    if (!node->kubelet->Start()) error_ = "the kubelet double cannot serve in " + dir;
  }
  std::vector<std::string> argv = {"/usr/bin/unshare",
                                   "-rm",
                                   "bash",
                                   source_dir_ + "/tests/side_by_side/device_plugin_node.sh",
                                   source_dir_,
                                   work_.path(),
                                   fs::path(gpunode_).parent_path().string() + "/libgpunode-sim.so",
                                   ProfilePath(run.profile),
                                   PciTree(run.profile),
                                   node->varlib.path()};
  // Beside the kubelet's directory: the control socket's path must stay short.
  const std::string mps_root = node->varlib.path() + "/mps";
  if (run.mps) {
    node->mps_root = mps_root;
    argv.insert(argv.end(), {"--mps", mps_root, gpunode_, run.config_file});
  }
  const std::string driver = driver_root();
  // The plugin's container sees the driver root where the host has it, and the CDI spec names
  // the driver root's hook program (nvidia-ctk's comparison names the same), so that a CDI
  // device list strategy finds the driver's files, and NVIDIA's its NVML, there.
  const std::vector<std::string> cdi = {"--container-driver-root", driver, "--nvidia-cdi-hook-path",
                                        driver + "/usr/bin/nvidia-cdi-hook"};
  if (run.nvidias) {
    // GDS, MOFED and GDRCopy off, as NVIDIA's chart installs it: gpunode has none of them.
    argv.insert(argv.end(), {nvidia_plugin_, "--driver-root", driver, "--dev-root", driver,
                             "--mig-strategy", run.mig_strategy, "--gds-enabled=false",
                             "--mofed-enabled=false", "--gdrcopy-enabled=false"});
    if (!run.config_file.empty()) argv.push_back("--config-file=" + run.config_file);
    argv.insert(argv.end(), cdi.begin(), cdi.end());
    if (run.mps) argv.push_back("--mps-root=" + mps_root);
    argv.insert(argv.end(), run.flags.begin(), run.flags.end());
  } else {
    argv.insert(argv.end(), {gpunode_, "--driver-root", driver, "device-plugin", "--dev-root",
                             driver, "--mig-strategy", run.mig_strategy, "--kubelet-dir",
                             "/var/lib/kubelet/device-plugins"});
    if (!run.config_file.empty()) argv.insert(argv.end(), {"--config-file", run.config_file});
    argv.insert(argv.end(), cdi.begin(), cdi.end());
    if (run.mps) argv.insert(argv.end(), {"--mps-root", mps_root});
    argv.insert(argv.end(), run.flags.begin(), run.flags.end());
    argv.insert(argv.end(), run.gpunode_flags.begin(), run.gpunode_flags.end());
  }
  node->process = std::make_unique<BackgroundProcess>(argv);
  return node;
}

}  // namespace gpunode::testing
