// Answers the kubelet's requests for one resource (options, device list, preferred allocation,
// Allocate) from state read at start: plain functions of protobuf messages, without gRPC, so
// that tests and fuzzers call them directly.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "health/health_board.h"
#include "plugin/mps/mps_readiness.h"
#include "plugin/rm/node.h"
#include "plugin/rm/resources.h"
#include "plugin/server/host_devices.h"
#include "plugin_config/config.h"

namespace gpunode::plugin {

// What every resource of one plugin generation shares; replaced as a whole on reload.
struct PluginState {
  plugin_config::Config config;
  Node node;
  HostDevices host;
  // The MPS daemons' state, when a resource is shared through MPS.
  std::shared_ptr<const MpsReadiness> mps;
};

class RequestHandler {
 public:
  RequestHandler(Resource resource, std::shared_ptr<const PluginState> state,
                 const health::HealthBoard& board);

  const Resource& resource() const { return resource_; }

  v1beta1::DevicePluginOptions Options() const;
  // Every device with its current health and NUMA node.
  v1beta1::ListAndWatchResponse Devices() const;
  absl::StatusOr<v1beta1::PreferredAllocationResponse> PreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request) const;
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const v1beta1::AllocateRequest& request) const;

 private:
  absl::StatusOr<size_t> Find(const std::string& id) const;
  absl::StatusOr<std::vector<size_t>> FindAll(
      const google::protobuf::RepeatedPtrField<std::string>& ids) const;
  absl::StatusOr<std::vector<std::string>> Preferred(
      const v1beta1::ContainerPreferredAllocationRequest& request) const;
  bool Healthy(const PluginDevice& device) const;
  MpsState MpsDaemon() const;

  Resource resource_;
  std::shared_ptr<const PluginState> state_;
  const health::HealthBoard& board_;
  std::map<std::string, size_t> by_id_;
  bool whole_gpus_;  // neither shared nor MIG: the topology-aware search applies
};

}  // namespace gpunode::plugin
