// Fuzzes the request handling the kubelet drives: the first byte picks a resource shape (whole
// GPUs of a DGX-1, four replicas each, or MIG devices) and a request kind, the rest is a
// serialized AllocateRequest or PreferredAllocationRequest. Any request must get an answer or an
// error, and an answer must only name devices of the resource.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "google/protobuf/stubs/logging.h"
#include "plugin/rm/resources.h"
#include "plugin/server/request_handler.h"

namespace gpunode::plugin {
namespace {

using plugin_config::Config;
using plugin_config::DeviceListStrategy;
using plugin_config::MigStrategy;

struct Shape {
  std::shared_ptr<PluginState> state;
  Resource resource;
  std::set<std::string> ids;
};

Shape MakeShape(int kind) {
  Shape shape;
  shape.state = std::make_shared<PluginState>();
  Node& node = shape.state->node;
  for (unsigned i = 0; i < 8; ++i) {
    NodeGpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + std::to_string(i);
    gpu.minor = i;
    gpu.numa_node = i < 4 ? 0 : 1;
    if (kind == 2 && i < 2) {
      gpu.mig_enabled = true;
      gpu.migs.push_back({"MIG-" + std::to_string(i), "1g.10gb", 7, 0, 0});
      gpu.migs.push_back({"MIG-b" + std::to_string(i), "1g.10gb", 8, 0, 1});
    }
    node.gpus.push_back(gpu);
  }
  node.scores.assign(8, std::vector<int>(8, 0));
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) node.scores[a][b] = ((a ^ b) == 1 ? 200 : (a / 4 == b / 4 ? 20 : 10));
  Config& config = shape.state->config;
  config.pass_device_specs = true;
  config.device_list_strategies = {DeviceListStrategy::kEnvvar, DeviceListStrategy::kVolumeMounts,
                                   DeviceListStrategy::kCdiAnnotations};
  if (kind == 1) config.time_slicing.resources = {{"nvidia.com/gpu", 4}};
  if (kind == 2) config.mig_strategy = MigStrategy::kMixed;
  shape.state->host.mig_minors = {{"gpu0/gi7/access", 3}, {"gpu0/gi7/ci0/access", 4}};
  std::vector<std::string> warnings;
  std::vector<Resource> resources = *BuildResources(node, config, &warnings);
  shape.resource = resources.back();
  for (const PluginDevice& d : shape.resource.devices) shape.ids.insert(d.id);
  return shape;
}

}  // namespace
}  // namespace gpunode::plugin

// Invalid UTF-8 in a string field is a parse failure the handler never sees; protobuf logs each.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::plugin;
  static const Shape shapes[3] = {MakeShape(0), MakeShape(1), MakeShape(2)};
  if (size == 0) return 0;
  const Shape& shape = shapes[data[0] % 3];
  gpunode::health::HealthBoard board;
  board.SetGpu(data[0] % 8, false);
  RequestHandler handler(shape.resource, shape.state, board);
  if ((data[0] / 3) % 2 == 0) {
    v1beta1::AllocateRequest request;
    if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    absl::StatusOr<v1beta1::AllocateResponse> response = handler.Allocate(request);
    if (response.ok() && response->container_responses_size() != request.container_requests_size())
      std::abort();
  } else {
    v1beta1::PreferredAllocationRequest request;
    if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    absl::StatusOr<v1beta1::PreferredAllocationResponse> response =
        handler.PreferredAllocation(request);
    if (!response.ok()) return 0;
    for (int c = 0; c < response->container_responses_size(); ++c) {
      const auto& ids = response->container_responses(c).deviceids();
      if (ids.size() != request.container_requests(c).allocation_size()) std::abort();
      std::set<std::string> unique(ids.begin(), ids.end());
      if (unique.size() != static_cast<size_t>(ids.size())) std::abort();
      for (const std::string& id : ids)
        if (!shape.ids.contains(id)) std::abort();
      for (const std::string& id : request.container_requests(c).must_include_deviceids())
        if (!unique.contains(id)) std::abort();
    }
  }
  return 0;
}
