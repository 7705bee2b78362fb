#include "plugin/server/container_response.h"

#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpunode::plugin {

using plugin_config::Config;
using plugin_config::DeviceIdStrategy;
using plugin_config::DeviceListStrategy;

namespace {

// A random (version 4) UUID: NVIDIA's plugin keys each container's CDI annotation with one so
// that two containers of a pod never collide.
std::string RandomUuid() {
  thread_local std::mt19937_64 random(std::random_device{}());
  uint64_t hi = random(), lo = random();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFULL);
}

void AddDeviceSpec(v1beta1::ContainerAllocateResponse& response, std::set<std::string>& seen,
                   const std::string& dev_root, const std::string& path) {
  if (!seen.insert(path).second) return;
  v1beta1::DeviceSpec* spec = response.add_devices();
  spec->set_container_path(path);
  spec->set_host_path(UnderRoot(dev_root, path));
  spec->set_permissions("rw");
}

}  // namespace

absl::StatusOr<v1beta1::ContainerAllocateResponse> ContainerResponse(
    const Config& config, const Node& node, const HostDevices& host,
    const std::vector<const PluginDevice*>& devices) {
  // The GPUs and MIG devices behind the IDs, once each, in request order.
  std::vector<const PluginDevice*> unique;
  std::set<std::string> seen_uuids;
  for (const PluginDevice* device : devices) {
    if (seen_uuids.insert(device->uuid).second) unique.push_back(device);
  }
  std::vector<std::string> ids;
  for (const PluginDevice* device : unique) {
    ids.push_back(config.device_id_strategy == DeviceIdStrategy::kIndex ? device->index
                                                                        : device->uuid);
  }

  v1beta1::ContainerAllocateResponse response;
  bool only_cdi = true;
  for (DeviceListStrategy s : config.device_list_strategies) {
    if (s != DeviceListStrategy::kCdiAnnotations && s != DeviceListStrategy::kCdiCri)
      only_cdi = false;
  }
  std::vector<std::string> cdi_names;
  for (const std::string& id : ids) cdi_names.push_back(absl::StrCat(kCdiKind, "=", id));
  if (config.Uses(DeviceListStrategy::kCdiAnnotations)) {
    (*response.mutable_annotations())[absl::StrCat(config.cdi_annotation_prefix,
                                                   "nvidia-device-plugin_", RandomUuid())] =
        absl::StrJoin(cdi_names, ",");
  }
  if (config.Uses(DeviceListStrategy::kCdiCri)) {
    for (const std::string& name : cdi_names) response.add_cdi_devices()->set_name(name);
  }
  // With CDI only, the runtime injects everything from the CDI spec.
  if (only_cdi) return response;

  if (config.Uses(DeviceListStrategy::kEnvvar)) {
    (*response.mutable_envs())[kVisibleDevices] = absl::StrJoin(ids, ",");
  }
  if (config.Uses(DeviceListStrategy::kVolumeMounts)) {
    // The toolkit reads the device list from these mount points, which an unprivileged pod
    // cannot fake the way it can set an environment variable.
    (*response.mutable_envs())[kVisibleDevices] = kContainerDevicesDir;
    for (const std::string& id : ids) {
      v1beta1::Mount* mount = response.add_mounts();
      mount->set_host_path("/dev/null");
      mount->set_container_path(absl::StrCat(kContainerDevicesDir, "/", id));
    }
  }

  if (config.pass_device_specs) {
    std::set<std::string> seen;
    const std::string& dev_root = config.dev_root();
    for (const std::string& path : host.control) AddDeviceSpec(response, seen, dev_root, path);
    for (const PluginDevice* device : unique) {
      const NodeGpu& gpu = node.gpus[device->gpu];
      AddDeviceSpec(response, seen, dev_root, absl::StrCat("/dev/nvidia", gpu.minor));
      if (!device->mig) continue;
      for (const std::string& cap :
           {absl::StrCat("gpu", gpu.minor, "/gi", device->mig->gi, "/access"),
            absl::StrCat("gpu", gpu.minor, "/gi", device->mig->gi, "/ci", device->mig->ci,
                         "/access")}) {
        auto it = host.mig_minors.find(cap);
        if (it == host.mig_minors.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "cannot pass the MIG device ", device->uuid, ": ", cap,
              " is not in /proc/driver/nvidia-caps/mig-minors; load the nvidia-caps driver or "
              "turn passDeviceSpecs off"));
        }
        AddDeviceSpec(response, seen, dev_root,
                      absl::StrCat("/dev/nvidia-caps/nvidia-cap", it->second));
      }
    }
  }
  return response;
}

}  // namespace gpunode::plugin
