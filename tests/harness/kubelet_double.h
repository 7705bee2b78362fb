// A kubelet, as far as device plugins can tell: the Registration service on kubelet.sock, which
// dials the plugin's socket inside Register and asks for its options before it answers, then
// streams ListAndWatch; "restart" deletes every socket in the directory and serves kubelet.sock
// again; Allocate is called once per container.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace gpunode::testing {

struct RegisteredPlugin {
  std::string resource_name;
  std::string endpoint;
  std::string version;
  v1beta1::DevicePluginOptions options;  // what GetDevicePluginOptions answered inside Register
  std::chrono::steady_clock::time_point at;
};

struct DeviceState {
  std::string id;
  std::string health;
  std::vector<int64_t> numa_nodes;
};

struct DeviceUpdate {
  std::chrono::steady_clock::time_point at;
  int registration = 0;  // which Register of the resource opened the stream (1, 2, ...)
  std::vector<DeviceState> devices;
};

using DevicePredicate = std::function<bool(const std::vector<DeviceState>&)>;

class KubeletDouble {
 public:
  // `dir` is the device-plugins directory; it must exist.
  explicit KubeletDouble(std::string dir);
  ~KubeletDouble();
  KubeletDouble(const KubeletDouble&) = delete;
  KubeletDouble& operator=(const KubeletDouble&) = delete;

  // Serves Registration on <dir>/kubelet.sock. False when it cannot bind.
  bool Start();
  // What a kubelet restart looks like to a plugin: the Registration server and every
  // ListAndWatch stream go away, every socket in the directory is deleted, and kubelet.sock is
  // served again.
  bool Restart();
  void Stop();

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/kubelet.sock"; }

  // Waits until `resource` has registered at least `count` times; the latest registration.
  std::optional<RegisteredPlugin> WaitForRegistration(const std::string& resource, int count,
                                                      std::chrono::milliseconds timeout);
  int RegistrationCount(const std::string& resource);
  // Every resource that registered at least once, in name order.
  std::vector<std::string> RegisteredResources();
  // Called inside each Register, after the plugin answered GetDevicePluginOptions and before
  // Register returns: the plugin is then blocked in its registration, so a test can change the
  // world at exactly that moment. Set it before the plugin registers.
  void OnRegister(std::function<void(const std::string& resource)> hook);
  // Register calls the kubelet refused (bad version, failed dial, failed options), with why.
  std::vector<std::string> RefusedRegistrations();

  // The first ListAndWatch update of `resource` at or after update number `from` that satisfies
  // `predicate`, with its number; nullopt on timeout.
  std::optional<std::pair<size_t, DeviceUpdate>> WaitForDevices(const std::string& resource,
                                                                const DevicePredicate& predicate,
                                                                std::chrono::milliseconds timeout,
                                                                size_t from = 0);

  // As the kubelet: one Allocate call per container, each with that container's IDs.
  grpc::Status Allocate(const std::string& resource,
                        const std::vector<std::vector<std::string>>& containers,
                        std::vector<v1beta1::ContainerAllocateResponse>* responses);
  grpc::Status GetPreferredAllocation(const std::string& resource,
                                      const std::vector<std::string>& available,
                                      const std::vector<std::string>& must_include, int size,
                                      std::vector<std::string>* ids);

 private:
  class RegistrationService;
  struct Plugin {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    int registration = 0;
  };
  struct Stream {
    std::unique_ptr<grpc::ClientContext> context;
    std::thread reader;
  };

  grpc::Status Register(const v1beta1::RegisterRequest& request);
  void ReadStream(std::string resource, std::shared_ptr<Plugin> plugin,
                  grpc::ClientContext* context);
  v1beta1::DevicePlugin::Stub* StubFor(const std::string& resource);
  void StopServing();

  std::string dir_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<RegisteredPlugin>> registrations_;
  std::map<std::string, std::shared_ptr<Plugin>> plugins_;
  std::map<std::string, std::vector<DeviceUpdate>> updates_;
  std::vector<std::string> refused_;
  std::function<void(const std::string&)> on_register_;
  std::vector<Stream> streams_;
};

}  // namespace gpunode::testing
