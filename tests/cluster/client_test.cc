#include "kube/client.h"

#include <future>

#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "kube/api_loader.h"
#include "kube/gpu_resources.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

using gpunode::testing::ApiServerDouble;
using gpunode::testing::TempDir;

std::string Fixture(const std::string& name) { return std::string(CLUSTER_FIXTURES) + "/" + name; }

nlohmann::json GpuNode(const std::string& name, int gpus) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.count", std::to_string(gpus)}}}}},
      {"status",
       {{"capacity", {{"nvidia.com/gpu", std::to_string(gpus)}}},
        {"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_TRUE(gpunode::testing::MakeTestCertificates(dir_->path()));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    ApiServerDouble::Options options;
    options.tls_cert = dir_->path() + "/tls.crt";
    options.tls_key = dir_->path() + "/tls.key";
    server_ = std::make_unique<ApiServerDouble>(options);
    ASSERT_TRUE(server_->Start());
  }

  ClusterAccess Access() const {
    ClusterAccess a;
    a.server = server_->url();
    a.ca_pem = gpunode::testing::ReadText(dir_->path() + "/ca.crt");
    a.token = "double-token";
    a.description = "test";
    return a;
  }

  // A client whose backoff is recorded instead of slept.
  std::unique_ptr<Client> NewTestClient(const ClusterAccess& access,
                                        absl::Duration timeout = absl::Seconds(10)) {
    TransportOptions t;
    t.request_timeout = timeout;
    absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewCurlTransport(access, t);
    EXPECT_TRUE(transport.ok());
    RetryPolicy retry;
    retry.max_attempts = 4;
    retry.sleep = [this](absl::Duration d) { sleeps_.push_back(d); };
    return std::make_unique<Client>(std::move(*transport), retry, "test");
  }

  static TempDir* dir_;
  std::unique_ptr<ApiServerDouble> server_;
  std::vector<absl::Duration> sleeps_;
};

TempDir* ClientTest::dir_ = nullptr;

TEST_F(ClientTest, ListsPageByPageWithContinueTokens) {
  for (int i = 0; i < 5; ++i) server_->AddObject(GpuNode("node-" + std::to_string(i), 8));
  std::unique_ptr<Client> client = NewTestClient(Access());
  ApiQuery query;
  query.pods = false;
  query.page_size = 2;
  absl::StatusOr<ClusterSnapshot> s = LoadFromApi(*client, query);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes.size(), 5u);
  std::vector<ApiServerDouble::Request> requests = server_->Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].query.count("continue"), 0u);
  EXPECT_EQ(requests[0].query.at("limit"), "2");
  EXPECT_FALSE(requests[1].query.at("continue").empty());
  EXPECT_NE(requests[1].query.at("continue"), requests[2].query.at("continue"));
}

TEST_F(ClientTest, FieldSelectorsReachTheServer) {
  ASSERT_TRUE(server_->LoadList(Fixture("drain.json")));
  std::unique_ptr<Client> client = NewTestClient(Access());
  ApiQuery query;
  query.all_nodes = false;
  query.pod_field_selector = "spec.nodeName=gpu-b";
  absl::StatusOr<ClusterSnapshot> s = LoadFromApi(*client, query);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->pods.size(), 1u);
  EXPECT_EQ(s->pods[0].node_name, "gpu-b");
  EXPECT_EQ(server_->Requests().back().query.at("fieldSelector"), "spec.nodeName=gpu-b");
}

TEST_F(ClientTest, RetriesThrottlingAndServerErrorsHonouringRetryAfter) {
  server_->AddObject(GpuNode("n", 8));
  server_->FailNext("GET", "/api/v1/nodes", 429, 1, /*retry_after_seconds=*/7);
  server_->FailNext("GET", "/api/v1/nodes", 503, 1);
  std::unique_ptr<Client> client = NewTestClient(Access());
  absl::StatusOr<std::string> body = client->Get("/api/v1/nodes/n");
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(sleeps_.size(), 2u);
  EXPECT_EQ(sleeps_[0], absl::Seconds(7));         // Retry-After
  EXPECT_EQ(sleeps_[1], absl::Milliseconds(500));  // backoff, doubled
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes/n"), 3);
}

TEST_F(ClientTest, GivesUpAfterMaxAttemptsWithTheServersMessage) {
  server_->FailNext("GET", "/api/v1/nodes", 500, 10);
  std::unique_ptr<Client> client = NewTestClient(Access());
  absl::StatusOr<std::string> body = client->Get("/api/v1/nodes");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(sleeps_.size(), 3u);
  EXPECT_NE(std::string(body.status().message()).find("500 InternalError: injected by the test"),
            std::string::npos)
      << body.status();
}

TEST_F(ClientTest, NotFoundAndUnauthorizedAreClear) {
  std::unique_ptr<Client> client = NewTestClient(Access());
  absl::StatusOr<std::string> missing = client->Get("/api/v1/nodes/ghost");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(std::string(missing.status().message()).find("nodes \"ghost\" not found"),
            std::string::npos);
  ClusterAccess wrong = Access();
  wrong.token = "stolen";
  absl::StatusOr<std::string> denied = NewTestClient(wrong)->Get("/api/v1/nodes");
  EXPECT_TRUE(absl::IsUnauthenticated(denied.status()));
  EXPECT_EQ(std::string(denied.status().message()).find("stolen"), std::string::npos);
}

TEST_F(ClientTest, ExpiredContinueTokenSaysToRunAgain) {
  for (int i = 0; i < 3; ++i) server_->AddObject(GpuNode("node-" + std::to_string(i), 8));
  server_->ExpireContinueTokens(true);
  ApiQuery query;
  query.pods = false;
  query.page_size = 1;
  absl::StatusOr<ClusterSnapshot> s = LoadFromApi(*NewTestClient(Access()), query);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("run the command again"), std::string::npos);
}

TEST_F(ClientTest, TlsIsVerifiedAgainstTheKubeconfigCa) {
  TempDir other;
  ASSERT_TRUE(gpunode::testing::MakeTestCertificates(other.path()));
  ClusterAccess untrusted = Access();
  untrusted.ca_pem = gpunode::testing::ReadText(other.path() + "/ca.crt");  // another cluster's CA
  RetryPolicy once;
  once.max_attempts = 1;
  absl::StatusOr<std::unique_ptr<HttpTransport>> t = NewCurlTransport(untrusted, {});
  ASSERT_TRUE(t.ok());
  Client client(std::move(*t), once, "test");
  EXPECT_FALSE(client.Get("/api/v1/nodes").ok());

  ClusterAccess insecure = Access();
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  EXPECT_TRUE(NewTestClient(insecure)->Get("/api/v1/nodes").ok());
}

TEST_F(ClientTest, RequestsTimeOut) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  server_->OnRequest([released](const ApiServerDouble::Request&) { released.wait(); });
  RetryPolicy once;
  once.max_attempts = 1;
  TransportOptions fast;
  fast.request_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<HttpTransport>> t = NewCurlTransport(Access(), fast);
  ASSERT_TRUE(t.ok());
  Client client(std::move(*t), once, "test");
  absl::StatusOr<std::string> body = client.Get("/api/v1/nodes");
  release.set_value();
  EXPECT_TRUE(absl::IsDeadlineExceeded(body.status())) << body.status();
  EXPECT_NE(std::string(body.status().message()).find("--request-timeout"), std::string::npos);
}

}  // namespace
}  // namespace gpunode::kube
