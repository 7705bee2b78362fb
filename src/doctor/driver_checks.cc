// driver.*: the kernel modules, their device nodes and NVML on top of them.
#include <sys/stat.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "doctor/checks.h"
#include "doctor/cuda_versions.h"
#include "doctor/driver_readings.h"
#include "nvml/system.h"

namespace gpunode::doctor {
namespace {

// What the driver creates its nodes with unless NVreg_DeviceFileMode says otherwise.
constexpr unsigned kDefaultDeviceMode = 0666;

Finding KernelModules(const Context& context) {
  absl::StatusOr<std::string> modules = context.host().ReadFile("/proc/modules");
  if (!modules.ok()) {
    return Fail("cannot read the loaded kernel modules", std::string(modules.status().message()),
                "run on the node itself (or give --host-root the node's root)");
  }
  std::set<std::string> loaded;
  for (absl::string_view line : absl::StrSplit(*modules, '\n', absl::SkipEmpty())) {
    loaded.insert(std::string(line.substr(0, line.find(' '))));
  }
  std::vector<std::string> missing;
  for (const char* name : {"nvidia", "nvidia_uvm", "nvidia_modeset"}) {
    if (!loaded.contains(name)) missing.push_back(name);
  }
  if (missing.empty())
    return Ok("nvidia, nvidia_uvm and nvidia_modeset are loaded", "/proc/modules");
  std::string evidence = absl::StrCat("/proc/modules lacks ", absl::StrJoin(missing, ", "));
  std::string fix = absl::StrCat(
      "modprobe ", absl::StrJoin(missing, " && modprobe "),
      "; to load at boot list them in /etc/modules-load.d/nvidia.conf; if modprobe fails, "
      "dmesg | grep -i nvidia (a driver built for another kernel, Secure Boot refusing an "
      "unsigned module)");
  if (missing.size() == 1 && missing[0] == "nvidia_modeset") {
    return Warn("nvidia_modeset is not loaded (containers that want /dev/nvidia-modeset fail)",
                evidence, fix);
  }
  return Fail(absl::StrCat("kernel module(s) not loaded: ", absl::StrJoin(missing, ", ")), evidence,
              fix);
}

Finding DriverNvml(const Context& context) {
  if (context.nvml() == nullptr) {
    return Fail("NVML does not initialize", std::string(context.nvml_status().message()),
                "nvidia-smi shows the same error; a driver/library version mismatch after an "
                "upgrade needs a reboot (or reloading the modules); check dmesg | grep NVRM");
  }
  const auto& node = context.Node();
  if (!node.ok()) {
    return Fail("NVML initialized but cannot read the GPUs", std::string(node.status().message()),
                "dmesg | grep NVRM");
  }
  return Ok(absl::StrCat("NVML initialized: driver ", node->driver_version.value_or("?"), ", ",
                         node->gpus.size(), " GPU(s)"));
}

Finding DriverVersion(const Context& context, const Gpus& gpus) {
  absl::StatusOr<std::string> kernel = KernelModuleVersion(context.host());
  if (absl::IsInvalidArgument(kernel.status())) {
    return Fail("cannot read the kernel module's version", std::string(kernel.status().message()),
                absl::StrCat("cat ", kDriverVersionFile));
  }
  if (!kernel.ok()) {
    return Fail("the kernel module reports no version", std::string(kernel.status().message()),
                "the nvidia module is not loaded: modprobe nvidia");
  }
  std::string library = gpus.node.driver_version.value_or("");
  std::string evidence = absl::StrCat(kDriverVersionFile, ": ", *kernel, "; NVML: ", library);
  if (library != *kernel) {
    return Fail("the kernel module and the user-space driver (NVML) differ", evidence,
                "a driver upgrade without a reboot: reboot, or unload and reload the nvidia "
                "modules; make sure only one driver install (package or .run) is present");
  }
  return Ok(absl::StrCat("driver ", *kernel, " in kernel and user space"), evidence);
}

std::vector<std::string> GpuNodes(const Context& context) {
  std::vector<std::string> nodes;
  if (context.nvml() != nullptr) {
    absl::StatusOr<unsigned> count = nvml::DeviceCount(*context.nvml());
    for (unsigned i = 0; count.ok() && i < *count; ++i) {
      absl::StatusOr<nvml::Device> device = nvml::DeviceAt(*context.nvml(), i);
      absl::StatusOr<unsigned> minor =
          device.ok() ? device->MinorNumber() : absl::StatusOr<unsigned>(device.status());
      nodes.push_back(absl::StrCat("/dev/nvidia", minor.ok() ? *minor : i));
    }
    if (count.ok()) return nodes;
  }
  const auto& pci = context.PciGpus();
  for (size_t i = 0; pci.ok() && i < pci->size(); ++i)
    nodes.push_back(absl::StrCat("/dev/nvidia", i));
  return nodes;
}

Finding DeviceNodes(const Context& context) {
  std::vector<std::string> wanted = {"/dev/nvidiactl"};
  for (std::string& node : GpuNodes(context)) wanted.push_back(std::move(node));
  std::vector<std::string> missing;
  for (const std::string& node : wanted) {
    if (!context.host().Exists(node)) missing.push_back(node);
  }
  if (!missing.empty()) {
    return Fail("device nodes missing", absl::StrJoin(missing, " "),
                "nvidia-modprobe -c=0 (per GPU -c=N) or nvidia-ctk system create-device-nodes "
                "--control-devices --load-kernel-modules");
  }
  return Ok(absl::StrCat(wanted.size(), " device nodes present"), absl::StrJoin(wanted, " "));
}

Finding Uvm(const Context& context) {
  if (context.host().Exists("/dev/nvidia-uvm")) return Ok("/dev/nvidia-uvm present");
  return Fail(
      "/dev/nvidia-uvm is missing: CUDA cannot allocate memory (cudaErrorUnknown / "
      "no CUDA-capable device)",
      "/dev/nvidia-uvm does not exist",
      "modprobe nvidia-uvm && nvidia-modprobe -u -c=0, and add nvidia-uvm to "
      "/etc/modules-load.d/nvidia-uvm.conf so it loads at boot");
}

std::optional<unsigned> DeviceFileModeParam(const Context& context) {
  absl::StatusOr<std::string> params = context.host().ReadFile("/proc/driver/nvidia/params");
  if (!params.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*params, '\n')) {
    if (!absl::ConsumePrefix(&line, "DeviceFileMode:")) continue;
    unsigned mode = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &mode)) return mode;
  }
  return std::nullopt;
}

Finding DevicePermissions(const Context& context) {
  std::vector<std::string> nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
  for (std::string& node : GpuNodes(context)) nodes.push_back(std::move(node));
  std::vector<std::string> loosened;
  std::vector<std::string> locked;
  for (const std::string& node : nodes) {
    absl::StatusOr<struct stat> st = context.host().Stat(node);
    if (!st.ok()) continue;
    unsigned mode = st->st_mode & 07777;
    if ((mode & ~kDefaultDeviceMode) != 0) {
      loosened.push_back(absl::StrCat(node, " 0", absl::StrFormat("%o", mode)));
    } else if ((mode & 0006) != 0006) {
      locked.push_back(absl::StrCat(node, " 0", absl::StrFormat("%o", mode)));
    }
  }
  if (!loosened.empty()) {
    return Warn("device nodes loosened past the driver's 0666 (execute bits: a chmod 777)",
                absl::StrJoin(loosened, ", "),
                "chmod 0666 the nodes (or reload the driver, which recreates them); grant access "
                "with the video/render groups (NVreg_DeviceFileGID), never chmod 777");
  }
  std::optional<unsigned> param = DeviceFileModeParam(context);
  if (!locked.empty() || (param && *param != kDefaultDeviceMode)) {
    std::string evidence = absl::StrJoin(locked, ", ");
    if (param) {
      absl::StrAppend(&evidence, evidence.empty() ? "" : "; ",
                      "/proc/driver/nvidia/params DeviceFileMode: 0",
                      absl::StrFormat("%o", *param));
    }
    return Warn(
        "device nodes are not world read-write: workloads outside the owning group are "
        "locked out",
        evidence,
        "keep NVreg_DeviceFileMode at 0666, or give workloads the owning group "
        "(NVreg_DeviceFileGID = the video or render group, and supplementalGroups in the "
        "pod) instead of chmod");
  }
  return Ok("device nodes have the driver's default mode 0666");
}

Finding PersistenceMode(const Context& /*context*/, const Gpus& gpus) {
  unsigned count = static_cast<unsigned>(gpus.node.gpus.size());
  std::vector<std::string> off;
  std::vector<std::string> unknown;
  for (unsigned i = 0; i < count; ++i) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(gpus.nvml, i);
    absl::StatusOr<bool> enabled =
        device.ok() ? device->PersistenceModeEnabled() : absl::StatusOr<bool>(device.status());
    if (!enabled.ok()) {
      unknown.push_back(absl::StrCat("GPU ", i));
    } else if (!*enabled) {
      off.push_back(absl::StrCat("GPU ", i));
    }
  }
  if (!off.empty()) {
    return Warn(
        "persistence mode is off: the driver tears the GPU down between jobs, so each "
        "start pays the initialization and ECC scrub",
        absl::StrCat("off on ", absl::StrJoin(off, ", ")),
        "systemctl enable --now nvidia-persistenced (or nvidia-smi -pm 1)");
  }
  if (!unknown.empty()) {
    return Ok("persistence mode on where reported",
              absl::StrCat("not reported by ", absl::StrJoin(unknown, ", ")));
  }
  return Ok(absl::StrCat("persistence mode on for all ", count, " GPU(s)"));
}

std::vector<std::string> HostCudaToolkits(const Context& context) {
  std::vector<std::string> found;
  absl::StatusOr<std::vector<std::string>> entries = context.host().ListDir("/usr/local");
  if (!entries.ok()) return found;
  for (const std::string& entry : *entries) {
    if (absl::StartsWith(entry, "cuda")) found.push_back("/usr/local/" + entry);
  }
  return found;
}

Finding CudaCompat(const Context& context, const Gpus& gpus) {
  CudaSupport support = ReadCudaSupport(gpus);
  std::vector<std::string> toolkits = HostCudaToolkits(context);
  std::string evidence = support.Describe();
  if (!toolkits.empty()) {
    absl::StrAppend(&evidence, "; host CUDA toolkit: ", absl::StrJoin(toolkits, " "));
  }
  std::string supported =
      support.supported ? FormatCudaVersion(*support.supported) : std::string("?");

  if (const std::optional<CudaVersion>& wanted = context.options().cuda) {
    std::optional<Finding> verdict =
        JudgeCudaNeed(support, *wanted, absl::StrCat("CUDA ", FormatCudaVersion(*wanted)),
                      absl::StrCat("build the workloads for CUDA ", supported), evidence);
    if (verdict) return *std::move(verdict);
  }
  if (!toolkits.empty()) {
    return Warn("a full CUDA toolkit is installed on the host", evidence,
                "containers bring their own CUDA libraries; host libraries mounted into them "
                "cause wrong-library bugs: remove the toolkit from GPU nodes, or keep it off "
                "LD_LIBRARY_PATH and out of container mounts");
  }
  if (context.options().cuda) {
    return Ok(absl::StrCat("the driver supports CUDA ", FormatCudaVersion(*context.options().cuda)),
              evidence);
  }
  return Ok(absl::StrCat("the driver supports CUDA up to ", supported,
                         " (give --cuda X.Y to check what the workloads need)"),
            evidence);
}

}  // namespace

std::vector<Check> DriverChecks() {
  return {
      {"driver", "driver.kernel-modules", {"pci.nvidia-devices"}, KernelModules},
      {"driver", "driver.version", {"driver.kernel-modules", "driver.nvml"}, DriverVersion},
      {"driver", "driver.device-nodes", {"driver.kernel-modules"}, DeviceNodes},
      {"driver", "driver.uvm", {"driver.kernel-modules"}, Uvm},
      {"driver", "driver.device-permissions", {"driver.device-nodes"}, DevicePermissions},
      {"driver", "driver.nvml", {"driver.kernel-modules"}, DriverNvml},
      {"driver", "driver.persistence-mode", {"driver.nvml"}, PersistenceMode},
      {"driver", "driver.cuda-compat", {"driver.nvml"}, CudaCompat},
  };
}

}  // namespace gpunode::doctor
