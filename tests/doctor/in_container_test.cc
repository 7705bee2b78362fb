// `gpunode doctor --in-container` as a pod runs it: the real binary under --host-root on a
// container-shaped tree (tests/fixtures/doctor/pod: /proc/driver/nvidia/version and the driver
// libraries the runtime mounts; device nodes made here for the injected GPUs only; no containerd,
// toolkit or kubelet files), the simulator showing only the injected GPUs, and the pod's
// environment given to the process.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "yaml-cpp/yaml.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

const fs::path kDoctorFixtures = fs::path(build_paths::kFixturesDir) / "doctor";
const fs::path kRepository = fs::path(build_paths::kFixturesDir).parent_path().parent_path();
// tests/fixtures/doctor/profiles/pod-2-of-8.yaml: the node's GPUs 2 and 5.
const std::string kTwoOfEight = (kDoctorFixtures / "profiles/pod-2-of-8.yaml").string();
const std::string kGpu2 = "GPU-7e3a2c11-52aa-4c0e-9d1b-0a5f6e2b8c02";
const std::string kGpu5 = "GPU-c0d4b6e2-1f3a-4b7c-8e9d-5a6b7c8d9e05";
// tests/fixtures/doctor/profiles/pod-mig.yaml: one 3g.40gb of the node's GPU 2.
const std::string kPodMig = (kDoctorFixtures / "profiles/pod-mig.yaml").string();
const std::string kMig = "MIG-0f6c2a8e-3b4d-5e6f-8a9b-1c2d3e4f5a61";

const std::set<std::string> kContainerChecks = {
    "container.nvml",         "container.visible-devices", "container.mig-devices",
    "container.device-nodes", "container.driver-version",  "container.driver-libraries",
    "container.cuda-compat"};

class InContainer : public ::testing::Test {
 protected:
  void SetUp() override {
    // The pod's environment is what each test gives, never the one ctest runs in.
    for (const char* name : {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VERSION",
                             "NV_CUDA_CUDART_VERSION"}) {
      ::unsetenv(name);
    }
    char tmpl[] = "/tmp/gpunode-pod-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::copy(kDoctorFixtures / "pod", root_, fs::copy_options::recursive);
    for (const char* node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) AddNode(node);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Device nodes are regular files here: the checks look at names only (/dev/nvidiaN keeps the
  // host's minor number N).
  void AddNode(const std::string& name) {
    fs::create_directories(root_ / "dev");
    std::ofstream(root_ / "dev" / name);
  }
  void AddFile(const std::string& path) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path);
  }

  // Runs the doctor with `env` as the pod's environment and returns its JSON report.
  json Run(const std::vector<std::string>& env, const std::string& sim = kTwoOfEight,
           std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {build_paths::kBinary, "--sim",  sim,  "--host-root",
                                     root_.string(),       "doctor", "-o", "json",
                                     "--in-container"};
    argv.insert(argv.end(), args.begin(), args.end());
    last_ = testing::RunProcess(argv, env);
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

  // The healthy pod: the node's GPUs 2 and 5, injected as the runtime does.
  void InjectGpus2And5() {
    AddNode("nvidia2");
    AddNode("nvidia5");
  }

  fs::path root_;
  testing::ProcessResult last_;
  int exit_code = -1;
};

TEST_F(InContainer, AHealthyPodPassesAndLeavesTheHostChecksOut) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=" + kGpu2 + "," + kGpu5, "CUDA_VERSION=12.4.1",
                     "NVIDIA_DRIVER_CAPABILITIES=compute,utility"},
                    kTwoOfEight, {"--cuda", "12.4"});
  std::set<std::string> container_ids;
  for (const json& finding : report["findings"]) {
    std::string id = finding["id"];
    if (finding["layer"] == "container") {
      container_ids.insert(id);
      EXPECT_EQ(finding["status"], id == "container.mig-devices" ? "skip" : "ok") << finding.dump();
    } else {
      EXPECT_EQ(finding["status"], "skip") << finding.dump();
      EXPECT_EQ(finding["summary"], "host-only: not run inside a container") << finding.dump();
    }
  }
  EXPECT_EQ(container_ids, kContainerChecks);
  EXPECT_EQ(report["summary"]["fail"], 0);
  EXPECT_EQ(report["summary"]["ok"], 6);
  EXPECT_EQ(exit_code, 0) << last_.out;
  EXPECT_EQ(Find(report, "container.nvml")["summary"],
            "NVML initialized: driver 550.90.07, 2 GPU(s) visible");
  EXPECT_EQ(Find(report, "container.visible-devices")["summary"],
            "2 GPU(s) listed, all visible to NVML and no other");
  EXPECT_THAT(Find(report, "container.device-nodes")["evidence"].get<std::string>(),
              HasSubstr("present: /dev/nvidia2 /dev/nvidia5; expected: /dev/nvidia2 /dev/nvidia5"));
  EXPECT_THAT(Find(report, "container.driver-libraries")["evidence"].get<std::string>(),
              HasSubstr("/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07"));
  EXPECT_EQ(Find(report, "container.cuda-compat")["summary"],
            "the driver (CUDA up to 12.4) runs CUDA 12.4 and the image's CUDA 12.4");
  EXPECT_THAT(Find(report, "container.cuda-compat")["evidence"].get<std::string>(),
              HasSubstr("CUDA_VERSION=12.4.1"));
}

// NVIDIA_VISIBLE_DEVICES by host index: NVML in here numbers the GPUs 0 and 1, the nodes keep 2
// and 5.
TEST_F(InContainer, HostIndicesAreMatchedByCountAndMinorNumbers) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=2,5"});
  EXPECT_EQ(Find(report, "container.visible-devices")["status"], "ok");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "ok");
  EXPECT_EQ(exit_code, 0) << last_.out;
  // The same GPUs listed under other host indices: the nodes are not the ones asked for.
  report = Run({"NVIDIA_VISIBLE_DEVICES=2,6"});
  json nodes = Find(report, "container.device-nodes");
  EXPECT_EQ(nodes["status"], "fail");
  EXPECT_THAT(nodes["evidence"].get<std::string>(), HasSubstr("/dev/nvidia6"));
  EXPECT_EQ(exit_code, 1);
}

TEST_F(InContainer, OneGpuFewerVisibleThanListed) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=2,5,7"});
  json visible = Find(report, "container.visible-devices");
  EXPECT_EQ(visible["status"], "fail");
  EXPECT_EQ(visible["summary"], "asked for 3 GPU(s), NVML sees 2");
  json nodes = Find(report, "container.device-nodes");
  EXPECT_EQ(nodes["status"], "fail");
  EXPECT_EQ(nodes["evidence"], "/dev/nvidia7");
  EXPECT_EQ(exit_code, 1);
  // By UUID the missing GPU is named.
  report = Run({"NVIDIA_VISIBLE_DEVICES=" + kGpu2 + ",GPU-00000000-0000-0000-0000-000000000000"});
  EXPECT_THAT(Find(report, "container.visible-devices")["evidence"].get<std::string>(),
              HasSubstr("not visible: GPU-00000000-0000-0000-0000-000000000000"));
}

TEST_F(InContainer, OneMoreVisibleThanListedIsBrokenIsolation) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=" + kGpu2});
  json visible = Find(report, "container.visible-devices");
  EXPECT_EQ(visible["status"], "fail");
  EXPECT_EQ(visible["summary"], "NVML sees 2 GPU(s) but 1 listed: the container is not isolated");
  EXPECT_THAT(visible["evidence"].get<std::string>(),
              HasSubstr("visible but not listed: " + kGpu5));
  EXPECT_THAT(visible["fix"].get<std::string>(), HasSubstr("privileged"));
  json nodes = Find(report, "container.device-nodes");
  EXPECT_EQ(nodes["status"], "fail");
  EXPECT_EQ(nodes["summary"], "device nodes of GPUs this container was not given: /dev/nvidia5");
  EXPECT_EQ(exit_code, 1);
  // Listed by index, the same.
  report = Run({"NVIDIA_VISIBLE_DEVICES=2"});
  EXPECT_EQ(Find(report, "container.visible-devices")["status"], "fail");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "fail");
}

TEST_F(InContainer, AnImageWhoseCudaNeedsANewerDriver) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=2,5", "CUDA_VERSION=13.0.0"});
  json cuda = Find(report, "container.cuda-compat");
  EXPECT_EQ(cuda["status"], "fail");
  EXPECT_THAT(cuda["summary"].get<std::string>(),
              HasSubstr("the driver is too old for the image's CUDA 13.0"));
  EXPECT_THAT(cuda["summary"].get<std::string>(),
              HasSubstr("CUDA driver version is insufficient for CUDA runtime version"));
  EXPECT_THAT(cuda["fix"].get<std::string>(), HasSubstr("upgrade the driver to 580.65.06"));
  EXPECT_THAT(cuda["evidence"].get<std::string>(), HasSubstr("supports CUDA up to 12.4"));
  EXPECT_EQ(exit_code, 1);
}

TEST_F(InContainer, TheImageCudaFromNvCudaVariablesOrLibcudart) {
  InjectGpus2And5();
  // Same major, newer minor: only minor version compatibility, a warning.
  json cuda = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5", "NV_CUDA_CUDART_VERSION=12.6.77-1"}),
                   "container.cuda-compat");
  EXPECT_EQ(cuda["status"], "warn");
  EXPECT_THAT(cuda["evidence"].get<std::string>(), HasSubstr("NV_CUDA_CUDART_VERSION=12.6.77-1"));
  EXPECT_EQ(exit_code, 0);
  // No variables: the libcudart the image carries.
  AddFile("usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.48");
  cuda = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5"}), "container.cuda-compat");
  EXPECT_EQ(cuda["status"], "fail");
  EXPECT_THAT(cuda["evidence"].get<std::string>(),
              HasSubstr("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.48"));
  EXPECT_THAT(cuda["fix"].get<std::string>(), HasSubstr("580.65.06"));
  EXPECT_EQ(exit_code, 1);
}

TEST_F(InContainer, LibcudaMissing) {
  InjectGpus2And5();
  fs::remove(root_ / "usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07");
  json report = Run({"NVIDIA_VISIBLE_DEVICES=2,5", "NVIDIA_DRIVER_CAPABILITIES=utility"});
  json libraries = Find(report, "container.driver-libraries");
  EXPECT_EQ(libraries["status"], "fail");
  EXPECT_THAT(libraries["summary"].get<std::string>(), HasSubstr("libcuda.so not mounted"));
  EXPECT_THAT(libraries["evidence"].get<std::string>(),
              HasSubstr("NVIDIA_DRIVER_CAPABILITIES=utility"));
  EXPECT_THAT(libraries["fix"].get<std::string>(), HasSubstr("compute,utility"));
  EXPECT_EQ(exit_code, 1);
}

TEST_F(InContainer, DriverLibrariesOfAnotherDriverInTheImage) {
  InjectGpus2And5();
  fs::remove(root_ / "usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07");
  AddFile("usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05");
  AddFile("usr/lib/x86_64-linux-gnu/libcuda.so.1");  // ldconfig's link: no version of its own
  json libraries = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5"}), "container.driver-libraries");
  EXPECT_EQ(libraries["status"], "fail");
  EXPECT_THAT(libraries["evidence"].get<std::string>(), HasSubstr("libcuda.so.535.104.05"));
  EXPECT_EQ(exit_code, 1);
  // Beside the node's own: a warning.
  AddFile("usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07");
  libraries = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5"}), "container.driver-libraries");
  EXPECT_EQ(libraries["status"], "warn");
  EXPECT_EQ(exit_code, 0);
}

TEST_F(InContainer, KernelModuleAndMountedLibrariesDiffer) {
  InjectGpus2And5();
  std::ofstream(root_ / "proc/driver/nvidia/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  555.42.02  Tue May 14 2024\n";
  json version = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5"}), "container.driver-version");
  EXPECT_EQ(version["status"], "fail");
  EXPECT_EQ(version["evidence"], "/proc/driver/nvidia/version: 555.42.02; NVML: 550.90.07");
  fs::remove(root_ / "proc/driver/nvidia/version");
  version = Find(Run({"NVIDIA_VISIBLE_DEVICES=2,5"}), "container.driver-version");
  EXPECT_EQ(version["status"], "fail");
  EXPECT_EQ(version["summary"], "the container sees no /proc/driver/nvidia/version");
}

TEST_F(InContainer, AMigDevice) {
  AddNode("nvidia2");
  json report = Run({"NVIDIA_VISIBLE_DEVICES=" + kMig}, kPodMig);
  json mig = Find(report, "container.mig-devices");
  EXPECT_EQ(mig["status"], "ok") << mig.dump();
  EXPECT_THAT(mig["evidence"].get<std::string>(), HasSubstr(kMig + " (3g.40gb on GPU-5b1e9a40"));
  EXPECT_EQ(Find(report, "container.visible-devices")["status"], "ok");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "ok");  // the parent's node
  EXPECT_EQ(exit_code, 0) << last_.out;
  // A MIG device the runtime did not inject.
  mig = Find(Run({"NVIDIA_VISIBLE_DEVICES=MIG-11111111-2222-3333-4444-555555555555"}, kPodMig),
             "container.mig-devices");
  EXPECT_EQ(mig["status"], "fail");
  EXPECT_THAT(mig["evidence"].get<std::string>(),
              HasSubstr("not visible: MIG-11111111-2222-3333-4444-555555555555"));
  EXPECT_EQ(exit_code, 1);
}

// A pod that sees the whole a100-mig node (privileged, say) though one MIG device was listed.
TEST_F(InContainer, AMigDeviceListedButTheWholeNodeVisible) {
  testing::ProcessResult inventory =
      testing::RunProcess({build_paths::kBinary, "--sim", "a100-mig", "inventory", "-o", "json"});
  ASSERT_EQ(inventory.exit_code, 0) << inventory.err;
  json node = json::parse(inventory.out);
  std::string mig_uuid;
  for (const json& gpu : node["gpus"]) {
    if (gpu.contains("mig_devices") && !gpu["mig_devices"].empty()) {
      mig_uuid = gpu["mig_devices"][0]["uuid"];
      break;
    }
  }
  ASSERT_FALSE(mig_uuid.empty()) << inventory.out;
  for (int i = 0; i < 8; ++i) AddNode("nvidia" + std::to_string(i));
  json report = Run({"NVIDIA_VISIBLE_DEVICES=" + mig_uuid}, "a100-mig");
  json mig = Find(report, "container.mig-devices");
  EXPECT_EQ(mig["status"], "fail");
  EXPECT_THAT(mig["summary"].get<std::string>(), HasSubstr("the container is not isolated"));
  EXPECT_EQ(Find(report, "container.visible-devices")["summary"],
            "NVML sees 2 GPU(s) but 0 listed: the container is not isolated");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "fail");
  EXPECT_EQ(exit_code, 1);
}

// The device plugin's volume-mounts strategy: the IDs are entries of a directory.
TEST_F(InContainer, DeviceIdsAsVolumeMounts) {
  InjectGpus2And5();
  AddFile("var/run/nvidia-container-devices/" + kGpu2);
  AddFile("var/run/nvidia-container-devices/" + kGpu5);
  json report = Run({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"});
  json visible = Find(report, "container.visible-devices");
  EXPECT_EQ(visible["status"], "ok") << visible.dump();
  EXPECT_THAT(visible["evidence"].get<std::string>(), HasSubstr("(entries: " + kGpu2));
  EXPECT_EQ(exit_code, 0) << last_.out;
  fs::remove(root_ / "var/run/nvidia-container-devices" / kGpu5);
  EXPECT_EQ(Find(Run({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"}),
                 "container.visible-devices")["status"],
            "fail");
}

// CDI injects the devices and sets NVIDIA_VISIBLE_DEVICES=void: the nodes are judged against what
// NVML shows.
TEST_F(InContainer, DevicesInjectedThroughCdi) {
  InjectGpus2And5();
  json report = Run({"NVIDIA_VISIBLE_DEVICES=void"});
  EXPECT_EQ(Find(report, "container.visible-devices")["status"], "ok");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "ok");
  EXPECT_EQ(exit_code, 0) << last_.out;
  AddNode("nvidia6");
  EXPECT_EQ(Find(Run({"NVIDIA_VISIBLE_DEVICES=void"}), "container.device-nodes")["summary"],
            "device nodes of GPUs this container was not given: /dev/nvidia6");
}

TEST_F(InContainer, NoGpuListed) {
  json report = Run({});
  EXPECT_EQ(Find(report, "container.visible-devices")["summary"],
            "NVIDIA_VISIBLE_DEVICES is not set: the NVIDIA runtime gave this container no GPU");
  EXPECT_EQ(Find(report, "container.device-nodes")["status"], "skip");
  EXPECT_EQ(exit_code, 1);
}

TEST_F(InContainer, TableOutputSaysWhyHostChecksAreLeftOut) {
  InjectGpus2And5();
  testing::ProcessResult r =
      testing::RunProcess({build_paths::kBinary, "--sim", kTwoOfEight, "--host-root",
                           root_.string(), "doctor", "--in-container"},
                          {"NVIDIA_VISIBLE_DEVICES=2,5"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("runtime.containerd-config"));
  EXPECT_THAT(r.out, HasSubstr("host-only: not run inside a container"));
  EXPECT_THAT(r.out, HasSubstr("container.device-nodes"));
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The smoke pod: the spec docs/DOCTOR.md shows, two GPUs, run once, least privilege.
TEST(DoctorPod, ManifestIsTheDocumentedLeastPrivilegeSpec) {
  std::string manifest = ReadText(kRepository / "deploy/doctor-pod.yaml");
  ASSERT_FALSE(manifest.empty());
  EXPECT_THAT(ReadText(kRepository / "docs/DOCTOR.md"), HasSubstr("```yaml\n" + manifest + "```"));
  YAML::Node pod = YAML::Load(manifest);
  EXPECT_EQ(pod["kind"].as<std::string>(), "Pod");
  EXPECT_EQ(pod["spec"]["restartPolicy"].as<std::string>(), "Never");
  EXPECT_TRUE(pod["spec"]["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_NE(pod["spec"]["securityContext"]["runAsUser"].as<int>(), 0);
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  YAML::Node container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["command"].as<std::vector<std::string>>(),
            (std::vector<std::string>{"gpunode", "doctor", "--in-container", "-o", "json"}));
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 2);
  EXPECT_FALSE(container["securityContext"]["privileged"].as<bool>());
  EXPECT_FALSE(container["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  EXPECT_EQ(container["securityContext"]["capabilities"]["drop"][0].as<std::string>(), "ALL");
}

}  // namespace
}  // namespace gpunode
