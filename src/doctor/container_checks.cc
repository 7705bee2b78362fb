// container.*: what a pod sees, checked from inside it (--in-container).
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "doctor/checks.h"
#include "nvml/system.h"

namespace gpunode::doctor {
namespace {

Finding VisibleDevices(const Context& context) {
  if (!context.options().in_container) {
    return Skip("not run inside a pod (give --in-container there)");
  }
  const std::optional<std::string>& value = context.options().visible_devices;
  std::string fix =
      "request GPUs with resources.limits nvidia.com/gpu and runtimeClassName "
      "nvidia (or the default runtime set to nvidia); do not set "
      "NVIDIA_VISIBLE_DEVICES by hand";
  if (!value) {
    return Fail("NVIDIA_VISIBLE_DEVICES is not set: the NVIDIA runtime gave this container no GPU",
                "NVIDIA_VISIBLE_DEVICES unset", fix);
  }
  std::string list(absl::StripAsciiWhitespace(*value));
  std::string evidence = "NVIDIA_VISIBLE_DEVICES=" + *value;
  if (list.empty() || list == "void" || list == "none") {
    return Fail("NVIDIA_VISIBLE_DEVICES lists no device", evidence, fix);
  }
  if (context.nvml() == nullptr) {
    return Fail("NVML does not initialize inside the container",
                absl::StrCat(evidence, "; ", context.nvml_status().message()),
                "the runtime did not mount the driver: check runtime.containerd-config and "
                "runtime.toolkit-config on the node (gpunode doctor there)");
  }
  absl::StatusOr<unsigned> count = nvml::DeviceCount(*context.nvml());
  if (!count.ok()) {
    return Fail("NVML cannot count the GPUs", std::string(count.status().message()), fix);
  }
  absl::StrAppend(&evidence, "; NVML sees ", *count);
  if (list == "all") {
    return Warn(
        "NVIDIA_VISIBLE_DEVICES=all: every GPU of the node, not the ones the device "
        "plugin allocated (an image default, or set by hand)",
        evidence, fix);
  }
  std::vector<std::string> devices = absl::StrSplit(list, ',', absl::SkipEmpty());
  std::vector<std::string> invisible;
  for (std::string& device : devices) {
    device = std::string(absl::StripAsciiWhitespace(device));
    unsigned index = 0;
    bool visible = absl::SimpleAtoi(device, &index)
                       ? index < *count
                       : nvml::DeviceByUuid(*context.nvml(), device).ok();
    if (!visible) invisible.push_back(device);
  }
  if (*count < devices.size() || !invisible.empty()) {
    return Fail(absl::StrCat("asked for ", devices.size(), " GPU(s), NVML sees ", *count),
                absl::StrCat(evidence, invisible.empty() ? "" : "; not visible: ",
                             absl::StrJoin(invisible, ", ")),
                "the runtime hook did not inject every device: check driver.device-nodes and "
                "runtime.toolkit-config on the node, and that the pod uses the nvidia runtime");
  }
  return Ok(absl::StrCat(devices.size(), " GPU(s) listed and visible to NVML"), evidence);
}

}  // namespace

std::vector<Check> ContainerChecks() {
  return {{"container", "container.visible-devices", {}, VisibleDevices}};
}

}  // namespace gpunode::doctor
