#include "doctor/container_checks.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctor/checks.h"
#include "nvml/system.h"

namespace gpunode::doctor {
namespace {

constexpr char kRequestFix[] =
    "request GPUs with resources.limits nvidia.com/gpu and runtimeClassName nvidia (or the "
    "default runtime set to nvidia); do not set NVIDIA_VISIBLE_DEVICES by hand";

bool IsWholeGpu(const DeviceRequest& request) { return request.kind != DeviceRequest::Kind::kMig; }

}  // namespace

const char kIsolationFix[] =
    "the container sees GPUs it was not given: a privileged container (or one with /dev mounted) "
    "sees every GPU of the node, so drop privileged from GPU pods; an NVIDIA_VISIBLE_DEVICES set "
    "in the image or pod spec is honoured unless the toolkit's "
    "accept-nvidia-visible-devices-envvar-when-unprivileged = false, so set that and run the "
    "device plugin with DEVICE_LIST_STRATEGY=volume-mounts (or CDI)";

RequestedDevices ReadRequestedDevices(const Context& context) {
  const std::optional<std::string>& value = context.options().visible_devices;
  if (!value) return {ParseVisibleDevices(value), "NVIDIA_VISIBLE_DEVICES unset"};
  std::string evidence = "NVIDIA_VISIBLE_DEVICES=" + *value;
  if (!absl::StartsWith(*value, "/")) return {ParseVisibleDevices(value), evidence};
  absl::StatusOr<std::vector<std::string>> entries = context.host().ListDir(*value);
  if (!entries.ok()) {
    return {ParseVisibleDevices(""), absl::StrCat(evidence, " (", entries.status().message(), ")")};
  }
  std::string list = absl::StrJoin(*entries, ",");
  return {ParseVisibleDevices(list), absl::StrCat(evidence, " (entries: ", list, ")")};
}

std::vector<ContainerGpu> NvmlGpus(const Context& context) {
  std::vector<ContainerGpu> gpus;
  if (context.nvml() == nullptr || !context.Node().ok()) return gpus;
  for (const gpu::GpuSnapshot& snapshot : context.Node()->gpus) {
    ContainerGpu gpu;
    gpu.uuid = snapshot.uuid;
    gpu.mig_enabled = snapshot.mig_enabled.value_or(false);
    for (const gpu::MigDeviceSnapshot& mig : snapshot.mig_devices) {
      gpu.mig_devices.push_back({mig.uuid, mig.profile});
    }
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(*context.nvml(), snapshot.index);
    if (device.ok()) {
      absl::StatusOr<unsigned> minor = device->MinorNumber();
      if (minor.ok()) gpu.minor = *minor;
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

const ContainerGpu* GpuOfRequest(const std::vector<ContainerGpu>& gpus,
                                 const DeviceRequest& request) {
  std::optional<std::string> parent = MigParentUuid(request.text);
  for (const ContainerGpu& gpu : gpus) {
    if (request.kind == DeviceRequest::Kind::kGpuUuid && gpu.uuid == request.text) return &gpu;
    if (request.kind != DeviceRequest::Kind::kMig) continue;
    if (parent && gpu.uuid == *parent && gpu.mig_enabled) return &gpu;
    for (const ContainerGpu::Mig& mig : gpu.mig_devices) {
      if (mig.uuid == request.text) return &gpu;
    }
  }
  return nullptr;
}

Finding ContainerNvml(const Context& context) {
  if (context.nvml() == nullptr) {
    return Fail("NVML does not initialize inside the container",
                std::string(context.nvml_status().message()),
                "the runtime did not mount the driver: NVIDIA_DRIVER_CAPABILITIES must include "
                "utility (leave it unset, or compute,utility), and the pod must run with the "
                "nvidia runtime; on the node, gpunode doctor checks runtime.containerd-config and "
                "runtime.toolkit-config");
  }
  const absl::StatusOr<gpu::NodeSnapshot>& node = context.Node();
  if (!node.ok()) {
    return Fail("NVML initialized but cannot read the GPUs", std::string(node.status().message()),
                "run gpunode doctor on the node (driver.nvml), and dmesg | grep NVRM there");
  }
  return Ok(absl::StrCat("NVML initialized: driver ", node->driver_version.value_or("?"), ", ",
                         node->gpus.size(), " GPU(s) visible"));
}

Finding ContainerVisibleDevices(const Context& context) {
  RequestedDevices requested = ReadRequestedDevices(context);
  const VisibleDevices& request = requested.visible;
  std::string evidence = requested.evidence;
  if (request.kind == VisibleDevices::Kind::kUnset) {
    return Fail("NVIDIA_VISIBLE_DEVICES is not set: the NVIDIA runtime gave this container no GPU",
                evidence, kRequestFix);
  }
  if (request.kind == VisibleDevices::Kind::kNone) {
    return Fail("NVIDIA_VISIBLE_DEVICES lists no device", evidence, kRequestFix);
  }
  // Not a prerequisite: what was listed is worth reporting when NVML does not open.
  if (context.nvml() == nullptr) return Skip("blocked by container.nvml", evidence);
  std::vector<ContainerGpu> gpus = NvmlGpus(context);
  absl::StrAppend(&evidence, "; NVML sees ", gpus.size());
  if (request.kind == VisibleDevices::Kind::kVoid && gpus.empty()) {
    return Fail("NVIDIA_VISIBLE_DEVICES lists no device", evidence, kRequestFix);
  }
  if (request.kind == VisibleDevices::Kind::kVoid) {
    return Ok(absl::StrCat("devices injected through CDI (NVIDIA_VISIBLE_DEVICES=void): NVML sees ",
                           gpus.size(), " GPU(s)"),
              absl::StrCat(evidence,
                           "; the allocation is not in the container's environment: compare "
                           "with the pod's nvidia.com/gpu limit"));
  }
  if (request.kind == VisibleDevices::Kind::kAll) {
    return Warn(
        "NVIDIA_VISIBLE_DEVICES=all: every GPU of the node, not the ones the device "
        "plugin allocated (an image default, or set by hand)",
        evidence, kRequestFix);
  }

  // Whole GPUs: those listed by index or UUID against those NVML shows, less the parents of
  // listed MIG devices (a MIG device shows its GPU too).
  bool mig_listed = !std::all_of(request.devices.begin(), request.devices.end(), IsWholeGpu);
  size_t listed = std::count_if(request.devices.begin(), request.devices.end(), IsWholeGpu);
  std::vector<const ContainerGpu*> visible;
  for (const ContainerGpu& gpu : gpus) {
    if (!(mig_listed && gpu.mig_enabled)) visible.push_back(&gpu);
  }
  std::vector<std::string> invisible;
  for (const DeviceRequest& device : request.devices) {
    if (device.kind == DeviceRequest::Kind::kGpuUuid && GpuOfRequest(gpus, device) == nullptr) {
      invisible.push_back(device.text);
    }
  }
  if (visible.size() < listed || !invisible.empty()) {
    return Fail(absl::StrCat("asked for ", listed, " GPU(s), NVML sees ", visible.size()),
                absl::StrCat(evidence, invisible.empty() ? "" : "; not visible: ",
                             absl::StrJoin(invisible, ", ")),
                "the runtime hook did not inject every device: check driver.device-nodes and "
                "runtime.toolkit-config on the node, and that the pod uses the nvidia runtime");
  }
  if (visible.size() > listed) {
    // By UUID the extra GPUs can be named; an index list says only how many.
    bool by_uuid =
        std::any_of(request.devices.begin(), request.devices.end(),
                    [](const DeviceRequest& d) { return d.kind == DeviceRequest::Kind::kGpuUuid; });
    std::vector<std::string> shown;
    for (const ContainerGpu* gpu : visible) {
      bool named = std::any_of(request.devices.begin(), request.devices.end(),
                               [&](const DeviceRequest& d) { return d.text == gpu->uuid; });
      if (!named) shown.push_back(gpu->uuid);
    }
    return Fail(absl::StrCat("NVML sees ", visible.size(), " GPU(s) but ", listed,
                             " listed: the container is not isolated"),
                absl::StrCat(evidence, by_uuid ? "; visible but not listed: " : "; visible: ",
                             absl::StrJoin(shown, ", ")),
                kIsolationFix);
  }
  return Ok(absl::StrCat(listed, " GPU(s) listed, all visible to NVML and no other"), evidence);
}

std::vector<Check> ContainerChecks() {
  return {
      {"container", "container.nvml", {}, ContainerNvml},
      {"container", "container.visible-devices", {}, ContainerVisibleDevices},
      {"container", "container.mig-devices", {"container.nvml"}, ContainerMigDevices},
      {"container", "container.device-nodes", {}, ContainerDeviceNodes},
      {"container", "container.driver-version", {"container.nvml"}, ContainerDriverVersion},
      {"container", "container.driver-libraries", {}, ContainerDriverLibraries},
      {"container", "container.cuda-compat", {"container.nvml"}, ContainerCudaCompat},
  };
}

}  // namespace gpunode::doctor
