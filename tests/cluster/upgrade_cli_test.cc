// `gpunode cluster upgrade` through the real binary against the API server double, in real time
// with short intervals. The double plays the kubelet (a smoke pod that is looked at succeeds,
// unless the test holds it); the test plays the driver installer (a node sent to maintenance
// comes back reporting the new driver). Two pools of two nodes, one node at a time.
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
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

constexpr char kOldDriver[] = "535.129.03";
constexpr char kNewDriver[] = "550.90.07";
constexpr char kStateLabel[] = "nvidia.com/gpu-driver-upgrade-state";
constexpr char kDriverLabel[] = "nvidia.com/cuda.driver-version.full";
constexpr char kNamespace[] = "ml";  // the kubeconfig context's: smoke pods and the Lease
constexpr char kLease[] = "gpunode-upgrade";
const std::vector<std::string> kNodes = {"canary-0", "canary-1", "training-0", "training-1"};

std::string Label(const json& node, const std::string& key) {
  return node["metadata"].value("labels", json::object()).value(key, "");
}

bool Unschedulable(const json& node) {
  return node.contains("spec") && node["spec"].value("unschedulable", false);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

class UpgradeCliTest : public LiveApiServerTest {
 protected:
  // A PATCH of a node, as the rollout sent it.
  struct Patch {
    int run;
    std::string node;
    std::string state;  // the state label it sets; empty when it sets none
    bool cordons;       // makes a schedulable node unschedulable
  };

  void SetUp() override {
    LiveApiServerTest::SetUp();
    if (HasFatalFailure()) return;
    server_->AddObject(DevicePluginDaemonSet());
    for (const std::string& name : kNodes) {
      json node = GpuNode(name);
      node["metadata"]["labels"]["pool"] = name.substr(0, name.find('-'));
      node["metadata"]["labels"][kDriverLabel] = kOldDriver;
      server_->AddObject(node);
      server_->AddObject(DevicePluginPod(name));
    }
    server_->OnRequest([this](const ApiServerDouble::Request& req) { Observe(req); });
  }

  void TearDown() override {
    server_->OnRequest(nullptr);
    server_->Stop();  // no hook still runs once the members it uses go
  }

  void Observe(const ApiServerDouble::Request& req) {
    std::unique_lock<std::mutex> lock(mu_);
    // The rollout sends one request at a time: any request after the PATCH that sent a node to
    // maintenance means that PATCH was applied and answered.
    if (maintenance_node_ && !maintenance_applied_) {
      maintenance_applied_ = true;
      cv_.notify_all();
    }
    const std::string smoke = std::string("/api/v1/namespaces/") + kNamespace + "/pods/";
    if (req.method == "GET" && req.path.rfind(smoke + "gpunode-verify-", 0) == 0 &&
        req.path.find("/log") == std::string::npos) {
      std::string pod = req.path.substr(smoke.size());
      if (!server_->Pod(kNamespace, pod)) return;  // a deletion being awaited
      smoke_polled_ = true;
      cv_.notify_all();
      if (!smoke_pods_succeed_) return;
      server_->SetPodLog(kNamespace, pod, SmokeDoctorReport("ok"));
      server_->SetPodPhase(kNamespace, pod, "Succeeded");
      return;
    }
    const std::string nodes = "/api/v1/nodes/";
    if (req.method != "PATCH" || req.path.rfind(nodes, 0) != 0) return;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return;
    Patch p{run_, req.path.substr(nodes.size()), "", false};
    if (body.contains("metadata") && body["metadata"].contains("labels") &&
        body["metadata"]["labels"][kStateLabel].is_string()) {
      p.state = body["metadata"]["labels"][kStateLabel];
    }
    // A cordon: schedulable before this PATCH, unschedulable after it.
    std::optional<json> node = server_->Node(p.node);
    p.cordons = body.contains("spec") && body["spec"].value("unschedulable", json()) == true &&
                node && !Unschedulable(*node);
    patches_.push_back(p);
    if (p.state != "node-maintenance-required") return;
    if (!maintenance_node_) maintenance_node_ = p.node;
    if (installer_) {
      // The installer reboots the node onto the new driver: its label is there by the time the
      // rollout looks again.
      lock.unlock();
      InstallDriver(p.node);
    }
  }

  void InstallDriver(const std::string& name) {
    json node = *server_->Node(name);
    node["metadata"]["labels"][kDriverLabel] = kNewDriver;
    server_->AddObject(node);
  }

  std::vector<std::string> Args(const std::string& identity, const std::string& lease_duration) {
    return {kGpunodeBinary,
            "cluster",
            "upgrade",
            "--driver-version",
            kNewDriver,
            "--pools",
            "canary,training",
            "--poll-interval",
            "50ms",
            "--smoke-poll-interval",
            "20ms",
            "--soak",
            "0s",
            "--soak-check-interval",
            "100ms",
            "--lease-duration",
            lease_duration,
            "--identity",
            identity,
            "--kubeconfig",
            kubeconfig_};
  }

  ProcessResult Upgrade(const std::string& identity, std::vector<std::string> extra = {},
                        const std::string& lease_duration = "3s") {
    std::vector<std::string> args = Args(identity, lease_duration);
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args);
  }

  void NextRun() {
    std::lock_guard<std::mutex> lock(mu_);
    ++run_;
  }
  std::vector<Patch> Patches() {
    std::lock_guard<std::mutex> lock(mu_);
    return patches_;
  }
  int Changes() {
    return server_->CountRequests("PATCH", "/") + server_->CountRequests("POST", "/") +
           server_->CountRequests("PUT", "/") + server_->CountRequests("DELETE", "/");
  }
  json Node(const std::string& name) { return *server_->Node(name); }
  std::string LeaseHolder() {
    std::optional<json> lease = server_->Lease(kNamespace, kLease);
    if (!lease) return "(no lease)";
    return (*lease)["spec"].value("holderIdentity", "");
  }

  void ExpectAllUpgraded() {
    for (const std::string& name : kNodes) {
      SCOPED_TRACE(name);
      json node = Node(name);
      EXPECT_EQ(Label(node, kStateLabel), "upgrade-done");
      EXPECT_EQ(Label(node, kDriverLabel), kNewDriver);
      EXPECT_FALSE(Unschedulable(node));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int run_ = 1;
  bool installer_ = true;  // maintenance installs the new driver at once
  bool smoke_pods_succeed_ = true;
  bool smoke_polled_ = false;
  std::optional<std::string> maintenance_node_;  // the first node sent to maintenance
  bool maintenance_applied_ = false;
  std::vector<Patch> patches_;
};

TEST_F(UpgradeCliTest, DryRunPrintsThePlanAndChangesNothing) {
  json done = Node("training-1");
  done["metadata"]["labels"][kDriverLabel] = kNewDriver;
  server_->AddObject(done);

  ProcessResult r = Upgrade("upgrader-1", {"--dry-run", "--max-unavailable", "50%"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  EXPECT_EQ(Words(lines[0]), (std::vector<std::string>{"NODE", "POOL", "STATE", "DRIVER", "NOTE"}))
      << r.out;
  std::map<std::string, std::vector<std::string>> rows;
  for (size_t i = 1; i <= 4; ++i) {
    std::vector<std::string> words = Words(lines[i]);
    ASSERT_FALSE(words.empty());
    rows[words[0]] = words;
  }
  for (const char* name : {"canary-0", "canary-1", "training-0"}) {
    std::string pool = std::string(name).substr(0, std::string(name).find('-'));
    EXPECT_EQ(rows[name],
              (std::vector<std::string>{name, pool, "(none)", kOldDriver, "to", "upgrade"}))
        << lines[0] << "\n"
        << r.out;
  }
  EXPECT_EQ(rows["training-1"],
            (std::vector<std::string>{"training-1", "training", "(none)", kNewDriver, "already",
                                      "on", "the", "target:", "upgrade-done"}))
      << r.out;
  EXPECT_EQ(lines[5],
            std::string("dry run: driver ") + kNewDriver +
                ", pools in order: canary (2 of 2 node(s) to upgrade, 1 at a time, then a 0 "
                "soak); training (1 of 2 node(s) to upgrade, 1 at a time, then a 0 soak); "
                "maintenance: wait until each node reports " +
                kDriverLabel + "=" + kNewDriver + "; nothing was changed")
      << r.out;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_EQ(server_->CountRequests("POST", "/"), 0);
  EXPECT_EQ(server_->CountRequests("PUT", "/"), 0);
  EXPECT_EQ(server_->CountRequests("DELETE", "/"), 0);
  EXPECT_GT(server_->CountRequests("GET", "/api/v1/nodes"), 0) << "it read the cluster";
}

// `--dry-run -f SNAPSHOT` prints the plan the live dry run prints, from a snapshot of the same
// cluster, without a kubeconfig; --selector is matched as the API server matches it.
TEST_F(UpgradeCliTest, ADryRunOnASnapshotPrintsThePlanTheLiveDryRunPrints) {
  json done = Node("training-1");
  done["metadata"]["labels"][kDriverLabel] = kNewDriver;
  server_->AddObject(done);
  json items = json::array();
  for (const std::string& name : kNodes) {
    items.push_back(Node(name));
    items.push_back(
        *server_->Pod(kDevicePluginNamespace, std::string(kDevicePluginSet) + "-" + name));
  }
  json cpu = GpuNode("cpu-0", 0, 0);
  cpu["metadata"]["labels"] = {{"pool", "training"}};
  cpu["status"]["capacity"].erase("nvidia.com/gpu");
  cpu["status"]["allocatable"].erase("nvidia.com/gpu");
  server_->AddObject(cpu);
  items.push_back(cpu);
  const std::string snapshot =
      dir_->Write("upgrade-" + std::to_string(server_->port()) + ".json",
                  json({{"kind", "List"}, {"apiVersion", "v1"}, {"items", items}}).dump());

  for (std::vector<std::string> extra :
       {std::vector<std::string>{"--max-unavailable", "50%"},
        {"--pools", "training,canary", "-o", "json"},
        {"--pools", "training", "--selector", "kubernetes.io/hostname!=training-0"},
        {"--pools", "canary", "--maintenance-job", "", "-n", "drivers"}}) {
    std::string command;
    for (const std::string& a : extra) command += " " + a;
    SCOPED_TRACE(command);
    if (extra.size() > 3 && extra[2] == "--maintenance-job") {
      extra[3] = dir_->Write("job-" + std::to_string(server_->port()) + ".yaml",
                             "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: install\n"
                             "spec:\n  template:\n    spec:\n      containers: [{name: a, "
                             "image: b}]\n");
    }
    std::vector<std::string> live_args = {"cluster",  "upgrade",      "--driver-version",
                                          kNewDriver, "--dry-run",    "--soak",
                                          "0s",       "--kubeconfig", kubeconfig_};
    live_args.insert(live_args.end(), extra.begin(), extra.end());
    ProcessResult live = Gpunode(live_args);
    ASSERT_EQ(live.exit_code, 0) << live.out << live.err;
    std::vector<std::string> offline_args = {"cluster",  "upgrade",   "--driver-version",
                                             kNewDriver, "--dry-run", "--soak",
                                             "0s",       "-f",        snapshot};
    offline_args.insert(offline_args.end(), extra.begin(), extra.end());
    ProcessResult offline = Gpunode(offline_args);
    EXPECT_EQ(offline.exit_code, 0) << offline.out << offline.err;
    EXPECT_EQ(offline.out, live.out);
    EXPECT_EQ(offline.err, live.err);
  }
  EXPECT_EQ(Changes(), 0);

  // The table and summary as the live dry run has them (DryRunPrintsThePlanAndChangesNothing).
  ProcessResult plan = Gpunode({"cluster", "upgrade", "--driver-version", kNewDriver, "--pools",
                                "canary,training", "--dry-run", "-f", snapshot});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::vector<std::string> lines = Lines(plan.out);
  ASSERT_EQ(lines.size(), 6u) << plan.out;
  EXPECT_EQ(Words(lines[4]),
            (std::vector<std::string>{"training-1", "training", "(none)", kNewDriver, "already",
                                      "on", "the", "target:", "upgrade-done"}))
      << plan.out;
  EXPECT_EQ(lines[5], std::string("dry run: driver ") + kNewDriver +
                          ", pools in order: canary (2 of 2 node(s) to upgrade, 1 at a time, then "
                          "a 24h soak); training (1 of 2 node(s) to upgrade, 1 at a time, then a "
                          "24h soak); maintenance: wait until each node reports " +
                          kDriverLabel + "=" + kNewDriver + "; nothing was changed");

  // Without --dry-run, or with a pool the snapshot does not have: one line, exit 2.
  for (const auto& [extra, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{}, "-f (a snapshot) works only with --dry-run"},
           {{"--dry-run", "--pools", "inference"}, "pool inference has no GPU nodes"},
           {{"--dry-run", "--selector", "pool in training"}, "--selector \"pool in training\""}}) {
    std::vector<std::string> args = {"cluster",  "upgrade", "--driver-version",
                                     kNewDriver, "-f",      snapshot};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Gpunode(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
}

TEST_F(UpgradeCliTest, BadInputExitsTwoWithOneLineNamingIt) {
  std::string pod = dir_->Write("pod-" + std::to_string(server_->port()) + ".yaml",
                                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: installer\n"
                                "spec:\n  containers: [{name: a, image: b}]\n");
  std::string snapshot =
      dir_->Write("snapshot-" + std::to_string(server_->port()) + ".json",
                  json({{"kind", "List"}, {"apiVersion", "v1"}, {"items", json::array()}}).dump());
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> named;  // what the line must name
  } cases[] = {
      {{"cluster", "upgrade", "--pools", "canary"}, {"--driver-version is required"}},
      {{"cluster", "upgrade", "--driver-version", kNewDriver, "--max-unavailable", "0"},
       {"--max-unavailable 0"}},
      {{"cluster", "upgrade", "--driver-version", kNewDriver, "--maintenance-job", pod},
       {pod, "kind"}},
      {{"cluster", "upgrade", "--driver-version", kNewDriver, "--pools", "canary,trainin",
        "--identity", "upgrader-1"},
       {"--pools", "pool trainin has no GPU nodes", "pools found: canary, training"}},
      {{"cluster", "upgrade", "--driver-version", kNewDriver, "-f", snapshot},
       {"upgrade changes the cluster and keeps its state there, so -f (a snapshot) works only "
        "with --dry-run"}},
  };
  for (const Case& c : cases) {
    std::string command = "gpunode";
    for (const std::string& a : c.args) command += " " + a;
    SCOPED_TRACE(command);
    std::vector<std::string> args = c.args;
    args.push_back("--kubeconfig");
    args.push_back(kubeconfig_);
    ProcessResult r = Gpunode(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    for (const std::string& text : c.named) {
      EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  EXPECT_EQ(server_->CountRequests("DELETE", "/"), 0);
  // The run that connected and found no pool trainin leaves the lease free behind it: a copy
  // started next need not wait for it.
  EXPECT_EQ(LeaseHolder(), "");
  for (const std::string& name : kNodes) EXPECT_EQ(Label(Node(name), kStateLabel), "") << name;
}

// Killed mid-rollout (SIGKILL: no cleanup), with the node in maintenance: a copy with another
// identity finds the lease fresh and changes nothing; the same identity takes it back at once
// and finishes from where the node is.
// -f is offered only where a snapshot can stand for the cluster: for the commands that change
// it, with --dry-run only, as their help says; prepull, whose output is its DaemonSet, has none.
TEST(ClusterSnapshotFlag, OnlyTheCommandsThatCanReadASnapshotOfferIt) {
  for (const char* command : {"audit", "why-pending"}) {
    ProcessResult help = Gpunode({"cluster", command, "--help"});
    EXPECT_NE(help.out.find("-f,--filename TEXT          read a snapshot"), std::string::npos)
        << command << help.out;
  }
  for (const char* command : {"drain", "restore", "verify", "upgrade"}) {
    ProcessResult help = Gpunode({"cluster", command, "--help"});
    EXPECT_NE(help.out.find("-f,--filename TEXT          with --dry-run only: read a snapshot"),
              std::string::npos)
        << command << help.out;
    EXPECT_NE(help.out.find("--dry-run"), std::string::npos) << command;
  }
  ProcessResult help = Gpunode({"cluster", "prepull", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("--filename"), std::string::npos);
}

TEST_F(UpgradeCliTest, KilledInMaintenanceAndResumed) {
  installer_ = false;  // the node stays in maintenance until the test installs the driver
  {
    std::vector<std::string> args = Args("upgrader-1", "30s");
    args.insert(args.end(), {"-o", "json"});
    BackgroundProcess first(args);
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [this] {
      return maintenance_applied_;
    })) << first.Stderr();
    lock.unlock();
    first.Signal(SIGKILL);
    std::optional<int> code = first.Wait(std::chrono::seconds(20));
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 128 + SIGKILL);
  }
  ASSERT_TRUE(maintenance_node_.has_value());
  const std::string first = *maintenance_node_;
  EXPECT_EQ(first, "canary-0");
  EXPECT_EQ(Label(Node(first), kStateLabel), "node-maintenance-required");
  EXPECT_TRUE(Unschedulable(Node(first)));
  EXPECT_EQ(LeaseHolder(), "upgrader-1") << "a killed copy releases nothing";

  NextRun();
  int before = Changes();
  ProcessResult other = Upgrade("upgrader-2", {}, "30s");
  EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
  EXPECT_NE(other.out.find("another gpunode cluster upgrade is running: lease ml/gpunode-upgrade "
                           "is held by upgrader-1"),
            std::string::npos)
      << other.out;
  EXPECT_EQ(Changes(), before);
  EXPECT_EQ(LeaseHolder(), "upgrader-1");
  EXPECT_EQ(Label(Node(first), kStateLabel), "node-maintenance-required");

  // The node comes back on the new driver while nothing runs.
  InstallDriver(first);
  {
    std::lock_guard<std::mutex> lock(mu_);
    installer_ = true;
  }
  NextRun();
  ProcessResult resumed = Upgrade("upgrader-1", {"-o", "json"}, "30s");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  json report = json::parse(resumed.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << resumed.out;
  EXPECT_EQ(report["outcome"], "done") << resumed.out;
  ASSERT_EQ(report["nodes"].size(), kNodes.size()) << resumed.out;
  for (const json& n : report["nodes"]) {
    EXPECT_EQ(n["state"], "upgrade-done") << n.dump();
    EXPECT_EQ(n["driver"], kNewDriver) << n.dump();
  }
  ExpectAllUpgraded();
  EXPECT_EQ(LeaseHolder(), "") << "released at the end";

  // The resumed node went on from maintenance: cordoned once, by the first run.
  std::vector<std::string> first_run, resumed_run;
  int cordons = 0;
  for (const Patch& p : Patches()) {
    if (p.node != first) continue;
    cordons += p.cordons;
    if (p.state.empty()) continue;
    (p.run == 1 ? first_run : resumed_run).push_back(p.state);
  }
  EXPECT_EQ(cordons, 1);
  EXPECT_EQ(first_run, (std::vector<std::string>{"upgrade-required", "cordon-required",
                                                 "wait-for-jobs-required", "pod-deletion-required",
                                                 "drain-required", "node-maintenance-required"}));
  EXPECT_EQ(resumed_run,
            (std::vector<std::string>{"post-maintenance-required", "validation-required",
                                      "uncordon-required", "upgrade-done"}));
}

// SIGTERM while a smoke pod runs: the command deletes it, gives the lease up and exits 143 at
// once; a copy with another identity then finishes the rollout without waiting for the lease.
TEST_F(UpgradeCliTest, SigtermStopsPromptlyAndARerunFinishes) {
  smoke_pods_succeed_ = false;
  BackgroundProcess upgrade(Args("upgrader-1", "3s"));
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [this] { return smoke_polled_; }))
        << upgrade.Stderr();
  }
  auto signalled = std::chrono::steady_clock::now();
  upgrade.Signal(SIGTERM);
  std::optional<int> code = upgrade.Wait(std::chrono::seconds(20));
  auto took = std::chrono::steady_clock::now() - signalled;
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 128 + SIGTERM) << upgrade.Stdout() << upgrade.Stderr();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(upgrade.Stdout().find("interrupted"), std::string::npos) << upgrade.Stdout();
  EXPECT_EQ(Label(Node("canary-0"), kStateLabel), "validation-required");
  EXPECT_TRUE(Unschedulable(Node("canary-0")));
  EXPECT_FALSE(server_->Pod(kNamespace, "gpunode-verify-canary-0").has_value()) << upgrade.Stderr();
  EXPECT_EQ(LeaseHolder(), "");
  for (const char* untouched : {"training-0", "training-1"}) {
    EXPECT_EQ(Label(Node(untouched), kStateLabel), "") << untouched;
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    smoke_pods_succeed_ = true;
  }
  ProcessResult rerun = Upgrade("upgrader-2");
  EXPECT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  EXPECT_NE(rerun.out.find(std::string("every pool is on driver ") + kNewDriver +
                           " and soaked: canary, training"),
            std::string::npos)
      << rerun.out;
  ExpectAllUpgraded();
}

}  // namespace
}  // namespace gpunode::testing
