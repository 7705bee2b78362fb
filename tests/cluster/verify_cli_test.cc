// `gpunode cluster verify` and `cluster restore --verify` through the real binary against the API
// server double, which plays the scheduler and kubelet for the smoke pod: the test decides what
// the pod's doctor report says, or that the pod never finishes.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "cli_support.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "harness/gpu_cluster_objects.h"
#include "nlohmann/json.hpp"
#include "process.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

class VerifyCliTest : public LiveApiServerTest {
 protected:
  void SetUp() override {
    LiveApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    server_->AddObject(DevicePluginDaemonSet());
    // The kubelet: a smoke pod that is looked at ends as the test says.
    server_->OnRequest([this](const ApiServerDouble::Request& req) {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string prefix = "/api/v1/namespaces/ml/pods/gpunode-verify-";
      if (req.method == "POST" && req.path == "/api/v1/namespaces/ml/pods") {
        created_.push_back(json::parse(req.body));
        return;
      }
      if (req.method != "GET" || req.path.rfind(prefix, 0) != 0 ||
          req.path.find("/log") != std::string::npos) {
        return;
      }
      std::string pod = req.path.substr(std::string("/api/v1/namespaces/ml/pods/").size());
      if (!server_->Pod("ml", pod).has_value()) return;  // a leftover's deletion being awaited
      polled_ = true;
      cv_.notify_all();
      auto it = outcome_.find(pod.substr(std::string("gpunode-verify-").size()));
      if (it == outcome_.end()) return;  // never finishes
      server_->SetPodPhase("ml", pod, it->second.first);
      server_->SetPodLog("ml", pod, it->second.second);
    });
  }
  void TearDown() override { server_->OnRequest(nullptr); }

  // A node `gpunode cluster drain --cordon` left behind, with its device plugin running.
  void AddDrainedNode(const std::string& name) {
    json node = GpuNode(name, 8, 8);
    node["metadata"]["labels"]["nvidia.com/gpu.state"] = "draining";
    node["metadata"]["annotations"] = {{"gpunode.io/drain-cordoned", "true"}};
    node["spec"]["unschedulable"] = true;
    server_->AddObject(node);
    server_->AddObject(DevicePluginPod(name));
  }
  void Finishes(const std::string& node, const std::string& phase, const std::string& log) {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_[node] = {phase, log};
  }
  std::vector<json> Created() {
    std::lock_guard<std::mutex> lock(mu_);
    return created_;
  }
  bool WaitPolled(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return polled_; });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool polled_ = false;
  std::map<std::string, std::pair<std::string, std::string>> outcome_;  // node -> phase, log
  std::vector<json> created_;
};

const json* StepOf(const json& report, const std::string& node, const std::string& step) {
  for (const json& n : report["nodes"]) {
    if (n["name"] != node) continue;
    for (const json& s : n["steps"]) {
      if (s["step"] == step) return &s;
    }
  }
  return nullptr;
}

TEST_F(VerifyCliTest, HealthyNodesPassAndEverySmokePodIsDeleted) {
  server_->AddObject(GpuNode("gpu-a", 8, 8));
  server_->AddObject(GpuNode("gpu-one", 1, 1));
  server_->AddObject(GpuNode("cpu-1", 0, 0));
  // Only GPU nodes carry nvidia.com/gpu.present.
  json cpu = *server_->Node("cpu-1");
  cpu["metadata"]["labels"] = {{"kubernetes.io/hostname", "cpu-1"}};
  server_->AddObject(cpu);
  server_->AddObject(DevicePluginPod("gpu-a"));
  server_->AddObject(DevicePluginPod("gpu-one"));
  // A smoke pod left behind by a run that was killed.
  server_->AddObject({{"kind", "Pod"},
                      {"apiVersion", "v1"},
                      {"metadata", {{"name", "gpunode-verify-gpu-a"}, {"namespace", "ml"}}},
                      {"spec", {{"containers", {{{"name", "smoke"}, {"image", "x"}}}}}},
                      {"status", {{"phase", "Running"}}}});
  Finishes("gpu-a", "Succeeded", SmokeDoctorReport("ok"));
  Finishes("gpu-one", "Succeeded", SmokeDoctorReport("ok"));

  ProcessResult r = Live({"cluster", "verify", "--selector", "nvidia.com/gpu.present=true", "-o",
                          "json", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["summary"]["passed"], 2) << r.out;
  EXPECT_EQ(report["summary"]["nodes"], 2) << r.out;
  for (const char* step : {"ready", "labels", "device-plugin", "capacity", "smoke-pod"}) {
    const json* s = StepOf(report, "gpu-a", step);
    ASSERT_NE(s, nullptr) << step;
    EXPECT_EQ((*s)["result"], "pass") << step << ": " << (*s)["evidence"];
  }
  EXPECT_EQ((*StepOf(report, "gpu-a", "device-plugin"))["evidence"],
            "pod gpu-operator/nvidia-device-plugin-daemonset-gpu-a of DaemonSet "
            "gpu-operator/nvidia-device-plugin-daemonset is Running and Ready");
  EXPECT_NE((*StepOf(report, "gpu-a", "smoke-pod"))["evidence"].get<std::string>().find(
                "with 2 GPU(s): container.visible-devices ok"),
            std::string::npos);

  std::vector<json> created = Created();
  ASSERT_EQ(created.size(), 2u);
  const json& pod = created[0];
  EXPECT_EQ(pod["metadata"]["name"], "gpunode-verify-gpu-a");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/name"], "gpunode-verify");
  EXPECT_EQ(pod["metadata"]["labels"]["gpunode.io/node"], "gpu-a");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "ghcr.io/gpunode/gpunode:0.1.0");
  EXPECT_EQ(pod["spec"]["containers"][0]["command"],
            json({"gpunode", "doctor", "--in-container", "-o", "json"}));
  EXPECT_EQ(
      pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
         ["nodeSelectorTerms"][0]["matchFields"][0],
      json({{"key", "metadata.name"}, {"operator", "In"}, {"values", {"gpu-a"}}}));
  EXPECT_EQ(pod["spec"]["tolerations"][0],
            json({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}));
  EXPECT_EQ(pod["spec"]["tolerations"][1]["key"], "node.kubernetes.io/unschedulable");
  EXPECT_FALSE(pod["spec"]["automountServiceAccountToken"].get<bool>());
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  // One GPU on a one-GPU node.
  EXPECT_EQ(created[1]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");

  // The leftover was deleted before the new pod was created, and both smoke pods are gone.
  std::vector<ApiServerDouble::Request> requests = server_->Requests();
  int first_delete = -1, first_create = -1;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].method == "DELETE" && first_delete < 0) first_delete = static_cast<int>(i);
    if (requests[i].method == "POST" && first_create < 0) first_create = static_cast<int>(i);
  }
  EXPECT_LT(first_delete, first_create);
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-a").has_value());
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-one").has_value());
}

// --workload-image: a pod of its own after the smoke pod, with the same GPUs; its end is a step.
TEST_F(VerifyCliTest, AWorkloadRunsAfterTheSmokePodAndItsEndIsPartOfTheVerdict) {
  for (const char* name : {"gpu-a", "gpu-b", "gpu-c"}) {
    server_->AddObject(GpuNode(name, 8, 8));
    server_->AddObject(DevicePluginPod(name));
  }
  Finishes("gpu-a", "Succeeded", SmokeDoctorReport("ok"));
  Finishes("gpu-a-workload", "Succeeded", "[Vector addition of 50000 elements]\nTest PASSED\n");
  Finishes("gpu-b", "Succeeded", SmokeDoctorReport("ok"));
  Finishes("gpu-b-workload", "Failed",
           "Failed to allocate device vector A (error code "
           "CUDA driver version is insufficient)!\n");
  Finishes("gpu-c", "Failed", SmokeDoctorReport("fail"));
  ProcessResult r =
      Live({"cluster", "verify", "gpu-a", "gpu-b", "gpu-c", "-o", "json", "--poll-interval", "10ms",
            "--workload-image", "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
            "--workload-command", "/cuda-samples/vectorAdd"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json report = json::parse(r.out);
  const json* passed = StepOf(report, "gpu-a", "workload");
  ASSERT_NE(passed, nullptr) << r.out;
  EXPECT_EQ((*passed)["result"], "pass");
  EXPECT_NE((*passed)["evidence"].get<std::string>().find("last line: Test PASSED"),
            std::string::npos);
  const json* failed = StepOf(report, "gpu-b", "workload");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["result"], "fail");
  EXPECT_NE((*failed)["evidence"].get<std::string>().find("CUDA driver version is insufficient"),
            std::string::npos);
  EXPECT_EQ((*StepOf(report, "gpu-c", "workload"))["result"], "skip") << "the smoke pod failed";

  // The workload pod: the same GPUs as the smoke pod, the image and command asked for.
  std::vector<json> created = Created();
  ASSERT_EQ(created.size(), 5u);
  const json& workload = created[1];
  EXPECT_EQ(workload["metadata"]["name"], "gpunode-verify-gpu-a-workload");
  const json& container = workload["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0");
  EXPECT_EQ(container["command"], json::array({"/cuda-samples/vectorAdd"}));
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"],
            created[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]);
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-a-workload").has_value()) << "deleted";

  // The table grows a WORKLOAD column only when a workload runs.
  r = Live({"cluster", "verify", "gpu-a", "--poll-interval", "10ms"});
  EXPECT_EQ(r.out.find("WORKLOAD"), std::string::npos) << r.out;
  r = Live({"cluster", "verify", "gpu-a", "--workload-command", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--workload-command: given without --workload-image"), std::string::npos);
}

TEST_F(VerifyCliTest, EachBrokenLinkIsItsOwnFailure) {
  server_->AddObject(GpuNode("gpu-uncovered", 8, 8, /*plugin_label=*/false));
  server_->AddObject(GpuNode("gpu-xid", 8, 7));
  server_->AddObject(DevicePluginPod("gpu-xid"));
  server_->AddObject(GpuNode("gpu-leaky", 8, 8));
  server_->AddObject(DevicePluginPod("gpu-leaky"));
  Finishes("gpu-leaky", "Failed", SmokeDoctorReport("fail", "8 GPUs visible, 2 allocated"));

  ProcessResult r = Live({"cluster", "verify", "gpu-uncovered", "gpu-xid", "gpu-leaky", "-o",
                          "json", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["summary"]["failed"], 3);

  const json* uncovered = StepOf(report, "gpu-uncovered", "device-plugin");
  EXPECT_EQ((*uncovered)["result"], "fail");
  EXPECT_EQ((*uncovered)["evidence"],
            "DaemonSet gpu-operator/nvidia-device-plugin-daemonset does not cover gpu-uncovered: "
            "its nodeSelector (nvidia.com/gpu.deploy.device-plugin=true) or node affinity does "
            "not match the node's labels");
  EXPECT_EQ((*StepOf(report, "gpu-uncovered", "smoke-pod"))["result"], "skip");

  const json* xid = StepOf(report, "gpu-xid", "capacity");
  EXPECT_EQ((*xid)["result"], "fail");
  EXPECT_NE((*xid)["evidence"].get<std::string>().find("7 healthy nvidia.com/gpu"),
            std::string::npos);

  const json* leaky = StepOf(report, "gpu-leaky", "smoke-pod");
  EXPECT_EQ((*leaky)["result"], "fail");
  EXPECT_NE((*leaky)["evidence"].get<std::string>().find(
                "container.visible-devices fail: sees GPUs it was not given (saw: 8 GPUs "
                "visible, 2 allocated)"),
            std::string::npos)
      << (*leaky)["evidence"];
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-leaky").has_value());
  // Smoke pods run only where the steps before them passed.
  EXPECT_EQ(Created().size(), 1u);

  ProcessResult table = Live({"cluster", "verify", "gpu-uncovered", "--poll-interval", "10ms"});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_NE(
      table.out.find("gpu-uncovered   FAIL     pass    pass     fail            pass       skip\n"),
      std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("0 of 1 node(s) passed"), std::string::npos) << table.out;
}

// The API server reads logs from the kubelet, which it may not reach while everything else
// works (found against the real apiserver, whose answer is a 500): the step still judges the pod.
TEST_F(VerifyCliTest, ASmokePodWhoseLogCannotBeReadIsJudgedByItsEnd) {
  server_->AddObject(GpuNode("gpu-a", 8, 8));
  server_->AddObject(DevicePluginPod("gpu-a"));
  Finishes("gpu-a", "Succeeded", SmokeDoctorReport("ok"));
  const std::string log = "/api/v1/namespaces/ml/pods/gpunode-verify-gpu-a/log";

  // Another image: its end is the verdict, and the step says the log was not read.
  server_->FailNext("GET", log, 500, 100);
  ProcessResult r = Live({"cluster", "verify", "gpu-a", "-o", "json", "--poll-interval", "10ms",
                          "--image", "busybox:1.36", "--command", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  const json* smoke = StepOf(report, "gpu-a", "smoke-pod");
  ASSERT_NE(smoke, nullptr) << r.out;
  EXPECT_EQ((*smoke)["result"], "pass");
  EXPECT_NE((*smoke)["evidence"].get<std::string>().find("its log could not be read"),
            std::string::npos)
      << (*smoke)["evidence"];

  // gpunode's doctor pod: the report is the evidence, so the step fails and says why.
  server_->FailNext("GET", log, 500, 100);
  r = Live({"cluster", "verify", "gpu-a", "-o", "json", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  report = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  smoke = StepOf(report, "gpu-a", "smoke-pod");
  ASSERT_NE(smoke, nullptr) << r.out;
  EXPECT_EQ((*smoke)["result"], "fail");
  EXPECT_NE((*smoke)["fix"].get<std::string>().find("the API server must reach the kubelet"),
            std::string::npos);
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-a").has_value());
}

TEST_F(VerifyCliTest, ASmokePodThatNeverFinishesIsDeletedAtTheTimeout) {
  server_->AddObject(GpuNode("gpu-a", 8, 8));
  server_->AddObject(DevicePluginPod("gpu-a"));
  ProcessResult r = Live({"cluster", "verify", "gpu-a", "-o", "json", "--timeout", "300ms",
                          "--poll-interval", "20ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json report = json::parse(r.out);
  const json* smoke = StepOf(report, "gpu-a", "smoke-pod");
  ASSERT_NE(smoke, nullptr) << r.out;
  EXPECT_NE(
      (*smoke)["evidence"].get<std::string>().find("the pod did not finish within 300ms (Pending)"),
      std::string::npos)
      << (*smoke)["evidence"];
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-a").has_value());
}

TEST_F(VerifyCliTest, SigintDeletesTheSmokePodBeforeExiting) {
  server_->AddObject(GpuNode("gpu-a", 8, 8));
  server_->AddObject(DevicePluginPod("gpu-a"));
  BackgroundProcess verify({kGpunodeBinary, "cluster", "verify", "gpu-a", "--timeout", "10m",
                            "--poll-interval", "1m", "--kubeconfig", kubeconfig_});
  // The pod exists once verify looks at it for the first time.
  ASSERT_TRUE(WaitPolled(std::chrono::seconds(30))) << verify.Stderr();
  ASSERT_TRUE(server_->Pod("ml", "gpunode-verify-gpu-a").has_value());
  verify.Signal(SIGINT);
  std::optional<int> code = verify.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 128 + SIGINT) << verify.Stderr();
  EXPECT_FALSE(server_->Pod("ml", "gpunode-verify-gpu-a").has_value());
  EXPECT_NE(verify.Stderr().find("smoke pod ml/gpunode-verify-gpu-a deleted"), std::string::npos)
      << verify.Stderr();
  EXPECT_NE(verify.Stdout().find("interrupted"), std::string::npos) << verify.Stdout();
}

TEST_F(VerifyCliTest, RestoreVerifyRefusesANodeWhoseSmokePodFails) {
  AddDrainedNode("gpu-a");
  Finishes("gpu-a", "Failed", SmokeDoctorReport("fail", "8 GPUs visible, 2 allocated"));
  ProcessResult refused =
      Live({"cluster", "restore", "gpu-a", "--verify", "--poll-interval", "10ms"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("refusing to restore: node gpu-a failed verification"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);

  Finishes("gpu-a", "Succeeded", SmokeDoctorReport("ok"));
  ProcessResult restored =
      Live({"cluster", "restore", "gpu-a", "--verify", "--poll-interval", "10ms"});
  EXPECT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  EXPECT_NE(restored.out.find("1 of 1 node(s) passed"), std::string::npos) << restored.out;
  EXPECT_FALSE((*server_->Node("gpu-a"))["spec"].contains("unschedulable"));
}

// A dry run changes nothing, and running a pod on the node is a change: the checks that only read
// decide, and no smoke pod is created.
TEST_F(VerifyCliTest, RestoreVerifyDryRunRunsNoSmokePod) {
  AddDrainedNode("gpu-a");
  ProcessResult r =
      Live({"cluster", "restore", "gpu-a", "--verify", "--dry-run", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("dry run: the smoke pod was not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dry run: would "), std::string::npos) << r.out;
  EXPECT_TRUE(Created().empty());
  EXPECT_EQ(server_->CountRequests("POST", "/"), 0);
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_TRUE((*server_->Node("gpu-a"))["spec"]["unschedulable"].get<bool>());
}

TEST_F(VerifyCliTest, RequiredLabelsOfTheOperatorsScheme) {
  server_->AddObject(GpuNode("gpu-a", 8, 8));
  server_->AddObject(DevicePluginPod("gpu-a"));
  Finishes("gpu-a", "Succeeded", SmokeDoctorReport("ok"));
  // Each --require-label takes one value: the node name after it stays a node.
  ProcessResult r = Live({"cluster", "verify", "--require-label", "hardware-type=gpu",
                          "--require-label", "nvidia.com/gpu.product=NVIDIA-A100", "gpu-a", "-o",
                          "json", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json report = json::parse(r.out);
  const json* labels = StepOf(report, "gpu-a", "labels");
  ASSERT_NE(labels, nullptr) << r.out;
  EXPECT_EQ((*labels)["result"], "fail");
  EXPECT_EQ((*labels)["evidence"],
            "missing hardware-type; wrong nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (want "
            "NVIDIA-A100)");
  EXPECT_EQ((*StepOf(report, "gpu-a", "smoke-pod"))["result"], "pass");

  json labelled = *server_->Node("gpu-a");
  labelled["metadata"]["labels"]["hardware-type"] = "gpu";
  server_->AddObject(labelled);
  ProcessResult ok = Live({"cluster", "verify", "gpu-a", "--require-label", "hardware-type=gpu",
                           "--poll-interval", "10ms"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

// A node that lost a GPU, labelled by `gpunode labels --stable-labels`: the labels agree (GFD
// counts only the GPUs that answer), and the capacity step names the missing GPU by PCI address.
TEST_F(VerifyCliTest, AMissingGpuIsNamedByPciAddress) {
  json node = GpuNode("gpu-lost", 8, 7);
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = "7";
  node["metadata"]["labels"]["gpu.missing"] = "b3-00.0";
  server_->AddObject(node);
  server_->AddObject(DevicePluginPod("gpu-lost"));
  ProcessResult r =
      Live({"cluster", "verify", "gpu-lost", "-o", "json", "--poll-interval", "10ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json report = json::parse(r.out);
  const json* labels = StepOf(report, "gpu-lost", "labels");
  ASSERT_NE(labels, nullptr) << r.out;
  EXPECT_EQ((*labels)["result"], "pass") << (*labels)["evidence"];
  EXPECT_NE((*labels)["evidence"].get<std::string>().find("gpu.missing=b3-00.0"),
            std::string::npos);
  const json* capacity = StepOf(report, "gpu-lost", "capacity");
  ASSERT_NE(capacity, nullptr) << r.out;
  EXPECT_EQ((*capacity)["result"], "fail");
  EXPECT_EQ((*capacity)["evidence"],
            "node gpu-lost has 7 healthy nvidia.com/gpu (allocatable; capacity 8) of 8 "
            "(gpu.count=8); missing GPU: 0000:b3:00.0 (gpu.missing=b3-00.0): the driver does not "
            "see it; check `nvidia-smi` and the kernel log on the node (XID 79: fallen off the "
            "bus), then reseat or replace it");
  EXPECT_EQ(report["nodes"][0]["missing_gpus"], json({"0000:b3:00.0"}));
  EXPECT_EQ(report["nodes"][0]["missing_gpus_unnamed"], 0);
  EXPECT_TRUE(Created().empty()) << "no smoke pod on a node short of a GPU";

  ProcessResult table = Live({"cluster", "verify", "gpu-lost"});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_NE(table.out.find("fail  capacity  node/gpu-lost\n    node gpu-lost has 7 healthy"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("missing GPU: 0000:b3:00.0"), std::string::npos) << table.out;
}

// `verify --dry-run` runs every step but the smoke pod, live and on a snapshot of the same
// cluster alike; a snapshot holds no DaemonSets, so only a node without the plugin's pod reads
// differently there, and says why.
TEST_F(VerifyCliTest, ADryRunOnASnapshotRunsTheStepsTheLiveDryRunRuns) {
  std::vector<json> items;
  auto add = [&](const json& object) {
    server_->AddObject(object);
    items.push_back(object);
  };
  add(GpuNode("gpu-a", 8, 8));
  add(DevicePluginPod("gpu-a"));
  add(GpuNode("gpu-xid", 8, 7));
  add(DevicePluginPod("gpu-xid"));
  add(GpuNode("gpu-starting", 8, 8));
  add(DevicePluginPod("gpu-starting", /*ready=*/false));
  json lost = GpuNode("gpu-lost", 8, 7);
  lost["metadata"]["labels"]["nvidia.com/gpu.count"] = "7";
  lost["metadata"]["labels"]["gpu.missing"] = "b3-00.0";
  add(lost);
  add(DevicePluginPod("gpu-lost"));
  add(GpuNode("gpu-uncovered", 8, 8, /*plugin_label=*/false));
  const std::string snapshot =
      dir_->Write("verify-" + std::to_string(server_->port()) + ".json",
                  json({{"kind", "List"}, {"apiVersion", "v1"}, {"items", items}}).dump());
  const std::vector<std::string> nodes = {"gpu-a", "gpu-xid", "gpu-starting", "gpu-lost",
                                          "gpu-uncovered"};

  std::vector<std::string> args = {"cluster", "verify", "--dry-run", "-o", "json"};
  args.insert(args.end(), nodes.begin(), nodes.end());
  ProcessResult live = Live(args);
  EXPECT_EQ(live.exit_code, 1) << live.out << live.err;
  args.insert(args.end(), {"-f", snapshot});
  ProcessResult offline = Gpunode(args);
  EXPECT_EQ(offline.exit_code, 1) << offline.out << offline.err;
  EXPECT_TRUE(Created().empty());
  EXPECT_EQ(server_->CountRequests("POST", "/"), 0);

  json live_report = json::parse(live.out), offline_report = json::parse(offline.out);
  EXPECT_TRUE(live_report["dry_run"].get<bool>());
  EXPECT_TRUE(offline_report["dry_run"].get<bool>());
  EXPECT_EQ(offline_report["summary"], live_report["summary"]) << offline.out;
  for (const std::string& node : nodes) {
    SCOPED_TRACE(node);
    for (const char* step : {"ready", "labels", "device-plugin", "capacity"}) {
      SCOPED_TRACE(step);
      const json* l = StepOf(live_report, node, step);
      const json* o = StepOf(offline_report, node, step);
      ASSERT_NE(l, nullptr) << live.out;
      ASSERT_NE(o, nullptr) << offline.out;
      if (node == "gpu-uncovered" && std::string(step) == "device-plugin") continue;
      EXPECT_EQ(*o, *l);
    }
    EXPECT_EQ(StepOf(offline_report, node, "smoke-pod"), nullptr) << "no smoke pod in a dry run";
  }
  EXPECT_EQ((*StepOf(offline_report, "gpu-a", "device-plugin"))["result"], "pass");
  EXPECT_EQ((*StepOf(offline_report, "gpu-starting", "device-plugin"))["evidence"],
            "pod gpu-operator/nvidia-device-plugin-daemonset-gpu-starting is Running and not "
            "Ready");
  EXPECT_NE((*StepOf(offline_report, "gpu-lost", "capacity"))["evidence"].get<std::string>().find(
                "missing GPU: 0000:b3:00.0"),
            std::string::npos);
  const json* uncovered = StepOf(offline_report, "gpu-uncovered", "device-plugin");
  EXPECT_EQ((*uncovered)["result"], "fail");
  EXPECT_EQ((*uncovered)["evidence"],
            "no device plugin pod on gpu-uncovered in the snapshot (looked for pods of DaemonSets "
            "named *nvidia-device-plugin* or gpunode-device-plugin); a snapshot holds no "
            "DaemonSets, so whether one covers the node is not checked");

  // The table says the smoke pod was not run; a selector is matched as the API server does.
  ProcessResult table = Gpunode({"cluster", "verify", "--dry-run", "-f", snapshot, "--selector",
                                 "kubernetes.io/hostname in (gpu-a, gpu-xid)"});
  EXPECT_EQ(table.exit_code, 1) << table.err;
  EXPECT_NE(table.out.find("gpu-a     pass     pass    pass     pass            pass       -\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("1 of 2 node(s) passed\ndry run: the smoke pod was not run\n"),
            std::string::npos)
      << table.out;
  ProcessResult one = Gpunode({"cluster", "verify", "gpu-a", "--dry-run", "-f", snapshot,
                               "--device-plugin", "gpu-operator/nvidia-device-plugin-daemonset"});
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;

  // What a snapshot cannot do, and what it does not hold: one line, exit 2.
  for (const auto& [extra, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"gpu-a"}, "-f (a snapshot) works only with --dry-run"},
           {{"gpu-ghost", "--dry-run"}, "node gpu-ghost not found in " + snapshot},
           {{"--selector", "pool=none", "--dry-run"},
            "no node matches --selector pool=none in " + snapshot},
           {{"--selector", "pool in (a", "--dry-run"}, "--selector \"pool in (a\""}}) {
    std::vector<std::string> bad = {"cluster", "verify", "-f", snapshot};
    bad.insert(bad.end(), extra.begin(), extra.end());
    ProcessResult r = Gpunode(bad);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(VerifyCliTest, UsageErrors) {
  EXPECT_EQ(Live({"cluster", "verify"}).exit_code, 2);
  EXPECT_EQ(Live({"cluster", "verify", "gpu-a", "--selector", "a=b"}).exit_code, 2);
  ProcessResult missing = Live({"cluster", "verify", "gpu-ghost"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("node gpu-ghost not found"), std::string::npos) << missing.err;
  ProcessResult none = Live({"cluster", "verify", "--selector", "pool=nowhere"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no node matches --selector pool=nowhere"), std::string::npos);
}

}  // namespace
}  // namespace gpunode::testing
