#include "plugin/rm/resources.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace gpunode::plugin {

using plugin_config::Config;
using plugin_config::MigStrategy;
using plugin_config::SharingStrategy;
using plugin_config::TimeSlicedResource;
using plugin_config::TimeSlicing;

namespace {

constexpr const char* kGpuResource = "nvidia.com/gpu";
constexpr const char* kDomain = "nvidia.com/";

PluginDevice WholeGpu(const Node& node, size_t position) {
  const NodeGpu& gpu = node.gpus[position];
  PluginDevice device;
  device.id = device.uuid = gpu.uuid;
  device.index = absl::StrCat(gpu.index);
  device.gpu = position;
  device.numa_node = gpu.numa_node;
  return device;
}

PluginDevice MigDevice(const Node& node, size_t position, const MigSlice& mig) {
  const NodeGpu& gpu = node.gpus[position];
  PluginDevice device;
  device.id = device.uuid = mig.uuid;
  device.index = absl::StrCat(gpu.index, ":", mig.position);
  device.gpu = position;
  device.mig = mig;
  device.numa_node = gpu.numa_node;
  return device;
}

using Groups = std::map<std::string, std::vector<PluginDevice>>;

absl::Status SingleStrategy(const Node& node) {
  std::vector<std::string> with_mig, without_mig;
  std::set<std::string> profiles;
  for (const NodeGpu& gpu : node.gpus) {
    (gpu.mig_enabled ? with_mig : without_mig).push_back(absl::StrCat(gpu.index));
    for (const MigSlice& mig : gpu.migs) profiles.insert(mig.profile);
  }
  if (with_mig.empty()) return absl::OkStatus();  // no MIG anywhere: whole GPUs, as "none"
  if (!without_mig.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "migStrategy single: all devices on the node must be configured with the same migEnabled "
        "value, but MIG is enabled on GPU ",
        absl::StrJoin(with_mig, ","), " and not on GPU ", absl::StrJoin(without_mig, ","),
        "; enable MIG on every GPU or use migStrategy mixed"));
  }
  for (const NodeGpu& gpu : node.gpus) {
    if (gpu.migs.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("migStrategy single: device ", gpu.index,
                       " has no MIG devices configured; create MIG devices on it or use "
                       "migStrategy mixed"));
    }
  }
  if (profiles.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("migStrategy single: more than one MIG device type present on node (",
                     absl::StrJoin(profiles, ", "),
                     "); give every GPU the same layout or use migStrategy mixed"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string MigResourceName(const std::string& profile) {
  return absl::StrCat(kDomain, "mig-", absl::StrReplaceAll(profile, {{"+", "."}}));
}

absl::StatusOr<std::vector<Resource>> BuildResources(const Node& node, const Config& config,
                                                     std::vector<std::string>* warnings) {
  Groups groups;
  switch (config.mig_strategy) {
    case MigStrategy::kNone:
      for (size_t i = 0; i < node.gpus.size(); ++i)
        groups[kGpuResource].push_back(WholeGpu(node, i));
      break;
    case MigStrategy::kSingle: {
      if (absl::Status st = SingleStrategy(node); !st.ok()) return st;
      for (size_t i = 0; i < node.gpus.size(); ++i) {
        const NodeGpu& gpu = node.gpus[i];
        if (!gpu.mig_enabled) {
          groups[kGpuResource].push_back(WholeGpu(node, i));
          continue;
        }
        for (const MigSlice& mig : gpu.migs)
          groups[kGpuResource].push_back(MigDevice(node, i, mig));
      }
      break;
    }
    case MigStrategy::kMixed:
      for (size_t i = 0; i < node.gpus.size(); ++i) {
        const NodeGpu& gpu = node.gpus[i];
        if (!gpu.mig_enabled) {
          groups[kGpuResource].push_back(WholeGpu(node, i));
          continue;
        }
        if (gpu.migs.empty()) {
          warnings->push_back(absl::StrCat("GPU ", gpu.index,
                                           " has MIG enabled but no MIG devices; it offers "
                                           "nothing under migStrategy mixed"));
        }
        for (const MigSlice& mig : gpu.migs)
          groups[MigResourceName(mig.profile)].push_back(MigDevice(node, i, mig));
      }
      break;
  }

  std::vector<Resource> resources;
  std::set<std::string> shared_names;
  const TimeSlicing no_sharing;
  const TimeSlicing& sharing = config.shared() != nullptr ? *config.shared() : no_sharing;
  const bool mps = config.sharing_strategy() == SharingStrategy::kMps;
  for (auto& [name, devices] : groups) {
    Resource resource;
    resource.name = name;
    for (const TimeSlicedResource& ts : sharing.resources) {
      if (ts.name != name) continue;
      resource.replicas = ts.replicas;
      resource.fail_requests_greater_than_one = sharing.fail_requests_greater_than_one;
      resource.mps = mps;
      if (sharing.rename_by_default) resource.name = absl::StrCat(name, ".shared");
      shared_names.insert(name);
    }
    if (resource.mps) {
      for (const PluginDevice& device : devices) {
        const NodeGpu& gpu = node.gpus[device.gpu];
        if (!device.mig && !gpu.mig_enabled) continue;
        return absl::FailedPreconditionError(absl::StrCat(
            "sharing.mps: ", name, " holds ", device.uuid, " on GPU ", gpu.index,
            ", which is in MIG mode, and MPS is not supported with MIG; turn MIG off on GPU ",
            gpu.index, " or share with sharing.timeSlicing"));
      }
    }
    resource.socket_name =
        absl::StrCat("nvidia-", resource.name.substr(std::string(kDomain).size()), ".sock");
    for (const PluginDevice& base : devices) {
      if (!resource.shared()) {
        resource.devices.push_back(base);
        continue;
      }
      for (int r = 0; r < resource.replicas; ++r) {
        PluginDevice replica = base;
        replica.id = absl::StrCat(base.uuid, "::", r);
        replica.replica = r;
        resource.devices.push_back(std::move(replica));
      }
    }
    resources.push_back(std::move(resource));
  }
  for (const TimeSlicedResource& ts : sharing.resources) {
    if (!shared_names.contains(ts.name)) {
      warnings->push_back(absl::StrCat(mps ? "sharing.mps: " : "sharing.timeSlicing: ", ts.name,
                                       " is not a resource of this node under migStrategy ",
                                       Name(config.mig_strategy), "; nothing is shared for it"));
    }
  }
  return resources;
}

}  // namespace gpunode::plugin
