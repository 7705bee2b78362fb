// kubelet.*: whether the kubelet took the plugin's devices, and may take them at all.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/printable.h"
#include "doctor/checks.h"
#include "host/device_checkpoint.h"
#include "host/kubelet_process.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::doctor {
namespace {

constexpr char kGpuResource[] = "nvidia.com/gpu";

Finding Registered(const Context& context, const Gpus& gpus) {
  std::string path = context.DevicePluginDir() + "/kubelet_internal_checkpoint";
  std::string fix =
      "check the device plugin's log and plugin.socket; the kubelet lists a "
      "resource once a plugin registers and streams its devices";
  absl::StatusOr<std::string> text = context.host().ReadFile(path);
  if (!text.ok()) {
    return Fail("the kubelet has no device plugin checkpoint: no plugin ever registered",
                std::string(text.status().message()), fix);
  }
  absl::StatusOr<host::DeviceCheckpoint> checkpoint = host::ParseDeviceCheckpoint(*text);
  if (!checkpoint.ok()) {
    return Fail("the kubelet's checkpoint does not parse",
                absl::StrCat(path, ": ", checkpoint.status().message()),
                "the kubelet rewrites it at the next device update; restart the device plugin");
  }
  size_t gpu_count = gpus.node.gpus.size();
  std::vector<std::string> listed;
  for (const auto& [resource, ids] : checkpoint->registered) {
    if (absl::StartsWith(resource, "nvidia.com/")) {
      listed.push_back(absl::StrCat(resource, ": ", ids.size()));
    }
  }
  std::string evidence = absl::StrCat(
      path, ": ", listed.empty() ? "no nvidia.com resource" : absl::StrJoin(listed, ", "),
      "; NVML: ", gpu_count, " GPU(s)");
  auto gpu = checkpoint->registered.find(kGpuResource);
  if (gpu == checkpoint->registered.end()) {
    if (!listed.empty()) return Ok("the kubelet lists NVIDIA resources (MIG or renamed)", evidence);
    return Fail("the kubelet lists no nvidia.com resource", evidence, fix);
  }
  size_t count = gpu->second.size();
  if (count == 0) {
    return Fail("nvidia.com/gpu is registered with 0 healthy devices", evidence,
                "the plugin reports every GPU unhealthy or lists none: read its log (XID "
                "errors, NVML failures) and restart it");
  }
  if (gpu_count == 0 || count < gpu_count || count % gpu_count != 0) {
    return Fail(absl::StrCat("the kubelet lists ", count, " nvidia.com/gpu device(s) for ",
                             gpu_count, " GPU(s)"),
                evidence,
                "unhealthy GPUs are left out: read the plugin's log; with sharing, replicas "
                "multiply the count");
  }
  std::string replicas =
      count == gpu_count ? "" : absl::StrCat(" (", count / gpu_count, " replicas each)");
  return Ok(absl::StrCat("nvidia.com/gpu registered with ", count, " device(s)", replicas),
            evidence);
}

std::optional<bool> GateInFlag(const std::string& gates) {
  for (absl::string_view gate : absl::StrSplit(gates, ',')) {
    std::vector<absl::string_view> kv = absl::StrSplit(gate, '=');
    if (kv.size() == 2 && kv[0] == "DevicePlugins") return kv[1] != "false";
  }
  return std::nullopt;
}

Finding FeatureGates(const Context& context) {
  std::optional<std::vector<std::string>> args = host::KubeletCommandLine(context.host());
  std::string config_path = context.options().kubelet_dir + "/config.yaml";
  std::vector<std::string> evidence;
  std::optional<bool> enabled;
  if (args) {
    for (size_t i = 1; i < args->size(); ++i) {
      const std::string& arg = (*args)[i];
      std::string next = i + 1 < args->size() ? (*args)[i + 1] : "";
      if (absl::StartsWith(arg, "--feature-gates=")) {
        enabled = GateInFlag(arg.substr(arg.find('=') + 1));
      } else if (arg == "--feature-gates") {
        enabled = GateInFlag(next);
      } else if (absl::StartsWith(arg, "--config=")) {
        config_path = arg.substr(arg.find('=') + 1);
      } else if (arg == "--config") {
        config_path = next;
      }
    }
    evidence.push_back("kubelet command line");
    if (enabled) {
      evidence.back() += absl::StrCat(": DevicePlugins=", *enabled ? "true" : "false");
      if (!*enabled) {
        return Fail(
            "the kubelet runs with --feature-gates DevicePlugins=false: no device plugin "
            "can register",
            evidence.back(), "remove DevicePlugins=false from the kubelet's flags");
      }
    }
  }
  absl::StatusOr<std::string> text = context.host().ReadFile(config_path);
  if (text.ok()) {
    try {
      YAML::Node gates = YAML::Load(*text)["featureGates"];
      if (gates && gates.IsMap() && gates["DevicePlugins"]) {
        bool on = gates["DevicePlugins"].as<bool>();
        evidence.push_back(absl::StrCat(config_path, ": featureGates.DevicePlugins: ", on));
        if (!on) {
          return Fail("the kubelet's config disables the DevicePlugins feature gate",
                      evidence.back(),
                      absl::StrCat("remove DevicePlugins: false from featureGates in ", config_path,
                                   " and restart the kubelet"));
        }
      } else {
        evidence.push_back(config_path + ": DevicePlugins not set (on by default)");
      }
    } catch (const YAML::Exception& e) {
      evidence.push_back(absl::StrCat(config_path, ": not YAML (", core::Printable(e.what()), ")"));
    }
  }
  if (!args && !text.ok()) {
    return Skip("no kubelet process and no kubelet config found",
                absl::StrCat("/proc/*/cmdline, ", config_path));
  }
  return Ok("the DevicePlugins feature gate is not disabled", absl::StrJoin(evidence, "; "));
}

}  // namespace

std::vector<Check> KubeletChecks() {
  return {
      {"kubelet", "kubelet.registered", {"driver.nvml"}, Registered},
      {"kubelet", "kubelet.feature-gates", {}, FeatureGates},
  };
}

}  // namespace gpunode::doctor
