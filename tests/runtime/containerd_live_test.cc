// The real containerd from Debian, started on a temporary socket and state directory, asked over
// CRI whether the nvidia handler is loaded: through `gpunode runtime status`, the way operators
// and doctor's runtime.containerd-live check meet it.
#include "containerd/containerd_live.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "build_paths.h"
#include "containerd_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
using json = nlohmann::json;

testing::ProcessResult Gpunode(std::vector<std::string> args) {
  args.insert(args.begin(), build_paths::kBinary);
  return testing::RunProcess(args);
}

using Containerd = testing::ContainerdProcess;

class ContainerdLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty()) GTEST_SKIP() << "containerd is not installed";
    if (::geteuid() != 0) GTEST_SKIP() << "containerd needs root to start";
    char tmpl[] = "/tmp/gpunode-ctd-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    socket_ = (dir_ / "containerd.sock").string();
    config_ = dir_ / "config.toml";
    // Everything containerd writes stays under dir_; snapshotters that need a special
    // filesystem are off so nothing depends on the host's disks.
    std::ofstream(config_)
        << testing::ContainerdTestConfig(dir_, socket_)
        << "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        << "  runtime_type = \"io.containerd.runc.v2\"\n"
        << "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        << "    SystemdCgroup = true\n";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  fs::path dir_;
  fs::path config_;
  std::string socket_;
};

TEST_F(ContainerdLive, StatusSeesTheHandlerOnlyAfterConfigure) {
  {
    Containerd containerd(GPUNODE_CONTAINERD, config_, dir_ / "before.log");
    ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
    testing::ProcessResult r = Gpunode({"runtime", "status", "--socket", socket_});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.out, HasSubstr("handler nvidia: not loaded (default runtime: runc)"));
    EXPECT_THAT(r.out, HasSubstr("RuntimeReady: true"));
  }

  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--cdi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  Containerd containerd(GPUNODE_CONTAINERD, config_, dir_ / "after.log");
  ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
  r = Gpunode({"runtime", "status", "--socket", socket_, "--handler", "nvidia", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json status = json::parse(r.out);
  EXPECT_EQ(status["handler"]["loaded"], true);
  EXPECT_EQ(status["handler"]["runtime_type"], "io.containerd.runc.v2");
  EXPECT_EQ(status["handler"]["options"]["BinaryName"], "/usr/bin/nvidia-container-runtime");
  EXPECT_EQ(status["handler"]["options"]["SystemdCgroup"], true);  // inherited from runc
  EXPECT_EQ(status["handler"]["default"], false);
  EXPECT_EQ(status["default_runtime"], "runc");
  std::map<std::string, bool> conditions;
  for (const json& c : status["conditions"]) conditions[c["type"]] = c["status"];
  EXPECT_EQ(conditions["RuntimeReady"], true);
  EXPECT_EQ(conditions.count("NetworkReady"), 1u);  // false here: no CNI config in dir_/cni

  r = Gpunode({"runtime", "status", "--socket", socket_, "--handler", "kata"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("handler kata: not loaded"));
  containerd.Stop();
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
}

// An older revert refused an edited drop-in and advised deleting it and the record by hand. Done
// literally, that left config.toml importing a missing file; revert now repairs it, and a revert
// of a fresh edit sets the drop-in aside instead of refusing. Either way containerd starts.
TEST_F(ContainerdLive, StartsAfterTheEditedDropInAdviceWasFollowed) {
  const fs::path drop_in = dir_ / "conf.d/99-nvidia.toml";
  for (bool old_advice : {true, false}) {
    SCOPED_TRACE(old_advice ? "drop-in and record deleted by hand" : "drop-in edited");
    ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
    std::ofstream(drop_in, std::ios::app) << "# tuned by hand\n";
    if (old_advice) {
      fs::remove(drop_in);
      fs::remove(config_.string() + ".gpunode.json");
    }
    testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(drop_in));

    Containerd containerd(GPUNODE_CONTAINERD, config_,
                          dir_ / (old_advice ? "repaired.log" : "set-aside.log"));
    ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
    r = Gpunode({"runtime", "status", "--socket", socket_});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.out, HasSubstr("handler nvidia: not loaded (default runtime: runc)"));
    EXPECT_THAT(r.out, HasSubstr("RuntimeReady: true"));
  }
}

TEST(ContainerdStatus, NothingListeningIsAFailureNamingTheSocket) {
  testing::ProcessResult r = Gpunode(
      {"runtime", "status", "--socket", "/tmp/gpunode-no-such.sock", "--timeout-ms", "300"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("unix:///tmp/gpunode-no-such.sock"));
  EXPECT_THAT(r.err, HasSubstr("is containerd running?"));
}

}  // namespace
}  // namespace gpunode
