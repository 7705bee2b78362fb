#include "dra/dra_plugin.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cdi/driver_files.h"
#include "core/file_io.h"
#include "core/json_field.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "core/unix_socket.h"
#include "dra/claim_preparer.h"
#include "dra/device_health.h"
#include "dra/kubelet_service.h"
#include "dra/resource_slice.h"
#include "gpu/dra_devices.h"
#include "h2grpc/server.h"
#include "host/dra_plugin_state.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace gpunode::dra {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> BootId(const core::HostRoot& host) {
  ASSIGN_OR_RETURN(std::string id, host.ReadFile("/proc/sys/kernel/random/boot_id"));
  return std::string(absl::StripAsciiWhitespace(id));
}

// One server on one socket, the socket file removed when it stops.
class SocketServer {
 public:
  SocketServer(h2grpc::Service service, std::string path)
      : server_(std::move(service)), path_(std::move(path)) {}
  ~SocketServer() {
    server_.Stop();
    std::error_code ec;
    fs::remove(path_, ec);
  }
  absl::Status Start() {
    std::error_code ec;
    fs::create_directories(fs::path(path_).parent_path(), ec);
    fs::remove(path_, ec);  // a previous run's
    return server_.Start(path_);
  }

 private:
  h2grpc::Server server_;
  std::string path_;
};

// The health monitor over the devices announced now; started again when they change (a new MIG
// layout), with every device Healthy until it finds otherwise.
class DeviceWatch {
 public:
  DeviceWatch(const nvml::Library& library, health::HealthOptions options)
      : library_(library), options_(std::move(options)) {}

  void Watch(const std::vector<gpu::DraDevice>& devices) {
    std::vector<health::MonitoredGpu> gpus = MonitoredGpus(devices);
    if (watching_ && gpus == watched_) return;
    watching_ = true;
    monitor_.reset();
    board_.Reset();
    watched_ = gpus;
    if (!options_.xids.enabled) {
      spdlog::warn("health checks are disabled (DP_DISABLE_HEALTHCHECKS): no device is tainted");
    } else if (!gpus.empty()) {
      monitor_ = health::HealthMonitor::Start(library_, std::move(gpus), board_, options_);
    }
  }

  health::HealthBoard& board() { return board_; }

 private:
  const nvml::Library& library_;
  const health::HealthOptions options_;
  health::HealthBoard board_;
  bool watching_ = false;  // Watch() ran: a monitor runs for watched_, or health checks are off
  std::vector<health::MonitoredGpu> watched_;
  std::unique_ptr<health::HealthMonitor> monitor_;  // writes board_: declared after it
};

// For doctor: what the slice announces now, or why the API server does not hold it. Written when
// that changes, not at every rescan.
class StateFile {
 public:
  explicit StateFile(std::string path) : path_(std::move(path)) {}

  void Write(const std::string& pool, const SlicePublisher& publisher,
             const absl::Status& published, const std::vector<gpu::DraDevice>& devices) {
    host::DraPluginState state;
    state.pool = pool;
    state.generation = publisher.generation();
    if (!published.ok()) state.publish_error = std::string(published.message());
    for (const gpu::DraDevice& device : devices) {
      host::AnnouncedDevice& announced = state.devices.emplace_back();
      announced.name = device.name;
      announced.uuid = device.uuid;
      for (const gpu::DeviceTaint& taint : device.taints) {
        announced.taints.push_back(core::StrCat(taint.key, taint.value.empty() ? "" : "=",
                                                taint.value, ":", taint.effect));
      }
    }
    std::string text = host::FormatDraPluginState(state);
    if (text == written_) return;
    if (absl::Status st = core::WriteFileAtomic(path_, text, 0644, core::Backup::kNone); !st.ok()) {
      spdlog::warn("cannot write {}: {}", path_, std::string(st.message()));
      return;
    }
    written_ = std::move(text);
  }

 private:
  const std::string path_;
  std::string written_;  // what the file holds
};

}  // namespace

std::string DevicePluginConflict(const std::string& device_plugins_dir,
                                 const std::string& node_json) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(device_plugins_dir, ec)) {
    std::string name = entry.path().filename();
    if (name == "kubelet.sock" || !entry.is_socket(ec)) continue;
    // A device plugin that exited leaves its socket behind; only a live one counts.
    if (core::UnixSocketAccepts(entry.path())) {
      return core::StrCat("a device plugin serves on ", entry.path().string(),
                          ": NVIDIA's device plugin and a DRA driver must not serve the same "
                          "GPUs; remove the device plugin from this node (label the node out of "
                          "its DaemonSet) before starting the DRA plugin");
    }
  }
  nlohmann::json node = nlohmann::json::parse(node_json, nullptr, false);
  std::string gpus = core::JsonStringAt(node, {"status", "allocatable", "nvidia.com/gpu"});
  if (!gpus.empty() && gpus != "0") {
    return core::StrCat("the Node's allocatable has nvidia.com/gpu: ", gpus,
                        " from a device plugin: NVIDIA's device plugin and a DRA driver must not "
                        "serve the same GPUs; remove the device plugin from this node and restart "
                        "the kubelet (or wait until the resource reads 0) first");
  }
  return "";
}

absl::Status RunDraPlugin(const nvml::Library& library, ApiClients api,
                          const DraPluginOptions& options, core::Env& env) {
  const core::HostRoot& host = env.host();
  ASSIGN_OR_RETURN(std::string node_json,
                   api.slices.Get(core::StrCat("/api/v1/nodes/", options.node_name)));
  if (std::string conflict = DevicePluginConflict(options.device_plugins_dir, node_json);
      !conflict.empty()) {
    return absl::FailedPreconditionError(conflict);
  }
  ASSIGN_OR_RETURN(gpu::DraNode node, gpu::ReadDraNode(library, host));
  ASSIGN_OR_RETURN(
      cdi::DriverFiles driver,
      cdi::DiscoverDriverFiles(node.driver_version, host,
                               {.driver_root = options.driver_root, .dev_root = options.dev_root}));
  std::string hook_path = options.hook_path;
  if (!hook_path.empty() && !cdi::IsExecutableFile(host, hook_path)) {
    spdlog::warn(
        "{} is not installed: the claims' CDI specs have no update-ldcache and "
        "create-symlinks hooks; install nvidia-container-toolkit-base or name the hook",
        hook_path);
    hook_path.clear();
  }
  std::string plugin_dir = core::StrCat(options.plugins_dir, "/", gpu::kDriverName);
  std::error_code ec;
  fs::create_directories(plugin_dir, ec);
  if (ec)
    return absl::PermissionDeniedError(
        core::StrCat("cannot create ", plugin_dir, ": ", ec.message()));
  ASSIGN_OR_RETURN(std::string boot_id, BootId(host));
  DeploymentMpsDaemons mps(
      {.node_name = options.node_name,
       .name_space = options.name_space,
       .image = options.mps_image,
       .mps_dir = core::StrCat(plugin_dir, "/mps"),
       .global_args = options.mps_global_args,
       .driver_root = options.driver_root == "/" ? std::string() : options.driver_root},
      api.claims, env);
  ASSIGN_OR_RETURN(
      std::unique_ptr<ClaimPreparer> preparer,
      ClaimPreparer::Create(
          {.node_name = options.node_name,
           .checkpoint_path = core::StrCat(plugin_dir, "/checkpoint.json"),
           .cdi_root = options.cdi_root,
           .dev_root = options.dev_root,
           .hook_path = hook_path,
           .boot_id = boot_id,
           .nvidia_smi = options.nvidia_smi},
          std::move(driver), host,
          [&api](const ClaimRef& claim) {
            return api.claims.Get(core::StrCat("/apis/resource.k8s.io/v1/namespaces/",
                                               claim.name_space, "/resourceclaims/", claim.name));
          },
          mps));
  std::vector<gpu::DraDevice> devices = node.devices;
  std::vector<unsigned> lost = node.lost;
  preparer->SetDevices(devices);

  DeviceWatch watch(library, options.health);
  watch.Watch(devices);
  uint64_t seen = watch.board().generation();
  ApplyTaints(watch.board(), lost, devices);
  SlicePublisher publisher(api.slices, options.node_name);
  StateFile state(core::StrCat(plugin_dir, "/", host::kDraPluginStateFile));
  absl::Status published = publisher.Publish(devices);
  state.Write(options.node_name, publisher, published, devices);
  RETURN_IF_ERROR(published);
  HealthFeed health(options.node_name, env);
  health.Set(HealthOf(watch.board(), lost, devices));

  std::string service_socket = core::StrCat(plugin_dir, "/dra.sock");
  SocketServer service(DraService(*preparer, health), service_socket);
  RETURN_IF_ERROR(service.Start());
  SocketServer registration(
      RegistrationService({.endpoint = service_socket,
                           .on_status =
                               [](bool registered, const std::string& error) {
                                 if (registered) {
                                   spdlog::info("registered with the kubelet as DRA driver {}",
                                                gpu::kDriverName);
                                 } else {
                                   spdlog::error("the kubelet refused the registration: {}", error);
                                 }
                               }}),
      core::StrCat(options.registrar_dir, "/", gpu::kDriverName, "-reg.sock"));
  RETURN_IF_ERROR(registration.Start());
  spdlog::info(
      "serving DRA driver {} for node {}: {} device(s), registration socket {}/{}-reg.sock",
      gpu::kDriverName, options.node_name, node.devices.size(), options.registrar_dir,
      gpu::kDriverName);

  // The stop is awaited on its own thread so that the control loop can wait on the board: a
  // health change is published at once, not at the next rescan.
  std::atomic<bool> stopping = false;
  std::thread stopper([&] {
    env.SleepUntil(absl::InfiniteFuture());
    stopping = true;
    watch.board().Interrupt();
  });
  absl::Time next_scan = env.Now() + options.rescan_interval;
  while (!stopping) {
    auto left = absl::ToChronoMilliseconds(std::max(next_scan - env.Now(), absl::ZeroDuration()));
    uint64_t generation =
        watch.board().WaitForChangeFor(seen, left, [&stopping] { return stopping.load(); });
    if (stopping) break;
    bool rescan = env.Now() >= next_scan;
    if (!rescan && generation == seen) continue;
    if (rescan) {
      next_scan = env.Now() + options.rescan_interval;
      if (absl::StatusOr<gpu::DraNode> now = gpu::ReadDraNode(library, host); now.ok()) {
        devices = KeepLostDevices(devices, *now);
        lost = now->lost;
        preparer->SetDevices(devices);
        watch.Watch(devices);
      } else {
        spdlog::warn("devices not re-read: {}", std::string(now.status().message()));
      }
    }
    // Read before the board is: a change after this is the next round's.
    seen = watch.board().generation();
    ApplyTaints(watch.board(), lost, devices);
    health.Set(HealthOf(watch.board(), lost, devices));
    absl::Status published = publisher.Publish(devices);
    state.Write(options.node_name, publisher, published, devices);
    if (!published.ok()) {
      spdlog::warn("ResourceSlice not published: {}; trying again in {}",
                   std::string(published.message()), absl::FormatDuration(options.rescan_interval));
    }
  }
  stopper.join();
  health.Wake();
  spdlog::info(
      "stopping; the ResourceSlice stays for the kubelet to remove if the plugin does not "
      "come back");
  return absl::OkStatus();
}

}  // namespace gpunode::dra
