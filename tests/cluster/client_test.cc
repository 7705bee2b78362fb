#include "kube/client.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "cluster_fixture.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/simulated_env.h"
#include "kube/api_loader.h"
#include "kube/exec_credential.h"
#include "kube/gpu_resources.h"
#include "kube/http1_transport.h"
#include "kube/node_label_watch.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::kube {
namespace {

using gpunode::testing::ApiServerDouble;
using gpunode::testing::TempDir;

nlohmann::json GpuNode(const std::string& name, int gpus) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.count", std::to_string(gpus)}}}}},
      {"status",
       {{"capacity", {{"nvidia.com/gpu", std::to_string(gpus)}}},
        {"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

// Each test runs over both transports: libcurl and the node daemons' HTTP/1.1 one.
enum class Transport { kCurl, kHttp1 };

class ClientTest : public gpunode::testing::TlsApiServerTest,
                   public ::testing::WithParamInterface<Transport> {
 protected:
  virtual Transport Kind() const { return GetParam(); }

  std::unique_ptr<HttpTransport> MakeTransport(const ClusterAccess& access,
                                               const TransportOptions& options) {
    absl::StatusOr<std::unique_ptr<HttpTransport>> transport =
        Kind() == Transport::kCurl ? NewCurlTransport(access, options)
                                   : NewHttp1Transport(access, options);
    EXPECT_TRUE(transport.ok()) << transport.status();
    return transport.ok() ? std::move(*transport) : nullptr;
  }

  ClusterAccess Access() const {
    ClusterAccess a;
    a.server = server_->url();
    a.ca_pem = gpunode::testing::ReadText(dir_->path() + "/ca.crt");
    a.token = "double-token";
    a.description = "test";
    return a;
  }

  // A client whose backoff waits are simulated, and recorded.
  std::unique_ptr<Client> NewTestClient(const ClusterAccess& access,
                                        absl::Duration timeout = absl::Seconds(10)) {
    TransportOptions t;
    t.request_timeout = timeout;
    RetryPolicy retry;
    retry.max_attempts = 4;
    env_.OnSleep([this, last = env_.Now()](absl::Time now) mutable {
      sleeps_.push_back(now - last);
      last = now;
    });
    return std::make_unique<Client>(MakeTransport(access, t), retry, "test", env_);
  }

  gpunode::testing::SimulatedEnv env_;
  std::vector<absl::Duration> sleeps_;
};

TEST_P(ClientTest, ListsPageByPageWithContinueTokens) {
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

TEST_P(ClientTest, FieldSelectorsReachTheServer) {
  ASSERT_TRUE(server_->LoadList(testing::ClusterFixture("drain.json")));
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

TEST_P(ClientTest, RetriesThrottlingAndServerErrorsHonouringRetryAfter) {
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

TEST_P(ClientTest, GivesUpAfterMaxAttemptsWithTheServersMessage) {
  server_->FailNext("GET", "/api/v1/nodes", 500, 10);
  std::unique_ptr<Client> client = NewTestClient(Access());
  absl::StatusOr<std::string> body = client->Get("/api/v1/nodes");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(sleeps_.size(), 3u);
  EXPECT_NE(std::string(body.status().message()).find("500 InternalError: injected by the test"),
            std::string::npos)
      << body.status();
}

TEST_P(ClientTest, NotFoundAndUnauthorizedAreClear) {
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

TEST_P(ClientTest, ExpiredContinueTokenSaysToRunAgain) {
  for (int i = 0; i < 3; ++i) server_->AddObject(GpuNode("node-" + std::to_string(i), 8));
  server_->ExpireContinueTokens(true);
  ApiQuery query;
  query.pods = false;
  query.page_size = 1;
  absl::StatusOr<ClusterSnapshot> s = LoadFromApi(*NewTestClient(Access()), query);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("run the command again"), std::string::npos);
}

// The label of one node, followed over TLS: read, watched, read again after the API server
// expires the watch (410), and every change signalled on the eventfd.
TEST_P(ClientTest, NodeLabelWatchFollowsChangesAcrossAnExpiredWatch) {
  auto node = [](const std::string& config) {
    nlohmann::json n = GpuNode("gpu-a", 8);
    n["metadata"]["labels"]["nvidia.com/device-plugin.config"] = config;
    return n;
  };
  server_->AddObject(node("ts4"));
  server_->ExpireWatches(true);
  std::promise<void> read_twice;
  std::atomic<int> reads{0};  // counted on the server's threads
  std::chrono::steady_clock::time_point first_read;
  std::chrono::steady_clock::duration between_reads{};
  server_->OnRequest([&](const ApiServerDouble::Request& r) {
    if (r.method != "GET" || r.path != "/api/v1/nodes/gpu-a") return;
    int n = ++reads;
    if (n == 1) first_read = std::chrono::steady_clock::now();
    if (n == 2) {
      between_reads = std::chrono::steady_clock::now() - first_read;
      server_->ExpireWatches(false);
      read_twice.set_value();
    }
  });
  absl::StatusOr<std::unique_ptr<NodeLabelWatch>> watch = NodeLabelWatch::Start(
      NewTestClient(Access()), "gpu-a", "nvidia.com/device-plugin.config", absl::Milliseconds(300));
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE((*watch)->WaitForFirstRead(absl::Seconds(10)));
  EXPECT_EQ((*watch)->Value(), "ts4");
  // The expired watch made it read the node again, after a pause rather than at once.
  ASSERT_EQ(read_twice.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_GE(between_reads, std::chrono::milliseconds(300));
  (*watch)->Clear();

  server_->AddObject(node("mps2"));
  pollfd changed = {(*watch)->fd(), POLLIN, 0};
  ASSERT_EQ(poll(&changed, 1, 10000), 1);
  EXPECT_EQ((*watch)->Value(), "mps2");
  EXPECT_TRUE((*watch)->LastError().empty());
  std::vector<ApiServerDouble::Request> requests = server_->Requests();
  EXPECT_TRUE(std::any_of(requests.begin(), requests.end(), [](const auto& r) {
    return r.path == "/api/v1/nodes" && r.query.count("watch") &&
           r.query.at("fieldSelector") == "metadata.name=gpu-a";
  }));
}

TEST_P(ClientTest, TlsIsVerifiedAgainstTheKubeconfigCa) {
  TempDir other;
  ASSERT_TRUE(gpunode::testing::MakeTestCertificates(other.path()));
  ClusterAccess untrusted = Access();
  untrusted.ca_pem = gpunode::testing::ReadText(other.path() + "/ca.crt");  // another cluster's CA
  RetryPolicy once;
  once.max_attempts = 1;
  Client client(MakeTransport(untrusted, {}), once, "test", env_);
  absl::StatusOr<std::string> refused = client.Get("/api/v1/nodes");
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find("not trusted by the CA of test"),
            std::string::npos)
      << refused.status();

  ClusterAccess insecure = Access();
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  EXPECT_TRUE(NewTestClient(insecure)->Get("/api/v1/nodes").ok());
}

TEST_P(ClientTest, RequestsTimeOut) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  server_->OnRequest([released](const ApiServerDouble::Request&) { released.wait(); });
  RetryPolicy once;
  once.max_attempts = 1;
  TransportOptions fast;
  fast.request_timeout = absl::Milliseconds(300);
  Client client(MakeTransport(Access(), fast), once, "test", env_);
  absl::StatusOr<std::string> body = client.Get("/api/v1/nodes");
  release.set_value();
  EXPECT_TRUE(absl::IsDeadlineExceeded(body.status())) << body.status();
  EXPECT_NE(std::string(body.status().message()).find("--request-timeout"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Transports, ClientTest,
                         ::testing::Values(Transport::kCurl, Transport::kHttp1),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return info.param == Transport::kCurl ? "Curl" : "Http1";
                         });

// A credential plugin: a shell script that counts its runs, keeps what client-go's protocol hands
// it, and prints the ExecCredential of run N from the file token.N.
// Credential plugins are served by libcurl only (see http1_transport.h).
class ExecPluginTest : public ClientTest {
 protected:
  Transport Kind() const override { return Transport::kCurl; }

  void SetUp() override {
    ClientTest::SetUp();
    plugin_dir_ = std::make_unique<TempDir>();
    std::string script = plugin_dir_->Write("get-token", R"(#!/bin/sh
dir=$(dirname "$0")
n=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))
echo $n > "$dir/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/exec-info"
printf '%s %s' "$PLUGIN_PROFILE" "$*" > "$dir/args"
echo "plugin run $n" >&2
[ -f "$dir/fail" ] && exit 3
cat "$dir/token.$n"
)");
    ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  }

  void Answer(int run, const std::string& token, const std::string& expires = "") {
    std::string status = "\"token\": \"" + token + "\"";
    if (!expires.empty()) status += ", \"expirationTimestamp\": \"" + expires + "\"";
    plugin_dir_->Write("token." + std::to_string(run),
                       R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": )"
                       R"("ExecCredential", "status": {)" +
                           status + "}}");
  }

  int Runs() const { return std::stoi(gpunode::testing::ReadText(plugin_dir_->path() + "/runs")); }

  ClusterAccess PluginAccess() const {
    ClusterAccess a = Access();
    a.token.clear();
    ExecPlugin plugin;
    plugin.command = plugin_dir_->path() + "/get-token";
    plugin.args = {"--cluster", "prod"};
    plugin.env = {{"PLUGIN_PROFILE", "ml"}};
    plugin.api_version = "client.authentication.k8s.io/v1";
    plugin.install_hint = "install get-token from the platform team";
    plugin.provide_cluster_info = true;
    plugin.where = "user \"eks\"";
    a.exec = plugin;
    return a;
  }

  std::unique_ptr<TempDir> plugin_dir_;
};

TEST_F(ExecPluginTest, TokenIsAskedForOnceAndGivenTheProtocolsInputs) {
  Answer(1, "double-token");
  std::unique_ptr<Client> client = NewTestClient(PluginAccess());
  ASSERT_TRUE(client->Get("/api/v1/nodes").ok());
  ASSERT_TRUE(client->Get("/api/v1/nodes").ok());
  EXPECT_EQ(Runs(), 1);
  EXPECT_EQ(gpunode::testing::ReadText(plugin_dir_->path() + "/args"), "ml --cluster prod");
  nlohmann::json info =
      nlohmann::json::parse(gpunode::testing::ReadText(plugin_dir_->path() + "/exec-info"));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], server_->url());
  EXPECT_FALSE(info["spec"]["cluster"]["certificate-authority-data"].get<std::string>().empty());
}

TEST_F(ExecPluginTest, AnExpiringTokenIsRenewedBeforeItLapses) {
  // Expiring within client-go's margin: every request asks again.
  Answer(1, "double-token", "2000-01-01T00:00:00Z");
  Answer(2, "double-token", "2000-01-01T00:00:00Z");
  std::unique_ptr<Client> client = NewTestClient(PluginAccess());
  ASSERT_TRUE(client->Get("/api/v1/nodes").ok());
  ASSERT_TRUE(client->Get("/api/v1/nodes").ok());
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecPluginTest, ARefusedTokenIsAskedForAgainOnce) {
  Answer(1, "revoked");
  Answer(2, "double-token");
  std::unique_ptr<Client> client = NewTestClient(PluginAccess());
  // A token the plugin has just given and the server refuses is an error, not a loop.
  EXPECT_TRUE(absl::IsUnauthenticated(client->Get("/api/v1/nodes").status()));
  EXPECT_EQ(Runs(), 1);
  // Refused once more later: the plugin is asked again and the request goes through.
  EXPECT_TRUE(client->Get("/api/v1/nodes").ok());
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecPluginTest, FailuresNameThePluginAndItsInstallHint) {
  plugin_dir_->Write("fail", "");
  absl::StatusOr<std::string> failed = NewTestClient(PluginAccess())->Get("/api/v1/nodes");
  ASSERT_FALSE(failed.ok());
  std::string message(failed.status().message());
  EXPECT_NE(message.find("get-token\" of user \"eks\": exited with status 3"), std::string::npos)
      << message;
  EXPECT_NE(message.find("install get-token from the platform team"), std::string::npos);

  ClusterAccess missing = PluginAccess();
  missing.exec->command = plugin_dir_->path() + "/no-such-plugin";
  failed = NewTestClient(missing)->Get("/api/v1/nodes");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(std::string(failed.status().message()).find("cannot run it"), std::string::npos)
      << failed.status();
}

// A daemon blocks its stop signals to read them from a signalfd, and a shell may have left some
// ignored; the plugin it runs inherits neither, or SIGTERM could not stop it. The plugin here is
// awk, which reads its own masks: a shell would unblock every signal itself.
TEST_F(ExecPluginTest, ThePluginStartsWithNoSignalBlockedOrIgnored) {
  std::string signals = plugin_dir_->path() + "/signals";
  plugin_dir_->Write("plugin.awk", R"(BEGIN {
  while ((getline line < "/proc/self/status") > 0)
    if (line ~ /^Sig(Blk|Ign):/) print line > ENVIRON["SIGNALS_FILE"]
  print "{\"apiVersion\": \"client.authentication.k8s.io/v1\", \"kind\": \"ExecCredential\", \"status\": {\"token\": \"double-token\"}}"
})");
  ClusterAccess access = PluginAccess();
  access.exec->command = "/usr/bin/awk";
  access.exec->args = {"-f", plugin_dir_->path() + "/plugin.awk"};
  access.exec->env = {{"SIGNALS_FILE", signals}};
  sigset_t stop, old_mask;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &stop, &old_mask), 0);
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGHUP, &ignore, &previous), 0);
  absl::StatusOr<std::string> got = NewTestClient(access)->Get("/api/v1/nodes");
  sigaction(SIGHUP, &previous, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  // Signals 1-31: glibc keeps 32 and 33 for itself.
  std::string masks = gpunode::testing::ReadText(signals);
  for (std::string field : {"SigBlk:\t", "SigIgn:\t"}) {
    size_t at = masks.find(field);
    ASSERT_NE(at, std::string::npos) << masks;
    EXPECT_EQ(std::stoull(masks.substr(at + field.size(), 16), nullptr, 16) & 0x7fffffffu, 0u)
        << masks;
  }
}

TEST(ExecCredential, ParsesTokensCertificatesAndExpiry) {
  const std::string v1 = "client.authentication.k8s.io/v1";
  absl::StatusOr<ExecCredential> token = ParseExecCredential(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
          "status": {"token": "t", "expirationTimestamp": "2030-01-02T03:04:05Z"}})",
      v1);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token, "t");
  ASSERT_TRUE(token->expires.has_value());
  EXPECT_EQ(absl::ToUnixSeconds(*token->expires), 1893553445);

  absl::StatusOr<ExecCredential> cert = ParseExecCredential(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
          "status": {"clientCertificateData": "C", "clientKeyData": "K"}})",
      v1);
  ASSERT_TRUE(cert.ok()) << cert.status();
  EXPECT_EQ(cert->client_cert_pem, "C");
  EXPECT_FALSE(cert->expires.has_value());

  for (const char* bad : {
           "not json",
           R"({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
               "status": {"token": "t"}})",
           R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"})",
           R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": {"ExecCredential": 1}})",
           R"({"apiVersion": ["client.authentication.k8s.io/v1"], "kind": "ExecCredential"})",
           R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
               "status": {"clientCertificateData": "C"}})",
           R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
               "status": {"token": "t", "expirationTimestamp": "tomorrow"}})",
       }) {
    EXPECT_FALSE(ParseExecCredential(bad, v1).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpunode::kube
