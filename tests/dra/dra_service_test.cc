// The kubelet's side of the DRA plugin's sockets, played by gRPC's own C++ client (the kubelet
// uses Go's gRPC): the plugin watcher's GetInfo and NotifyRegistrationStatus, DRAPlugin in both
// versions the kubelet may choose, and the health stream.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>

#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "dra/kubelet_service.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "fake_mps_daemons.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "h2grpc/server.h"
#include "harness/simulated_env.h"
#include "nlohmann/json.hpp"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "temp_dir.h"

namespace gpunode::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

std::shared_ptr<grpc::Channel> Dial(const std::string& socket) {
  return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

json AllocatedClaim(const std::string& uid, const std::string& device) {
  return {{"kind", "ResourceClaim"},
          {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", uid}}},
          {"status",
           {{"allocation",
             {{"devices",
               {{"results",
                 {{{"request", "gpu"},
                   {"driver", "gpu.nvidia.com"},
                   {"pool", "node-a"},
                   {"device", device}}}}}}}}}}};
}

class KubeletSide : public ::testing::Test {
 protected:
  void SetUp() override {
    cdi::DriverFiles driver;
    driver.version = "550.90.07";
    absl::StatusOr<std::unique_ptr<ClaimPreparer>> preparer = ClaimPreparer::Create(
        {.node_name = "node-a",
         .checkpoint_path = dir_.path() + "/checkpoint.json",
         .cdi_root = dir_.path() + "/cdi",
         .boot_id = "b"},
        driver, host_,
        [](const ClaimRef& ref) -> absl::StatusOr<std::string> {
          if (ref.uid == "missing") return absl::NotFoundError("resourceclaims \"c\" not found");
          return AllocatedClaim(ref.uid, "gpu-0").dump();
        },
        mps_);
    ASSERT_TRUE(preparer.ok()) << preparer.status();
    preparer_ = std::move(*preparer);
    gpu::DraDevice gpu;
    gpu.name = "gpu-0";
    gpu.uuid = gpu.gpu_uuid = "GPU-0000";
    preparer_->SetDevices({gpu});
    health_.Set({{.device = "gpu-0", .healthy = true}});
    service_ = std::make_unique<h2grpc::Server>(DraService(*preparer_, health_));
    ASSERT_TRUE(service_->Start(dir_.path() + "/dra.sock").ok());
    registration_ = std::make_unique<h2grpc::Server>(RegistrationService(
        {.endpoint = dir_.path() + "/dra.sock", .on_status = [this](bool ok, const std::string& e) {
           registered_ = ok;
           registration_error_ = e;
         }}));
    ASSERT_TRUE(registration_->Start(dir_.path() + "/reg.sock").ok());
  }
  void TearDown() override {
    health_.Wake();
    if (service_) service_->Stop();
    if (registration_) registration_->Stop();
  }

  testing::TempDir dir_{"gpunode-dra-service"};
  core::HostRoot host_{"/nonexistent-host"};
  FakeMpsDaemons mps_;
  std::unique_ptr<ClaimPreparer> preparer_;
  testing::SimulatedEnv env_;
  HealthFeed health_{"node-a", env_};
  std::unique_ptr<h2grpc::Server> service_;
  std::unique_ptr<h2grpc::Server> registration_;
  std::atomic<bool> registered_{false};
  std::string registration_error_;
};

TEST_F(KubeletSide, ThePluginWatcherLearnsADraPluginAndItsServices) {
  auto stub = pluginregistration::Registration::NewStub(Dial(dir_.path() + "/reg.sock"));
  grpc::ClientContext context;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.nvidia.com");
  EXPECT_EQ(info.endpoint(), dir_.path() + "/dra.sock");
  EXPECT_THAT(info.supported_versions(), ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));

  grpc::ClientContext notify;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&notify, status, &response).ok());
  EXPECT_TRUE(registered_);
}

TEST_F(KubeletSide, PrepareAndUnprepareAnswerInBothVersions) {
  auto v1 =
      k8s::io::kubelet::pkg::apis::dra::v1::DRAPlugin::NewStub(Dial(dir_.path() + "/dra.sock"));
  k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("ns");
  claim->set_name("c");
  claim->set_uid("u1");
  auto* missing = request.add_claims();
  missing->set_namespace_("ns");
  missing->set_name("c");
  missing->set_uid("missing");
  k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(v1->NodePrepareResources(&context, request, &response).ok());
  ASSERT_EQ(response.claims().count("u1"), 1u);
  const auto& prepared = response.claims().at("u1");
  EXPECT_EQ(prepared.error(), "");
  ASSERT_EQ(prepared.devices_size(), 1);
  EXPECT_EQ(prepared.devices(0).pool_name(), "node-a");
  EXPECT_EQ(prepared.devices(0).device_name(), "gpu-0");
  EXPECT_THAT(prepared.devices(0).request_names(), ElementsAre("gpu"));
  EXPECT_THAT(prepared.devices(0).cdi_device_ids(),
              ElementsAre("k8s.gpu.nvidia.com/claim=u1-gpu-0"));
  // A claim that fails has its own error; the others are still prepared.
  EXPECT_THAT(response.claims().at("missing").error(), HasSubstr("not found"));

  // v1beta1: the same answer for the same claim, through the older package's messages.
  auto beta = k8s::io::kubelet::pkg::apis::dra::v1beta1::DRAPlugin::NewStub(
      Dial(dir_.path() + "/dra.sock"));
  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesRequest beta_request;
  auto* beta_claim = beta_request.add_claims();
  beta_claim->set_namespace_("ns");
  beta_claim->set_name("c");
  beta_claim->set_uid("u1");
  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesResponse beta_response;
  grpc::ClientContext beta_context;
  ASSERT_TRUE(beta->NodePrepareResources(&beta_context, beta_request, &beta_response).ok());
  EXPECT_THAT(beta_response.claims().at("u1").devices(0).cdi_device_ids(),
              ElementsAre("k8s.gpu.nvidia.com/claim=u1-gpu-0"));

  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesRequest unprepare;
  *unprepare.add_claims() = *beta_claim;
  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse unprepared;
  grpc::ClientContext unprepare_context;
  ASSERT_TRUE(beta->NodeUnprepareResources(&unprepare_context, unprepare, &unprepared).ok());
  EXPECT_EQ(unprepared.claims().at("u1").error(), "");
  EXPECT_FALSE(std::filesystem::exists(preparer_->SpecPath("u1")));
}

TEST_F(KubeletSide, TheHealthStreamSendsTheWholeListAndEveryChange) {
  auto stub = v1alpha1::DRAResourceHealth::NewStub(Dial(dir_.path() + "/dra.sock"));
  grpc::ClientContext context;
  auto reader = stub->NodeWatchResources(&context, {});
  v1alpha1::NodeWatchResourcesResponse response;
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).device().pool_name(), "node-a");
  EXPECT_EQ(response.devices(0).device().device_name(), "gpu-0");
  EXPECT_EQ(response.devices(0).health(), v1alpha1::HEALTHY);
  EXPECT_EQ(response.devices(0).health_check_timeout_seconds(), kHealthCheckTimeoutSeconds);

  // A report is stamped with the time it was sent at, on the plugin's clock.
  env_.Advance(absl::Minutes(3));
  health_.Set({{.device = "gpu-0", .healthy = false, .message = "XID 79: fallen off the bus"}});
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.devices(0).health(), v1alpha1::UNHEALTHY);
  EXPECT_EQ(response.devices(0).message(), "XID 79: fallen off the bus");
  EXPECT_EQ(response.devices(0).last_updated_time(), absl::ToUnixSeconds(env_.Now()));
  context.TryCancel();
}

}  // namespace
}  // namespace gpunode::dra
