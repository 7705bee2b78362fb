// plugin.*: the device plugin sockets in the kubelet's device-plugins directory, the health
// state gpunode's plugin writes there, and the MPS control daemons' pipes under the MPS root.
#include <sys/socket.h>
#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/io_deadline.h"
#include "core/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "doctor/checks.h"
#include "grpcpp/grpcpp.h"
#include "host/plugin_health_state.h"

namespace gpunode::doctor {
namespace {

constexpr char kKubeletSocket[] = "kubelet.sock";

struct Socket {
  std::string name;
  std::string path;  // on this machine
};

absl::StatusOr<std::vector<Socket>> Sockets(const Context& context) {
  std::string dir = context.DevicePluginDir();
  absl::StatusOr<std::vector<std::string>> names = context.host().ListDir(dir);
  if (!names.ok()) return names.status();
  std::vector<Socket> sockets;
  for (const std::string& name : *names) {
    absl::StatusOr<struct stat> st = context.host().Stat(absl::StrCat(dir, "/", name));
    if (st.ok() && S_ISSOCK(st->st_mode)) {
      sockets.push_back({name, context.host().Resolve(absl::StrCat(dir, "/", name))});
    }
  }
  return sockets;
}

absl::Status AskOptions(const std::string& path, std::chrono::milliseconds timeout) {
  // unix:PATH, not unix://PATH: the path is relative under a relative --host-root.
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel(absl::StrCat("unix:", path), grpc::InsecureChannelCredentials()));
  grpc::ClientContext rpc;
  rpc.set_deadline(core::IoDeadline::After(absl::FromChrono(timeout)).ForGrpc());
  v1beta1::Empty request;
  v1beta1::DevicePluginOptions options;
  grpc::Status status = stub->GetDevicePluginOptions(&rpc, request, &options);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat(path, ": GetDevicePluginOptions: ", status.error_message()));
  }
  return absl::OkStatus();
}

// NVIDIA's plugin (and gpunode's) serves nvidia.com/<name> on nvidia-<name>.sock.
std::string ResourceOf(const std::string& socket) {
  std::string name = socket.substr(std::string("nvidia-").size());
  return "nvidia.com/" + name.substr(0, name.size() - std::string(".sock").size());
}

Finding PluginSocket(const Context& context) {
  absl::StatusOr<std::vector<Socket>> sockets = Sockets(context);
  std::string fix =
      "kubectl -n <namespace> get pods -l app=nvidia-device-plugin; deploy the "
      "device plugin (gpunode device-plugin or NVIDIA's) as a DaemonSet";
  if (!sockets.ok()) {
    return Fail("cannot read the kubelet's device-plugins directory",
                std::string(sockets.status().message()),
                "give --kubelet-root-dir if the kubelet uses another --root-dir");
  }
  std::vector<std::string> answering;
  std::vector<std::string> silent;
  for (const Socket& socket : *sockets) {
    if (!absl::StartsWith(socket.name, "nvidia-") || !absl::EndsWith(socket.name, ".sock"))
      continue;
    absl::Status answer = AskOptions(socket.path, context.options().rpc_timeout);
    if (answer.ok()) {
      answering.push_back(absl::StrCat(ResourceOf(socket.name), " on ", socket.name));
    } else {
      silent.push_back(std::string(answer.message()));
    }
  }
  if (!answering.empty()) {
    return Ok(absl::StrCat("device plugin answering: ", absl::StrJoin(answering, ", ")),
              context.DevicePluginDir());
  }
  if (!silent.empty()) {
    return Fail("an NVIDIA device plugin socket exists but nobody answers on it",
                absl::StrJoin(silent, "; "), fix);
  }
  return Fail("no NVIDIA device plugin socket (nvidia-*.sock) in the kubelet's directory",
              context.DevicePluginDir(), fix);
}

Finding StaleSockets(const Context& context) {
  absl::StatusOr<std::vector<Socket>> sockets = Sockets(context);
  if (!sockets.ok()) {
    return Skip("the kubelet's device-plugins directory cannot be read",
                std::string(sockets.status().message()));
  }
  std::vector<std::string> stale;
  for (const Socket& socket : *sockets) {
    if (socket.name == kKubeletSocket) continue;  // the kubelet's own: never judged, never touched
    if (!core::UnixSocketAccepts(socket.path)) stale.push_back(socket.name);
  }
  if (!stale.empty()) {
    return Warn(absl::StrCat(stale.size(), " socket(s) nobody serves"),
                absl::StrCat(context.DevicePluginDir(), ": ", absl::StrJoin(stale, ", ")),
                "restart the plugin that owned them (its pod); the kubelet removes stale sockets "
                "when it restarts; never remove kubelet.sock");
  }
  return Ok(absl::StrCat("every plugin socket answers (", sockets->size(), " socket(s))"));
}

// The MPS control daemon of each resource under the MPS root (<root>/<resource>/pipe, the
// resource named in full: <root>/nvidia.com/gpu/pipe) must accept connections on its control
// socket, as the device plugin's MPS clients need.
Finding MpsDaemons(const Context& context) {
  const std::string& root = context.options().mps_root;
  absl::StatusOr<std::vector<std::string>> domains = context.host().ListDir(root);
  if (!domains.ok()) return Skip("no MPS root: no resource is shared through MPS", root);
  std::vector<std::string> answering, silent;
  for (const std::string& domain : *domains) {
    if (domain == "shm") continue;
    absl::StatusOr<std::vector<std::string>> names =
        context.host().ListDir(absl::StrCat(root, "/", domain));
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      std::string pipe = absl::StrCat(root, "/", domain, "/", name, "/pipe");
      absl::StatusOr<struct stat> st = context.host().Stat(pipe);
      if (!st.ok() || !S_ISDIR(st->st_mode)) continue;
      std::string control = context.host().Resolve(pipe + "/control");
      // The MPS control socket is SEQPACKET.
      (core::UnixSocketAccepts(control, SOCK_SEQPACKET) ? answering : silent)
          .push_back(absl::StrCat(domain, "/", name));
    }
  }
  if (!silent.empty()) {
    return Fail(absl::StrCat("the MPS control daemon of ", absl::StrJoin(silent, ", "),
                             " does not answer on its pipe"),
                root,
                "kubectl -n <namespace> logs <device plugin pod> -c mps-control-daemon; see "
                "<root>/<resource>/log/control.log; the plugin marks the replicas Unhealthy until "
                "the daemon is back");
  }
  if (answering.empty()) return Skip("no MPS control daemon under the MPS root", root);
  return Ok(absl::StrCat("MPS control daemon answering for ", absl::StrJoin(answering, ", ")),
            root);
}

std::string DeviceName(const host::UnhealthyDevice& d) {
  std::string name = absl::StrCat("GPU ", d.index, " (", d.uuid, ")");
  if (d.gpu_instance_id) {
    name = absl::StrCat("MIG device gi ", *d.gpu_instance_id, " ci ",
                        d.compute_instance_id.value_or(0), " of ", name);
  }
  return name;
}

// Devices gpunode's plugin withdrew, and above all those it will not offer again by itself.
Finding PluginHealth(const Context& context) {
  std::string path = absl::StrCat(context.DevicePluginDir(), "/", host::kPluginHealthStateFile);
  absl::StatusOr<std::string> text = context.host().ReadFile(path);
  if (!text.ok()) {
    return Skip(
        "no health state from gpunode's device plugin: it is not running, runs with health "
        "checks off (DP_DISABLE_HEALTHCHECKS=all), or another plugin serves the GPUs",
        path);
  }
  absl::StatusOr<host::PluginHealthState> state = host::ParsePluginHealthState(*text);
  if (!state.ok()) {
    return Warn("the device plugin's health state cannot be read",
                absl::StrCat(path, ": ", state.status().message()),
                "restart the device plugin pod; it writes the file again");
  }
  std::vector<std::string> held;
  std::vector<std::string> waiting;
  for (const host::UnhealthyDevice& d : state->unhealthy) {
    if (!d.held.empty()) {
      held.push_back(absl::StrCat(DeviceName(d), ": ", d.reason, "; ", d.held));
    } else {
      waiting.push_back(absl::StrCat(
          DeviceName(d), ": ", d.reason,
          !d.recovers ? "; recovery is off"
                      : (d.waiting_for.empty() ? "" : absl::StrCat("; ", d.waiting_for))));
    }
  }
  if (!held.empty()) {
    return Fail(
        absl::StrCat(held.size(), " device(s) stay Unhealthy until a person acts on the GPU"),
        absl::StrJoin(held, "\n"),
        "look at the GPU (nvidia-smi -q; the XID in the kernel log), reset or service "
        "it, then restart the device plugin pod to offer it again");
  }
  if (!waiting.empty()) {
    return Warn(absl::StrCat(waiting.size(), " device(s) Unhealthy, withdrawn from the kubelet"),
                absl::StrJoin(waiting, "\n"),
                "wait for the plugin's recovery (docs/DEVICE_PLUGIN.md, Health and recovery); "
                "a pending row remap needs a GPU reset (nvidia-smi -r -i <index>)");
  }
  return Ok("the device plugin reports every GPU healthy", path);
}

}  // namespace

std::vector<Check> PluginChecks() {
  return {
      {"plugin", "plugin.socket", {}, PluginSocket},
      {"plugin", "plugin.stale-sockets", {}, StaleSockets},
      {"plugin", "plugin.mps-daemon", {}, MpsDaemons},
      {"plugin", "plugin.health", {}, PluginHealth},
  };
}

}  // namespace gpunode::doctor
