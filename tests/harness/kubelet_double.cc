#include "kubelet_double.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace gpunode::testing {

class KubeletDouble::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(KubeletDouble* kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    return kubelet_->Register(*request);
  }

 private:
  KubeletDouble* kubelet_;
};

KubeletDouble::KubeletDouble(std::string dir) : dir_(std::move(dir)) {}

KubeletDouble::~KubeletDouble() { Stop(); }

bool KubeletDouble::Start() {
  service_ = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path(), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  return server_ != nullptr;
}

void KubeletDouble::StopServing() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  std::vector<Stream> streams;
  {
    std::lock_guard lock(mutex_);
    streams.swap(streams_);
    plugins_.clear();
  }
  for (Stream& stream : streams) stream.context->TryCancel();
  for (Stream& stream : streams) stream.reader.join();
}

void KubeletDouble::Stop() {
  StopServing();
  unlink(socket_path().c_str());
}

bool KubeletDouble::Restart() {
  StopServing();
  // The kubelet removes every unix socket in the directory when it starts, live plugins' too.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    struct stat st {};
    if (lstat(entry.path().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(entry.path().c_str());
  }
  return Start();
}

void KubeletDouble::OnRegister(std::function<void(const std::string& resource)> hook) {
  std::lock_guard lock(mutex_);
  on_register_ = std::move(hook);
}

grpc::Status KubeletDouble::Register(const v1beta1::RegisterRequest& request) {
  auto refuse = [&](grpc::StatusCode code, const std::string& why) {
    std::lock_guard lock(mutex_);
    refused_.push_back(why);
    return grpc::Status(code, why);
  };
  if (request.version() != "v1beta1") {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  "requested API version \"" + request.version() +
                      "\" is not supported by kubelet. Supported version is \"v1beta1\"");
  }
  const std::string& resource = request.resource_name();
  if (resource.find('/') == std::string::npos || resource.rfind("kubernetes.io/", 0) == 0) {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  "the ResourceName \"" + resource + "\" is invalid");
  }
  // As the kubelet: dial the plugin now, blocking, and ask for its options before answering.
  auto plugin = std::make_shared<Plugin>();
  // A fresh connection per dial, as the kubelet (Go's gRPC) makes: C++ gRPC would otherwise
  // reuse a process-wide subchannel still in reconnect backoff from the previous socket.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  plugin->channel = grpc::CreateCustomChannel("unix:" + dir_ + "/" + request.endpoint(),
                                              grpc::InsecureChannelCredentials(), args);
  if (!plugin->channel->WaitForConnected(std::chrono::system_clock::now() +
                                         std::chrono::seconds(10))) {
    return refuse(grpc::StatusCode::UNAVAILABLE,
                  "failed to dial device plugin: " + request.endpoint());
  }
  plugin->stub = v1beta1::DevicePlugin::NewStub(plugin->channel);
  v1beta1::DevicePluginOptions options;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status st = plugin->stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
    if (!st.ok()) {
      return refuse(grpc::StatusCode::UNAVAILABLE,
                    "failed to get device plugin options: " + st.error_message());
    }
  }
  std::function<void(const std::string&)> hook;
  {
    std::lock_guard lock(mutex_);
    hook = on_register_;
  }
  if (hook) hook(resource);
  std::lock_guard lock(mutex_);
  std::vector<RegisteredPlugin>& list = registrations_[resource];
  list.push_back(
      {resource, request.endpoint(), request.version(), options, std::chrono::steady_clock::now()});
  plugin->registration = static_cast<int>(list.size());
  plugins_[resource] = plugin;
  // After Register returns the kubelet opens ListAndWatch; each message replaces the list.
  Stream stream;
  stream.context = std::make_unique<grpc::ClientContext>();
  stream.reader =
      std::thread(&KubeletDouble::ReadStream, this, resource, plugin, stream.context.get());
  streams_.push_back(std::move(stream));
  changed_.notify_all();
  return grpc::Status::OK;
}

void KubeletDouble::ReadStream(std::string resource, std::shared_ptr<Plugin> plugin,
                               grpc::ClientContext* context) {
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      plugin->stub->ListAndWatch(context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  while (reader->Read(&response)) {
    DeviceUpdate update;
    update.at = std::chrono::steady_clock::now();
    update.registration = plugin->registration;
    for (const v1beta1::Device& device : response.devices()) {
      DeviceState state{device.id(), device.health(), {}};
      for (const v1beta1::NUMANode& node : device.topology().nodes())
        state.numa_nodes.push_back(node.id());
      update.devices.push_back(std::move(state));
    }
    std::lock_guard lock(mutex_);
    // A stream of an earlier registration lives until that server goes; the kubelet only
    // listens to the newest.
    auto current = plugins_.find(resource);
    if (current == plugins_.end() || current->second != plugin) continue;
    updates_[resource].push_back(std::move(update));
    changed_.notify_all();
  }
  reader->Finish();
}

std::optional<RegisteredPlugin> KubeletDouble::WaitForRegistration(
    const std::string& resource, int count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  bool ok = changed_.wait_for(
      lock, timeout, [&] { return static_cast<int>(registrations_[resource].size()) >= count; });
  if (!ok) return std::nullopt;
  return registrations_[resource].back();
}

int KubeletDouble::RegistrationCount(const std::string& resource) {
  std::lock_guard lock(mutex_);
  return static_cast<int>(registrations_[resource].size());
}

std::vector<std::string> KubeletDouble::RegisteredResources() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [resource, registrations] : registrations_) {
    if (!registrations.empty()) names.push_back(resource);
  }
  return names;
}

std::vector<std::string> KubeletDouble::RefusedRegistrations() {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::optional<std::pair<size_t, DeviceUpdate>> KubeletDouble::WaitForDevices(
    const std::string& resource, const DevicePredicate& predicate,
    std::chrono::milliseconds timeout, size_t from) {
  std::unique_lock lock(mutex_);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t next = from;
  while (true) {
    const std::vector<DeviceUpdate>& updates = updates_[resource];
    for (; next < updates.size(); ++next) {
      if (predicate(updates[next].devices)) return std::make_pair(next, updates[next]);
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      const std::vector<DeviceUpdate>& last = updates_[resource];
      for (; next < last.size(); ++next) {
        if (predicate(last[next].devices)) return std::make_pair(next, last[next]);
      }
      return std::nullopt;
    }
  }
}

v1beta1::DevicePlugin::Stub* KubeletDouble::StubFor(const std::string& resource) {
  std::lock_guard lock(mutex_);
  auto it = plugins_.find(resource);
  return it == plugins_.end() ? nullptr : it->second->stub.get();
}

grpc::Status KubeletDouble::Allocate(const std::string& resource,
                                     const std::vector<std::vector<std::string>>& containers,
                                     std::vector<v1beta1::ContainerAllocateResponse>* responses) {
  v1beta1::DevicePlugin::Stub* stub = StubFor(resource);
  if (stub == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "cannot allocate unregistered device " + resource);
  }
  responses->clear();
  for (const std::vector<std::string>& ids : containers) {
    v1beta1::AllocateRequest request;
    v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status st = stub->Allocate(&context, request, &response);
    if (!st.ok()) return st;
    if (response.container_responses_size() == 0) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "no containers return in allocation response");
    }
    responses->push_back(response.container_responses(0));
  }
  return grpc::Status::OK;
}

grpc::Status KubeletDouble::GetPreferredAllocation(const std::string& resource,
                                                   const std::vector<std::string>& available,
                                                   const std::vector<std::string>& must_include,
                                                   int size, std::vector<std::string>* ids) {
  v1beta1::DevicePlugin::Stub* stub = StubFor(resource);
  if (stub == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unregistered " + resource);
  }
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  for (const std::string& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status st = stub->GetPreferredAllocation(&context, request, &response);
  if (!st.ok()) return st;
  ids->clear();
  if (response.container_responses_size() > 0) {
    for (const std::string& id : response.container_responses(0).deviceids()) ids->push_back(id);
  }
  return grpc::Status::OK;
}

}  // namespace gpunode::testing
