// container.mig-devices: the MIG devices NVIDIA_VISIBLE_DEVICES lists are the ones NVML shows.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctor/container_checks.h"
#include "doctor/runner.h"

namespace gpunode::doctor {

Finding ContainerMigDevices(const Context& context) {
  VisibleDevices request = ReadRequestedDevices(context).visible;
  std::vector<const DeviceRequest*> listed;
  for (const DeviceRequest& device : request.devices) {
    if (device.kind == DeviceRequest::Kind::kMig) listed.push_back(&device);
  }
  if (listed.empty()) return Skip("no MIG device listed in NVIDIA_VISIBLE_DEVICES");

  std::vector<ContainerGpu> gpus = NvmlGpus(context);
  std::set<std::string> listed_texts;
  std::set<std::string> listed_parents;  // the MIG-GPU-<uuid>/<gi>/<ci> form names only the GPU
  std::vector<std::string> missing;
  for (const DeviceRequest* device : listed) {
    listed_texts.insert(device->text);
    if (std::optional<std::string> parent = MigParentUuid(device->text)) {
      listed_parents.insert(*parent);
    }
    // A "<gpu>:<mig>" pair uses host indices, which NVML in here does not know: counted only.
    bool by_index = device->text.find(':') != std::string::npos;
    if (!by_index && GpuOfRequest(gpus, *device) == nullptr) missing.push_back(device->text);
  }
  std::vector<std::string> visible;
  std::vector<std::string> unlisted;
  for (const ContainerGpu& gpu : gpus) {
    for (const ContainerGpu::Mig& mig : gpu.mig_devices) {
      visible.push_back(absl::StrCat(mig.uuid, " (", mig.profile, " on ", gpu.uuid, ")"));
      if (!listed_texts.contains(mig.uuid) && !listed_parents.contains(gpu.uuid)) {
        unlisted.push_back(mig.uuid);
      }
    }
  }
  std::string evidence =
      absl::StrCat("listed ", listed.size(), " MIG device(s); NVML shows ", visible.size(),
                   visible.empty() ? "" : ": ", absl::StrJoin(visible, ", "));
  if (!missing.empty() || visible.size() < listed.size()) {
    return Fail(
        absl::StrCat("asked for ", listed.size(), " MIG device(s), NVML sees ", visible.size()),
        absl::StrCat(evidence,
                     missing.empty() ? "" : "; not visible: ", absl::StrJoin(missing, ", ")),
        "the runtime did not inject the MIG device (its /dev/nvidia-caps nodes): the device "
        "plugin's MIG strategy must match the node's MIG layout, and a MIG device that was "
        "destroyed after allocation is gone; run gpunode doctor on the node");
  }
  bool index_pairs_only = std::all_of(listed.begin(), listed.end(), [](const DeviceRequest* d) {
    return d->text.find(':') != std::string::npos;
  });
  if (visible.size() > listed.size() || (!index_pairs_only && !unlisted.empty())) {
    return Fail(absl::StrCat("NVML sees ", visible.size(), " MIG device(s) but ", listed.size(),
                             " listed: the container is not isolated"),
                absl::StrCat(evidence, "; not listed: ", absl::StrJoin(unlisted, ", ")),
                kIsolationFix);
  }
  return Ok(absl::StrCat(listed.size(), " MIG device(s) listed, all visible to NVML and no other"),
            evidence);
}

}  // namespace gpunode::doctor
