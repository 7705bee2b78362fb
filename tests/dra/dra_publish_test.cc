// The ResourceSlice publisher against an API answered in this process (the real API server is
// met in tests/k8s): nothing written when the pool already holds the devices, one generation up
// and the same names when they change, leftovers deleted; and the check for a device plugin
// serving the node.
#include <sys/socket.h>
#include <sys/un.h>

#include <filesystem>
#include <map>

#include "core/unique_fd.h"
#include "core/unix_socket.h"
#include "dra/dra_plugin.h"
#include "dra/resource_slice.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/simulated_env.h"
#include "nlohmann/json.hpp"
#include "temp_dir.h"

namespace gpunode::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

kube::HttpResponse Answer(int status, std::string body) {
  kube::HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

// Holds the slices the publisher wrote and answers its node GET, list, PUT, POST and DELETE as the
// API server does; records each request as "METHOD path".
class SliceApi : public kube::HttpTransport {
 public:
  explicit SliceApi(std::vector<std::string>* requests) : requests_(requests) {}
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    requests_->push_back(request.method + " " + request.path.substr(0, request.path.find('?')));
    if (request.path == "/api/v1/nodes/node-a") {
      return Answer(200, json{{"metadata", {{"name", "node-a"}, {"uid", "n-uid"}}}}.dump());
    }
    const std::string base = "/apis/resource.k8s.io/v1/resourceslices";
    if (request.method == "GET") {
      json items = json::array();
      for (const auto& [name, slice] : slices) items.push_back(slice);
      return Answer(200, json{{"items", items}}.dump());
    }
    if (request.method == "POST") {
      json slice = StampTaints(json::parse(request.body));
      std::string name =
          slice["metadata"]["generateName"].get<std::string>() + std::to_string(++made_);
      slice["metadata"].erase("generateName");
      slice["metadata"]["name"] = name;
      slice["metadata"]["resourceVersion"] = "1";
      slices[name] = slice;
      return Answer(201, slice.dump());
    }
    std::string name = request.path.substr(base.size() + 1);
    if (request.method == "PUT") {
      json slice = StampTaints(json::parse(request.body));
      if (slice["metadata"]["resourceVersion"] != slices[name]["metadata"]["resourceVersion"]) {
        return Answer(409, "{}");
      }
      slice["metadata"]["resourceVersion"] = "2";
      slices[name] = slice;
      return Answer(200, slice.dump());
    }
    slices.erase(name);
    return Answer(200, "{}");
  }

  std::map<std::string, json> slices;

 private:
  // As the API server does: a taint written without timeAdded gets the time of the write.
  json StampTaints(json slice) {
    for (json& device : slice["spec"]["devices"]) {
      if (!device.contains("taints")) continue;
      for (json& taint : device["taints"]) {
        if (!taint.contains("timeAdded")) taint["timeAdded"] = "t" + std::to_string(++clock_);
      }
    }
    return slice;
  }

  int clock_ = 0;
  std::vector<std::string>* requests_;
  int made_ = 0;
};

gpu::DraDevice Gpu(const std::string& name, const std::string& product) {
  gpu::DraDevice device;
  device.name = name;
  device.attributes["productName"] = {{"string", product}};
  return device;
}

TEST(SlicePublisher, WritesOnlyWhatChangedAsTheNextGenerationOfThePool) {
  std::vector<std::string> requests;
  auto api = std::make_unique<SliceApi>(&requests);
  SliceApi* server = api.get();
  gpunode::testing::SimulatedEnv env;
  kube::Client client(std::move(api), {}, "test", env);
  SlicePublisher publisher(client, "node-a");

  ASSERT_TRUE(publisher.Publish({Gpu("gpu-0", "H100"), Gpu("gpu-1", "H100")}).ok());
  EXPECT_THAT(requests,
              ElementsAre("GET /api/v1/nodes/node-a", "GET /apis/resource.k8s.io/v1/resourceslices",
                          "POST /apis/resource.k8s.io/v1/resourceslices"));
  ASSERT_EQ(server->slices.size(), 1u);
  std::string name = server->slices.begin()->first;
  EXPECT_THAT(name, ::testing::StartsWith("node-a-gpu.nvidia.com-"));
  const json& first = server->slices[name];
  EXPECT_EQ(first["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(first["metadata"]["ownerReferences"][0]["uid"], "n-uid");

  // The same devices again (the next rescan): read, nothing written.
  requests.clear();
  ASSERT_TRUE(publisher.Publish({Gpu("gpu-0", "H100"), Gpu("gpu-1", "H100")}).ok());
  EXPECT_THAT(requests, ElementsAre("GET /apis/resource.k8s.io/v1/resourceslices"));
  EXPECT_EQ(publisher.writes(), 1);

  // A GPU lost: the same slice, replaced, one generation up.
  requests.clear();
  ASSERT_TRUE(publisher.Publish({Gpu("gpu-0", "H100")}).ok());
  EXPECT_THAT(requests, ElementsAre("GET /apis/resource.k8s.io/v1/resourceslices",
                                    "PUT /apis/resource.k8s.io/v1/resourceslices/" + name));
  ASSERT_EQ(server->slices.size(), 1u);
  EXPECT_EQ(server->slices[name]["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(server->slices[name]["spec"]["devices"].size(), 1u);
}

TEST(SlicePublisher, SlicesLeftByAnEarlierRunAreAdoptedAndTheRestDeleted) {
  std::vector<std::string> requests;
  auto api = std::make_unique<SliceApi>(&requests);
  SliceApi* server = api.get();
  for (const char* name : {"node-a-gpu.nvidia.com-x", "node-a-gpu.nvidia.com-y"}) {
    server->slices[name] = {
        {"metadata", {{"name", name}, {"resourceVersion", "1"}}},
        {"spec",
         {{"pool", {{"generation", 7}, {"resourceSliceCount", 2}}}, {"devices", json::array()}}}};
  }
  gpunode::testing::SimulatedEnv env;
  kube::Client client(std::move(api), {}, "test", env);
  SlicePublisher publisher(client, "node-a");
  ASSERT_TRUE(publisher.Publish({Gpu("gpu-0", "A100")}).ok());
  EXPECT_THAT(
      requests,
      ElementsAre("GET /api/v1/nodes/node-a", "GET /apis/resource.k8s.io/v1/resourceslices",
                  "PUT /apis/resource.k8s.io/v1/resourceslices/node-a-gpu.nvidia.com-x",
                  "DELETE /apis/resource.k8s.io/v1/resourceslices/node-a-gpu.nvidia.com-y"));
  ASSERT_EQ(server->slices.size(), 1u);
  EXPECT_EQ(server->slices["node-a-gpu.nvidia.com-x"]["spec"]["pool"]["generation"], 8);
  EXPECT_EQ(server->slices["node-a-gpu.nvidia.com-x"]["spec"]["pool"]["resourceSliceCount"], 1);
}

TEST(SlicePublisher, ATaintThatStaysKeepsTheTimeTheApiServerGaveIt) {
  std::vector<std::string> requests;
  auto api = std::make_unique<SliceApi>(&requests);
  SliceApi* server = api.get();
  gpunode::testing::SimulatedEnv env;
  kube::Client client(std::move(api), {}, "test", env);
  SlicePublisher publisher(client, "node-a");
  gpu::DraDevice gpu0 = Gpu("gpu-0", "H100");
  gpu::DraDevice gpu1 = Gpu("gpu-1", "H100");
  gpu0.taints = {{"gpu.nvidia.com/xid", "62", "NoSchedule"}};
  ASSERT_TRUE(publisher.Publish({gpu0, gpu1}).ok());
  ASSERT_EQ(server->slices.size(), 1u);
  json& slice = server->slices.begin()->second;
  EXPECT_EQ(slice["spec"]["devices"][0]["taints"][0], json({{"key", "gpu.nvidia.com/xid"},
                                                            {"value", "62"},
                                                            {"effect", "NoSchedule"},
                                                            {"timeAdded", "t1"}}));
  EXPECT_FALSE(slice["spec"]["devices"][1].contains("taints"));

  // The stored taint has a time the wanted one lacks: still the same, nothing written.
  int writes = publisher.writes();
  ASSERT_TRUE(publisher.Publish({gpu0, gpu1}).ok());
  EXPECT_EQ(publisher.writes(), writes);

  // GPU 1 tainted too: GPU 0's taint keeps its time, GPU 1's is new.
  gpu1.taints = {{"gpu.nvidia.com/gpu-lost", "", "NoSchedule"}};
  ASSERT_TRUE(publisher.Publish({gpu0, gpu1}).ok());
  EXPECT_EQ(slice["spec"]["devices"][0]["taints"][0]["timeAdded"], "t1");
  EXPECT_EQ(slice["spec"]["devices"][1]["taints"][0]["timeAdded"], "t2");
  EXPECT_FALSE(slice["spec"]["devices"][1]["taints"][0].contains("value"));

  // Recovered: the taint is gone from the slice.
  gpu0.taints.clear();
  ASSERT_TRUE(publisher.Publish({gpu0, gpu1}).ok());
  EXPECT_FALSE(slice["spec"]["devices"][0].contains("taints"));
}

TEST(DevicePluginConflict, ALiveDevicePluginOrItsResourceOnTheNodeIsNamed) {
  testing::TempDir dir("gpunode-dra-conflict");
  json node_without = {{"status", {{"allocatable", {{"cpu", "8"}}}}}};
  json node_zero = {{"status", {{"allocatable", {{"nvidia.com/gpu", "0"}}}}}};
  json node_with = {{"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
  EXPECT_EQ(DevicePluginConflict(dir.path(), node_without.dump()), "");
  EXPECT_EQ(DevicePluginConflict(dir.path(), node_zero.dump()), "");
  EXPECT_EQ(DevicePluginConflict(dir.path(), "not json"), "");
  EXPECT_THAT(DevicePluginConflict(dir.path(), node_with.dump()),
              HasSubstr("the Node's allocatable has nvidia.com/gpu: 8"));

  // A socket whose program exited does not count; one that accepts does, the kubelet's own not.
  std::string path = dir.path() + "/nvidia-gpu.sock";
  absl::StatusOr<sockaddr_un> address = core::UnixAddress(path);
  ASSERT_TRUE(address.ok());
  {
    core::UniqueFd stale(::socket(AF_UNIX, SOCK_STREAM, 0));
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address),
              0);
  }
  EXPECT_EQ(DevicePluginConflict(dir.path(), node_without.dump()), "");
  EXPECT_FALSE(core::UnixSocketAccepts(path));
  std::filesystem::remove(path);
  core::UniqueFd live(::socket(AF_UNIX, SOCK_STREAM, 0));
  ASSERT_EQ(::bind(live.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address), 0);
  ASSERT_EQ(::listen(live.get(), 1), 0);
  EXPECT_TRUE(core::UnixSocketAccepts(path));
  EXPECT_THAT(DevicePluginConflict(dir.path(), node_without.dump()),
              HasSubstr("a device plugin serves on " + path));
  std::filesystem::rename(path, dir.path() + "/kubelet.sock");
  EXPECT_EQ(DevicePluginConflict(dir.path(), node_without.dump()), "");
  EXPECT_FALSE(core::UnixSocketAccepts(dir.path() + std::string(200, 'x')));
}

}  // namespace
}  // namespace gpunode::dra
