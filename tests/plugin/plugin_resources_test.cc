// Resource names and device IDs under each MIG strategy and time-slicing, and the Allocate
// answers of each device list strategy, on hand-made nodes.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/rm/resources.h"
#include "plugin/server/container_response.h"
#include "plugin/server/request_handler.h"

namespace gpunode::plugin {
namespace {

using plugin_config::Config;
using plugin_config::DeviceIdStrategy;
using plugin_config::DeviceListStrategy;
using plugin_config::MigStrategy;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

NodeGpu Gpu(unsigned index, std::vector<MigSlice> migs = {}, bool mig_enabled = false) {
  NodeGpu gpu;
  gpu.index = index;
  gpu.uuid = "GPU-" + std::to_string(index);
  gpu.minor = index + 10;
  gpu.numa_node = index < 2 ? 0 : 1;
  gpu.mig_enabled = mig_enabled || !migs.empty();
  gpu.migs = std::move(migs);
  return gpu;
}

MigSlice Mig(const std::string& uuid, const std::string& profile, unsigned gi, unsigned ci,
             unsigned position) {
  return MigSlice{uuid, profile, gi, ci, position};
}

Node PlainNode(unsigned gpus) {
  Node node;
  for (unsigned i = 0; i < gpus; ++i) node.gpus.push_back(Gpu(i));
  node.scores.assign(gpus, std::vector<int>(gpus, 10));
  return node;
}

Node MigNode() {
  Node node;
  node.gpus.push_back(Gpu(0, {Mig("MIG-a", "3g.40gb", 1, 0, 0), Mig("MIG-b", "1g.10gb", 9, 0, 1)}));
  node.gpus.push_back(Gpu(1, {Mig("MIG-c", "1g.10gb+me", 7, 0, 0)}));
  node.gpus.push_back(Gpu(2));
  node.scores.assign(3, std::vector<int>(3, 10));
  return node;
}

std::vector<std::string> Ids(const Resource& r) {
  std::vector<std::string> ids;
  for (const PluginDevice& d : r.devices) ids.push_back(d.id);
  return ids;
}

TEST(Resources, WholeGpusAsNvidiaComGpu) {
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(PlainNode(2), Config{}, &warnings);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ASSERT_EQ(rs->size(), 1u);
  EXPECT_EQ((*rs)[0].name, "nvidia.com/gpu");
  EXPECT_EQ((*rs)[0].socket_name, "nvidia-gpu.sock");
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("GPU-0", "GPU-1"));
  EXPECT_EQ((*rs)[0].devices[1].index, "1");
}

TEST(Resources, TimeSlicingReplicasAndRename) {
  Config config;
  config.time_slicing.resources = {{"nvidia.com/gpu", 3}};
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(PlainNode(2), config, &warnings);
  ASSERT_TRUE(rs.ok());
  EXPECT_THAT(Ids((*rs)[0]),
              ElementsAre("GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-1::0", "GPU-1::1", "GPU-1::2"));
  EXPECT_TRUE((*rs)[0].shared());
  config.time_slicing.rename_by_default = true;
  rs = BuildResources(PlainNode(2), config, &warnings);
  EXPECT_EQ((*rs)[0].name, "nvidia.com/gpu.shared");
  EXPECT_EQ((*rs)[0].socket_name, "nvidia-gpu.shared.sock");
  config.time_slicing.resources = {{"nvidia.com/mig-1g.10gb", 2}};
  rs = BuildResources(PlainNode(2), config, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("nvidia.com/mig-1g.10gb is not a resource of this node"));
}

TEST(Resources, MpsReplicasKeepTheirDirectoryNameWhenRenamed) {
  Config config;
  config.time_slicing.resources = {{"nvidia.com/gpu", 4}};  // hidden by mps, as NVIDIA's
  config.mps.resources = {{"nvidia.com/gpu", 2}};
  config.mps.fail_requests_greater_than_one = true;
  config.mps.rename_by_default = true;
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(PlainNode(2), config, &warnings);
  ASSERT_TRUE(rs.ok()) << rs.status();
  const Resource& r = (*rs)[0];
  EXPECT_TRUE(r.mps);
  EXPECT_TRUE(r.fail_requests_greater_than_one);
  EXPECT_EQ(r.name, "nvidia.com/gpu.shared");
  EXPECT_THAT(Ids(r), ElementsAre("GPU-0::0", "GPU-0::1", "GPU-1::0", "GPU-1::1"));
}

TEST(Resources, MpsIsRefusedOnMigDevices) {
  Config config;
  config.mig_strategy = MigStrategy::kSingle;
  config.mps.resources = {{"nvidia.com/gpu", 2}};
  Node node = MigNode();
  std::vector<std::string> warnings;
  // MigNode mixes layouts; keep the first GPU, whose MIG devices share a profile.
  node.gpus.resize(1);
  node.gpus[0].migs.resize(1);
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(node, config, &warnings);
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(std::string(rs.status().message()),
              HasSubstr("holds MIG-a on GPU 0, which is in MIG mode, and MPS is not supported "
                        "with MIG; turn MIG off on GPU 0"));
}

TEST(Resources, MigMixedNamesEachProfile) {
  Config config;
  config.mig_strategy = MigStrategy::kMixed;
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(MigNode(), config, &warnings);
  ASSERT_TRUE(rs.ok()) << rs.status();
  std::vector<std::pair<std::string, std::vector<std::string>>> got;
  for (const Resource& r : *rs) got.emplace_back(r.name, Ids(r));
  EXPECT_THAT(got, UnorderedElementsAre(Pair("nvidia.com/gpu", ElementsAre("GPU-2")),
                                        Pair("nvidia.com/mig-3g.40gb", ElementsAre("MIG-a")),
                                        Pair("nvidia.com/mig-1g.10gb", ElementsAre("MIG-b")),
                                        Pair("nvidia.com/mig-1g.10gb.me", ElementsAre("MIG-c"))));
  for (const Resource& r : *rs) {
    if (r.name == "nvidia.com/mig-1g.10gb") {
      EXPECT_EQ(r.devices[0].index, "0:1");
      EXPECT_EQ(r.socket_name, "nvidia-mig-1g.10gb.sock");
    }
  }
}

TEST(Resources, MigSingleRefusesMixedLayouts) {
  Config config;
  config.mig_strategy = MigStrategy::kSingle;
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<Resource>> rs = BuildResources(MigNode(), config, &warnings);
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(rs.status().message(), HasSubstr("same migEnabled value"));
  Node node = MigNode();
  node.gpus.pop_back();
  rs = BuildResources(node, config, &warnings);
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(rs.status().message(),
              HasSubstr("more than one MIG device type present on node (1g.10gb, 1g.10gb+me, "
                        "3g.40gb); give every GPU the same layout or use migStrategy mixed"));
  node.gpus = {Gpu(0, {Mig("MIG-x", "1g.10gb", 7, 0, 0)}),
               Gpu(1, {Mig("MIG-y", "1g.10gb", 8, 0, 0)})};
  rs = BuildResources(node, config, &warnings);
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ((*rs)[0].name, "nvidia.com/gpu");
  EXPECT_THAT(Ids((*rs)[0]), ElementsAre("MIG-x", "MIG-y"));
  node.gpus = {Gpu(0, {}, /*mig_enabled=*/true)};
  rs = BuildResources(node, config, &warnings);
  ASSERT_FALSE(rs.ok());
  EXPECT_THAT(rs.status().message(), HasSubstr("device 0 has no MIG devices configured"));
}

class AllocateTest : public ::testing::Test {
 protected:
  std::vector<const PluginDevice*> Devices(const Resource& r, std::vector<size_t> positions) {
    std::vector<const PluginDevice*> out;
    for (size_t p : positions) out.push_back(&r.devices[p]);
    return out;
  }
  Resource Build(const Node& node, const Config& config) {
    std::vector<std::string> warnings;
    return BuildResources(node, config, &warnings)->front();
  }
};

TEST_F(AllocateTest, EnvvarJoinsUniqueUuidsOrIndices) {
  Config config;
  config.time_slicing.resources = {{"nvidia.com/gpu", 2}};
  Node node = PlainNode(3);
  Resource r = Build(node, config);
  absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
      ContainerResponse(config, node, {}, Devices(r, {0, 1, 4}));
  ASSERT_TRUE(response.ok());
  EXPECT_THAT(response->envs(), UnorderedElementsAre(Pair(kVisibleDevices, "GPU-0,GPU-2")));
  EXPECT_EQ(response->devices_size(), 0);
  config.device_id_strategy = DeviceIdStrategy::kIndex;
  response = ContainerResponse(config, node, {}, Devices(r, {4, 0}));
  EXPECT_THAT(response->envs(), UnorderedElementsAre(Pair(kVisibleDevices, "2,0")));
}

TEST_F(AllocateTest, VolumeMountsAndCdi) {
  Config config;
  config.device_list_strategies = {DeviceListStrategy::kVolumeMounts};
  Node node = PlainNode(2);
  Resource r = Build(node, config);
  absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
      ContainerResponse(config, node, {}, Devices(r, {0, 1}));
  EXPECT_THAT(response->envs(),
              UnorderedElementsAre(Pair(kVisibleDevices, "/var/run/nvidia-container-devices")));
  ASSERT_EQ(response->mounts_size(), 2);
  EXPECT_EQ(response->mounts(1).host_path(), "/dev/null");
  EXPECT_EQ(response->mounts(1).container_path(), "/var/run/nvidia-container-devices/GPU-1");

  config.device_list_strategies = {DeviceListStrategy::kCdiAnnotations,
                                   DeviceListStrategy::kCdiCri};
  config.pass_device_specs = true;
  response = ContainerResponse(config, node, {}, Devices(r, {1}));
  ASSERT_EQ(response->annotations_size(), 1);
  const auto& [key, value] = *response->annotations().begin();
  EXPECT_THAT(key, ::testing::StartsWith("cdi.k8s.io/nvidia-device-plugin_"));
  EXPECT_EQ(value, "k8s.device-plugin.nvidia.com/gpu=GPU-1");
  ASSERT_EQ(response->cdi_devices_size(), 1);
  EXPECT_EQ(response->cdi_devices(0).name(), "k8s.device-plugin.nvidia.com/gpu=GPU-1");
  // CDI only: the runtime injects the rest from the spec.
  EXPECT_EQ(response->envs_size(), 0);
  EXPECT_EQ(response->devices_size(), 0);
}

TEST_F(AllocateTest, DeviceSpecsWithControlDevicesAndMigCaps) {
  Config config;
  config.mig_strategy = MigStrategy::kMixed;
  config.pass_device_specs = true;
  config.nvidia_dev_root = "/host";
  Node node = MigNode();
  std::vector<std::string> warnings;
  std::vector<Resource> rs = *BuildResources(node, config, &warnings);
  const Resource* mig = nullptr;
  for (const Resource& r : rs)
    if (r.name == "nvidia.com/mig-3g.40gb") mig = &r;
  ASSERT_NE(mig, nullptr);
  HostDevices host;
  host.control = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  host.mig_minors = {{"gpu10/gi1/access", 21}, {"gpu10/gi1/ci0/access", 22}};
  absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
      ContainerResponse(config, node, host, Devices(*mig, {0}));
  ASSERT_TRUE(response.ok()) << response.status();
  std::vector<std::pair<std::string, std::string>> specs;
  for (const v1beta1::DeviceSpec& spec : response->devices()) {
    EXPECT_EQ(spec.permissions(), "rw");
    specs.emplace_back(spec.container_path(), spec.host_path());
  }
  EXPECT_THAT(
      specs,
      ElementsAre(Pair("/dev/nvidiactl", "/host/dev/nvidiactl"),
                  Pair("/dev/nvidia-uvm", "/host/dev/nvidia-uvm"),
                  Pair("/dev/nvidia10", "/host/dev/nvidia10"),
                  Pair("/dev/nvidia-caps/nvidia-cap21", "/host/dev/nvidia-caps/nvidia-cap21"),
                  Pair("/dev/nvidia-caps/nvidia-cap22", "/host/dev/nvidia-caps/nvidia-cap22")));
  host.mig_minors.clear();
  response = ContainerResponse(config, node, host, Devices(*mig, {0}));
  ASSERT_FALSE(response.ok());
  EXPECT_THAT(response.status().message(), HasSubstr("gpu10/gi1/access"));
}

TEST(RequestHandler, AllocateErrorsNameTheProblem) {
  auto state = std::make_shared<PluginState>();
  state->node = PlainNode(4);
  state->config.time_slicing.resources = {{"nvidia.com/gpu", 4}};
  state->config.time_slicing.fail_requests_greater_than_one = true;
  std::vector<std::string> warnings;
  Resource r = BuildResources(state->node, state->config, &warnings)->front();
  health::HealthBoard board;
  RequestHandler handler(r, state, board);

  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("GPU-9::0");
  absl::StatusOr<v1beta1::AllocateResponse> response = handler.Allocate(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().message(),
            "invalid request for \"nvidia.com/gpu\": unknown device: GPU-9::0");

  request.mutable_container_requests(0)->clear_devices_ids();
  request.mutable_container_requests(0)->add_devices_ids("GPU-0::0");
  request.mutable_container_requests(0)->add_devices_ids("GPU-1::0");
  response = handler.Allocate(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().message(),
            "invalid allocation request for \"nvidia.com/gpu\": invalid request: maximum request "
            "size for shared resources is 1; found 2");

  board.SetGpu(1, false);
  request.mutable_container_requests(0)->clear_devices_ids();
  request.mutable_container_requests(0)->add_devices_ids("GPU-1::3");
  response = handler.Allocate(request);
  ASSERT_FALSE(response.ok());
  EXPECT_THAT(response.status().message(), HasSubstr("device GPU-1::3 is Unhealthy"));

  v1beta1::ListAndWatchResponse list = handler.Devices();
  ASSERT_EQ(list.devices_size(), 16);
  for (const v1beta1::Device& d : list.devices()) {
    bool on_gpu1 = d.id().rfind("GPU-1::", 0) == 0;
    EXPECT_EQ(d.health(), on_gpu1 ? "Unhealthy" : "Healthy") << d.id();
    ASSERT_EQ(d.topology().nodes_size(), 1);
  }
  EXPECT_EQ(list.devices(12).topology().nodes(0).id(), 1);
}

TEST(RequestHandler, PreferredAllocationValidatesItsInput) {
  auto state = std::make_shared<PluginState>();
  state->node = PlainNode(4);
  state->node.scores[1][3] = state->node.scores[3][1] = 500;
  std::vector<std::string> warnings;
  Resource r = BuildResources(state->node, state->config, &warnings)->front();
  health::HealthBoard board;
  RequestHandler handler(r, state, board);
  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const char* id : {"GPU-0", "GPU-1", "GPU-2", "GPU-3"}) c->add_available_deviceids(id);
  c->set_allocation_size(2);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> response =
      handler.PreferredAllocation(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->container_responses(0).deviceids(), ElementsAre("GPU-1", "GPU-3"));
  c->set_allocation_size(5);
  EXPECT_THAT(handler.PreferredAllocation(request).status().message(),
              HasSubstr("asked for 5, 4 available"));
  c->set_allocation_size(0);
  EXPECT_FALSE(handler.PreferredAllocation(request).ok());
  c->set_allocation_size(1);
  c->add_must_include_deviceids("GPU-0");
  c->add_must_include_deviceids("GPU-2");
  EXPECT_THAT(handler.PreferredAllocation(request).status().message(),
              HasSubstr("2 devices must be included but allocation_size is 1"));
}

}  // namespace
}  // namespace gpunode::plugin
