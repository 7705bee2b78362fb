// dra.*: gpunode's (or NVIDIA's) DRA kubelet plugin for driver gpu.nvidia.com: its sockets, a
// device plugin beside it, the devices its ResourceSlice announces against what NVML sees, and
// the CDI spec of every claim it prepared.
#include <sys/stat.h>

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cdi/spec_file.h"
#include "cdi/validate.h"
#include "core/text.h"
#include "core/unix_socket.h"
#include "doctor/checks.h"
#include "gpu/dra_devices.h"
#include "host/dra_checkpoint.h"
#include "host/dra_plugin_state.h"

namespace gpunode::doctor {
namespace {

std::string PluginDir(const Context& context) {
  return absl::StrCat(context.options().kubelet_dir, "/plugins/", gpu::kDriverName);
}

std::string RegistrationSocket(const Context& context) {
  return absl::StrCat(context.options().kubelet_dir, "/plugins_registry/", gpu::kDriverName,
                      "-reg.sock");
}

bool Answers(const Context& context, const std::string& host_path) {
  return context.host().Exists(host_path) &&
         core::UnixSocketAccepts(context.host().Resolve(host_path));
}

constexpr char kNoPlugin[] = "no DRA plugin of gpu.nvidia.com on this node";

Finding Registration(const Context& context) {
  std::string registration = RegistrationSocket(context);
  std::string service = PluginDir(context) + "/dra.sock";
  if (!context.host().Exists(registration)) return Skip(kNoPlugin, registration);
  std::string fix =
      "kubectl -n <namespace> get pods -l app.kubernetes.io/name=gpunode-dra-plugin -o wide; "
      "look at the plugin's log; a plugin that exited leaves its sockets behind";
  if (!Answers(context, registration)) {
    return Fail("the DRA plugin's registration socket exists but nobody answers", registration,
                fix);
  }
  if (!Answers(context, service)) {
    return Fail("the DRA plugin registers but its service socket does not answer", service, fix);
  }
  return Ok(absl::StrCat("DRA plugin ", gpu::kDriverName, " answering"),
            absl::StrCat(registration, ", ", service));
}

// NVIDIA: a device plugin and a DRA driver must never serve the same GPUs.
Finding DevicePluginBeside(const Context& context) {
  if (!Answers(context, RegistrationSocket(context))) return Skip(kNoPlugin);
  std::vector<std::string> answering;
  absl::StatusOr<std::vector<std::string>> names =
      context.host().ListDir(context.DevicePluginDir());
  for (const std::string& name : names.ok() ? *names : std::vector<std::string>{}) {
    std::string path = absl::StrCat(context.DevicePluginDir(), "/", name);
    if (absl::StartsWith(name, "nvidia-") && absl::EndsWith(name, ".sock") &&
        Answers(context, path)) {
      answering.push_back(name);
    }
  }
  if (!answering.empty()) {
    return Fail("a device plugin and the DRA plugin both serve this node's GPUs",
                absl::StrCat(context.DevicePluginDir(), ": ", absl::StrJoin(answering, ", ")),
                "keep one per node: label the node out of the device plugin's DaemonSet "
                "(nvidia.com/gpu.deploy.device-plugin=false) or out of the DRA plugin's "
                "(docs/DRA.md, migrating pool by pool)");
  }
  return Ok("no device plugin beside the DRA plugin");
}

Finding Slice(const Context& context, const Gpus&) {
  std::string path = absl::StrCat(PluginDir(context), "/", host::kDraPluginStateFile);
  absl::StatusOr<std::string> text = context.host().ReadFile(path);
  if (!text.ok()) {
    return Skip(
        "no slice state from gpunode's DRA plugin: it is not running here, or another "
        "DRA driver serves the GPUs",
        path);
  }
  absl::StatusOr<host::DraPluginState> state = host::ParseDraPluginState(*text);
  if (!state.ok()) {
    return Fail("the DRA plugin's state file does not parse",
                absl::StrCat(path, ": ", state.status().message()),
                "restart the DRA plugin's pod; it writes the file anew");
  }
  if (!state->publish_error.empty()) {
    return Fail("the API server does not hold the node's ResourceSlice", state->publish_error,
                "look at the DRA plugin's log and its RBAC (deploy/dra/rbac.yaml: resourceslices "
                "create/update/delete); it publishes again every rescan interval");
  }
  absl::StatusOr<std::map<std::string, std::string>> names = gpu::DraDeviceNames(*context.nvml());
  if (!names.ok()) {
    return Skip("NVML cannot name the node's devices", std::string(names.status().message()));
  }
  std::set<std::string> announced, seen, tainted;
  for (const host::AnnouncedDevice& device : state->devices) {
    announced.insert(absl::StrCat(device.name, " (", device.uuid, ")"));
    if (!device.taints.empty()) {
      tainted.insert(absl::StrCat(device.name, ": ", absl::StrJoin(device.taints, ", ")));
    }
  }
  for (const auto& [uuid, name] : *names) seen.insert(absl::StrCat(name, " (", uuid, ")"));
  std::vector<std::string> missing, extra;
  for (const std::string& device : seen) {
    if (!announced.contains(device)) missing.push_back(device);
  }
  for (const std::string& device : announced) {
    if (!seen.contains(device)) extra.push_back(device);
  }
  if (!missing.empty() || !extra.empty()) {
    std::vector<std::string> evidence;
    if (!missing.empty())
      evidence.push_back(absl::StrCat("NVML sees, not announced: ", absl::StrJoin(missing, ", ")));
    if (!extra.empty())
      evidence.push_back(
          absl::StrCat("announced, NVML does not see: ", absl::StrJoin(extra, ", ")));
    return Fail("the node's ResourceSlice does not match the GPUs NVML sees",
                absl::StrJoin(evidence, "\n"),
                "wait one rescan interval (a MIG layout just changed), else restart the DRA "
                "plugin's pod; a GPU NVML lost stays announced, tainted gpu-lost");
  }
  if (!tainted.empty()) {
    return Warn(absl::StrCat(tainted.size(),
                             " device(s) tainted: the scheduler gives them to no "
                             "new claim"),
                absl::StrJoin(tainted, "\n"),
                "look at the GPU (nvidia-smi -q; the XID in the kernel log); the plugin lifts "
                "the taint itself once the GPU has recovered (docs/DRA.md, Health)");
  }
  return Ok(absl::StrCat("ResourceSlice generation ", state->generation, " announces ",
                         state->devices.size(), " device(s), as NVML sees them"),
            path);
}

Finding PreparedClaims(const Context& context) {
  std::string path = PluginDir(context) + "/checkpoint.json";
  absl::StatusOr<std::string> text = context.host().ReadFile(path);
  if (!text.ok()) return Skip("no checkpoint of gpunode's DRA plugin: no claim prepared", path);
  absl::StatusOr<host::DraCheckpoint> checkpoint = host::ParseDraCheckpoint(*text, path);
  // The claims of an earlier boot ended with it, and a file a machine crash tore can only be of
  // an earlier boot (host/dra_checkpoint.h): the plugin drops both when it starts.
  absl::StatusOr<std::string> boot = context.host().ReadFile("/proc/sys/kernel/random/boot_id");
  absl::StatusOr<std::string> marker = context.host().ReadFile(path + ".boot");
  std::string written_in = checkpoint.ok() ? checkpoint->boot_id
                           : marker.ok()   ? std::string(core::TrimSpace(*marker))
                                           : std::string();
  std::string this_boot = boot.ok() ? std::string(core::TrimSpace(*boot)) : std::string();
  if (!this_boot.empty() && !written_in.empty() && written_in != this_boot) {
    return Warn("the DRA plugin's checkpoint is of an earlier boot",
                absl::StrCat(path, " names boot ", written_in, "; this boot is ", this_boot),
                "start the DRA plugin: it drops the earlier boot's claims");
  }
  if (!checkpoint.ok()) {
    return Fail("the DRA plugin's checkpoint is refused",
                std::string(checkpoint.status().message()),
                "the plugin refuses to start with it too; follow the line above");
  }
  std::vector<std::string> broken, unfinished;
  size_t completed = 0;
  for (const auto& [uid, claim] : checkpoint->claims) {
    std::string name = absl::StrCat(claim.name_space, "/", claim.name, " (", uid, ")");
    if (claim.state == host::ClaimState::kPrepareStarted) {
      unfinished.push_back(name);
      continue;
    }
    ++completed;
    std::string spec_path =
        absl::StrCat(context.options().cdi_root, "/k8s.gpu.nvidia.com-claim_", uid, ".json");
    absl::StatusOr<std::string> spec_text = context.host().ReadFile(spec_path);
    if (!spec_text.ok()) {
      broken.push_back(absl::StrCat(name, ": ", spec_path, " is missing"));
      continue;
    }
    absl::StatusOr<cdi::Spec> spec = cdi::ParseSpecText(*spec_text, spec_path);
    std::vector<cdi::SpecProblem> problems;
    if (spec.ok()) problems = cdi::ValidateSpec(*spec);
    if (!spec.ok() || !problems.empty()) {
      broken.push_back(
          absl::StrCat(name, ": ", spec_path, ": ",
                       spec.ok() ? problems.front().json_path + " " + problems.front().message
                                 : std::string(spec.status().message())));
    }
  }
  if (!broken.empty()) {
    return Fail(absl::StrCat(broken.size(),
                             " prepared claim(s) without a valid CDI spec: their "
                             "containers cannot start"),
                absl::StrJoin(broken, "\n"),
                "delete and recreate the claims' pods; --cdi-root must be the directory "
                "containerd reads CDI specs from (its cdi_spec_dirs)");
  }
  if (!unfinished.empty()) {
    return Warn(absl::StrCat(unfinished.size(), " claim(s) whose preparation was cut short"),
                absl::StrJoin(unfinished, "\n"),
                "the plugin finishes or rolls them back when the kubelet asks again; a pod "
                "stuck in ContainerCreating names the claim in its events");
  }
  return Ok(absl::StrCat(completed, " prepared claim(s), each with a valid CDI spec"), path);
}

}  // namespace

std::vector<Check> DraChecks() {
  return {
      {"dra", "dra.registration", {}, Registration},
      {"dra", "dra.device-plugin-beside", {"dra.registration"}, DevicePluginBeside},
      {"dra", "dra.slice", {}, Slice},
      {"dra", "dra.claims", {}, PreparedClaims},
  };
}

}  // namespace gpunode::doctor
