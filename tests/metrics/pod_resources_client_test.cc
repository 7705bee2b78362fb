// The exporter's PodResources client (h2grpc's unary client) against gRPC C++ servers: the
// kubelet double for List, a server whose PodResourcesLister implements nothing (a kubelet without
// the v1 List), a socket that never answers, and no socket at all.
#include "metrics/pod_resources_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kubelet_podresources_double.h"
#include "podresources/api.grpc.pb.h"
#include "temp_dir.h"

namespace gpunode::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(PodResourcesClient, ListsDevicesAndClaimsFromTheKubelet) {
  testing::TempDir dir;
  testing::KubeletPodResourcesDouble kubelet(dir.path() + "/kubelet.sock");
  kubelet.SetPods({
      {"ml", "train-0", {{"trainer", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}}}},
      {"default", "idle", {{"sidecar", {}}}},
      {"ml",
       "claimed",
       {{"worker",
         {},
         {{"gpu-claim", "ml", "gpu.nvidia.com", "node-1", "gpu-3"},
          {"other", "ml", "example.com", "pool", "dev"}}}}},
  });
  PodResourcesClient client(kubelet.socket_path());
  absl::StatusOr<std::vector<ListedDevices>> listed = client.List(absl::Seconds(5));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].namespace_name, "ml");
  EXPECT_EQ((*listed)[0].pod, "train-0");
  EXPECT_EQ((*listed)[0].container, "trainer");
  EXPECT_EQ((*listed)[0].device_ids, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_FALSE((*listed)[0].dra.has_value());
  EXPECT_EQ((*listed)[1].pod, "claimed");
  ASSERT_TRUE((*listed)[1].dra.has_value());
  EXPECT_EQ((*listed)[1].dra->claim_name, "gpu-claim");
  EXPECT_EQ((*listed)[1].dra->device, "gpu-3");
  EXPECT_EQ(kubelet.list_calls(), 1);
}

TEST(PodResourcesClient, ReachesARestartedKubeletAtTheNextCall) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/kubelet.sock";
  auto kubelet = std::make_unique<testing::KubeletPodResourcesDouble>(socket);
  kubelet->SetPods({{"ml", "train-0", {{"trainer", {{"nvidia.com/gpu", {"GPU-a"}}}}}}});
  PodResourcesClient client(socket);
  ASSERT_TRUE(client.List(absl::Seconds(5)).ok());
  kubelet.reset();
  EXPECT_FALSE(client.List(absl::Seconds(1)).ok());
  kubelet = std::make_unique<testing::KubeletPodResourcesDouble>(socket);
  kubelet->SetPods({{"ml", "train-1", {{"trainer", {{"nvidia.com/gpu", {"GPU-b"}}}}}}});
  // No reconnect backoff: the first call after the restart answers.
  absl::StatusOr<std::vector<ListedDevices>> listed = client.List(absl::Seconds(5));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].pod, "train-1");
}

TEST(PodResourcesClient, TakesAnswersOverGrpcsDefaultLimit) {
  testing::TempDir dir;
  testing::KubeletPodResourcesDouble kubelet(dir.path() + "/kubelet.sock");
  // About 6 MiB: over gRPC's default 4 MiB, under the kubelet's 16 MiB.
  std::vector<std::string> ids;
  for (int i = 0; i < 100'000; ++i)
    ids.push_back("GPU-" + std::string(56, 'x') + std::to_string(i));
  kubelet.SetPods({{"ml", "big", {{"c", {{"nvidia.com/gpu", ids}}}}}});
  absl::StatusOr<std::vector<ListedDevices>> listed =
      PodResourcesClient(kubelet.socket_path()).List(absl::Seconds(20));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].device_ids.size(), ids.size());
}

TEST(PodResourcesClient, NoSocketIsUnavailableAndNamesIt) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/kubelet.sock";
  absl::StatusOr<std::vector<ListedDevices>> listed =
      PodResourcesClient(socket).List(absl::Seconds(1));
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(listed.status().message()),
              StartsWith("PodResources List on " + socket + ": "));
  EXPECT_THAT(std::string(listed.status().message()), HasSubstr("No such file or directory"));
}

TEST(PodResourcesClient, KubeletWithoutTheV1ListAnswersUnimplemented) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/kubelet.sock";
  // The generated base class answers every method UNIMPLEMENTED.
  v1::PodResourcesLister::Service nothing;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&nothing);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::vector<ListedDevices>> listed =
      PodResourcesClient(socket).List(absl::Seconds(5));
  server->Shutdown();
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(listed.status().message(), "PodResources List on " + socket + ": UNIMPLEMENTED");
}

TEST(PodResourcesClient, KubeletThatNeverAnswersTimesOut) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/kubelet.sock";
  // Listening, so the connect succeeds, but nobody accepts or answers.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<ListedDevices>> listed =
      PodResourcesClient(socket).List(absl::Milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(listed.status().message()),
              StartsWith("PodResources List on " + socket + ": "));
  EXPECT_THAT(std::string(listed.status().message()), HasSubstr("did not answer within 300 ms"));
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(5));
}

}  // namespace
}  // namespace gpunode::metrics
