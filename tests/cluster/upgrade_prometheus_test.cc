// The XID check of `cluster upgrade`'s soak against a real Prometheus (Debian's) on loopback,
// which scrapes a small target serving gpunode_xid_errors_total as gpunode's exporter does: one
// series for a node of the soaking pool, one for a node outside it. The pools come from the API
// server double, read as the rollout reads them.
#include <signal.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <thread>

#include "cluster/upgrade.h"
#include "cluster/upgrade_fleet.h"
#include "cluster/upgrade_soak.h"
#include "core/system_env.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/gpu_cluster_objects.h"
#include "httplib.h"
#include "metrics/test_support.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using gpunode::testing::ApiServerDouble;

// canary-1 had XID 79 (GPU fallen off the bus); gpu-x9 is in no pool of the rollout.
constexpr char kExposition[] =
    "# HELP gpunode_xid_errors_total XID errors the driver reported, by GPU and XID.\n"
    "# TYPE gpunode_xid_errors_total counter\n"
    "gpunode_xid_errors_total{Hostname=\"canary-1\",gpu=\"0\",xid=\"79\"} 1\n"
    "gpunode_xid_errors_total{Hostname=\"gpu-x9\",gpu=\"3\",xid=\"48\"} 2\n";

class SoakXidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerDouble::Options options;
    options.token = "";
    server_ = std::make_unique<ApiServerDouble>(options);
    ASSERT_TRUE(server_->Start());
    server_->AddObject(gpunode::testing::DevicePluginDaemonSet());
    for (const char* name : {"canary-0", "canary-1", "training-0", "training-1"}) {
      json node = gpunode::testing::GpuNode(name);
      node["metadata"]["labels"]["pool"] = std::string(name).substr(0, std::string(name).find('-'));
      server_->AddObject(node);
      server_->AddObject(gpunode::testing::DevicePluginPod(name));
    }
    kube::ClusterAccess access;
    access.server = server_->url();
    access.description = "double";
    absl::StatusOr<std::unique_ptr<kube::Client>> client =
        kube::NewClient(access, kube::TransportOptions{}, env_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);

    options_.driver_version = "550.90.07";
    absl::StatusOr<Fleet> fleet = ReadFleet(*client_, options_);
    ASSERT_TRUE(fleet.ok()) << fleet.status();
    fleet_ = std::make_unique<Fleet>(std::move(*fleet));
    ASSERT_EQ(fleet_->pools.size(), 2u);
  }

  void TearDown() override {
    if (prometheus_) prometheus_->Stop(SIGTERM);
    if (target_thread_.joinable()) {
      target_.stop();
      target_thread_.join();
    }
  }

  // Prometheus scraping kExposition every second; returns once it holds both series.
  void StartPrometheus() {
    target_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kExposition, "text/plain; version=0.0.4");
    });
    int target_port = target_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(target_port, 0);
    target_thread_ = std::thread([this] { target_.listen_after_bind(); });
    // stop() does nothing until the loop runs; TearDown must not join a server it missed.
    while (!target_.is_running()) std::this_thread::yield();
    int port = gpunode::testing::FreeLoopbackPort();
    gpunode::testing::WriteText(dir_.path() + "/prometheus.yml",
                                "global:\n"
                                "  scrape_interval: 1s\n"
                                "scrape_configs:\n"
                                "  - job_name: gpunode\n"
                                "    static_configs:\n"
                                "      - targets: ['127.0.0.1:" +
                                    std::to_string(target_port) + "']\n");
    prometheus_ = std::make_unique<gpunode::testing::BackgroundProcess>(
        std::vector<std::string>{PROMETHEUS, "--config.file=" + dir_.path() + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir_.path() + "/data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port)});
    ASSERT_TRUE(gpunode::testing::Eventually(
        [&] {
          gpunode::testing::HttpResult r =
              gpunode::testing::HttpGet(port, "/api/v1/query?query=gpunode_xid_errors_total");
          json body = json::parse(r.body, nullptr, false);
          return r.status == 200 && !body.is_discarded() && body["data"]["result"].size() == 2;
        },
        std::chrono::seconds(60)))
        << prometheus_->Stderr();
    options_.prometheus = "http://127.0.0.1:" + std::to_string(port);
  }

  const FleetPool& Pool(const std::string& name) {
    auto it = std::find_if(fleet_->pools.begin(), fleet_->pools.end(),
                           [&](const FleetPool& p) { return p.name == name; });
    EXPECT_NE(it, fleet_->pools.end()) << name;
    return *it;
  }

  absl::StatusOr<std::vector<Regression>> Check(const std::string& pool) {
    return CheckSoak(*client_, Pool(pool), env_.Now() - absl::Hours(1), options_, env_);
  }

  std::unique_ptr<ApiServerDouble> server_;
  std::unique_ptr<kube::Client> client_;
  UpgradeOptions options_;
  core::SystemEnv env_;  // the real Prometheus answers for real time
  std::unique_ptr<Fleet> fleet_;

  gpunode::testing::TempDir dir_{"gpunode-soak"};
  httplib::Server target_;
  std::thread target_thread_;
  std::unique_ptr<gpunode::testing::BackgroundProcess> prometheus_;
};

TEST_F(SoakXidTest, AnXidInPrometheusIsARegressionOfThatNodeOnly) {
  StartPrometheus();
  if (HasFatalFailure()) return;

  // A series born during the soak counts, though increase() over the window sees none.
  absl::StatusOr<std::vector<Regression>> found = Check("canary");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].node, "canary-1");
  EXPECT_EQ((*found)[0].why, "XID errors during the soak (gpunode_xid_errors_total): XID 79 x1");
  EXPECT_NE((*found)[0].why.find("XID 79"), std::string::npos);

  // No series names a node of this pool: the other nodes' XIDs are not its regressions.
  found = Check("training");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->empty()) << (*found)[0].node << ": " << (*found)[0].why;
}

TEST_F(SoakXidTest, AnUnreachablePrometheusIsAnErrorNamingTheFlag) {
  // Nothing listens on a port that was just free.
  options_.prometheus = "http://127.0.0.1:" + std::to_string(gpunode::testing::FreeLoopbackPort());
  absl::StatusOr<std::vector<Regression>> found = Check("canary");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().message().rfind("--prometheus " + options_.prometheus, 0), 0u)
      << found.status();
  EXPECT_EQ(found.status().code(), absl::StatusCode::kUnavailable) << found.status();
}

}  // namespace
}  // namespace gpunode::cluster
