// `kubectl gpunode ...` with a real kubectl: the kubectl-gpunode link the build puts next to the
// binary is found by `kubectl plugin list` and runs the cluster commands, on a snapshot and, with
// kubectl's own kubeconfig and current context, against the API server double.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

class KubectlPluginTest : public LiveApiServerTest {
 protected:
  void SetUp() override {
    LiveApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    plugin_ = std::filesystem::path(kGpunodeBinary).parent_path() / "kubectl-gpunode";
    ASSERT_TRUE(std::filesystem::is_symlink(plugin_)) << plugin_ << ": the build makes this link";
    ASSERT_EQ(std::filesystem::read_symlink(plugin_), "gpunode");
    // Only the build directory's link and the system's programs on PATH; kubectl's caches in
    // a HOME of its own.
    env_ = {"PATH=" + plugin_.parent_path().string() + ":/usr/local/bin:/usr/bin:/bin",
            "HOME=" + home_.path(), "KUBECONFIG=" + kubeconfig_};
  }
  ProcessResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), KUBECTL);
    return RunProcess(args, env_);
  }

  TempDir home_;
  std::filesystem::path plugin_;
  std::vector<std::string> env_;
};

TEST_F(KubectlPluginTest, PluginListFindsTheLink) {
  ProcessResult r = Kubectl({"plugin", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(plugin_.string() + "\n"), std::string::npos) << r.out << r.err;
}

TEST_F(KubectlPluginTest, AuditOfASnapshotRunsAsThroughTheBinary) {
  ProcessResult direct =
      Gpunode({"cluster", "audit", "-f", ClusterFixture("zombie-pods.json"), "-o", "json"});
  ProcessResult plugin = Kubectl(
      {"gpunode", "cluster", "audit", "-f", ClusterFixture("zombie-pods.json"), "-o", "json"});
  EXPECT_EQ(plugin.exit_code, 1) << plugin.err;
  EXPECT_EQ(plugin.exit_code, direct.exit_code);
  EXPECT_EQ(json::parse(plugin.out)["findings"], json::parse(direct.out)["findings"]);
}

TEST_F(KubectlPluginTest, LiveAuditUsesKubectlsCurrentContext) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("healthy.json")));
  ProcessResult r = Kubectl({"gpunode", "cluster", "audit", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes"), 1);
  EXPECT_FALSE(json::parse(r.out)["nodes"].empty()) << r.out;
}

}  // namespace
}  // namespace gpunode::testing
