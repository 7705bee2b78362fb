// The devices gpunode's DRA plugin announces, read from the simulator on every profile and on a
// real capture: NVIDIA's names, attribute types and capacities, and values the API accepts.
#include "gpu/dra_devices.h"

#include <filesystem>
#include <regex>
#include <set>

#include "build_paths.h"
#include "dra/resource_slice.h"
#include "gmock/gmock.h"
#include "gpu/node_snapshot.h"
#include "gtest/gtest.h"
#include "sim_library.h"

namespace gpunode::dra {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Specs() {
  std::vector<std::string> specs;
  for (const auto& entry : std::filesystem::directory_iterator(build_paths::kSimProfilesDir)) {
    specs.push_back(entry.path().stem());
  }
  std::sort(specs.begin(), specs.end());
  specs.push_back(testing::Fixture("nvidia-smi-xml/a100-sxm4-mig.xml"));
  specs.push_back(testing::Fixture("nvidia-smi-xml/tesla-p100.xml"));
  return specs;
}

class DevicesOnEveryNode : public ::testing::TestWithParam<std::string> {};

TEST_P(DevicesOnEveryNode, AreNvidiasNamesWithValuesTheApiAccepts) {
  std::unique_ptr<nvml::Library> library = testing::OpenSimulator(GetParam());
  ASSERT_NE(library, nullptr);
  core::HostRoot host("/nonexistent-host");
  absl::StatusOr<gpu::DraNode> node = gpu::ReadDraNode(*library, host);
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<gpu::NodeSnapshot> snapshot = gpu::ReadNodeSnapshot(*library, host);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();

  // One device per GPU without MIG, one per MIG device of a GPU with MIG on.
  size_t expected = 0;
  for (const gpu::GpuSnapshot& gpu : snapshot->gpus) {
    if (gpu.lost) continue;
    expected += gpu.mig_enabled.value_or(false) ? gpu.mig_devices.size() : 1;
  }
  EXPECT_EQ(node->devices.size(), expected);

  std::regex dns_label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  std::regex semver(R"((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*))");
  std::regex quantity(R"([0-9]+(Ki|Mi|Gi|Ti|Pi|Ei)?)");
  std::set<std::string> names;
  for (const gpu::DraDevice& device : node->devices) {
    SCOPED_TRACE(device.name);
    EXPECT_TRUE(names.insert(device.name).second) << "duplicate name";
    EXPECT_LE(device.name.size(), 63u);
    EXPECT_TRUE(std::regex_match(device.name, dns_label));
    std::string type = device.attributes["type"]["string"];
    EXPECT_EQ(type, device.is_mig() ? "mig" : "gpu");
    if (device.is_mig()) {
      EXPECT_TRUE(std::regex_match(
          device.name, std::regex("gpu-[0-9]+-mig-[a-z0-9-]+-[0-9]+-[0-9]+(-ci[0-9]+)?")));
      EXPECT_EQ(device.attributes["parentUUID"]["string"], device.gpu_uuid);
      for (const char* capacity : {"multiprocessors", "copyEngines", "decoders", "encoders",
                                   "jpegEngines", "ofaEngines", "memory"}) {
        EXPECT_TRUE(device.capacity.contains(capacity)) << capacity;
      }
    } else {
      EXPECT_EQ(device.name, "gpu-" + std::to_string(device.gpu_minor));
      EXPECT_EQ(device.uuid, device.gpu_uuid);
    }
    EXPECT_EQ(device.attributes["uuid"]["string"], device.uuid);
    for (const char* key : {"productName", "architecture"}) {
      EXPECT_TRUE(device.attributes[key]["string"].is_string()) << key;
    }
    for (const char* key : {"driverVersion", "cudaComputeCapability"}) {
      ASSERT_TRUE(device.attributes[key]["version"].is_string()) << key;
      EXPECT_TRUE(std::regex_match(device.attributes[key]["version"].get<std::string>(), semver))
          << key << " " << device.attributes[key];
    }
    EXPECT_TRUE(std::regex_match(
        device.attributes["resource.kubernetes.io/pciBusID"]["string"].get<std::string>(),
        std::regex("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]")));
    for (const auto& [name, value] : device.capacity.items()) {
      EXPECT_TRUE(std::regex_match(value["value"].get<std::string>(), quantity)) << name;
    }
  }
  // The slice holds them all, under the driver's name and the node's pool.
  std::vector<nlohmann::ordered_json> slices =
      BuildResourceSlices({"node-a", "uid-1"}, node->devices, 3);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["driver"], "gpu.nvidia.com");
  EXPECT_EQ(slices[0]["spec"]["pool"]["name"], "node-a");
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 3);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), node->devices.size());
  EXPECT_EQ(slices[0]["metadata"]["ownerReferences"][0]["uid"], "uid-1");
}

INSTANTIATE_TEST_SUITE_P(Profiles, DevicesOnEveryNode, ::testing::ValuesIn(Specs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(DraDevices, AnA100WithMigOnIsAnnouncedAsItsMigDevicesWithTheirProfiles) {
  std::unique_ptr<nvml::Library> library = testing::OpenSimulator("a100-mig");
  ASSERT_NE(library, nullptr);
  absl::StatusOr<gpu::DraNode> node =
      gpu::ReadDraNode(*library, core::HostRoot("/nonexistent-host"));
  ASSERT_TRUE(node.ok()) << node.status();
  const gpu::DraDevice& first = node->devices.front();
  // 1g.10gb is GPU instance profile 19 on an A100 80GB, its first placement at slice 0.
  EXPECT_EQ(first.name, "gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(first.attributes["profile"]["string"], "1g.10gb");
  EXPECT_EQ(first.capacity["multiprocessors"]["value"], "14");
  EXPECT_EQ(first.capacity["memorySlice0"]["value"], "1");
  EXPECT_FALSE(first.capacity.contains("memorySlice1"));
  EXPECT_EQ(first.attributes["brand"]["string"], "Nvidia");
  EXPECT_EQ(first.attributes["architecture"]["string"], "Ampere");
  EXPECT_EQ(first.attributes["cudaComputeCapability"]["version"], "8.0.0");
}

TEST(DraDevices, ValuesAreWrittenAsKubernetesReadsThem) {
  EXPECT_EQ(gpu::SemanticVersion("12.4"), "12.4.0");
  EXPECT_EQ(gpu::SemanticVersion("580.65.06"), "580.65.6");
  EXPECT_EQ(gpu::SemanticVersion("535.261.03"), "535.261.3");
  EXPECT_EQ(gpu::SemanticVersion("9.0"), "9.0.0");
  EXPECT_EQ(gpu::SemanticVersion("550"), "550.0.0");
  EXPECT_EQ(gpu::SemanticVersion("R550"), std::nullopt);
  EXPECT_EQ(gpu::BinaryQuantity(80ull << 30), "80Gi");
  EXPECT_EQ(gpu::BinaryQuantity(85520809984ull), "81559Mi");
  EXPECT_EQ(gpu::BinaryQuantity(14), "14");
  EXPECT_EQ(gpu::BinaryQuantity(0), "0");
  EXPECT_EQ(gpu::BinaryQuantity(1536), "1536");
  EXPECT_EQ(gpu::MigDeviceName(3, "1g.10gb+me", 20, 6), "gpu-3-mig-1g10gb-me-20-6");
  EXPECT_EQ(gpu::MigDeviceName(0, "1c.3g.40gb", 9, 4), "gpu-0-mig-1c3g40gb-9-4");
  EXPECT_EQ(gpu::ArchitectureName(8), "Ada Lovelace");
  EXPECT_EQ(gpu::ArchitectureName(99), "Unknown");
}

TEST(DraDevices, ThePcieRootComesFromTheHostsSysfs) {
  std::unique_ptr<nvml::Library> library = testing::OpenSimulator("h200-1");
  ASSERT_NE(library, nullptr);
  absl::StatusOr<gpu::DraNode> without =
      gpu::ReadDraNode(*library, core::HostRoot("/nonexistent-host"));
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_EQ(without->devices.size(), 1u);
  EXPECT_FALSE(without->devices[0].attributes.contains("resource.kubernetes.io/pcieRoot"));

  std::string address = without->devices[0].attributes["resource.kubernetes.io/pciBusID"]["string"];
  std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("gpunode-dra-sysfs-" + std::to_string(getpid()));
  std::filesystem::path device = root / "sys/devices/pci0000:17/0000:17:01.0" / address;
  std::filesystem::create_directories(device);
  std::filesystem::create_directories(root / "sys/bus/pci/devices");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:17/0000:17:01.0/" + address,
                                            root / "sys/bus/pci/devices" / address);
  absl::StatusOr<gpu::DraNode> with = gpu::ReadDraNode(*library, core::HostRoot(root.string()));
  std::filesystem::remove_all(root);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->devices[0].attributes["resource.kubernetes.io/pcieRoot"]["string"], "pci0000:17");
}

TEST(DraDevices, ManyDevicesSpreadOverSlicesOfTheApisLimit) {
  std::vector<gpu::DraDevice> devices(kMaxDevicesPerSlice + 3);
  for (size_t i = 0; i < devices.size(); ++i) devices[i].name = "gpu-" + std::to_string(i);
  std::vector<nlohmann::ordered_json> slices = BuildResourceSlices({"n", ""}, devices, 1);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), kMaxDevicesPerSlice);
  EXPECT_EQ(slices[1]["spec"]["devices"].size(), 3u);
  EXPECT_EQ(slices[1]["spec"]["pool"]["resourceSliceCount"], 2);
  EXPECT_FALSE(slices[0]["metadata"].contains("ownerReferences"));
  // An empty pool is one empty slice, so that the scheduler sees the node has no device.
  EXPECT_EQ(BuildResourceSlices({"n", ""}, {}, 1).size(), 1u);
  EXPECT_THAT(RenderSlicesYaml(slices), HasSubstr("kind: \"ResourceSlice\""));
}

}  // namespace
}  // namespace gpunode::dra
