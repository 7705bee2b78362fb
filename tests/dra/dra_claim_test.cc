// The claims the DRA plugin reads (resource.k8s.io/v1 as the API server serves them) and the
// preparation of their devices into CDI specs, with the checkpoint's recovery after a stop at
// any point.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "cdi/spec_file.h"
#include "cdi/validate.h"
#include "dra/claim_allocation.h"
#include "dra/claim_preparer.h"
#include "fake_mps_daemons.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "temp_dir.h"

namespace gpunode::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

json Claim(const std::string& uid, const json& results, const json& config = json::array()) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "train-gpu"}, {"namespace", "ml"}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}, {"config", config}}}}}}}};
}

json Result(const std::string& device, const std::string& pool = "node-a",
            const std::string& driver = "gpu.nvidia.com") {
  return {{"request", "gpu"}, {"driver", driver}, {"pool", pool}, {"device", device}};
}

json Opaque(const json& parameters) {
  return json::array({{{"source", "FromClaim"},
                       {"requests", {"gpu"}},
                       {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", parameters}}}}});
}

TEST(DraClaim, TheDevicesOfThisDriverAndNodeAreRead) {
  json claim = Claim("u1", json::array({Result("gpu-0"), Result("gpu-1"),
                                        Result("nic-0", "node-a", "nic.example.com")}));
  absl::StatusOr<std::vector<AllocatedDevice>> devices =
      ReadAllocation(claim.dump(), "u1", "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].device, "gpu-1");
  EXPECT_EQ((*devices)[1].request, "gpu");
}

TEST(DraClaim, WhatCannotBePreparedIsNamed) {
  struct Case {
    json claim;
    std::string uid;
    std::string says;
  };
  json unallocated = Claim("u1", json::array());
  unallocated["status"] = json::object();
  std::vector<Case> cases = {
      {Claim("u2", json::array({Result("gpu-0")})), "u1", "has UID u2, not u1"},
      {unallocated, "u1", "is not allocated"},
      {Claim("u1", json::array({Result("gpu-0", "node-b")})), "u1",
       "from pool node-b, not from this node's"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque(
                 {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "ComputeDomainConfig"}})),
       "u1", "kind \"ComputeDomainConfig\" is not one gpunode reads"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1"}, {"kind", "GpuConfig"}})),
       "u1", "apiVersion is \"resource.nvidia.com/v1\""},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing", {{"strategy", "TimeSlicing"}, {"timeslicingConfig", {}}}}})),
       "u1", "sharing has no field(s) timeslicingConfig"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing",
                      {{"strategy", "MPS"}, {"timeSlicingConfig", {{"interval", "Long"}}}}}})),
       "u1", "sharing.timeSlicingConfig cannot be used with sharing.strategy MPS"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing", {{"mpsConfig", json::object()}}}})),
       "u1", "sharing.mpsConfig cannot be used with sharing.strategy TimeSlicing"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque(
                 {{"apiVersion", "resource.nvidia.com/v1beta1"},
                  {"kind", "GpuConfig"},
                  {"sharing",
                   {{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 0}}}}}})),
       "u1", "defaultActiveThreadPercentage 0 is not a whole number from 1 to 100"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing",
                      {{"strategy", "MPS"},
                       {"mpsConfig", {{"defaultActiveThreadPercentage", "50"}}}}}})),
       "u1", "defaultActiveThreadPercentage \"50\" is not a whole number"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing",
                      {{"strategy", "MPS"},
                       {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", "512Ki"}}}}}})),
       "u1", "defaultPinnedDeviceMemoryLimit \"512Ki\" is not a memory quantity of at least 1Mi"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing",
                      {{"strategy", "MPS"},
                       {"mpsConfig", {{"defaultPerDevicePinnedMemoryLimit", {{"0", "lots"}}}}}}}})),
       "u1", "defaultPerDevicePinnedMemoryLimit[0] \"lots\" is not a memory quantity"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing", {{"strategy", "MPS"}, {"mpsConfig", {{"multiUser", true}}}}}})),
       "u1", "sharing.mpsConfig has no field(s) multiUser"},
      {Claim("u1", json::array({Result("gpu-0")}),
             Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                     {"kind", "GpuConfig"},
                     {"sharing", {{"timeSlicingConfig", {{"interval", "Forever"}}}}}})),
       "u1", "\"Forever\" is not one of Default, Short, Medium, Long"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<AllocatedDevice>> devices =
        ReadAllocation(c.claim.dump(), c.uid, "gpu.nvidia.com", "node-a");
    ASSERT_FALSE(devices.ok()) << c.says;
    EXPECT_THAT(devices.status().message(), HasSubstr(c.says));
    EXPECT_THAT(devices.status().message(), HasSubstr("ml/train-gpu"));
  }
  // Types that do not fit are refused, never thrown.
  for (const char* body : {"[]", "{\"kind\":\"ResourceClaim\",\"metadata\":7}",
                           "{\"kind\":\"ResourceClaim\",\"metadata\":{\"uid\":\"u1\"},"
                           "\"status\":{\"allocation\":{\"devices\":{\"results\":[1,\"x\"],"
                           "\"config\":[1,{\"opaque\":3}]}}}}"}) {
    absl::StatusOr<std::vector<AllocatedDevice>> devices =
        ReadAllocation(body, "u1", "gpu.nvidia.com", "node-a");
    if (devices.ok()) {
      EXPECT_TRUE(devices->empty()) << body;
    }
  }
  // The default sharing is what NVIDIA's driver does without a config.
  json defaults = Claim(
      "u1", json::array({Result("gpu-0")}),
      Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
              {"kind", "GpuConfig"},
              {"sharing",
               {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Default"}}}}}}));
  EXPECT_TRUE(ReadAllocation(defaults.dump(), "u1", "gpu.nvidia.com", "node-a").ok());
}

TEST(DraClaim, AnIntervalAppliesToTheRequestsItsConfigNamesAndTheLastConfigWins) {
  json long_slices = {{"apiVersion", "resource.nvidia.com/v1beta1"},
                      {"kind", "GpuConfig"},
                      {"sharing", {{"timeSlicingConfig", {{"interval", "Long"}}}}}};
  json short_slices = long_slices;
  short_slices["sharing"]["timeSlicingConfig"]["interval"] = "Short";
  json results = json::array({Result("gpu-0"), Result("gpu-1")});
  results[1]["request"] = "infer";
  json configs =
      json::array({{{"source", "FromClass"},
                    {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", long_slices}}}},
                   {{"source", "FromClaim"},
                    {"requests", {"infer"}},
                    {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", short_slices}}}}});
  absl::StatusOr<std::vector<AllocatedDevice>> devices =
      ReadAllocation(Claim("u1", results, configs).dump(), "u1", "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ((*devices)[0].time_slice, "Long");   // the class's config, for every request
  EXPECT_EQ((*devices)[1].time_slice, "Short");  // the claim's, for its request, after it
  devices = ReadAllocation(Claim("u1", results).dump(), "u1", "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[0].time_slice, "") << "no config: the GPU is left as it is";
}

TEST(DraClaim, AnMpsConfigIsReadWithItsLimitsAndTheLastConfigThatSaysHowWins) {
  json mps = {
      {"apiVersion", "resource.nvidia.com/v1beta1"},
      {"kind", "GpuConfig"},
      {"sharing",
       {{"strategy", "MPS"},
        {"mpsConfig",
         {{"defaultActiveThreadPercentage", 50},
          {"defaultPinnedDeviceMemoryLimit", "4Gi"},
          // NVIDIA's keys: a GPU's UUID or its index; a quantity or a number of bytes.
          {"defaultPerDevicePinnedMemoryLimit", {{"GPU-aaaa", "1Gi"}, {"1", 2147483648}}}}}}}};
  json short_slices = {{"apiVersion", "resource.nvidia.com/v1beta1"},
                       {"kind", "GpuConfig"},
                       {"sharing", {{"timeSlicingConfig", {{"interval", "Short"}}}}}};
  json no_sharing = {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "GpuConfig"}};
  json results = json::array({Result("gpu-0"), Result("gpu-1")});
  results[1]["request"] = "infer";
  json configs = json::array(
      {{{"source", "FromClass"}, {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", mps}}}},
       {{"source", "FromClaim"},
        {"requests", {"infer"}},
        {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", short_slices}}}},
       {{"source", "FromClaim"},
        {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", no_sharing}}}}});
  absl::StatusOr<std::vector<AllocatedDevice>> devices =
      ReadAllocation(Claim("u1", results, configs).dump(), "u1", "gpu.nvidia.com", "node-a");
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_TRUE((*devices)[0].mps.has_value()) << "the class's MPS config, for every request";
  EXPECT_EQ(
      *(*devices)[0].mps,
      (MpsRequest{.config_index = 0,
                  .active_thread_percentage = 50,
                  .default_pinned_bytes = uint64_t{4} << 30,
                  .pinned_bytes = {{"GPU-aaaa", uint64_t{1} << 30}, {"1", uint64_t{2} << 30}}}));
  EXPECT_EQ((*devices)[0].time_slice, "");
  // The claim's interval for its request replaces the class's MPS there; the last config, which
  // says nothing of sharing, changes neither.
  EXPECT_EQ((*devices)[1].time_slice, "Short");
  EXPECT_FALSE((*devices)[1].mps.has_value());
}

// A node of two GPUs, one with a MIG device, and a driver with its two required libraries.
class Preparer : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_.push_back(Device("gpu-0", "GPU-aaaa", 0, 0));
    gpu::DraDevice mig = Device("gpu-1-mig-1g10gb-19-0", "MIG-bbbb", 1, 1);
    mig.gpu_uuid = "GPU-cccc";
    mig.gi = 7;
    mig.ci = 0;
    devices_.push_back(mig);
    driver_.version = "550.90.07";
    driver_.libraries = {{"/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07",
                          "/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07"}};
    driver_.control_devices = {"/dev/nvidiactl"};
  }

  static gpu::DraDevice Device(const std::string& name, const std::string& uuid, unsigned index,
                               unsigned minor) {
    gpu::DraDevice d;
    d.name = name;
    d.uuid = uuid;
    d.gpu_uuid = uuid;
    d.gpu_index = index;
    d.gpu_minor = minor;
    return d;
  }

  PreparerOptions Options(const std::string& boot = "boot-1") const {
    return {.node_name = "node-a",
            .checkpoint_path = dir_.path() + "/checkpoint.json",
            .cdi_root = dir_.path() + "/cdi",
            .boot_id = boot};
  }

  std::unique_ptr<ClaimPreparer> Make(const std::string& boot = "boot-1") {
    absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer = ClaimPreparer::Create(
        Options(boot), driver_, host_,
        [this](const ClaimRef& ref) -> absl::StatusOr<std::string> {
          ++reads_;
          auto it = claims_.find(ref.name);
          if (it == claims_.end()) return absl::NotFoundError("no such claim");
          return it->second.dump();
        },
        mps_);
    EXPECT_TRUE(preparer.ok()) << preparer.status();
    if (!preparer.ok()) return nullptr;
    (*preparer)->SetDevices(devices_);
    return std::move(*preparer);
  }

  testing::TempDir dir_{"gpunode-dra-prepare"};
  core::HostRoot host_{"/nonexistent-host"};
  std::vector<gpu::DraDevice> devices_;
  cdi::DriverFiles driver_;
  std::map<std::string, json> claims_;
  int reads_ = 0;
  FakeMpsDaemons mps_;
};

// nvidia-smi's stand-in: records its arguments, one call a line, and fails when asked to.
std::string FakeNvidiaSmi(const std::string& dir, bool fails = false) {
  std::string path = dir + "/nvidia-smi";
  std::ofstream(path) << "#!/bin/sh\necho \"$*\" >> " << dir << "/nvidia-smi.calls\n"
                      << (fails ? "echo 'Insufficient Permissions' >&2; exit 4\n" : "");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

std::vector<std::string> Calls(const std::string& dir) {
  std::ifstream in(dir + "/nvidia-smi.calls");
  std::vector<std::string> calls;
  for (std::string line; std::getline(in, line);) calls.push_back(line);
  return calls;
}

TEST_F(Preparer, AClaimsIntervalIsSetOnItsGpuAndPutBackToDefaultWhenTheLastClaimGoes) {
  json medium = Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                        {"kind", "GpuConfig"},
                        {"sharing", {{"timeSlicingConfig", {{"interval", "Medium"}}}}}});
  claims_["a"] = Claim("u-a", json::array({Result("gpu-0")}), medium);
  claims_["a"]["metadata"]["name"] = "a";
  claims_["b"] = Claim("u-b", json::array({Result("gpu-0")}), medium);
  claims_["b"]["metadata"]["name"] = "b";
  PreparerOptions options = Options();
  options.nvidia_smi = FakeNvidiaSmi(dir_.path());
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer = ClaimPreparer::Create(
      options, driver_, host_,
      [this](const ClaimRef& ref) {
        return absl::StatusOr<std::string>(claims_.at(ref.name).dump());
      },
      mps_);
  ASSERT_TRUE(preparer.ok()) << preparer.status();
  (*preparer)->SetDevices(devices_);
  ASSERT_TRUE((*preparer)->Prepare({"ml", "a", "u-a"}).ok());
  ASSERT_TRUE((*preparer)->Prepare({"ml", "b", "u-b"}).ok());
  EXPECT_THAT(Calls(dir_.path()), ElementsAre("compute-policy -i GPU-aaaa --set-timeslice=2",
                                              "compute-policy -i GPU-aaaa --set-timeslice=2"));
  // Recorded, so that a restarted plugin knows what to put back.
  std::ifstream checkpoint(dir_.path() + "/checkpoint.json");
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(checkpoint), {}),
              HasSubstr("\"timeSliceInterval\": \"Medium\""));
  ASSERT_TRUE((*preparer)->Unprepare("u-a").ok());
  EXPECT_EQ(Calls(dir_.path()).size(), 2u) << "claim b still runs on the interval";
  ASSERT_TRUE((*preparer)->Unprepare("u-b").ok());
  EXPECT_EQ(Calls(dir_.path()).back(), "compute-policy -i GPU-aaaa --set-timeslice=0");
}

TEST_F(Preparer, AnIntervalThatCannotBeSetOrOnAMigDeviceFailsThePreparation) {
  json long_slices = Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                             {"kind", "GpuConfig"},
                             {"sharing", {{"timeSlicingConfig", {{"interval", "Long"}}}}}});
  claims_["train-gpu"] = Claim("u1", json::array({Result("gpu-0")}), long_slices);
  PreparerOptions options = Options();
  options.nvidia_smi = FakeNvidiaSmi(dir_.path(), /*fails=*/true);
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer = ClaimPreparer::Create(
      options, driver_, host_,
      [this](const ClaimRef& ref) {
        return absl::StatusOr<std::string>(claims_.at(ref.name).dump());
      },
      mps_);
  ASSERT_TRUE(preparer.ok());
  (*preparer)->SetDevices(devices_);
  absl::StatusOr<std::vector<host::PreparedDevice>> prepared =
      (*preparer)->Prepare({"ml", "train-gpu", "u1"});
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.status().message(),
              HasSubstr("cannot set the time-slice interval Long on GPU-aaaa"));
  EXPECT_THAT(prepared.status().message(), HasSubstr("Insufficient Permissions"));

  claims_["train-gpu"] = Claim("u2", json::array({Result("gpu-1-mig-1g10gb-19-0")}), long_slices);
  prepared = (*preparer)->Prepare({"ml", "train-gpu", "u2"});
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.status().message(), HasSubstr("is a MIG device"));
}

TEST_F(Preparer, AClaimBecomesACdiSpecNamedAsNvidiasAndTheSameAnswerTwice) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0"), Result("gpu-1-mig-1g10gb-19-0")}));
  std::unique_ptr<ClaimPreparer> preparer = Make();
  absl::StatusOr<std::vector<host::PreparedDevice>> devices = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_THAT((*devices)[0].cdi_ids, ElementsAre("k8s.gpu.nvidia.com/claim=u1-gpu-0"));
  EXPECT_EQ((*devices)[1].device, "gpu-1-mig-1g10gb-19-0");
  EXPECT_EQ(preparer->SpecPath("u1"), dir_.path() + "/cdi/k8s.gpu.nvidia.com-claim_u1.json");
  std::ifstream in(preparer->SpecPath("u1"));
  json spec = json::parse(in);
  EXPECT_EQ(spec["kind"], "k8s.gpu.nvidia.com/claim");
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "u1-gpu-0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia0");
  EXPECT_EQ(spec["devices"][1]["name"], "u1-gpu-1-mig-1g10gb-19-0");
  EXPECT_TRUE(cdi::ValidateSpec(cdi::Spec::parse(spec.dump())).empty());

  // The kubelet asks again (it restarted): the same answer, without reading the claim again.
  absl::StatusOr<std::vector<host::PreparedDevice>> again = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *devices);
  EXPECT_EQ(reads_, 1);

  // A restarted plugin answers from its checkpoint.
  preparer.reset();
  std::unique_ptr<ClaimPreparer> restarted = Make();
  absl::StatusOr<std::vector<host::PreparedDevice>> after = restarted->Prepare({"ml", "c1", "u1"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *devices);
  EXPECT_EQ(reads_, 1);

  ASSERT_TRUE(restarted->Unprepare("u1").ok());
  EXPECT_FALSE(std::filesystem::exists(restarted->SpecPath("u1")));
  EXPECT_TRUE(restarted->PreparedClaims().empty());
  // Unpreparing what is not prepared is not an error: the kubelet repeats calls.
  EXPECT_TRUE(restarted->Unprepare("u1").ok());
}

TEST_F(Preparer, ItsLogLineSaysHowLongThePreparationTookAndHowMuchOfItWasTheApiServer) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0")}));
  // An API server that takes 20 ms to answer.
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer = ClaimPreparer::Create(
      Options(), driver_, host_,
      [this](const ClaimRef& ref) -> absl::StatusOr<std::string> {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return claims_.at(ref.name).dump();
      },
      mps_);
  ASSERT_TRUE(preparer.ok()) << preparer.status();
  (*preparer)->SetDevices(devices_);
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  absl::StatusOr<std::vector<host::PreparedDevice>> devices =
      (*preparer)->Prepare({"ml", "c1", "u1"});
  spdlog::set_default_logger(before);
  ASSERT_TRUE(devices.ok()) << devices.status();

  std::smatch match;
  const std::string text = log.str();
  ASSERT_TRUE(std::regex_search(
      text, match,
      std::regex(
          R"(claim ml/c1 \(u1\): prepared 1 device\(s\) in ([0-9.]+) ms, ([0-9.]+) ms of it )"
          R"(the API server's answer)")))
      << text;
  const double total = std::stod(match[1]), api_server = std::stod(match[2]);
  EXPECT_GE(api_server, 20.0);
  EXPECT_GE(total, api_server);
}

TEST_F(Preparer, ADeviceNotOnTheNodeIsRefusedAndNothingIsKept) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-7")}));
  std::unique_ptr<ClaimPreparer> preparer = Make();
  absl::StatusOr<std::vector<host::PreparedDevice>> devices = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              HasSubstr("device gpu-7 is not on this node (it has gpu-0, gpu-1-mig-1g10gb-19-0)"));
  EXPECT_FALSE(std::filesystem::exists(preparer->SpecPath("u1")));
  EXPECT_TRUE(preparer->PreparedClaims().empty());
}

TEST_F(Preparer, APreparationCutShortIsRolledBackAndAnotherBootsClaimsAreDropped) {
  // What a plugin stopped between its two checkpoint writes leaves: the claim started, its spec
  // written.
  host::DraCheckpoint cut;
  cut.boot_id = "boot-1";
  cut.claims["u1"] = {.name_space = "ml", .name = "c1", .state = host::ClaimState::kPrepareStarted};
  cut.claims["u2"] = {
      .name_space = "ml", .name = "c2", .state = host::ClaimState::kPrepareCompleted};
  ASSERT_TRUE(host::WriteDraCheckpoint(Options().checkpoint_path, cut).ok());
  std::filesystem::create_directories(dir_.path() + "/cdi");
  std::ofstream(dir_.path() + "/cdi/k8s.gpu.nvidia.com-claim_u1.json") << "{}";
  std::ofstream(dir_.path() + "/cdi/k8s.gpu.nvidia.com-claim_u2.json") << "{}";

  std::unique_ptr<ClaimPreparer> preparer = Make("boot-1");
  EXPECT_THAT(preparer->PreparedClaims(), ElementsAre("u2"));
  EXPECT_FALSE(std::filesystem::exists(preparer->SpecPath("u1")));
  EXPECT_TRUE(std::filesystem::exists(preparer->SpecPath("u2")));
  preparer.reset();

  std::unique_ptr<ClaimPreparer> rebooted = Make("boot-2");
  EXPECT_TRUE(rebooted->PreparedClaims().empty());
  EXPECT_FALSE(std::filesystem::exists(rebooted->SpecPath("u2")));
  absl::StatusOr<std::optional<host::DraCheckpoint>> on_disk =
      host::ReadDraCheckpoint(Options().checkpoint_path);
  ASSERT_TRUE(on_disk.ok() && on_disk->has_value());
  EXPECT_EQ((*on_disk)->boot_id, "boot-2");
}

// A Prepare writes the spec, then records the claim once: a plugin stopped in between leaves a
// spec no record names, which the next start removes (the kubelet got no answer and asks again).
// Other drivers' specs and the node's own (gpunode cdi) stay.
TEST_F(Preparer, ASpecWrittenButNeverRecordedIsRemovedAtStart) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0")}));
  std::unique_ptr<ClaimPreparer> preparer = Make("boot-1");
  ASSERT_TRUE(preparer->Prepare({"ml", "c1", "u1"}).ok());
  preparer.reset();
  const std::string cdi = dir_.path() + "/cdi";
  std::ofstream(cdi + "/k8s.gpu.nvidia.com-claim_u3.json") << "{}";
  std::ofstream(cdi + "/k8s.other.example.com-claim_u4.json") << "{}";
  std::ofstream(cdi + "/nvidia.com-gpu.yaml") << "{}";

  std::unique_ptr<ClaimPreparer> restarted = Make("boot-1");
  EXPECT_THAT(restarted->PreparedClaims(), ElementsAre("u1"));
  EXPECT_TRUE(std::filesystem::exists(restarted->SpecPath("u1")));
  EXPECT_FALSE(std::filesystem::exists(restarted->SpecPath("u3")));
  EXPECT_TRUE(std::filesystem::exists(cdi + "/k8s.other.example.com-claim_u4.json"));
  EXPECT_TRUE(std::filesystem::exists(cdi + "/nvidia.com-gpu.yaml"));
}

// The MPS config NVIDIA's documentation shows, over both of the claim's GPUs.
json MpsOpaque(const json& mps_config) {
  return Opaque({{"apiVersion", "resource.nvidia.com/v1beta1"},
                 {"kind", "GpuConfig"},
                 {"sharing", {{"strategy", "MPS"}, {"mpsConfig", mps_config}}}});
}

TEST_F(Preparer, AnMpsClaimRunsItsDaemonAndItsContainersGetThePipeAndTheShm) {
  devices_.push_back(Device("gpu-2", "GPU-dddd", 2, 2));
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0"), Result("gpu-2")}),
                        MpsOpaque({{"defaultActiveThreadPercentage", 25},
                                   {"defaultPinnedDeviceMemoryLimit", "2Gi"},
                                   {"defaultPerDevicePinnedMemoryLimit", {{"1", "1Gi"}}}}));
  std::unique_ptr<ClaimPreparer> preparer = Make();
  absl::StatusOr<std::vector<host::PreparedDevice>> devices = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_TRUE(devices.ok()) << devices.status();
  // One daemon for the config's two GPUs, with the limits in MiB by UUID.
  ASSERT_EQ(mps_.started.size(), 1u);
  const MpsDaemonSpec& daemon = mps_.started[0];
  EXPECT_EQ(daemon.id, "u1-0");
  EXPECT_THAT(daemon.gpu_uuids, ElementsAre("GPU-aaaa", "GPU-dddd"));
  EXPECT_EQ(daemon.active_thread_percentage, 25);
  EXPECT_EQ(daemon.pinned_mib,
            (std::map<std::string, uint64_t>{{"GPU-aaaa", 2048}, {"GPU-dddd", 1024}}));
  // Each device's entry makes its container a client of that daemon, as NVIDIA's driver does.
  std::ifstream in(preparer->SpecPath("u1"));
  json spec = json::parse(in);
  ASSERT_EQ(spec["devices"].size(), 2u);
  for (const json& device : spec["devices"]) {
    const json& edits = device["containerEdits"];
    EXPECT_THAT(edits["env"], ::testing::Contains("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"));
    EXPECT_THAT(edits["mounts"],
                ::testing::Contains(json{{"hostPath", "/var/lib/kubelet/mps/u1-0/pipe"},
                                         {"containerPath", "/tmp/nvidia-mps"},
                                         {"options", {"rw", "nosuid", "nodev", "bind"}}}));
    EXPECT_THAT(edits["mounts"],
                ::testing::Contains(json{{"hostPath", "/var/lib/kubelet/mps/u1-0/shm"},
                                         {"containerPath", "/dev/shm"},
                                         {"options", {"rw", "nosuid", "nodev", "bind"}}}));
    EXPECT_EQ(edits["deviceNodes"].size(), 1u) << "the GPU's own node stays";
  }
  EXPECT_TRUE(cdi::ValidateSpec(cdi::Spec::parse(spec.dump())).empty());
  absl::StatusOr<std::optional<host::DraCheckpoint>> recorded =
      host::ReadDraCheckpoint(Options().checkpoint_path);
  ASSERT_TRUE(recorded.ok() && recorded->has_value()) << recorded.status();
  EXPECT_THAT((*recorded)->claims["u1"].mps_daemons, ElementsAre("u1-0"));

  // Asked again, and after a restart: the same answer, the daemon not started twice and kept.
  ASSERT_TRUE(preparer->Prepare({"ml", "c1", "u1"}).ok());
  preparer.reset();
  preparer = Make();
  EXPECT_EQ(mps_.kept.back(), std::set<std::string>{"u1-0"});
  ASSERT_TRUE(preparer->Prepare({"ml", "c1", "u1"}).ok());
  EXPECT_EQ(mps_.started.size(), 1u);

  ASSERT_TRUE(preparer->Unprepare("u1").ok());
  EXPECT_THAT(mps_.stopped, ElementsAre("u1-0"));
  EXPECT_TRUE(mps_.running.empty());
  EXPECT_FALSE(std::filesystem::exists(preparer->SpecPath("u1")));
}

TEST_F(Preparer, ADaemonThatDoesNotStartOrStopFailsTheCallAndARestartRollsItBack) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0")}), MpsOpaque(json::object()));
  std::unique_ptr<ClaimPreparer> preparer = Make();
  mps_.start_error = absl::UnavailableError("the MPS control daemon is not ready after 30s");
  absl::StatusOr<std::vector<host::PreparedDevice>> devices = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(), HasSubstr("not ready after 30s"));
  EXPECT_FALSE(std::filesystem::exists(preparer->SpecPath("u1")));
  EXPECT_EQ(mps_.started[0].active_thread_percentage, 0) << "no limit the claim did not ask for";
  EXPECT_TRUE(mps_.started[0].pinned_mib.empty());

  // A plugin restarted now rolls the claim back and stops every daemon no claim holds.
  preparer.reset();
  mps_.start_error = absl::OkStatus();
  mps_.running.insert("u1-0");
  preparer = Make();
  EXPECT_TRUE(preparer->PreparedClaims().empty());
  EXPECT_EQ(mps_.kept.back(), std::set<std::string>{});
  EXPECT_TRUE(mps_.running.empty());

  // A daemon that does not quit fails the Unprepare, and nothing else changes until it does.
  ASSERT_TRUE(preparer->Prepare({"ml", "c1", "u1"}).ok());
  mps_.stop_error = absl::UnavailableError("has not quit after 30s");
  absl::Status unprepared = preparer->Unprepare("u1");
  EXPECT_THAT(unprepared.message(), HasSubstr("has not quit"));
  EXPECT_TRUE(std::filesystem::exists(preparer->SpecPath("u1")));
  EXPECT_THAT(preparer->PreparedClaims(), ElementsAre("u1"));
  mps_.stop_error = absl::OkStatus();
  EXPECT_TRUE(preparer->Unprepare("u1").ok());
  EXPECT_TRUE(preparer->PreparedClaims().empty());
}

TEST_F(Preparer, MpsOnAMigDeviceOrWithAKeyNamingNoGpuIsRefusedBeforeAnythingStarts) {
  claims_["c1"] =
      Claim("u1", json::array({Result("gpu-1-mig-1g10gb-19-0")}), MpsOpaque(json::object()));
  std::unique_ptr<ClaimPreparer> preparer = Make();
  absl::StatusOr<std::vector<host::PreparedDevice>> devices = preparer->Prepare({"ml", "c1", "u1"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(), HasSubstr("is a MIG device"));
  claims_["c1"] = Claim("u2", json::array({Result("gpu-0")}),
                        MpsOpaque({{"defaultPerDevicePinnedMemoryLimit", {{"3", "1Gi"}}}}));
  devices = preparer->Prepare({"ml", "c1", "u2"});
  ASSERT_FALSE(devices.ok());
  EXPECT_THAT(devices.status().message(),
              HasSubstr("3 is neither the UUID nor the index (0 to 0) of a GPU of the devices the "
                        "config applies to (GPU-aaaa)"));
  EXPECT_TRUE(mps_.started.empty());
  EXPECT_TRUE(preparer->PreparedClaims().empty());
}

TEST_F(Preparer, ACorruptCheckpointStopsTheStartAndDeletesNothing) {
  std::ofstream(Options().checkpoint_path) << "{\"checksum\": \"0\", \"v1\": {}}";
  std::filesystem::create_directories(dir_.path() + "/cdi");
  std::ofstream(dir_.path() + "/cdi/k8s.gpu.nvidia.com-claim_u9.json") << "{}";
  absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer =
      ClaimPreparer::Create(Options(), driver_, host_, nullptr, mps_);
  ASSERT_FALSE(preparer.ok());
  EXPECT_THAT(preparer.status().message(), HasSubstr("checksum"));
  EXPECT_TRUE(std::filesystem::exists(Options().checkpoint_path));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/cdi/k8s.gpu.nvidia.com-claim_u9.json"));
}

// Within a boot the checkpoint is replaced without fsync, so only a machine crash can tear it,
// and that ends the boot its claims belonged to: the file the boot marker names as another boot's
// is dropped when it cannot be read, and the plugin starts. One of this boot is still refused.
TEST_F(Preparer, ATornCheckpointOfAnEarlierBootIsDroppedAndOneOfThisBootRefused) {
  claims_["c1"] = Claim("u1", json::array({Result("gpu-0")}));
  ASSERT_TRUE(Make("boot-1")->Prepare({"ml", "c1", "u1"}).ok());
  const std::string path = Options().checkpoint_path;
  std::ifstream marker(path + ".boot");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(marker), {}), "boot-1\n");
  std::ifstream in(path);
  std::string whole(std::istreambuf_iterator<char>(in), {});
  std::ofstream(path, std::ios::trunc) << whole.substr(0, whole.size() / 2);

  absl::StatusOr<std::unique_ptr<ClaimPreparer>> same_boot =
      ClaimPreparer::Create(Options("boot-1"), driver_, host_, nullptr, mps_);
  ASSERT_FALSE(same_boot.ok());
  EXPECT_THAT(same_boot.status().message(), HasSubstr(path));

  std::unique_ptr<ClaimPreparer> rebooted = Make("boot-2");
  EXPECT_TRUE(rebooted->PreparedClaims().empty());
  absl::StatusOr<std::optional<host::DraCheckpoint>> on_disk = host::ReadDraCheckpoint(path);
  ASSERT_TRUE(on_disk.ok() && on_disk->has_value()) << on_disk.status();
  EXPECT_EQ((*on_disk)->boot_id, "boot-2");
  std::ifstream remarked(path + ".boot");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(remarked), {}), "boot-2\n");
}

}  // namespace
}  // namespace gpunode::dra
