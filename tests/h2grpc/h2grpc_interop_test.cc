// The h2grpc server and client against gRPC's own C++ implementation, on unix sockets, with the
// device plugin API's messages: what the kubelet's Go gRPC does with them is what gRPC C++ does.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <future>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "h2grpc/client.h"
#include "h2grpc/server.h"
#include "temp_dir.h"

// GCC says that it sanitizes addresses by __SANITIZE_ADDRESS__, clang 14 by __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define GPUNODE_ADDRESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUNODE_ADDRESS_SANITIZED 1
#endif
#endif

namespace gpunode::h2grpc {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<v1beta1::DevicePlugin::Stub> Dial(const std::string& socket) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

std::chrono::system_clock::time_point In(milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

// A ListAndWatch that sends one message and stays open until the call is cancelled, as the
// plugin's does: it checks cancelled() between its own waits.
void AddOpenStream(Service& service) {
  service.AddServerStreaming<v1beta1::Empty>("/v1beta1.DevicePlugin/ListAndWatch",
                                             [](const v1beta1::Empty&, ServerStream& stream) {
                                               stream.Write(v1beta1::ListAndWatchResponse());
                                               while (!stream.cancelled())
                                                 std::this_thread::sleep_for(milliseconds(1));
                                               return absl::OkStatus();
                                             });
}

class H2grpcServerTest : public ::testing::Test {
 protected:
  void Serve(Service service) {
    server_ = std::make_unique<Server>(std::move(service));
    ASSERT_TRUE(server_->Start(socket_).ok());
  }

  testing::TempDir dir_{"h2grpc"};
  std::string socket_ = dir_.path() + "/plugin.sock";
  std::unique_ptr<Server> server_;
};

TEST_F(H2grpcServerTest, UnaryCallReturnsTheHandlersResponse) {
  Service service;
  service.AddUnary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
      "/v1beta1.DevicePlugin/GetDevicePluginOptions", [](const v1beta1::Empty&) {
        v1beta1::DevicePluginOptions options;
        options.set_get_preferred_allocation_available(true);
        return options;
      });
  Serve(std::move(service));
  grpc::ClientContext context;
  context.set_deadline(In(milliseconds(5000)));
  v1beta1::DevicePluginOptions options;
  grpc::Status st = Dial(socket_)->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(options.get_preferred_allocation_available());
  EXPECT_FALSE(options.pre_start_required());
}

TEST_F(H2grpcServerTest, ASocketPathAsAuthorityIsAccepted) {
  // Go's gRPC sends the dialled path as :authority, as the kubelet dials plugin sockets; '/' is
  // not valid in an HTTP authority, but gRPC servers must not care.
  Service service;
  service.AddUnary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
      "/v1beta1.DevicePlugin/GetDevicePluginOptions",
      [](const v1beta1::Empty&) { return v1beta1::DevicePluginOptions(); });
  Serve(std::move(service));
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, socket_);
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateCustomChannel("unix:" + socket_, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(In(milliseconds(5000)));
  v1beta1::DevicePluginOptions options;
  grpc::Status st = stub->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST_F(H2grpcServerTest, ErrorsCarryTheirCodeAndMessage) {
  Service service;
  service.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      "/v1beta1.DevicePlugin/Allocate",
      [](const v1beta1::AllocateRequest& request) -> absl::StatusOr<v1beta1::AllocateResponse> {
        return absl::InvalidArgumentError("unknown device '" +
                                          request.container_requests(0).devices_ids(0) +
                                          "': 100% \xc3\xa9tonnant");
      });
  Serve(std::move(service));
  auto stub = Dial(socket_);
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("GPU-nope");
  v1beta1::AllocateResponse response;
  grpc::ClientContext context;
  grpc::Status st = stub->Allocate(&context, request, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "unknown device 'GPU-nope': 100% \xc3\xa9tonnant");

  grpc::ClientContext other;
  v1beta1::PreferredAllocationResponse preferred;
  st = stub->GetPreferredAllocation(&other, v1beta1::PreferredAllocationRequest(), &preferred);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(st.error_message(), "unknown method /v1beta1.DevicePlugin/GetPreferredAllocation");
}

TEST_F(H2grpcServerTest, LargeResponsesArriveWholeThroughFlowControl) {
  // Far beyond HTTP/2's initial 64 KiB window and 16 KiB frames.
  const std::string big(3 * 1024 * 1024, 'g');
  Service service;
  service.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      // A copy: the server, and with it the handler, outlives this test body (TearDown stops it).
      "/v1beta1.DevicePlugin/Allocate", [big](const v1beta1::AllocateRequest&) {
        v1beta1::AllocateResponse response;
        (*response.add_container_responses()->mutable_envs())["BIG"] = big;
        return response;
      });
  Serve(std::move(service));
  auto stub = Dial(socket_);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    v1beta1::AllocateResponse response;
    grpc::Status st = stub->Allocate(&context, v1beta1::AllocateRequest(), &response);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(response.container_responses(0).envs().at("BIG"), big);
  }
}

TEST_F(H2grpcServerTest, StreamSendsEveryWriteInOrderThenItsStatus) {
  Service service;
  service.AddServerStreaming<v1beta1::Empty>(
      "/v1beta1.DevicePlugin/ListAndWatch", [](const v1beta1::Empty&, ServerStream& stream) {
        for (int i = 0; i < 200; ++i) {
          v1beta1::ListAndWatchResponse response;
          response.add_devices()->set_id("GPU-" + std::to_string(i));
          if (!stream.Write(response)) return absl::CancelledError("client left");
        }
        return absl::OkStatus();
      });
  Serve(std::move(service));
  grpc::ClientContext context;
  auto reader = Dial(socket_)->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  int received = 0;
  while (reader->Read(&response)) {
    ASSERT_EQ(response.devices(0).id(), "GPU-" + std::to_string(received));
    ++received;
  }
  EXPECT_EQ(received, 200);
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(H2grpcServerTest, ClientCancelReachesTheHandler) {
  std::promise<void> handler_saw_cancel;
  Service service;
  service.AddServerStreaming<v1beta1::Empty>(
      "/v1beta1.DevicePlugin/ListAndWatch", [&](const v1beta1::Empty&, ServerStream& stream) {
        stream.Write(v1beta1::ListAndWatchResponse());
        while (!stream.cancelled()) std::this_thread::sleep_for(milliseconds(1));
        EXPECT_FALSE(stream.Write(v1beta1::ListAndWatchResponse()));
        handler_saw_cancel.set_value();
        return absl::OkStatus();
      });
  Serve(std::move(service));
  grpc::ClientContext context;
  auto reader = Dial(socket_)->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(reader->Read(&response));
  context.TryCancel();
  EXPECT_EQ(handler_saw_cancel.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(H2grpcServerTest, StopEndsOpenStreamsWithTheHandlersStatus) {
  Service service;
  AddOpenStream(service);
  Serve(std::move(service));
  grpc::ClientContext context;
  auto reader = Dial(socket_)->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(reader->Read(&response));
  server_->Stop();
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(H2grpcServerTest, ConcurrentCallsShareOneConnectionWithAnOpenStream) {
  std::atomic<int> allocations{0};
  Service service;
  service.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      "/v1beta1.DevicePlugin/Allocate", [&](const v1beta1::AllocateRequest& request) {
        ++allocations;
        v1beta1::AllocateResponse response;
        (*response.add_container_responses()->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] =
            request.container_requests(0).devices_ids(0);
        return response;
      });
  AddOpenStream(service);
  Serve(std::move(service));
  auto stub = Dial(socket_);
  grpc::ClientContext watch;
  auto reader = stub->ListAndWatch(&watch, v1beta1::Empty());
  v1beta1::ListAndWatchResponse first;
  ASSERT_TRUE(reader->Read(&first));
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string id = "GPU-" + std::to_string(t) + "-" + std::to_string(i);
        v1beta1::AllocateRequest request;
        request.add_container_requests()->add_devices_ids(id);
        v1beta1::AllocateResponse response;
        grpc::ClientContext context;
        if (stub->Allocate(&context, request, &response).ok() &&
            response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES") == id) {
          ++ok;
        }
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(ok, 300);
  EXPECT_EQ(allocations, 300);
  watch.TryCancel();
  reader->Finish();
}

TEST_F(H2grpcServerTest, RequestsThatDoNotParseAreInternalErrors) {
  Service service;
  service.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      "/v1beta1.DevicePlugin/Allocate",
      [](const v1beta1::AllocateRequest&) { return v1beta1::AllocateResponse(); });
  Serve(std::move(service));
  // Field 1, length-delimited, longer than the bytes that follow.
  absl::StatusOr<std::string> answer =
      CallUnary(socket_, "/v1beta1.DevicePlugin/Allocate", "\x0a\x7f", milliseconds(5000));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(answer.status().message(),
            "cannot parse the request message of /v1beta1.DevicePlugin/Allocate");
}

TEST_F(H2grpcServerTest, AClientThatIsNotHttp2IsDisconnected) {
  Serve(Service());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const char request[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_GT(send(fd, request, sizeof request - 1, 0), 0);
  // The server answers with its SETTINGS and a GOAWAY, then closes: read until end of file.
  char buffer[4096];
  ssize_t total = 0, n;
  while ((n = recv(fd, buffer, sizeof buffer, 0)) > 0) total += n;
  EXPECT_EQ(n, 0);
  EXPECT_GT(total, 0);
  close(fd);
}

// A unix socket connected to `path`, or -1.
int ConnectTo(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// An HTTP/2 frame: 9-byte header, then the payload.
std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string frame = {static_cast<char>(payload.size() >> 16),
                       static_cast<char>(payload.size() >> 8),
                       static_cast<char>(payload.size()),
                       static_cast<char>(type),
                       static_cast<char>(flags),
                       static_cast<char>(stream >> 24),
                       static_cast<char>(stream >> 16),
                       static_cast<char>(stream >> 8),
                       static_cast<char>(stream)};
  return frame + payload;
}

// The bytes of a client that opens a server-streaming call to `path` with an empty request and
// never reads an answer (so never widens HTTP/2's 64 KiB window). HPACK literals without
// indexing, names and values under 127 bytes.
std::string OpenCallAndStopReading(const std::string& path) {
  std::string headers;
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{":method", "POST"},
                                                        {":scheme", "http"},
                                                        {":path", path},
                                                        {":authority", "localhost"},
                                                        {"content-type", "application/grpc"},
                                                        {"te", "trailers"}}) {
    headers += '\0';
    headers += static_cast<char>(name.size()) + name;
    headers += static_cast<char>(value.size()) + value;
  }
  return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + Frame(0x4, 0, 0, "") +
         Frame(0x1, 0x4, 1, headers) + Frame(0x0, 0x1, 1, std::string(5, '\0'));
}

// A handler that keeps writing to a client that does not read: the queue is bounded, Write
// returns false, and the handler gets to return (without the bound it would write forever).
TEST_F(H2grpcServerTest, AStreamWhoseClientStoppedReadingIsBounded) {
  std::promise<size_t> written_before_refusal;
  Service service;
  service.AddServerStreaming("/v1beta1.DevicePlugin/ListAndWatch",
                             [&](std::string_view, ServerStream& stream) {
                               const std::string message(64 * 1024, 'x');
                               size_t written = 0;
                               while (stream.Write(message)) written += message.size();
                               written_before_refusal.set_value(written);
                               return absl::OkStatus();
                             });
  Serve(std::move(service));
  int fd = ConnectTo(socket_);
  ASSERT_GE(fd, 0);
  const std::string request = OpenCallAndStopReading("/v1beta1.DevicePlugin/ListAndWatch");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::future<size_t> written = written_before_refusal.get_future();
  ASSERT_EQ(written.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "Write never refused: the queue for a client that does not read grows without end";
  // The stream's queue, the call's unsent bytes, and the HTTP/2 window the client opened.
  EXPECT_LE(written.get(), kMaxQueuedPerStream + kMaxUnsentPerCall + 2 * 64 * 1024);
  close(fd);
}

// accept failing with EMFILE leaves the connection queued: the loop must not spin on the readable
// listener, and must accept it once descriptors are free again.
TEST_F(H2grpcServerTest, AcceptOutOfDescriptorsDoesNotSpinAndRecovers) {
#if defined(GPUNODE_ADDRESS_SANITIZED)
  // The sanitizers' own checks need descriptors (UBSan's vptr check probes memory through a pipe)
  // and report false errors in a process that has none left.
  GTEST_SKIP() << "needs a process without free descriptors, which the sanitizers cannot run in";
#endif
  Service service;
  service.AddUnary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
      "/v1beta1.DevicePlugin/GetDevicePluginOptions",
      [](const v1beta1::Empty&) { return v1beta1::DevicePluginOptions(); });
  Serve(std::move(service));

  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  // Every descriptor below a new, low limit in use, but one for the client's socket.
  std::vector<int> fillers;
  int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(probe, 0);
  rlimit low = original;
  low.rlim_cur = static_cast<rlim_t>(probe) + 16;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  fillers.push_back(probe);
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
  close(fillers.back());
  fillers.pop_back();
  int client = ConnectTo(socket_);
  ASSERT_GE(client, 0);

  // The server's accept now fails with EMFILE. A loop that polled the listener again at once
  // would burn this whole interval on the CPU.
  timespec cpu_before{}, cpu_after{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_before);
  std::this_thread::sleep_for(milliseconds(500));
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_after);
  double cpu_ms =
      (cpu_after.tv_sec - cpu_before.tv_sec) * 1e3 + (cpu_after.tv_nsec - cpu_before.tv_nsec) / 1e6;

  for (int fd : fillers) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &original), 0);
  EXPECT_LT(cpu_ms, 150) << "the server loop spun while accept failed";

  // With descriptors free, the queued connection is accepted and served.
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + Frame(0x4, 0, 0, "");
  ASSERT_EQ(send(client, preface.data(), preface.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(preface.size()));
  char buffer[9];
  ASSERT_EQ(recv(client, buffer, sizeof buffer, MSG_WAITALL), 9) << "never accepted";
  EXPECT_EQ(buffer[3], 0x4);  // the server's SETTINGS
  close(client);
  grpc::ClientContext context;
  context.set_deadline(In(milliseconds(5000)));
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(Dial(socket_)->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
}

// The kubelet's side of registration, played by gRPC's C++ server.
class Kubelet final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    std::unique_lock lock(mutex_);
    requests_.push_back(*request);
    deadline_ = context->deadline();
    if (hold_) released_.wait(lock, [&] { return !hold_; });
    return status_;
  }

  std::mutex mutex_;
  std::condition_variable released_;
  std::vector<v1beta1::RegisterRequest> requests_;
  std::chrono::system_clock::time_point deadline_;
  grpc::Status status_ = grpc::Status::OK;
  bool hold_ = false;
};

class H2grpcClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    {
      std::lock_guard lock(kubelet_.mutex_);
      kubelet_.hold_ = false;
    }
    kubelet_.released_.notify_all();
    server_->Shutdown(In(milliseconds(100)));
  }

  absl::Status Register(milliseconds timeout = milliseconds(5000)) {
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_endpoint("nvidia-gpu.sock");
    request.set_resource_name("nvidia.com/gpu");
    request.mutable_options()->set_get_preferred_allocation_available(true);
    v1beta1::Empty response;
    return CallUnary(socket_, "/v1beta1.Registration/Register", request, response, timeout);
  }

  testing::TempDir dir_{"h2grpc"};
  std::string socket_ = dir_.path() + "/kubelet.sock";
  Kubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(H2grpcClientTest, RegisterReachesTheServerWithItsDeadline) {
  auto before = std::chrono::system_clock::now();
  absl::Status st = Register();
  ASSERT_TRUE(st.ok()) << st;
  std::lock_guard lock(kubelet_.mutex_);
  ASSERT_EQ(kubelet_.requests_.size(), 1u);
  const v1beta1::RegisterRequest& got = kubelet_.requests_[0];
  EXPECT_EQ(got.version(), "v1beta1");
  EXPECT_EQ(got.endpoint(), "nvidia-gpu.sock");
  EXPECT_EQ(got.resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(got.options().get_preferred_allocation_available());
  // grpc-timeout made it: the server's deadline is about 5 s after the call started.
  EXPECT_GT(kubelet_.deadline_, before + std::chrono::seconds(4));
  EXPECT_LT(kubelet_.deadline_, before + std::chrono::seconds(6));
}

TEST_F(H2grpcClientTest, TheServersErrorIsTheCallsStatus) {
  {
    // gRPC's server threads read it under the lock, in Register.
    std::lock_guard lock(kubelet_.mutex_);
    kubelet_.status_ = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                    "Unsupported device plugin API version: v0 \xe2\x9c\x97");
  }
  absl::Status st = Register();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "Unsupported device plugin API version: v0 \xe2\x9c\x97");
}

TEST_F(H2grpcClientTest, ASilentServerMeansDeadlineExceeded) {
  {
    std::lock_guard lock(kubelet_.mutex_);
    kubelet_.hold_ = true;
  }
  auto start = std::chrono::steady_clock::now();
  absl::Status st = Register(milliseconds(200));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  // Either side may end the call: gRPC's server enforces the grpc-timeout it was sent, timed from
  // when the request reached it.
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(150));
  EXPECT_LT(waited, milliseconds(5000));
}

TEST_F(H2grpcClientTest, UnknownMethodIsUnimplemented) {
  absl::StatusOr<std::string> answer =
      CallUnary(socket_, "/v1beta1.Registration/Nope", "", milliseconds(5000));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(H2grpcSocketPathTest, APathTooLongForASocketIsRefusedWithTheFix) {
  const std::string path = "/tmp/" + std::string(120, 'd') + "/plugin.sock";
  Server server{Service()};
  absl::Status st = server.Start(path);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "socket path " + path + " is longer than 107 bytes; use a shorter directory");
  absl::StatusOr<std::string> answer =
      CallUnary(path, "/v1beta1.Registration/Register", "", milliseconds(1000));
  EXPECT_EQ(answer.status(), st);
}

TEST(H2grpcClientNoServerTest, AMissingSocketIsUnavailable) {
  testing::TempDir dir("h2grpc");
  absl::StatusOr<std::string> answer = CallUnary(
      dir.path() + "/kubelet.sock", "/v1beta1.Registration/Register", "", milliseconds(1000));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(answer.status().message().find("No such file or directory"), std::string::npos)
      << answer.status();
}

}  // namespace
}  // namespace gpunode::h2grpc
