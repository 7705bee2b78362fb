// A kubelet's PodResources API v1 for tests: a real gRPC server on a unix socket that answers
// List and GetAllocatableResources with the kubelet's messages and field numbers. Tests set the
// pods it reports and change them while the code under test keeps its connection.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpunode::testing {

struct FakeContainerDevices {
  std::string resource;  // "nvidia.com/gpu"
  std::vector<std::string> device_ids;
};

// A device a container holds through a ResourceClaim (dynamic_resources).
struct FakeClaimDevice {
  std::string claim_name;
  std::string claim_namespace;
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;
  std::string device;  // "gpu-0"
};

struct FakeContainer {
  std::string name;
  std::vector<FakeContainerDevices> devices;
  std::vector<FakeClaimDevice> claims = {};
};

struct FakePod {
  std::string namespace_name;
  std::string name;
  std::vector<FakeContainer> containers;
};

class KubeletPodResourcesDouble {
 public:
  // Creates the socket's directory if needed and starts serving at `socket_path`.
  explicit KubeletPodResourcesDouble(const std::string& socket_path);
  ~KubeletPodResourcesDouble();
  KubeletPodResourcesDouble(const KubeletPodResourcesDouble&) = delete;
  KubeletPodResourcesDouble& operator=(const KubeletPodResourcesDouble&) = delete;

  // What List answers from now on.
  void SetPods(std::vector<FakePod> pods);
  // What GetAllocatableResources answers from now on.
  void SetAllocatable(std::vector<FakeContainerDevices> devices);

  int list_calls() const { return list_calls_; }
  const std::string& socket_path() const { return socket_path_; }

 private:
  class Service;
  std::string socket_path_;
  std::atomic<int> list_calls_{0};
  std::mutex mu_;
  std::vector<FakePod> pods_;
  std::vector<FakeContainerDevices> allocatable_;
  std::unique_ptr<Service> service_;
  struct Server;
  std::unique_ptr<Server> server_;
};

}  // namespace gpunode::testing
