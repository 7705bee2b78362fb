#include "dra/kubelet_service.h"

#include "absl/strings/str_cat.h"
#include "core/text.h"
#include "dra/health/v1alpha1/api.pb.h"
#include "dra/v1/api.pb.h"
#include "pluginregistration/v1/api.pb.h"
#include "spdlog/spdlog.h"

namespace gpunode::dra {
namespace {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace healthpb = v1alpha1;

// The v1 messages answer v1beta1 calls too: the two packages carry the same messages with the
// same field numbers (v1 adds the optional share_id, which gpunode never sets), so the bytes on
// the wire are the same.
constexpr const char* kPackages[] = {"k8s.io.kubelet.pkg.apis.dra.v1",
                                     "k8s.io.kubelet.pkg.apis.dra.v1beta1"};

absl::StatusOr<drav1::NodePrepareResourcesResponse> Prepare(
    ClaimPreparer& preparer, const drav1::NodePrepareResourcesRequest& request) {
  drav1::NodePrepareResourcesResponse response;
  for (const drav1::Claim& claim : request.claims()) {
    drav1::NodePrepareResourceResponse& entry = (*response.mutable_claims())[claim.uid()];
    absl::StatusOr<std::vector<host::PreparedDevice>> devices =
        preparer.Prepare({claim.namespace_(), claim.name(), claim.uid()});
    if (!devices.ok()) {
      entry.set_error(std::string(devices.status().message()));
      continue;
    }
    for (const host::PreparedDevice& device : *devices) {
      drav1::Device* out = entry.add_devices();
      for (const std::string& request_name : device.requests) out->add_request_names(request_name);
      out->set_pool_name(device.pool);
      out->set_device_name(device.device);
      for (const std::string& id : device.cdi_ids) out->add_cdi_device_ids(id);
    }
  }
  return response;
}

absl::StatusOr<drav1::NodeUnprepareResourcesResponse> Unprepare(
    ClaimPreparer& preparer, const drav1::NodeUnprepareResourcesRequest& request) {
  drav1::NodeUnprepareResourcesResponse response;
  for (const drav1::Claim& claim : request.claims()) {
    drav1::NodeUnprepareResourceResponse& entry = (*response.mutable_claims())[claim.uid()];
    if (absl::Status st = preparer.Unprepare(claim.uid()); !st.ok()) {
      entry.set_error(std::string(st.message()));
    }
  }
  return response;
}

healthpb::NodeWatchResourcesResponse HealthResponse(const std::string& pool,
                                                    const std::vector<DeviceHealth>& devices,
                                                    absl::Time checked) {
  healthpb::NodeWatchResourcesResponse response;
  for (const DeviceHealth& device : devices) {
    healthpb::DeviceHealth* out = response.add_devices();
    out->mutable_device()->set_pool_name(pool);
    out->mutable_device()->set_device_name(device.device);
    out->set_health(device.healthy ? healthpb::HEALTHY : healthpb::UNHEALTHY);
    // The monitor watches without pause: every send is a fresh check.
    out->set_last_updated_time(absl::ToUnixSeconds(checked));
    out->set_health_check_timeout_seconds(kHealthCheckTimeoutSeconds);
    out->set_message(device.message.substr(0, 1024));
  }
  return response;
}

}  // namespace

void HealthFeed::Set(std::vector<DeviceHealth> devices) {
  {
    std::lock_guard lock(mutex_);
    if (devices == devices_) return;
    devices_ = std::move(devices);
    ++version_;
  }
  changed_.notify_all();
}

std::pair<std::vector<DeviceHealth>, uint64_t> HealthFeed::WaitNewer(
    uint64_t seen, std::chrono::milliseconds timeout, const std::function<bool()>& over) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return version_ != seen || over(); });
  return {devices_, version_};
}

void HealthFeed::Wake() {
  {
    // Taken so that a stream between its check and its wait does not miss the wake.
    std::lock_guard lock(mutex_);
  }
  changed_.notify_all();
}

h2grpc::Service DraService(ClaimPreparer& preparer, HealthFeed& feed) {
  h2grpc::Service service;
  for (const char* package : kPackages) {
    service.AddUnary<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(
        core::StrCat("/", package, ".DRAPlugin/NodePrepareResources"),
        [&preparer](const drav1::NodePrepareResourcesRequest& request) {
          return Prepare(preparer, request);
        });
    service.AddUnary<drav1::NodeUnprepareResourcesRequest, drav1::NodeUnprepareResourcesResponse>(
        core::StrCat("/", package, ".DRAPlugin/NodeUnprepareResources"),
        [&preparer](const drav1::NodeUnprepareResourcesRequest& request) {
          return Unprepare(preparer, request);
        });
  }
  service.AddServerStreaming<healthpb::NodeWatchResourcesRequest>(
      "/v1alpha1.DRAResourceHealth/NodeWatchResources",
      [&feed](const healthpb::NodeWatchResourcesRequest&, h2grpc::ServerStream& stream) {
        stream.SetOnCancel([&feed] { feed.Wake(); });
        uint64_t seen = 0;
        bool first = true;
        auto over = [&stream] { return stream.cancelled(); };
        while (!over()) {
          auto [devices, version] = feed.WaitNewer(first ? ~uint64_t{0} : seen,
                                                   std::chrono::milliseconds(kHealthResend), over);
          first = false;
          if (stream.cancelled()) break;
          // Sent on a change, and again when nothing changed for kHealthResend, so that the
          // kubelet's timeout never turns a healthy device Unknown.
          seen = version;
          if (!stream.Write(HealthResponse(feed.pool(), devices, feed.Now()))) break;
        }
        stream.SetOnCancel(nullptr);
        return absl::OkStatus();
      });
  return service;
}

h2grpc::Service RegistrationService(RegistrationInfo info) {
  namespace reg = pluginregistration;
  h2grpc::Service service;
  service.AddUnary<reg::InfoRequest, reg::PluginInfo>(
      "/pluginregistration.Registration/GetInfo",
      [endpoint = info.endpoint](const reg::InfoRequest&) -> absl::StatusOr<reg::PluginInfo> {
        reg::PluginInfo plugin;
        plugin.set_type("DRAPlugin");
        plugin.set_name(gpu::kDriverName);
        plugin.set_endpoint(endpoint);
        for (const char* version : kSupportedServices) plugin.add_supported_versions(version);
        return plugin;
      });
  service.AddUnary<reg::RegistrationStatus, reg::RegistrationStatusResponse>(
      "/pluginregistration.Registration/NotifyRegistrationStatus",
      [on_status = info.on_status](const reg::RegistrationStatus& status)
          -> absl::StatusOr<reg::RegistrationStatusResponse> {
        if (on_status) on_status(status.plugin_registered(), status.error());
        return reg::RegistrationStatusResponse();
      });
  return service;
}

}  // namespace gpunode::dra
