// runtime.*: containerd and the NVIDIA Container Toolkit between the driver and the pods.
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "containerd/containerd_config.h"
#include "containerd/containerd_live.h"
#include "containerd/cri_runtimes.h"
#include "containerd/import_chain.h"
#include "doctor/checks.h"
#include "doctor/cuda_versions.h"
#include "doctor/parsers.h"

namespace gpunode::doctor {
namespace {

constexpr char kHandler[] = "nvidia";
// NVIDIA security bulletin 5659 (July 2025, CVE-2025-23266): container escape through the
// createContainer hook, fixed in 1.17.8 (SOURCES.md).
constexpr char kToolkitMinimum[] = "1.17.8";
constexpr const char* kToolkitConfigs[] = {
    "/etc/nvidia-container-runtime/config.toml",
    // Where the GPU Operator installs the toolkit.
    "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml",
};

// "v1.6.20", "1.7.24~ds1" -> {1, 6}.
std::optional<std::pair<int, int>> MajorMinor(absl::string_view version) {
  absl::ConsumePrefix(&version, "v");
  std::vector<absl::string_view> parts = absl::StrSplit(version, absl::ByAnyChar(".-~+"));
  std::pair<int, int> out;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &out.first) ||
      !absl::SimpleAtoi(parts[1], &out.second)) {
    return std::nullopt;
  }
  return out;
}

std::string SocketFix(const Context& context) {
  return absl::StrCat(
      "systemctl status containerd; if it runs elsewhere, give "
      "--containerd-socket (now ",
      context.ContainerdSocket(), ")");
}

Finding ContainerdVersionCheck(const Context& context) {
  std::string socket = context.ContainerdSocket();
  if (::access(socket.c_str(), F_OK) != 0) {
    return Fail("containerd's CRI socket does not exist", socket, SocketFix(context));
  }
  absl::StatusOr<containerd::CriVersion> version =
      containerd::QueryCriVersion(socket, context.options().rpc_timeout);
  if (!version.ok()) {
    return Fail("containerd does not answer on its CRI socket",
                std::string(version.status().message()), SocketFix(context));
  }
  std::string evidence = absl::StrCat(version->runtime_name, " ", version->runtime_version);
  std::optional<std::pair<int, int>> v = MajorMinor(version->runtime_version);
  if (version->runtime_name != "containerd") {
    return Warn("the CRI runtime is not containerd: the runtime.* checks assume containerd",
                evidence, "check the NVIDIA runtime in that runtime's own configuration");
  }
  if (!v) return Warn("cannot read containerd's version", evidence, "containerd --version");
  if (*v < std::pair(1, 6)) {
    return Fail("containerd is older than 1.6", evidence,
                "upgrade containerd to 1.6 or newer (1.7 or 2.x): the NVIDIA toolkit and the "
                "CRI v1 API need it");
  }
  return Ok(absl::StrCat("containerd ", version->runtime_version), evidence);
}

bool Executable(const Context& context, const std::string& path) {
  return ::access(context.host().Resolve(path).c_str(), X_OK) == 0;
}

Finding ContainerdConfigCheck(const Context& context) {
  const std::string& path = context.options().containerd_config;
  absl::StatusOr<containerd::ContainerdConfig> config =
      containerd::LoadContainerdConfig(context.host().Resolve(path), containerd::ConfigUse::kRead);
  if (!config.ok()) {
    return Fail("containerd's config cannot be read", std::string(config.status().message()),
                "fix the file (containerd would not start with it), or give doctor "
                "--containerd-config with the path containerd reads");
  }
  if (!config->exists) {
    return Fail("containerd's config file does not exist, so there is no nvidia handler", path,
                "gpunode runtime configure --runtime containerd, then systemctl restart "
                "containerd");
  }
  config->path = path;
  absl::StatusOr<containerd::ImportChain> chain =
      containerd::ResolveImportChain(*config, "", context.host().root());
  if (!chain.ok()) {
    return Fail("an import of containerd's config cannot be read",
                std::string(chain.status().message()), "fix the imports line");
  }
  std::vector<std::string> files;
  for (const containerd::ImportedFile& file : chain->files) files.push_back(file.path);
  // containerd 2.1 merges imports deeply; the key-by-key result is what a drop-in means to add.
  containerd::CriRuntimes cri = containerd::MergedCriRuntimes(*chain, /*deep_merge=*/true);
  std::string evidence =
      absl::StrCat("version ", config->version, "; files ", absl::StrJoin(files, ", "));
  const toml::table* handler = cri.runtimes[kHandler].as_table();
  std::string configure = "gpunode runtime configure --runtime containerd";
  if (handler == nullptr) {
    return Fail("containerd's config has no runtime handler \"nvidia\"", evidence,
                absl::StrCat(configure, ", then systemctl restart containerd"));
  }
  std::string type = (*handler)["runtime_type"].value_or(std::string());
  std::string binary = (*handler)["options"]["BinaryName"].value_or(std::string());
  absl::StrAppend(&evidence, "; nvidia: runtime_type ", type.empty() ? "(unset)" : type,
                  ", BinaryName ", binary.empty() ? "(unset)" : binary, "; default ",
                  cri.default_runtime);
  if (type != containerd::kRuncV2RuntimeType) {
    return Fail(
        absl::StrCat("the nvidia handler's runtime_type is not ", containerd::kRuncV2RuntimeType),
        evidence, absl::StrCat(configure, " (it rewrites the handler)"));
  }
  if (binary.empty()) {
    return Fail(
        "the nvidia handler has no options.BinaryName: pods would run plain runc without "
        "the NVIDIA hook",
        evidence, absl::StrCat(configure, " --binary /usr/bin/nvidia-container-runtime"));
  }
  if (!absl::StartsWith(binary, "/") || !Executable(context, binary)) {
    return Fail(
        absl::StrCat("the nvidia handler's BinaryName ", binary, " is not an executable file"),
        evidence,
        "install nvidia-container-toolkit (apt-get install nvidia-container-toolkit) or "
        "point BinaryName at its absolute path: " +
            configure + " --binary PATH");
  }
  if (cri.default_runtime == kHandler) {
    return Warn(
        "nvidia is containerd's default runtime: every pod, GPU or not, pays the NVIDIA "
        "hook",
        evidence,
        "use a RuntimeClass (handler: nvidia) for GPU pods and keep runc the default: " +
            configure + " without --set-as-default");
  }
  return Ok("runtime handler nvidia (runc.v2, " + binary + ") configured", evidence);
}

Finding ContainerdLiveCheck(const Context& context) {
  absl::StatusOr<containerd::CriRuntimeStatus> status =
      containerd::QueryCriStatus(context.ContainerdSocket(), context.options().rpc_timeout);
  if (!status.ok()) {
    return Fail("containerd's CRI Status call failed", std::string(status.status().message()),
                SocketFix(context));
  }
  const containerd::CriHandler* handler = containerd::FindHandler(*status, kHandler);
  if (handler == nullptr) {
    std::vector<std::string> names;
    for (const containerd::CriHandler& h : status->handlers) names.push_back(h.name);
    return Fail(
        "the running containerd has not loaded the nvidia handler: the file was changed "
        "after containerd started",
        absl::StrCat("CRI Status handlers: ", absl::StrJoin(names, ", ")),
        "systemctl restart containerd");
  }
  std::string binary;
  if (auto it = handler->options.find("BinaryName");
      it != handler->options.end() && it->is_string()) {
    binary = it->get<std::string>();
  }
  return Ok("the running containerd has loaded the nvidia handler",
            absl::StrCat("CRI Status: nvidia ", handler->runtime_type, " ", binary, "; default ",
                         status->default_runtime));
}

bool CgroupV2(const Context& context) {
  return context.host().Exists("/sys/fs/cgroup/cgroup.controllers");
}

Finding ToolkitConfigCheck(const Context& context) {
  std::string path;
  for (const char* candidate : kToolkitConfigs) {
    if (context.host().Exists(candidate)) {
      path = candidate;
      break;
    }
  }
  if (path.empty()) {
    return Fail("the NVIDIA Container Toolkit has no config.toml",
                absl::StrJoin(kToolkitConfigs, ", ") + ": not found",
                "apt-get install nvidia-container-toolkit (or deploy the GPU Operator's "
                "toolkit), then nvidia-ctk config default --output "
                "/etc/nvidia-container-runtime/config.toml");
  }
  absl::StatusOr<std::string> text = context.host().ReadFile(path);
  if (!text.ok()) {
    return Fail("cannot read the toolkit's config.toml", std::string(text.status().message()),
                "run as root");
  }
  absl::StatusOr<ToolkitConfig> config = ParseToolkitConfig(*text, path);
  if (!config.ok()) {
    return Fail("the toolkit's config.toml does not parse", std::string(config.status().message()),
                "fix the file, or regenerate it: nvidia-ctk config default --output " + path);
  }
  bool v2 = CgroupV2(context);
  bool no_cgroups = config->no_cgroups.value_or(false);
  std::string evidence =
      absl::StrCat(path, ": nvidia-container-cli.no-cgroups = ", no_cgroups ? "true" : "false",
                   "; host cgroup ", v2 ? "v2" : "v1", "; mode ", config->mode.value_or("auto"));
  std::string fix = absl::StrCat("set no-cgroups = false under [nvidia-container-cli] in ", path,
                                 " (true is only for rootless runtimes)");
  if (no_cgroups && v2) {
    return Fail(
        "no-cgroups = true on a cgroup v2 host: containers get the device files but no "
        "device access (\"Failed to initialize NVML: Unknown Error\")",
        evidence, fix);
  }
  if (no_cgroups) {
    return Warn(
        "no-cgroups = true: the device cgroup is not set up (only right for rootless "
        "containers)",
        evidence, fix);
  }
  return Ok("toolkit config parsed; device cgroups managed", evidence);
}

Finding ToolkitVersionCheck(const Context& context) {
  absl::StatusOr<std::string> status = context.host().ReadFile("/var/lib/dpkg/status");
  std::optional<std::string> version;
  if (status.ok()) {
    for (const char* package : {"nvidia-container-toolkit", "nvidia-container-toolkit-base"}) {
      if ((version = DpkgInstalledVersion(*status, package))) break;
    }
  }
  if (!version) {
    return Warn("cannot tell the NVIDIA Container Toolkit's version",
                "/var/lib/dpkg/status lists no nvidia-container-toolkit package",
                "nvidia-ctk --version; installs from RPM, tarballs or the GPU Operator are not "
                "read by this check");
  }
  std::string upstream = version->substr(0, version->find_first_of("-~"));
  std::string evidence = absl::StrCat("nvidia-container-toolkit ", *version);
  if (CompareVersions(upstream, kToolkitMinimum) < 0) {
    return Warn(absl::StrCat("nvidia-container-toolkit ", upstream, " is older than ",
                             kToolkitMinimum, ", which fixes CVE-2025-23266 (container escape)"),
                evidence, "apt-get install --only-upgrade nvidia-container-toolkit");
  }
  return Ok(absl::StrCat("nvidia-container-toolkit ", upstream), evidence);
}

}  // namespace

std::vector<Check> RuntimeChecks() {
  return {
      {"runtime", "runtime.containerd-version", {}, ContainerdVersionCheck},
      {"runtime", "runtime.containerd-config", {}, ContainerdConfigCheck},
      {"runtime",
       "runtime.containerd-live",
       {"runtime.containerd-version", "runtime.containerd-config"},
       ContainerdLiveCheck},
      {"runtime", "runtime.toolkit-config", {}, ToolkitConfigCheck},
      {"runtime", "runtime.toolkit-version", {}, ToolkitVersionCheck},
  };
}

}  // namespace gpunode::doctor
