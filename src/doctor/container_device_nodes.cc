// container.device-nodes: the device nodes the runtime injected, and nothing more. /dev/nvidiaN
// keeps the host's minor number N, so a listed index N should be /dev/nvidiaN (on the host a GPU's
// minor number is its index), and a listed UUID the node NVML reports for that GPU.
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "doctor/container_checks.h"
#include "doctor/runner.h"

namespace gpunode::doctor {
namespace {

// The N of every /dev/nvidiaN.
std::set<unsigned> GpuNodeMinors(const core::HostRoot& host) {
  std::set<unsigned> minors;
  absl::StatusOr<std::vector<std::string>> entries = host.ListDir("/dev");
  if (!entries.ok()) return minors;
  for (absl::string_view name : *entries) {
    unsigned minor = 0;
    if (absl::ConsumePrefix(&name, "nvidia") && !name.empty() &&
        absl::ascii_isdigit(name.front()) && absl::SimpleAtoi(name, &minor)) {
      minors.insert(minor);
    }
  }
  return minors;
}

std::string Nodes(const std::set<unsigned>& minors) {
  std::vector<std::string> names;
  for (unsigned minor : minors) names.push_back(absl::StrCat("/dev/nvidia", minor));
  return absl::StrJoin(names, " ");
}

}  // namespace

Finding ContainerDeviceNodes(const Context& context) {
  VisibleDevices request = ReadRequestedDevices(context).visible;
  if (request.kind == VisibleDevices::Kind::kUnset || request.kind == VisibleDevices::Kind::kNone) {
    return Skip("no GPU listed in NVIDIA_VISIBLE_DEVICES (see container.visible-devices)");
  }
  std::vector<std::string> missing;
  for (const char* node : {"/dev/nvidiactl", "/dev/nvidia-uvm"}) {
    if (!context.host().Exists(node)) missing.push_back(node);
  }

  std::vector<ContainerGpu> gpus = NvmlGpus(context);
  std::set<unsigned> expected;
  size_t unresolved = 0;  // listed by UUID, but NVML cannot say its minor number
  // all, or void with CDI injecting the devices: the nodes must be those of the GPUs NVML shows.
  if (request.kind == VisibleDevices::Kind::kAll || request.kind == VisibleDevices::Kind::kVoid) {
    for (const ContainerGpu& gpu : gpus) {
      if (gpu.minor) expected.insert(*gpu.minor);
    }
  }
  for (const DeviceRequest& device : request.devices) {
    if (device.kind == DeviceRequest::Kind::kIndex) {
      expected.insert(device.index);
    } else if (const ContainerGpu* gpu = GpuOfRequest(gpus, device); gpu && gpu->minor) {
      expected.insert(*gpu->minor);
    } else {
      ++unresolved;
    }
  }
  std::set<unsigned> present = GpuNodeMinors(context.host());
  std::set<unsigned> absent;
  std::set<unsigned> extra;
  for (unsigned minor : expected) {
    if (!present.contains(minor)) absent.insert(minor);
  }
  for (unsigned minor : present) {
    if (!expected.contains(minor)) extra.insert(minor);
  }
  if (!absent.empty()) missing.push_back(Nodes(absent));
  std::string evidence = absl::StrCat("present: ", Nodes(present), "; expected: ", Nodes(expected));
  if (unresolved > 0) {
    absl::StrAppend(&evidence, " and ", unresolved, " device(s) whose node NVML does not name");
  }
  if (!missing.empty()) {
    return Fail("device nodes missing in the container", absl::StrJoin(missing, " "),
                "the runtime injects /dev/nvidiactl, /dev/nvidia-uvm and one /dev/nvidiaN per "
                "GPU: run the pod with the nvidia runtime, check driver.device-nodes and "
                "driver.uvm on the node (gpunode doctor there)");
  }
  // A UUID NVML does not know may be any node: extra nodes are then judged by count alone.
  if (extra.size() > unresolved) {
    return Fail(absl::StrCat("device nodes of GPUs this container was not given: ", Nodes(extra)),
                evidence, kIsolationFix);
  }
  return Ok(absl::StrCat(present.size(),
                         " GPU device node(s), /dev/nvidiactl and /dev/nvidia-uvm: "
                         "what was listed and nothing more"),
            evidence);
}

}  // namespace gpunode::doctor
