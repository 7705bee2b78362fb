// Runs the real `gpunode` binary the way operators do: on snapshot files, against the API server
// double through a kubeconfig (TLS, bearer token), and the webhook over TLS.
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <map>

#include "absl/strings/str_split.h"
#include "cli_support.h"
#include "gtest/gtest.h"
#include "harness/apiserver_double.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode::testing {
namespace {

using json = nlohmann::json;

std::vector<std::string> FindingIds(const std::string& out) {
  std::vector<std::string> ids;
  json report = json::parse(out);
  for (const json& f : report["findings"]) ids.push_back(f["id"]);
  return ids;
}

TEST(ClusterCliTest, AuditEveryFindingFixture) {
  struct Case {
    const char* fixture;
    std::vector<std::string> ids;
    int exit_code;
  } cases[] = {
      {"healthy.json", {}, 0},
      {"gpu-unhealthy.json", {"gpu-unhealthy"}, 1},
      {"gpu-count-mismatch.json", {"gpu-count-mismatch"}, 1},
      {"zombie-pods.json", {"zombie-pod", "zombie-pod", "zombie-pod"}, 1},
      {"gpu-accounting-leak.json", {"gpu-accounting-leak"}, 1},
      {"gpu-node-untainted.json", {"gpu-node-untainted"}, 0},
      {"cpu-pods-on-gpu-node.json", {"cpu-pods-on-gpu-node"}, 0},
      {"draining-node-new-gpu-pods.json", {"draining-node-new-gpu-pods"}, 1},
      // Hygiene findings are warnings: the audit still exits 0.
      {"gpu-pod-no-deadline.json", {"gpu-pod-no-deadline", "gpu-pod-no-deadline"}, 0},
      {"gpu-job-no-ttl.json", {"gpu-job-no-ttl"}, 0},
      {"gpu-job-retries-on-disruption.json", {"gpu-job-retries-on-disruption"}, 0},
      {"gpu-cronjob.json",
       {"gpu-job-no-ttl", "gpu-job-retries-on-disruption", "gpu-pod-no-deadline"},
       0},
      {"gpu-pod-long-running.json", {}, 0},  // --max-gpu-pod-age is off by default
      {"slow-image-pull.json", {"slow-image-pull", "slow-image-pull", "slow-image-pull"}, 0},
  };
  for (const Case& c : cases) {
    ProcessResult r = Gpunode({"cluster", "audit", "-f", ClusterFixture(c.fixture), "-o", "json"});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.fixture << "\n" << r.err;
    EXPECT_EQ(FindingIds(r.out), c.ids) << c.fixture;
    EXPECT_EQ(r.err, "") << c.fixture;
  }
}

TEST(ClusterCliTest, AuditTableAndStdin) {
  ProcessResult r = RunProcess(
      {"/bin/sh", "-c",
       kGpunodeBinary + " cluster audit -f - < '" + ClusterFixture("gpu-unhealthy.json") + "'"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("NODE    READY   GPU.STATE   GPU.COUNT   CAPACITY   ALLOCATABLE"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu-a   True    -           8           8          6"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("error  gpu-unhealthy  node/gpu-a"), std::string::npos) << r.out;
}

TEST(ClusterCliTest, BadInputIsOneLineAndExitTwo) {
  for (const char* f : {"bad-not-json.json", "bad-not-list.json", "bad-pod-without-name.json",
                        "bad-quantity.json", "no-such-file.json"}) {
    ProcessResult r = Gpunode({"cluster", "audit", "-f", ClusterFixture(f)});
    EXPECT_EQ(r.exit_code, 2) << f;
    EXPECT_EQ(r.out, "") << f;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
  }
  EXPECT_EQ(
      Gpunode({"cluster", "audit", "-o", "yaml", "-f", ClusterFixture("healthy.json")}).exit_code,
      2);
  EXPECT_EQ(Gpunode({"cluster", "drain", "gpu-a", "-f", ClusterFixture("drain.json")}).exit_code,
            2);
}

TEST(ClusterCliTest, WhyPendingEveryReasonFixture) {
  struct Case {
    const char* fixture;
    const char* pod;
    const char* verdict;
    int exit_code;
    const char* text;
  } cases[] = {
      {"pending-insufficient.json", "finetune-0", "wait", 0,
       "Insufficient nvidia.com/gpu (wanted 4, free 2)"},
      {"pending-taint.json", "finetune-0", "never", 1,
       "node(s) had untolerated taint {dedicated: inference}"},
      {"pending-affinity.json", "finetune-0", "never", 1,
       "node(s) didn't match Pod's node affinity/selector"},
      {"pending-affinity.json", "eval-0", "never", 1,
       "node(s) didn't match Pod's node affinity/selector"},
      {"pending-too-large.json", "pretrain-0", "never", 1, "no amount of waiting helps"},
      {"pending-requests-limits.json", "finetune-0", "invalid", 1,
       "must be equal to nvidia.com/gpu limit of 1"},
      {"pending-requests-limits.json", "notebook-0", "invalid", 1, "must be an integer"},
      {"pending-unschedulable.json", "finetune-0", "wait", 0, "node(s) were unschedulable"},
      {"pending-fits.json", "finetune-0", "fits-now", 0, "fits now on gpu-a, gpu-b"},
  };
  for (const Case& c : cases) {
    ProcessResult table =
        Gpunode({"cluster", "why-pending", c.pod, "-n", "ml", "-f", ClusterFixture(c.fixture)});
    EXPECT_EQ(table.exit_code, c.exit_code) << c.fixture << " " << c.pod << "\n" << table.err;
    EXPECT_NE(table.out.find(c.text), std::string::npos) << table.out;
    EXPECT_NE(table.out.find(std::string("verdict: ") + c.verdict + ": "), std::string::npos)
        << table.out;
    ProcessResult j = Gpunode({"cluster", "why-pending", c.pod, "-n", "ml", "-f",
                               ClusterFixture(c.fixture), "-o", "json"});
    EXPECT_EQ(json::parse(j.out)["verdict"]["code"], c.verdict) << c.fixture;
  }
  ProcessResult missing = Gpunode(
      {"cluster", "why-pending", "ghost", "-n", "ml", "-f", ClusterFixture("pending-fits.json")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("pod ml/ghost not found in"), std::string::npos) << missing.err;
  // Without -n, a pod of that name in another namespace is named.
  ProcessResult elsewhere =
      Gpunode({"cluster", "why-pending", "finetune-0", "-f", ClusterFixture("pending-fits.json")});
  EXPECT_EQ(elsewhere.exit_code, 2);
  EXPECT_NE(elsewhere.err.find("pod default/finetune-0 not found in "), std::string::npos)
      << elsewhere.err;
  EXPECT_NE(elsewhere.err.find("; a pod of that name is in namespace ml: give -n ml\n"),
            std::string::npos)
      << elsewhere.err;
}

TEST(ClusterCliTest, DrainDryRunOnASnapshot) {
  ProcessResult refused =
      Gpunode({"cluster", "drain", "gpu-a", "--dry-run", "-f", ClusterFixture("drain.json")});
  EXPECT_EQ(refused.exit_code, 1);
  // Every reason at once, so one dry run names every flag the drain needs.
  EXPECT_NE(refused.out.find("  REFUSE research/notebook-alice: uses emptyDir, whose data eviction "
                             "deletes (--delete-emptydir-data); no controller will recreate it "
                             "(--force evicts it anyway)\n"),
            std::string::npos)
      << refused.out;
  ProcessResult one_left = Gpunode({"cluster", "drain", "gpu-a", "--dry-run",
                                    "--delete-emptydir-data", "-f", ClusterFixture("drain.json")});
  EXPECT_EQ(one_left.exit_code, 1);
  EXPECT_NE(one_left.out.find("  REFUSE research/notebook-alice: no controller will recreate it "
                              "(--force evicts it anyway)\n"),
            std::string::npos)
      << one_left.out;
  ProcessResult ok = Gpunode({"cluster", "drain", "gpu-a", "--dry-run", "--cordon", "--force",
                              "--delete-emptydir-data", "-f", ClusterFixture("drain.json")});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  for (const char* line : {
           "drain gpu-a (dry run):",
           "  label nvidia.com/gpu.state=draining",
           "  cordon the node",
           "  skip gpu-operator/nvidia-device-plugin-daemonset-4xk9s (DaemonSet pod)",
           "  skip kube-system/kube-proxy-gpu-a (static pod)",
           "  leave logging/log-shipper-5d8f7c6b9-x2k4p (requests no GPU; --all-pods evicts it "
           "too)",
           "  wait for ml/train-llama-6c8d7f9b5-q4x2z to finish; it is not evicted "
           "(--evict-after sets a deadline)",
           "  wait for serving/infer-7b9d6c5f4-p2r8s to finish; it is not evicted "
           "(--evict-after sets a deadline)",
           "  tell the owners of 3 GPU pod(s): Event NodeDraining on each pod and its "
           "controllers, pod annotation gpunode.io/node-draining",
       }) {
    EXPECT_NE(ok.out.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << ok.out;
  }
  // With a deadline the pods are evicted then, and the budget that would block it is named.
  ProcessResult deadline =
      Gpunode({"cluster", "drain", "gpu-a", "--dry-run", "--force", "--delete-emptydir-data",
               "--evict-after", "6h", "--all-pods", "-f", ClusterFixture("drain.json")});
  EXPECT_EQ(deadline.exit_code, 0) << deadline.out << deadline.err;
  for (const char* line : {
           "  wait up to 6h for ml/train-llama-6c8d7f9b5-q4x2z to finish, then evict it",
           "  wait up to 6h for serving/infer-7b9d6c5f4-p2r8s to finish, then evict it "
           "(PodDisruptionBudget serving/infer (1 healthy, needs 1) blocks eviction now)",
           "  wait up to 6h for logging/log-shipper-5d8f7c6b9-x2k4p (holds no GPU) to finish, "
           "then evict it",
           "  tell the owners of 3 GPU pod(s): Event NodeDraining on each pod and its "
           "controllers, pod annotation gpunode.io/node-draining and gpunode.io/eviction-deadline",
       }) {
    EXPECT_NE(deadline.out.find(std::string(line) + "\n"), std::string::npos) << line << "\n"
                                                                              << deadline.out;
  }
}

class ClusterCliLiveTest : public LiveApiServerTest {};

TEST_F(ClusterCliLiveTest, AuditReadsTheApi) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("zombie-pods.json")));
  ProcessResult r = Live({"cluster", "audit", "-o", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(FindingIds(r.out),
            (std::vector<std::string>{"zombie-pod", "zombie-pod", "zombie-pod"}));
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes"), 1);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/pods"), 1);
}

TEST_F(ClusterCliLiveTest, WrongTokenIsAnInputErrorThatHidesTheToken) {
  std::string bad =
      dir_->Write("bad-kubeconfig",
                  KubeconfigYaml(server_->url(), dir_->path() + "/ca.crt", "wrong-secret-token"));
  ProcessResult r = Gpunode({"cluster", "audit", "--kubeconfig", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("401 Unauthorized"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("wrong-secret-token"), std::string::npos) << r.err;
}

TEST_F(ClusterCliLiveTest, AuditAuthenticatesThroughACredentialPlugin) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("healthy.json")));
  TempDir home;
  std::filesystem::create_directories(home.path() + "/bin");
  std::string plugin = home.Write("bin/get-token", R"(#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'\
'"status":{"token":"double-token"}}'
)");
  ASSERT_EQ(chmod(plugin.c_str(), 0755), 0);
  std::string yaml = KubeconfigYaml(server_->url(), dir_->path() + "/ca.crt", "unused");
  yaml.replace(yaml.find("    token: unused"), std::string("    token: unused").size(),
               "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
               "      command: ./bin/get-token");
  std::string kubeconfig = home.Write("config", yaml);
  ProcessResult r = Gpunode({"cluster", "audit", "-o", "json", "--kubeconfig", kubeconfig});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes"), 1) << r.err;

  home.Write("bin/get-token", "#!/bin/sh\necho 'not logged in' >&2\nexit 1\n");
  r = Gpunode({"cluster", "audit", "--kubeconfig", kubeconfig});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not logged in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("get-token\" of "), std::string::npos) << r.err;
}

TEST_F(ClusterCliLiveTest, WhyPendingNamesTheNamespaceOfAPodFoundElsewhere) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("drain.json")));
  ProcessResult r = Live({"cluster", "why-pending", "notebook-alice"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("pod ml/notebook-alice not found; a pod of that name is in namespace "
                       "research: give -n research\n"),
            std::string::npos)
      << r.err;
  // With -n, the namespace is the user's: no guess.
  r = Live({"cluster", "why-pending", "notebook-alice", "-n", "ml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("give -n"), std::string::npos) << r.err;
}

TEST_F(ClusterCliLiveTest, WhyPendingUsesTheContextNamespace) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("pending-insufficient.json")));
  ProcessResult r = Live({"cluster", "why-pending", "finetune-0", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["verdict"]["code"], "wait");
  bool filtered = false;
  for (const ApiServerDouble::Request& req : server_->Requests()) {
    if (req.path == "/api/v1/pods") {
      filtered = req.query.at("fieldSelector") == "status.phase!=Succeeded,status.phase!=Failed";
    }
  }
  EXPECT_TRUE(filtered);
}

TEST_F(ClusterCliLiveTest, DrainBlockedByABudgetThenCompletesAndRestores) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("drain.json")));
  std::vector<std::string> drain = {"cluster",
                                    "drain",
                                    "gpu-a",
                                    "--cordon",
                                    "--force",
                                    "--delete-emptydir-data",
                                    "--timeout",
                                    "0",
                                    "--eviction-timeout",
                                    "500ms",
                                    "--eviction-retry-interval",
                                    "50ms",
                                    "--poll-interval",
                                    "50ms"};
  ProcessResult blocked = Live(drain);
  EXPECT_EQ(blocked.exit_code, 1) << blocked.out << blocked.err;
  EXPECT_NE(blocked.err.find("serving/infer-7b9d6c5f4-p2r8s: Cannot evict pod as it would violate "
                             "the pod's disruption budget. (The disruption budget infer needs 1 "
                             "healthy pods and has 1 currently)"),
            std::string::npos)
      << blocked.err;
  EXPECT_NE(blocked.out.find("evicted ml/train-llama-6c8d7f9b5-q4x2z"), std::string::npos)
      << blocked.out;

  server_->SetDisruptionsAllowed("serving", "infer", 1);
  ProcessResult done = Live(drain);
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_NE(done.out.find("node gpu-a drained"), std::string::npos) << done.out;
  json node = *server_->Node("gpu-a");
  EXPECT_EQ(node["metadata"]["labels"]["nvidia.com/gpu.state"], "draining");
  EXPECT_TRUE(node["spec"]["unschedulable"].get<bool>());
  EXPECT_FALSE(server_->Pod("serving", "infer-7b9d6c5f4-p2r8s").has_value());

  ProcessResult restored = Live({"cluster", "restore", "gpu-a"});
  EXPECT_EQ(restored.exit_code, 0) << restored.err;
  node = *server_->Node("gpu-a");
  EXPECT_FALSE(node["metadata"]["labels"].contains("nvidia.com/gpu.state"));
  EXPECT_FALSE(node["metadata"]["annotations"].contains("gpunode.io/drain-started-at"));
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
}

TEST_F(ClusterCliLiveTest, RestoreRefusesWhileAGpuIsMissing) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("restore.json")));
  ProcessResult r = Live({"cluster", "restore", "gpu-short"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("refusing to restore: node gpu-short has 7 healthy nvidia.com/gpu "
                       "(allocatable; capacity 7) of 8 (nvidia.com/gpu.count=8); a GPU is still "
                       "missing"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(server_->CountRequests("PATCH", "/"), 0);
  ProcessResult unlabelled = Live({"cluster", "restore", "gpu-nolabel"});
  EXPECT_EQ(unlabelled.exit_code, 1);
  EXPECT_NE(unlabelled.err.find("has no GPU count label (nvidia.com/gpu.count"), std::string::npos);
  EXPECT_EQ(Live({"cluster", "restore", "gpu-ghost"}).exit_code, 2);
}

TEST_F(ClusterCliLiveTest, WebhookOverTls) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("healthy.json")));
  BackgroundProcess webhook(
      {kGpunodeBinary, "--log-level", "info", "webhook", "--tls-cert", dir_->path() + "/tls.crt",
       "--tls-key", dir_->path() + "/tls.key", "--listen", "127.0.0.1:0", "--nodes-from-api",
       "--kubeconfig", kubeconfig_},
      BackgroundProcess::Options{.stdout_pipe = true});
  std::string line;
  ASSERT_TRUE(webhook.ReadLine(line));
  const std::string prefix = "gpunode webhook listening on port ";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  int port = std::stoi(line.substr(prefix.size()));

  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path((dir_->path() + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);

  httplib::Result mutated =
      client.Post("/mutate", ReadText(ClusterFixture("admission-gpu-pod-no-tolerations.json")),
                  "application/json");
  ASSERT_TRUE(mutated);
  json response = json::parse(mutated->body)["response"];
  EXPECT_EQ(response["uid"], "7c1a9e52-0b6d-4f3e-9a8c-2d4e6f8a0b1c");
  EXPECT_EQ(response["patchType"], "JSONPatch");

  // Node capacities (8 GPUs) and the taint value (present) came from the API server.
  for (const char* f : {"admission-too-large-pod.json", "admission-wrong-taint-value.json"}) {
    httplib::Result validated =
        client.Post("/validate", ReadText(ClusterFixture(f)), "application/json");
    ASSERT_TRUE(validated);
    EXPECT_FALSE(json::parse(validated->body)["response"]["allowed"].get<bool>()) << f;
  }
  httplib::Result good = client.Post(
      "/validate", ReadText(ClusterFixture("admission-gpu-pod.json")), "application/json");
  ASSERT_TRUE(good);
  EXPECT_TRUE(json::parse(good->body)["response"]["allowed"].get<bool>());
  EXPECT_EQ(client.Post("/validate", "{}", "application/json")->status, 400);
  // What it runs with, once at start.
  EXPECT_NE(
      webhook.Log().find("webhook: GPUs per node at most the largest node's, from the API server; "
                         "node capacities read from the API server every 1m; defaults for "
                         "opted-in namespaces: activeDeadlineSeconds none, "
                         "ttlSecondsAfterFinished none"),
      std::string::npos)
      << webhook.Log();
  EXPECT_EQ(webhook.Stop(SIGTERM), 0);
}

// With no kubeconfig and not in a pod, each command says what its own flags can do about it:
// the cluster commands --kubeconfig or a snapshot, the webhook --kubeconfig, the MIG manager
// (which has neither) its pod's service account.
TEST(ClusterCliExitCodes, NoKubeconfigIsExplainedWithTheCommandsOwnFlags) {
  TempDir home;
  ASSERT_TRUE(MakeTestCertificates(home.path()));
  const std::vector<std::string> nowhere = {
      "HOME=" + home.path(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=", "NODE_NAME=gpu-node-3"};
  const std::string none = "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a pod";

  ProcessResult audit = RunProcess({kGpunodeBinary, "cluster", "audit"}, nowhere);
  EXPECT_EQ(audit.exit_code, 2) << audit.err;
  EXPECT_NE(audit.err.find(none + "; give --kubeconfig FILE, or read a snapshot with -f FILE"),
            std::string::npos)
      << audit.err;

  ProcessResult webhook =
      RunProcess({kGpunodeBinary, "webhook", "--tls-cert", home.path() + "/tls.crt", "--tls-key",
                  home.path() + "/tls.key", "--nodes-from-api", "--listen", "127.0.0.1:0"},
                 nowhere);
  EXPECT_EQ(webhook.exit_code, 2) << webhook.err;
  EXPECT_NE(webhook.err.find(none + "; give --kubeconfig FILE\n"), std::string::npos)
      << webhook.err;

  ProcessResult manager = RunProcess({kGpunodeBinary, "--sim", "a100-mig", "mig", "manager", "-f",
                                      ClusterFixture("../mig/mig-parted-config-default.yaml")},
                                     nowhere);
  EXPECT_EQ(manager.exit_code, 1) << manager.err;
  EXPECT_NE(manager.err.find(none + "; run it in a pod with a service account"), std::string::npos)
      << manager.err;
  EXPECT_EQ(manager.err.find("--kubeconfig"), std::string::npos) << manager.err;
}

// What the user named and got wrong is exit 2; a cluster that cannot be reached is exit 1 (the
// command ran and the cluster failed it), as the README's table says.
TEST(ClusterCliExitCodes, AnUnreachableApiServerIsAFailureNotAUsageError) {
  TempDir dir;
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  std::string kubeconfig = dir.Write("kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"cluster", "audit"}, {"cluster", "why-pending", "p", "-n", "ns"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--kubeconfig", kubeconfig, "--request-timeout", "5s"});
    ProcessResult r = Gpunode(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    // One error line naming the server, after the one warning that said it was retrying.
    std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 2u) << r.err;
    EXPECT_NE(lines[0].find("retrying in 250ms (attempt 2 of 6)"), std::string::npos) << r.err;
    EXPECT_EQ(lines[1].rfind("gpunode: ", 0), 0u) << r.err;
    EXPECT_NE(lines[1].find("127.0.0.1"), std::string::npos) << r.err;
  }
  // The kubeconfig itself is what the user named.
  ProcessResult r = Gpunode({"cluster", "audit", "--kubeconfig", dir.path() + "/missing"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// An API server that refuses a request gpunode made (422: the request or the object is wrong) is
// the cluster failing the command, not the user's typing: exit 1, one line naming the answer.
TEST_F(ClusterCliLiveTest, ARequestTheApiServerRefusesIsAFailureNotAUsageError) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("drain.json")));
  server_->FailNext("PATCH", "/api/v1/nodes/gpu-a", 422, 1);
  ProcessResult r = Live({"cluster", "drain", "gpu-a", "--cordon", "--force",
                          "--delete-emptydir-data", "--timeout", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("PATCH /api/v1/nodes/gpu-a: 422"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the API server refused the request"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// An API server in trouble: the first retry is one line at the default level (what, the answer,
// the wait, how many attempts in all), the later ones stay at info; the command then succeeds.
TEST_F(ClusterCliLiveTest, TheFirstRetryIsSaidOnceAtTheDefaultLevel) {
  ASSERT_TRUE(server_->LoadList(ClusterFixture("drain.json")));
  server_->FailNext("GET", "/api/v1/nodes", 503, 2);
  ProcessResult r = Live({"cluster", "audit"});
  EXPECT_GE(server_->CountRequests("GET", "/api/v1/nodes"), 3);
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("warning GET /api/v1/nodes?limit=500: HTTP 503; retrying in 250ms"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(attempt 2 of "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(WebhookCliTest, RefusesToStartWithoutItsCertificate) {
  ProcessResult r =
      Gpunode({"webhook", "--tls-cert", "/no/such/tls.crt", "--tls-key", "/no/such/tls.key"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpunode: --tls-cert /no/such/tls.crt: cannot open: No such file or directory\n");
  EXPECT_EQ(Gpunode({"webhook"}).exit_code, 2);
}

}  // namespace
}  // namespace gpunode::testing
