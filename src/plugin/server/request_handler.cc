#include "plugin/server/request_handler.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "plugin/allocation/best_set.h"
#include "plugin/allocation/replica_policy.h"
#include "plugin/mps/mps_allocation.h"
#include "plugin/server/container_response.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

RequestHandler::RequestHandler(Resource resource, std::shared_ptr<const PluginState> state,
                               const health::HealthBoard& board)
    : resource_(std::move(resource)), state_(std::move(state)), board_(board) {
  whole_gpus_ = !resource_.shared();
  for (size_t i = 0; i < resource_.devices.size(); ++i) {
    by_id_.emplace(resource_.devices[i].id, i);
    if (resource_.devices[i].mig) whole_gpus_ = false;
  }
}

bool RequestHandler::Healthy(const PluginDevice& device) const {
  std::optional<health::MigKey> mig;
  if (device.mig) mig = health::MigKey{device.gpu, device.mig->gi, device.mig->ci};
  if (resource_.mps && MpsDaemon() != MpsState::kUp) return false;
  return board_.Healthy(device.gpu, mig);
}

MpsState RequestHandler::MpsDaemon() const {
  return state_->mps ? state_->mps->state(resource_.name) : MpsState::kNotReady;
}

v1beta1::DevicePluginOptions RequestHandler::Options() const {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(false);
  options.set_get_preferred_allocation_available(true);
  return options;
}

v1beta1::ListAndWatchResponse RequestHandler::Devices() const {
  v1beta1::ListAndWatchResponse response;
  // Replicas that no MPS daemon serves yet are not offered at all.
  if (resource_.mps && MpsDaemon() == MpsState::kNotReady) return response;
  for (const PluginDevice& device : resource_.devices) {
    v1beta1::Device* out = response.add_devices();
    out->set_id(device.id);
    out->set_health(Healthy(device) ? "Healthy" : "Unhealthy");
    if (device.numa_node && *device.numa_node >= 0) {
      out->mutable_topology()->add_nodes()->set_id(*device.numa_node);
    }
  }
  return response;
}

absl::StatusOr<size_t> RequestHandler::Find(const std::string& id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid request for \"", resource_.name, "\": unknown device: ", id));
  }
  return it->second;
}

absl::StatusOr<std::vector<size_t>> RequestHandler::FindAll(
    const google::protobuf::RepeatedPtrField<std::string>& ids) const {
  std::vector<size_t> out;
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(size_t position, Find(id));
    if (std::find(out.begin(), out.end(), position) == out.end()) out.push_back(position);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> RequestHandler::Preferred(
    const v1beta1::ContainerPreferredAllocationRequest& request) const {
  ASSIGN_OR_RETURN(std::vector<size_t> available, FindAll(request.available_deviceids()));
  ASSIGN_OR_RETURN(std::vector<size_t> required, FindAll(request.must_include_deviceids()));
  for (size_t position : required) {
    if (std::find(available.begin(), available.end(), position) == available.end())
      available.push_back(position);
  }
  if (request.allocation_size() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid request for \"", resource_.name, "\": allocation_size is ",
                     request.allocation_size(), "; ask for 1 or more"));
  }
  size_t size = static_cast<size_t>(request.allocation_size());
  if (size > available.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not enough available devices to satisfy allocation for \"", resource_.name,
                     "\": asked for ", size, ", ", available.size(), " available"));
  }
  if (required.size() > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid request for \"", resource_.name, "\": ", required.size(),
                     " devices must be included but allocation_size is ", size));
  }

  std::vector<std::string> ids;
  if (whole_gpus_) {
    // Search over GPU positions, then map back to the device IDs.
    std::map<size_t, size_t> device_of_gpu;
    std::vector<size_t> gpus_available, gpus_required;
    for (size_t position : available) {
      device_of_gpu[resource_.devices[position].gpu] = position;
      gpus_available.push_back(resource_.devices[position].gpu);
    }
    for (size_t position : required) gpus_required.push_back(resource_.devices[position].gpu);
    BestSetResult best = BestSetWithin(state_->node.scores, gpus_available, gpus_required, size);
    if (!best.exact) {
      spdlog::warn(
          "{}: the preferred allocation of {} of {} GPUs stopped at its search budget; "
          "answering with the best set found by then",
          resource_.name, size, gpus_available.size());
    }
    for (size_t gpu : best.set) ids.push_back(resource_.devices[device_of_gpu[gpu]].id);
  } else {
    std::sort(available.begin(), available.end());
    for (size_t position : PickShared(resource_, available, required, size,
                                      state_->config.shared_allocation_policy)) {
      ids.push_back(resource_.devices[position].id);
    }
  }
  return ids;
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> RequestHandler::PreferredAllocation(
    const v1beta1::PreferredAllocationRequest& request) const {
  v1beta1::PreferredAllocationResponse response;
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request.container_requests()) {
    ASSIGN_OR_RETURN(std::vector<std::string> ids, Preferred(container));
    v1beta1::ContainerPreferredAllocationResponse* out = response.add_container_responses();
    for (std::string& id : ids) out->add_deviceids(std::move(id));
  }
  return response;
}

absl::StatusOr<v1beta1::AllocateResponse> RequestHandler::Allocate(
    const v1beta1::AllocateRequest& request) const {
  v1beta1::AllocateResponse response;
  for (const v1beta1::ContainerAllocateRequest& container : request.container_requests()) {
    const int count = container.devices_ids_size();
    if (count == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid allocation request for \"", resource_.name, "\": no devices"));
    }
    if (resource_.shared() && resource_.fail_requests_greater_than_one && count > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid allocation request for \"", resource_.name,
                       "\": invalid request: maximum request size for shared resources is 1; "
                       "found ",
                       count));
    }
    std::vector<const PluginDevice*> devices;
    for (const std::string& id : container.devices_ids()) {
      ASSIGN_OR_RETURN(size_t position, Find(id));
      const PluginDevice& device = resource_.devices[position];
      if (!Healthy(device)) {
        return absl::FailedPreconditionError(absl::StrCat("invalid allocation request for \"",
                                                          resource_.name, "\": device ", id,
                                                          " is Unhealthy"));
      }
      devices.push_back(&device);
    }
    ASSIGN_OR_RETURN(v1beta1::ContainerAllocateResponse out,
                     ContainerResponse(state_->config, state_->node, state_->host, devices));
    if (resource_.mps) AddMpsClient(state_->config.mps_root, resource_, out);
    *response.add_container_responses() = std::move(out);
  }
  return response;
}

}  // namespace gpunode::plugin
