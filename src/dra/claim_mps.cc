#include "dra/claim_mps.h"

#include <sys/un.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "core/file_io.h"
#include "core/json_field.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "host/mps_paths.h"
#include "spdlog/spdlog.h"

namespace gpunode::dra {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Where the clients see the daemon's pipe directory: NVIDIA's DRA driver's choice.
constexpr char kClientPipeDir[] = "/tmp/nvidia-mps";
// The label every daemon's Deployment and pod carry, and the one that names the daemon.
constexpr char kAppLabel[] = "gpunode-mps-control-daemon";
constexpr char kDaemonLabel[] = "gpunode.io/mps-control-daemon";

// The daemon's directory as `gpunode mps-control-daemon claim` lays it out: a root of its own, with
// no resource under it.
host::MpsPaths DaemonPaths(const std::string& root) { return host::MpsPaths{root, ""}; }

// The last line of the daemon's own log, for an error that says why it is not ready.
std::string LastLogLine(const std::string& root) {
  absl::StatusOr<std::string> log = core::ReadFile(DaemonPaths(root).ControlLog());
  if (!log.ok()) return "no log yet";
  absl::string_view text = absl::StripTrailingAsciiWhitespace(*log);
  size_t newline = text.rfind('\n');
  std::string last(newline == absl::string_view::npos ? text : text.substr(newline + 1));
  return last.empty() ? "its log is empty" : core::StrCat("its log ends: ", last);
}

}  // namespace

std::string MpsDaemonName(const std::string& id) { return "mps-control-daemon-" + id; }

absl::StatusOr<MpsDaemonSpec> PlanMpsDaemon(const std::string& claim_uid, const MpsRequest& request,
                                            const std::vector<std::string>& gpu_uuids) {
  MpsDaemonSpec spec{.id = core::StrCat(claim_uid, "-", request.config_index),
                     .gpu_uuids = gpu_uuids,
                     .active_thread_percentage = request.active_thread_percentage};
  if (request.default_pinned_bytes) {
    for (const std::string& uuid : gpu_uuids)
      spec.pinned_mib[uuid] = *request.default_pinned_bytes >> 20;
  }
  for (const auto& [key, bytes] : request.pinned_bytes) {
    std::string uuid;
    int index = -1;
    if (std::find(gpu_uuids.begin(), gpu_uuids.end(), key) != gpu_uuids.end()) {
      uuid = key;
    } else if (absl::SimpleAtoi(key, &index) && index >= 0 &&
               static_cast<size_t>(index) < gpu_uuids.size()) {
      uuid = gpu_uuids[static_cast<size_t>(index)];
    } else {
      return absl::InvalidArgumentError(core::StrCat(
          "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: ", core::Printable(key),
          " is neither the UUID nor the index (0 to ", gpu_uuids.size() - 1,
          ") of a GPU of the devices the config applies to (", absl::StrJoin(gpu_uuids, ", "),
          ")"));
    }
    spec.pinned_mib[uuid] = bytes >> 20;
  }
  return spec;
}

cdi::Spec MpsContainerEdits(const std::string& root) {
  const cdi::Spec options = cdi::Spec::array({"rw", "nosuid", "nodev", "bind"});
  cdi::Spec edits = cdi::Spec::object();
  edits["env"] = cdi::Spec::array({core::StrCat("CUDA_MPS_PIPE_DIRECTORY=", kClientPipeDir)});
  edits["mounts"] = cdi::Spec::array(
      {{{"hostPath", DaemonPaths(root).PipeDir()},
        {"containerPath", kClientPipeDir},
        {"options", options}},
       {{"hostPath", host::MpsShmDir(root)}, {"containerPath", "/dev/shm"}, {"options", options}}});
  return edits;
}

namespace {

// The daemon's directory name: the last group of the claim's UID (48 random bits) and the config
// index, "3f1c2a9b7d04-0". The whole ID would make the pipe directory's sockets longer than a unix
// socket's 107 bytes under a kubelet root a little longer than /var/lib/kubelet.
std::string DirectoryName(const std::string& id) {
  size_t index = id.rfind('-');
  size_t group =
      index == std::string::npos || index == 0 ? std::string::npos : id.rfind('-', index - 1);
  return group == std::string::npos ? id : id.substr(group + 1);
}

}  // namespace

std::string DeploymentMpsDaemons::Root(const std::string& id) const {
  return core::StrCat(options_.mps_dir, "/", DirectoryName(id));
}

std::string DeploymentMpsDaemons::DeploymentsPath() const {
  return core::StrCat("/apis/apps/v1/namespaces/", options_.name_space, "/deployments");
}

json DeploymentMpsDaemons::Deployment(const MpsDaemonSpec& spec) const {
  const std::string root = Root(spec.id);
  std::vector<std::string> args = options_.global_args;
  args.insert(args.end(), {"mps-control-daemon", "claim", "--root", root, "--devices",
                           absl::StrJoin(spec.gpu_uuids, ",")});
  if (spec.active_thread_percentage > 0) {
    args.insert(args.end(),
                {"--active-thread-percentage", std::to_string(spec.active_thread_percentage)});
  }
  for (const std::string& uuid : spec.gpu_uuids) {
    auto limit = spec.pinned_mib.find(uuid);
    if (limit == spec.pinned_mib.end()) continue;
    args.insert(args.end(), {"--pinned-memory-limit", core::StrCat(uuid, "=", limit->second)});
  }
  json mounts =
      json::array({{{"name", "mps"}, {"mountPath", root}, {"mountPropagation", "Bidirectional"}}});
  json volumes = json::array(
      {{{"name", "mps"}, {"hostPath", {{"path", root}, {"type", "DirectoryOrCreate"}}}}});
  if (!options_.driver_root.empty()) {
    mounts.push_back(
        {{"name", "driver-root"}, {"mountPath", options_.driver_root}, {"readOnly", true}});
    volumes.push_back({{"name", "driver-root"},
                       {"hostPath", {{"path", options_.driver_root}, {"type", "Directory"}}}});
  }
  const json labels = {{"app.kubernetes.io/name", kAppLabel},
                       {"app.kubernetes.io/part-of", "gpunode"},
                       {kDaemonLabel, spec.id}};
  json container = {
      {"name", "mps-control-daemon"},
      {"image", options_.image},
      {"command", json::array({"/usr/local/bin/gpunode"})},
      {"args", args},
      // The NVIDIA runtime gives the container the claim's GPUs and the driver's programs, as it
      // gives the plugin the driver.
      {"env",
       json::array(
           {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", absl::StrJoin(spec.gpu_uuids, ",")}},
            {{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "compute,utility"}}})},
      // Privileged: setting the GPUs' compute mode takes root on their device nodes, and the
      // clients' tmpfs is mounted from inside and must reach the host (Bidirectional), as NVIDIA's
      // daemon is run.
      {"securityContext", {{"privileged", true}}},
      {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}},
      {"volumeMounts", mounts}};
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata",
       {{"name", MpsDaemonName(spec.id)}, {"namespace", options_.name_space}, {"labels", labels}}},
      {"spec",
       {{"replicas", 1},
        {"strategy", {{"type", "Recreate"}}},
        {"selector", {{"matchLabels", {{kDaemonLabel, spec.id}}}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"nodeName", options_.node_name},
            {"automountServiceAccountToken", false},
            // It must run where the claim's pod runs, whatever taints the node has.
            {"tolerations", json::array({{{"operator", "Exists"}}})},
            {"priorityClassName", "system-node-critical"},
            {"containers", json::array({container})},
            {"volumes", volumes}}}}}}}};
}

absl::Status DeploymentMpsDaemons::Start(const MpsDaemonSpec& spec) {
  const std::string name = MpsDaemonName(spec.id);
  // NVIDIA's daemon binds its sockets in the pipe directory, the longest control_privileged.
  const std::string socket = DaemonPaths(Root(spec.id)).PipeDir() + "/control_privileged";
  constexpr size_t kSocketPathMax = sizeof(sockaddr_un::sun_path) - 1;
  if (socket.size() > kSocketPathMax) {
    return absl::FailedPreconditionError(
        core::StrCat("the MPS control daemon's socket ", socket, " would be ", socket.size(),
                     " bytes, over a unix socket's ", kSocketPathMax,
                     "; give the plugin a shorter --kubelet-plugins-directory-path"));
  }
  if (options_.image.empty()) {
    return absl::FailedPreconditionError(
        "the claim asks for MPS and the plugin has no image for its MPS control daemon: set "
        "--image-name (env IMAGE_NAME) to gpunode's image");
  }
  kube::HttpRequest create{.method = "POST",
                           .path = DeploymentsPath(),
                           .content_type = "application/json",
                           .body = Deployment(spec).dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse created, client_.Send(create));
  if (created.status == 409) {
    spdlog::info("MPS control daemon {}: its Deployment exists; waiting for it", spec.id);
  } else if (created.status < 200 || created.status >= 300) {
    return kube::StatusFromResponse(create, created);
  } else {
    spdlog::info("MPS control daemon {}: Deployment {}/{} created for GPU(s) {}", spec.id,
                 options_.name_space, name, absl::StrJoin(spec.gpu_uuids, ","));
  }
  const std::string root = Root(spec.id);
  const absl::Time deadline = env_.Now() + options_.ready_timeout;
  std::error_code ec;
  while (!fs::exists(host::MpsReadyMarker(root), ec)) {
    if (env_.Now() >= deadline) {
      return absl::UnavailableError(
          core::StrCat("the MPS control daemon ", name, " is not ready after ",
                       absl::FormatDuration(options_.ready_timeout), " (", LastLogLine(root),
                       "); the kubelet asks again; see `kubectl -n ", options_.name_space,
                       " describe deployment ", name, "` and its pod's log"));
    }
    if (!env_.SleepFor(absl::Milliseconds(50))) {
      return absl::UnavailableError("the plugin is stopping");
    }
  }
  spdlog::info("MPS control daemon {}: ready in {}", spec.id, root);
  return absl::OkStatus();
}

absl::Status DeploymentMpsDaemons::Delete(const std::string& id) {
  kube::HttpRequest remove{
      .method = "DELETE",
      .path = core::StrCat(DeploymentsPath(), "/", MpsDaemonName(id)),
      .content_type = "application/json",
      // The ReplicaSet and the pod go after it; the pod's stop quits the daemon.
      .body = R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})"};
  ASSIGN_OR_RETURN(kube::HttpResponse removed, client_.Send(remove));
  if (removed.status == 404) return absl::OkStatus();
  if (removed.status < 200 || removed.status >= 300) {
    return kube::StatusFromResponse(remove, removed);
  }
  spdlog::info("MPS control daemon {}: Deployment deleted", id);
  return absl::OkStatus();
}

bool DeploymentMpsDaemons::RemoveFiles(const std::string& id) const {
  const std::string root = Root(id);
  std::error_code ec;
  if (!fs::exists(root, ec)) return true;
  if (fs::exists(host::MpsReadyMarker(root), ec) || core::IsMountPoint(host::MpsShmDir(root)))
    return false;
  fs::remove_all(root, ec);
  if (ec) {
    spdlog::warn("MPS control daemon {}: cannot remove {}: {}", id, root, ec.message());
    return false;
  }
  return true;
}

absl::Status DeploymentMpsDaemons::Stop(const std::string& id) {
  RETURN_IF_ERROR(Delete(id));
  const absl::Time deadline = env_.Now() + options_.ready_timeout;
  while (!RemoveFiles(id)) {
    if (env_.Now() >= deadline) {
      return absl::UnavailableError(
          core::StrCat("the MPS control daemon ", MpsDaemonName(id), " has not quit after ",
                       absl::FormatDuration(options_.ready_timeout), " (", Root(id),
                       " still has its .ready marker or its shm mount); the kubelet asks again"));
    }
    if (!env_.SleepFor(absl::Milliseconds(50))) {
      return absl::UnavailableError("the plugin is stopping");
    }
  }
  return absl::OkStatus();
}

void DeploymentMpsDaemons::StopAllBut(const std::set<std::string>& keep) {
  absl::StatusOr<std::string> listed = client_.Get(core::StrCat(
      DeploymentsPath(),
      "?labelSelector=", kube::UrlEncode(core::StrCat("app.kubernetes.io/name=", kAppLabel))));
  if (!listed.ok()) {
    spdlog::warn("MPS control daemons not listed, none stopped: {}",
                 std::string(listed.status().message()));
  } else {
    json list = json::parse(*listed, nullptr, false);
    const json& items = list.is_object() && list.contains("items") ? list["items"] : json();
    for (const json& item : items.is_array() ? items : json::array()) {
      const json* node = core::JsonAt(item, {"spec", "template", "spec", "nodeName"});
      const json* id = core::JsonAt(item, {"metadata", "labels", kDaemonLabel});
      if (node == nullptr || *node != options_.node_name || id == nullptr || !id->is_string() ||
          keep.contains(id->get<std::string>())) {
        continue;
      }
      spdlog::info("MPS control daemon {}: no prepared claim has it; stopping it",
                   id->get<std::string>());
      if (absl::Status st = Delete(id->get<std::string>()); !st.ok()) {
        spdlog::warn("MPS control daemon {}: {}", id->get<std::string>(),
                     std::string(st.message()));
      }
    }
  }
  std::set<std::string> kept_directories;
  for (const std::string& id : keep) kept_directories.insert(DirectoryName(id));
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.mps_dir, ec)) {
    std::string directory = entry.path().filename().string();
    if (!kept_directories.contains(directory)) RemoveFiles(directory);
  }
}

}  // namespace gpunode::dra
