#include "kubelet_podresources_double.h"

#include <filesystem>
#include <stdexcept>

#include "grpcpp/grpcpp.h"
#include "podresources/api.grpc.pb.h"

namespace gpunode::testing {
namespace {

void FillDevices(const FakeContainerDevices& in, v1::ContainerDevices* out) {
  out->set_resource_name(in.resource);
  for (const std::string& id : in.device_ids) out->add_device_ids(id);
}

}  // namespace

class KubeletPodResourcesDouble::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(KubeletPodResourcesDouble& owner) : owner_(owner) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    ++owner_.list_calls_;
    std::lock_guard<std::mutex> lock(owner_.mu_);
    for (const FakePod& pod : owner_.pods_) {
      v1::PodResources* out = response->add_pod_resources();
      out->set_name(pod.name);
      out->set_namespace_(pod.namespace_name);
      for (const FakeContainer& container : pod.containers) {
        v1::ContainerResources* c = out->add_containers();
        c->set_name(container.name);
        for (const FakeContainerDevices& devices : container.devices)
          FillDevices(devices, c->add_devices());
        // One DynamicResource per claim device, as the kubelet lists a claim with one result.
        for (const FakeClaimDevice& claim : container.claims) {
          v1::DynamicResource* dynamic = c->add_dynamic_resources();
          dynamic->set_claim_name(claim.claim_name);
          dynamic->set_claim_namespace(claim.claim_namespace);
          v1::ClaimResource* resource = dynamic->add_claim_resources();
          resource->set_driver_name(claim.driver);
          resource->set_pool_name(claim.pool);
          resource->set_device_name(claim.device);
          resource->add_cdi_devices()->set_name("k8s.gpu.nvidia.com/claim=c-" + claim.device);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    for (const FakeContainerDevices& devices : owner_.allocatable_)
      FillDevices(devices, response->add_devices());
    return grpc::Status::OK;
  }

 private:
  KubeletPodResourcesDouble& owner_;
};

struct KubeletPodResourcesDouble::Server {
  std::unique_ptr<grpc::Server> server;
};

KubeletPodResourcesDouble::KubeletPodResourcesDouble(const std::string& socket_path)
    : socket_path_(socket_path),
      service_(std::make_unique<Service>(*this)),
      server_(std::make_unique<Server>()) {
  std::filesystem::create_directories(std::filesystem::path(socket_path).parent_path());
  std::filesystem::remove(socket_path);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_->server = builder.BuildAndStart();
  if (server_->server == nullptr)
    throw std::runtime_error("PodResources double: cannot listen on " + socket_path);
}

KubeletPodResourcesDouble::~KubeletPodResourcesDouble() {
  server_->server->Shutdown();
  server_->server->Wait();
  std::error_code ec;
  std::filesystem::remove(socket_path_, ec);
}

void KubeletPodResourcesDouble::SetPods(std::vector<FakePod> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_ = std::move(pods);
}

void KubeletPodResourcesDouble::SetAllocatable(std::vector<FakeContainerDevices> devices) {
  std::lock_guard<std::mutex> lock(mu_);
  allocatable_ = std::move(devices);
}

}  // namespace gpunode::testing
