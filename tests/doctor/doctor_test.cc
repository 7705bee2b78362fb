// `gpunode doctor -o json` on host-root trees built from tests/fixtures/doctor: one tree per
// failure the checks name, each asserted by id and status, and a healthy node where every check
// is ok.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "build_paths.h"
#include "containerd/containerd_live.h"
#include "containerd_process.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "doctor/parsers.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "host/dra_checkpoint.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "tmpfs_mount.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

const fs::path kFixtures = fs::path(build_paths::kFixturesDir) / "doctor";
// The simulator's dgx-h100 GPUs, as sysfs names them.
const std::vector<std::string> kDgxH100 = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0",
                                           "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0",
                                           "0000:d1:00.0", "0000:df:00.0"};

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Answers GetDevicePluginOptions like a device plugin; the rest of the service is not asked.
class PluginServer final : public v1beta1::DevicePlugin::Service {
 public:
  explicit PluginServer(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~PluginServer() override { server_->Shutdown(); }
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
  bool serving() const { return server_ != nullptr; }

 private:
  std::unique_ptr<grpc::Server> server_;
};

// A socket file nobody serves: bound, then closed, as a plugin that died leaves it.
void StaleSocket(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
}

class Doctor : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpunode-doctor-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::copy(kFixtures / "healthy", root_, fs::copy_options::recursive);
    ::chmod((root_ / "usr/bin/nvidia-container-runtime").c_str(), 0755);
    for (size_t i = 0; i < kDgxH100.size(); ++i) AddPciGpu(kDgxH100[i], 20 + i);
    for (std::string node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) AddNode(node);
    for (size_t i = 0; i < kDgxH100.size(); ++i) AddNode("nvidia" + std::to_string(i));
    Write(root_ / "proc/4242/cmdline",
          std::string("/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0--v=2\0", 61));
    plugin_ = std::make_unique<PluginServer>(PluginDir() / "nvidia-gpu.sock");
    ASSERT_TRUE(plugin_->serving());
    // gpunode's plugin with every GPU healthy.
    Write(PluginDir() / "gpunode-health.json", R"({"unhealthy": []})");
  }
  void TearDown() override {
    plugin_.reset();
    fs::remove_all(root_);
  }

  fs::path PluginDir() const { return root_ / "var/lib/kubelet/device-plugins"; }

  void AddPciGpu(const std::string& address, size_t group) {
    fs::path dir = root_ / "sys/bus/pci/devices" / address;
    Write(dir / "vendor", "0x10de\n");
    Write(dir / "device", "0x2330\n");
    Write(dir / "class", "0x030200\n");
    Write(dir / "numa_node", "0\n");
    // BAR0 16 MiB, BAR1 128 GiB, BAR3 32 MiB.
    Write(dir / "resource",
          "0x00000000e0000000 0x00000000e0ffffff 0x0000000000040200\n"
          "0x0000220000000000 0x0000221fffffffff 0x000000000014220c\n"
          "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
          "0x0000222000000000 0x0000222001ffffff 0x000000000014220c\n");
    fs::path group_dir = root_ / "sys/kernel/iommu_groups" / std::to_string(group);
    Write(group_dir / "devices" / address, "");
    fs::create_symlink("../../../../kernel/iommu_groups/" + std::to_string(group),
                       dir / "iommu_group");
  }

  void AddNode(const std::string& name, mode_t mode = 0666) {
    fs::path path = root_ / "dev" / name;
    Write(path, "");
    ::chmod(path.c_str(), mode);
  }

  void Overlay(const std::string& name) {
    fs::copy(kFixtures / name, root_,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }

  // Runs the doctor and returns its JSON; `exit_code` gets the exit status.
  json Run(std::vector<std::string> args, const std::string& sim = "dgx-h100") {
    std::vector<std::string> argv = {build_paths::kBinary, "--sim",  sim,  "--host-root",
                                     root_.string(),       "doctor", "-o", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    last_ = testing::RunProcess(argv);
    exit_code = last_.exit_code;
    json out = json::parse(last_.out, nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << last_.out << last_.err;
    return out;
  }

  static json Find(const json& report, const std::string& id) {
    for (const json& finding : report["findings"]) {
      if (finding["id"] == id) return finding;
    }
    ADD_FAILURE() << "no finding " << id;
    return json::object();
  }

  fs::path root_;
  std::unique_ptr<PluginServer> plugin_;
  testing::ProcessResult last_;
  int exit_code = -1;
};

// Every check of the healthy tree but those that need a running containerd.
TEST_F(Doctor, HealthyTreeIsOkApartFromContainerd) {
  json report = Run({"--cuda", "12.4"});
  for (const json& finding : report["findings"]) {
    std::string id = finding["id"];
    for (const char* key : {"layer", "id", "status", "summary", "evidence", "fix"}) {
      EXPECT_TRUE(finding.contains(key)) << id << " lacks " << key;
    }
    if (finding["layer"] == "container") {
      EXPECT_EQ(finding["status"], "skip") << finding.dump();
      EXPECT_EQ(finding["summary"], "not run inside a pod (give --in-container there)");
    } else if (id == "runtime.containerd-live" || id == "kubelet.image-gc" ||
               id == "plugin.mps-daemon" ||  // no MPS root on this node
               finding["layer"] == "dra") {  // the device plugin serves this node
      EXPECT_EQ(finding["status"], "skip") << finding.dump();
    } else if (id == "runtime.containerd-version") {
      EXPECT_EQ(finding["status"], "fail") << finding.dump();
    } else {
      EXPECT_EQ(finding["status"], "ok") << finding.dump();
    }
  }
  EXPECT_EQ(Find(report, "runtime.containerd-live")["summary"],
            "blocked by runtime.containerd-version");
  EXPECT_EQ(report["findings"].size(), 35u);
  EXPECT_EQ(report["summary"]["ok"], 20);
  EXPECT_EQ(report["summary"]["fail"], 1);
  // containerd-live, image-gc, plugin.mps-daemon (no MPS root), the 4 DRA checks (a device
  // plugin node) and the 7 container checks
  EXPECT_EQ(report["summary"]["skip"], 14);
  EXPECT_EQ(exit_code, 1);
  EXPECT_THAT(Find(report, "runtime.containerd-config")["evidence"].get<std::string>(),
              HasSubstr("/etc/containerd/conf.d/99-nvidia.toml"));
  EXPECT_THAT(Find(report, "kubelet.registered")["summary"].get<std::string>(),
              HasSubstr("8 device(s)"));
  EXPECT_THAT(Find(report, "topology.nvlink")["summary"].get<std::string>(),
              HasSubstr("one NVLink domain"));
}

TEST_F(Doctor, AModuleMissingFailsAndBlocksWhatBuildsOnIt) {
  Overlay("module-missing");
  json report = Run({});
  EXPECT_EQ(Find(report, "driver.kernel-modules")["status"], "fail");
  EXPECT_THAT(Find(report, "driver.kernel-modules")["fix"].get<std::string>(),
              HasSubstr("modprobe nvidia_uvm"));
  for (const char* id : {"driver.uvm", "driver.nvml", "driver.device-nodes"}) {
    EXPECT_EQ(Find(report, id)["status"], "skip") << id;
    EXPECT_EQ(Find(report, id)["summary"], "blocked by driver.kernel-modules") << id;
  }
  EXPECT_EQ(Find(report, "topology.nvlink")["summary"], "blocked by driver.nvml");
  EXPECT_EQ(Find(report, "pci.nvidia-devices")["status"], "ok");
  EXPECT_EQ(exit_code, 1);
}

TEST_F(Doctor, UvmNodeMissing) {
  fs::remove(root_ / "dev/nvidia-uvm");
  json report = Run({});
  EXPECT_EQ(Find(report, "driver.uvm")["status"], "fail");
  EXPECT_THAT(Find(report, "driver.uvm")["fix"].get<std::string>(), HasSubstr("modules-load.d"));
}

TEST_F(Doctor, EightGpusOnPciButOneInNvml) {
  json report = Run({}, "h200-1");
  json finding = Find(report, "pci.gpu-count-match");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_EQ(finding["summary"], "NVML sees 1 of 8 GPUs on the PCI bus");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("BARs 16 MiB, 128 GiB, 32 MiB"));
  EXPECT_THAT(finding["fix"].get<std::string>(), HasSubstr("Above 4G Decoding"));
  EXPECT_THAT(finding["fix"].get<std::string>(), HasSubstr("NVRM"));
}

TEST_F(Doctor, NodesChmod777AreAWarning) {
  ::chmod((root_ / "dev/nvidia0").c_str(), 0777);
  ::chmod((root_ / "dev/nvidiactl").c_str(), 0777);
  json report = Run({});
  json finding = Find(report, "driver.device-permissions");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("/dev/nvidia0 0777"));
  EXPECT_THAT(finding["fix"].get<std::string>(), HasSubstr("video/render"));
}

TEST_F(Doctor, ANonDefaultDeviceFileModeLocksWorkloadsOut) {
  Write(root_ / "proc/driver/nvidia/params", "DeviceFileGID: 44\nDeviceFileMode: 432\n");
  ::chmod((root_ / "dev/nvidia0").c_str(), 0660);
  json finding = Find(Run({}), "driver.device-permissions");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("DeviceFileMode: 0660"));
}

TEST_F(Doctor, ContainerdConfigWithoutTheHandler) {
  Overlay("no-handler");
  json finding = Find(Run({}), "runtime.containerd-config");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_EQ(finding["summary"], "containerd's config has no runtime handler \"nvidia\"");
}

TEST_F(Doctor, HandlerAsTheDefaultRuntime) {
  Overlay("handler-default");
  json finding = Find(Run({}), "runtime.containerd-config");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("default runtime"));
}

TEST_F(Doctor, BinaryNameMissing) {
  Overlay("binaryname-missing");
  json finding = Find(Run({}), "runtime.containerd-config");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("no options.BinaryName"));
}

TEST_F(Doctor, BinaryNameNotExecutable) {
  ::chmod((root_ / "usr/bin/nvidia-container-runtime").c_str(), 0644);
  json finding = Find(Run({}), "runtime.containerd-config");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("not an executable file"));
}

TEST_F(Doctor, NoCgroupsOnCgroupV2) {
  Overlay("no-cgroups-v2");
  json finding = Find(Run({}), "runtime.toolkit-config");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("Failed to initialize NVML"));
  fs::remove(root_ / "sys/fs/cgroup/cgroup.controllers");
  EXPECT_EQ(Find(Run({}), "runtime.toolkit-config")["status"], "warn");  // v1: rootless only
}

TEST_F(Doctor, AStaleSocketIsAWarningAndKubeletSockIsLeftAlone) {
  StaleSocket(PluginDir() / "nvidia-mig-1g.18gb.sock");
  StaleSocket(PluginDir() / "kubelet.sock");
  json report = Run({});
  json finding = Find(report, "plugin.stale-sockets");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("nvidia-mig-1g.18gb.sock"));
  EXPECT_THAT(finding["evidence"].get<std::string>(), ::testing::Not(HasSubstr("kubelet.sock")));
  EXPECT_TRUE(fs::exists(PluginDir() / "kubelet.sock"));
  EXPECT_EQ(Find(report, "plugin.socket")["status"], "ok");  // nvidia-gpu.sock answers
}

// A socket that accepts connections for as long as it lives, as a serving plugin's does.
class ListeningSocket {
 public:
  explicit ListeningSocket(const fs::path& path) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    fs::create_directories(path.parent_path());
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
  }
  ~ListeningSocket() { ::close(fd_); }

 private:
  int fd_;
};

// A node served by gpunode's DRA plugin: its sockets answer, its state file announces the eight
// GPUs under the names and UUIDs NVML gives them, and one claim is prepared with a valid spec.
class DraDoctor : public Doctor {
 protected:
  void SetUp() override {
    Doctor::SetUp();
    plugin_.reset();
    fs::remove(PluginDir() / "nvidia-gpu.sock");
    fs::remove(PluginDir() / "gpunode-health.json");
    registration_ = std::make_unique<ListeningSocket>(
        root_ / "var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock");
    service_ = std::make_unique<ListeningSocket>(DraDir() / "dra.sock");
    testing::ProcessResult inventory =
        testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "inventory", "-o", "json"});
    json gpus = json::parse(inventory.out)["gpus"];
    for (const json& gpu : gpus) uuids_.push_back(gpu["uuid"]);
    WriteState(uuids_.size(), "");
    Write(DraDir() / "checkpoint.json", Checkpoint("PrepareCompleted"));
    Write(root_ / "var/run/cdi/k8s.gpu.nvidia.com-claim_c-1.json", R"({
      "cdiVersion": "0.5.0", "kind": "k8s.gpu.nvidia.com/claim",
      "devices": [{"name": "c-1-gpu-0",
                   "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]})");
  }

  fs::path DraDir() const { return root_ / "var/lib/kubelet/plugins/gpu.nvidia.com"; }

  // The state with the first `devices` GPUs announced, `taint` on gpu-0 when not empty.
  void WriteState(size_t devices, const std::string& taint) {
    json announced = json::array();
    for (size_t i = 0; i < devices; ++i) {
      json taints = i == 0 && !taint.empty() ? json::array({taint}) : json::array();
      announced.push_back(
          {{"name", "gpu-" + std::to_string(i)}, {"uuid", uuids_[i]}, {"taints", taints}});
    }
    Write(DraDir() / "gpunode-state.json",
          json({{"pool", "node-a"}, {"generation", 3}, {"devices", announced}}).dump());
  }

  // The plugin's checkpoint with claim c-1 in `state`, checksummed as the plugin writes it.
  static std::string Checkpoint(const std::string& state) {
    host::DraCheckpoint checkpoint;
    checkpoint.boot_id = "b";
    host::PreparedClaim& claim = checkpoint.claims["c-1"];
    claim.name_space = "team-a";
    claim.name = "train-gpu";
    claim.state = state == "PrepareStarted" ? host::ClaimState::kPrepareStarted
                                            : host::ClaimState::kPrepareCompleted;
    claim.devices.push_back({{"gpu"}, "node-a", "gpu-0", {"k8s.gpu.nvidia.com/claim=c-1-gpu-0"}});
    return host::RenderDraCheckpoint(checkpoint);
  }

  std::unique_ptr<ListeningSocket> registration_;
  std::unique_ptr<ListeningSocket> service_;
  std::vector<std::string> uuids_;
};

TEST_F(DraDoctor, AServedNodeIsOk) {
  json report = Run({});
  for (const char* id : {"dra.registration", "dra.device-plugin-beside", "dra.slice", "dra.claims"})
    EXPECT_EQ(Find(report, id)["status"], "ok") << Find(report, id).dump();
  EXPECT_THAT(Find(report, "dra.slice")["summary"].get<std::string>(),
              HasSubstr("generation 3 announces 8 device(s)"));
  EXPECT_EQ(Find(report, "plugin.socket")["status"], "fail") << "no device plugin: expected";
}

TEST_F(DraDoctor, SocketsNobodyServesAreAFail) {
  service_.reset();
  EXPECT_EQ(Find(Run({}), "dra.registration")["status"], "fail");
  registration_.reset();
  json finding = Find(Run({}), "dra.registration");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("nobody answers"));
}

TEST_F(DraDoctor, ADevicePluginBesideTheDraPluginIsNamed) {
  PluginServer device_plugin((PluginDir() / "nvidia-gpu.sock").string());
  json finding = Find(Run({}), "dra.device-plugin-beside");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("nvidia-gpu.sock"));
}

TEST_F(DraDoctor, ASliceThatDiffersFromNvmlOrTaintsADeviceIsNamed) {
  WriteState(7, "");
  json finding = Find(Run({}), "dra.slice");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["evidence"].get<std::string>(),
              HasSubstr("NVML sees, not announced: gpu-7 (" + uuids_[7] + ")"));
  WriteState(8, "gpu.nvidia.com/xid=48:NoSchedule");
  finding = Find(Run({}), "dra.slice");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(),
              HasSubstr("gpu-0: gpu.nvidia.com/xid=48:NoSchedule"));
  Write(DraDir() / "gpunode-state.json",
        R"({"pool": "node-a", "generation": 3, "devices": [],
            "publish_error": "resourceslices is forbidden"})");
  finding = Find(Run({}), "dra.slice");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("forbidden"));
}

TEST_F(DraDoctor, APreparedClaimNeedsItsSpecOnDiskAndValid) {
  fs::remove(root_ / "var/run/cdi/k8s.gpu.nvidia.com-claim_c-1.json");
  json finding = Find(Run({}), "dra.claims");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("team-a/train-gpu (c-1)"));
  Write(root_ / "var/run/cdi/k8s.gpu.nvidia.com-claim_c-1.json",
        R"({"cdiVersion": "0.5.0", "kind": "k8s.gpu.nvidia.com/claim",
            "devices": [{"name": "c-1-gpu-0", "containerEdits": {"deviceNodes": [{"path": "dev"}]}}]})");
  EXPECT_EQ(Find(Run({}), "dra.claims")["status"], "fail") << "a relative device path";
  Write(DraDir() / "checkpoint.json", Checkpoint("PrepareStarted"));
  EXPECT_EQ(Find(Run({}), "dra.claims")["status"], "warn");
  Write(DraDir() / "checkpoint.json", "{\"edited\": true}");
  EXPECT_EQ(Find(Run({}), "dra.claims")["status"], "fail");
}

// The claims of an earlier boot ended with it, and only a machine crash, which ends a boot, can
// tear the checkpoint (host/dra_checkpoint.h): both say that the plugin drops them at its start.
TEST_F(DraDoctor, ACheckpointOfAnEarlierBootIsAWarningTornOrNot) {
  Write(root_ / "proc/sys/kernel/random/boot_id", "a\n");
  json finding = Find(Run({}), "dra.claims");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("names boot b; this boot is a"));
  Write(DraDir() / "checkpoint.json.boot", "b\n");
  Write(DraDir() / "checkpoint.json", Checkpoint("PrepareCompleted").substr(0, 40));
  EXPECT_EQ(Find(Run({}), "dra.claims")["status"], "warn");
  Write(DraDir() / "checkpoint.json.boot", "a\n");
  EXPECT_EQ(Find(Run({}), "dra.claims")["status"], "fail") << "torn in this boot";
}

TEST_F(Doctor, PluginSocketThatNobodyServes) {
  plugin_.reset();
  fs::remove(PluginDir() / "nvidia-gpu.sock");
  StaleSocket(PluginDir() / "nvidia-gpu.sock");
  EXPECT_EQ(Find(Run({}), "plugin.socket")["status"], "fail");
}

TEST_F(Doctor, PluginHealthStateFromTheDevicePlugin) {
  EXPECT_EQ(Find(Run({}), "plugin.health")["status"], "ok");  // the healthy tree's empty list
  fs::remove(PluginDir() / "gpunode-health.json");
  EXPECT_EQ(Find(Run({}), "plugin.health")["status"], "skip");  // no file: another plugin
  Write(PluginDir() / "gpunode-health.json", R"json({"unhealthy": [{"index": 2, "uuid": "GPU-2",
      "reason": "XID 48 (Double Bit ECC Error)", "faults": ["memory"], "recovers": true,
      "waiting_for": "a row remap is pending until the GPU is reset"}]})json");
  json finding = Find(Run({}), "plugin.health");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_EQ(finding["evidence"],
            "GPU 2 (GPU-2): XID 48 (Double Bit ECC Error); a row remap is pending until the GPU "
            "is reset");
  Write(PluginDir() / "gpunode-health.json", "{\"unhealthy\": 3}");
  finding = Find(Run({}), "plugin.health");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("gpunode-health.json: not a JSON"));
  // An index past an unsigned int would name another GPU once truncated: refused.
  Write(PluginDir() / "gpunode-health.json",
        R"({"unhealthy": [{"index": 4294967298, "uuid": "GPU-2"}]})");
  finding = Find(Run({}), "plugin.health");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(),
              HasSubstr("entry 0 of \"unhealthy\" has no index (an unsigned int) and uuid"));
}

TEST_F(Doctor, CheckpointWithZeroDevices) {
  Overlay("checkpoint-zero-devices");
  json finding = Find(Run({}), "kubelet.registered");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_EQ(finding["summary"], "nvidia.com/gpu is registered with 0 healthy devices");
}

TEST_F(Doctor, CheckpointInTheOldListForm) {
  Overlay("checkpoint-list-form");
  json finding = Find(Run({}), "kubelet.registered");
  EXPECT_EQ(finding["status"], "ok");
  EXPECT_THAT(finding["summary"].get<std::string>(), HasSubstr("8 device(s)"));
}

TEST_F(Doctor, DriverTooOldForTheCudaAsked) {
  json finding = Find(Run({"--cuda", "13.0"}), "driver.cuda-compat");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_EQ(finding["summary"], "the driver is too old for CUDA 13.0");
  EXPECT_THAT(finding["fix"].get<std::string>(), HasSubstr("580.65.06"));
  EXPECT_EQ(exit_code, 1);
  // Same major: runs through minor version compatibility.
  finding = Find(Run({"--cuda", "12.6"}), "driver.cuda-compat");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["fix"].get<std::string>(), HasSubstr("560.28.03"));
}

TEST_F(Doctor, HostCudaToolkitIsAWarning) {
  fs::create_directories(root_ / "usr/local/cuda-12.4/lib64");
  json finding = Find(Run({}), "driver.cuda-compat");
  EXPECT_EQ(finding["status"], "warn");
  EXPECT_THAT(finding["evidence"].get<std::string>(), HasSubstr("/usr/local/cuda-12.4"));
}

TEST_F(Doctor, DevicePluginsGateDisabled) {
  Write(root_ / "var/lib/kubelet/config.yaml", "featureGates:\n  DevicePlugins: false\n");
  EXPECT_EQ(Find(Run({}), "kubelet.feature-gates")["status"], "fail");
}

TEST_F(Doctor, InContainerComparesVisibleDevicesWithNvml) {
  std::vector<std::string> argv = {build_paths::kBinary, "--sim",  "h200-1", "--host-root",
                                   root_.string(),       "doctor", "-o",     "json",
                                   "--in-container"};
  testing::ProcessResult r = testing::RunProcess(
      argv, {"NVIDIA_VISIBLE_DEVICES=GPU-e242ae7e-be09-9973-7c55-f9eaf955b606,0"});
  json finding = Find(json::parse(r.out), "container.visible-devices");
  EXPECT_EQ(finding["status"], "fail");
  EXPECT_EQ(finding["summary"], "asked for 2 GPU(s), NVML sees 1");
  r = testing::RunProcess(argv, {"NVIDIA_VISIBLE_DEVICES=0"});
  EXPECT_EQ(Find(json::parse(r.out), "container.visible-devices")["status"], "ok");
  r = testing::RunProcess(argv, {"NVIDIA_VISIBLE_DEVICES=all"});
  EXPECT_EQ(Find(json::parse(r.out), "container.visible-devices")["status"], "warn");
}

TEST_F(Doctor, BadInputIsOneLineAndExit2) {
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--host-root", root_.string(), "doctor", "--cuda", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpunode: --cuda abc: not a CUDA version; give MAJOR.MINOR, e.g. --cuda 12.4\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(Doctor, TableOutputNamesEveryCheck) {
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", "dgx-h100", "--host-root", root_.string(), "doctor"});
  EXPECT_THAT(r.out, HasSubstr("pci.gpu-count-match"));
  EXPECT_THAT(r.out, HasSubstr("fix: systemctl status containerd"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\033[")));  // not a terminal: no colour
}

// The healthy node with a real containerd answering on its CRI socket.
class DoctorContainerd : public Doctor {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty()) GTEST_SKIP() << "containerd is not installed";
    if (::geteuid() != 0) GTEST_SKIP() << "containerd needs root to start";
    Doctor::SetUp();
    socket_ = (root_ / "run/containerd/containerd.sock").string();
    fs::create_directories(root_ / "run/containerd");
    // containerd reads absolute imports from the real filesystem, so the handler goes in the
    // main file here; the import chain under a host root is covered by the tests above.
    fs::remove_all(root_ / "etc/containerd/conf.d");
    config_ = root_ / "etc/containerd/config.toml";
  }
  void WriteConfig(bool with_handler) {
    std::string text = testing::ContainerdTestConfig(root_ / "ctd", socket_) +
                       "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
                       "  runtime_type = \"io.containerd.runc.v2\"\n";
    if (with_handler) {
      text +=
          "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
          "  runtime_type = \"io.containerd.runc.v2\"\n"
          "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
          "    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n";
    }
    Write(config_, text);
  }
  std::string socket_;
  fs::path config_;
};

TEST_F(DoctorContainerd, HealthyNodeIsAllOk) {
  WriteConfig(true);
  testing::ContainerdProcess containerd(GPUNODE_CONTAINERD, config_, root_ / "containerd.log");
  ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
  // A 100 GiB image filesystem where the one containerd names resolves under the host root.
  auto image_fs = containerd::QueryCriImageFilesystems(socket_, std::chrono::seconds(2));
  ASSERT_TRUE(image_fs.ok()) << image_fs.status();
  testing::TmpfsMount tmpfs(root_ / fs::path(image_fs->front().mountpoint).relative_path(),
                            uint64_t{100} << 30);
  if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.error();
  json report = Run({"--cuda", "12.4"});
  for (const json& finding : report["findings"]) {
    // Container checks run only in a pod; the node shares nothing through MPS.
    bool skipped = finding["layer"] == "container" || finding["layer"] == "dra" ||
                   finding["id"] == "plugin.mps-daemon";
    EXPECT_EQ(finding["status"], skipped ? "skip" : "ok") << finding.dump();
  }
  EXPECT_EQ(report["summary"]["ok"], 23);
  EXPECT_EQ(exit_code, 0) << last_.out;
  EXPECT_THAT(Find(report, "runtime.containerd-live")["evidence"].get<std::string>(),
              HasSubstr("/usr/bin/nvidia-container-runtime"));
}

TEST_F(DoctorContainerd, HandlerInTheFileButNotLoaded) {
  WriteConfig(false);
  testing::ContainerdProcess containerd(GPUNODE_CONTAINERD, config_, root_ / "containerd.log");
  ASSERT_TRUE(containerd.AwaitCri(socket_, std::chrono::seconds(20))) << containerd.Log();
  WriteConfig(true);  // edited after containerd started, not restarted
  json report = Run({});
  EXPECT_EQ(Find(report, "runtime.containerd-config")["status"], "ok");
  json live = Find(report, "runtime.containerd-live");
  EXPECT_EQ(live["status"], "fail");
  EXPECT_EQ(live["fix"], "systemctl restart containerd");
}

}  // namespace
}  // namespace gpunode
