// The kubelet's device manager checkpoint, in the forms kubelets have written it.
#include <fstream>
#include <iterator>
#include <string>

#include "build_paths.h"
#include "gtest/gtest.h"
#include "host/device_checkpoint.h"

namespace gpunode::host {
namespace {

TEST(DeviceCheckpoint, NumaKeyedDeviceIds) {
  absl::StatusOr<DeviceCheckpoint> checkpoint = ParseDeviceCheckpoint(R"({
    "Data": {"PodDeviceEntries": [
      {"PodUID": "u1", "ContainerName": "c1", "ResourceName": "nvidia.com/gpu",
       "DeviceIDs": {"0": ["GPU-a"], "1": ["GPU-b", "GPU-a"]}, "AllocResp": "CgA="},
      {"PodUID": "u2", "ContainerName": "c2", "ResourceName": "nvidia.com/gpu",
       "DeviceIDs": {}, "AllocResp": "CgA="}],
      "RegisteredDevices": {"nvidia.com/gpu": ["GPU-b", "GPU-a"]}},
    "Checksum": 1})");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  ASSERT_EQ(checkpoint->allocations.size(), 1u) << "an entry without devices is dropped";
  const CheckpointAllocation& allocation = checkpoint->allocations[0];
  EXPECT_EQ(allocation.pod_uid, "u1");
  EXPECT_EQ(allocation.container, "c1");
  EXPECT_EQ(allocation.resource, "nvidia.com/gpu");
  EXPECT_EQ(allocation.device_ids, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(checkpoint->registered.at("nvidia.com/gpu"),
            (std::vector<std::string>{"GPU-a", "GPU-b"}));
}

TEST(DeviceCheckpoint, PreKubernetes120ListsAndEmptyFiles) {
  absl::StatusOr<DeviceCheckpoint> checkpoint = ParseDeviceCheckpoint(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r",)"
      R"("DeviceIDs":["GPU-x::3"]}],"RegisteredDevices":{}},"Checksum":2})");
  ASSERT_TRUE(checkpoint.ok());
  ASSERT_EQ(checkpoint->allocations.size(), 1u);
  EXPECT_EQ(checkpoint->allocations[0].device_ids, (std::vector<std::string>{"GPU-x::3"}));
  EXPECT_TRUE(checkpoint->registered.empty());
  checkpoint = ParseDeviceCheckpoint(R"({"Data":{"PodDeviceEntries":null}})");
  ASSERT_TRUE(checkpoint.ok());
  EXPECT_TRUE(checkpoint->allocations.empty());
  EXPECT_FALSE(ParseDeviceCheckpoint("{not json").ok());
  EXPECT_FALSE(ParseDeviceCheckpoint("[1,2]").ok());
  EXPECT_FALSE(ParseDeviceCheckpoint(R"({"Checksum":1})").ok());
}

TEST(DeviceCheckpoint, FixturesInBothForms) {
  for (const char* form : {"healthy", "checkpoint-list-form"}) {
    std::ifstream in(std::string(build_paths::kFixturesDir) + "/doctor/" + form +
                     "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<DeviceCheckpoint> checkpoint = ParseDeviceCheckpoint(text);
    ASSERT_TRUE(checkpoint.ok()) << form << ": " << checkpoint.status();
    EXPECT_EQ(checkpoint->registered.at("nvidia.com/gpu").size(), 8u) << form;
    size_t allocated = 0;
    for (const CheckpointAllocation& a : checkpoint->allocations) allocated += a.device_ids.size();
    EXPECT_EQ(allocated, 2u) << form;
  }
}

}  // namespace
}  // namespace gpunode::host
