// gpunode against the real control plane (scripts/local-cluster.sh: etcd, kube-apiserver with
// TLS and Node,RBAC authorization, kube-scheduler, kube-controller-manager): the manifests in
// deploy/ as the real apiserver validates them, and the cluster commands under the exact grants of
// deploy/cluster/rbac.yaml, judged by the real authorizer. One cluster serves the whole binary
// (ctest runs it as one test, label real-cluster).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "helm_runner.h"
#include "local_cluster.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const std::string kDeploy = std::string(build_paths::kSourceDir) + "/deploy";

testing::LocalCluster* cluster = nullptr;

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { cluster = new testing::LocalCluster(); }
  void TearDown() override {
    delete cluster;
    cluster = nullptr;
  }
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

// Every test starts with this: a skip names the missing components, a failed start shows the
// component's log.
#define REQUIRE_CLUSTER()                                                \
  do {                                                                   \
    if (!cluster->missing().empty()) GTEST_SKIP() << cluster->missing(); \
    ASSERT_TRUE(cluster->error().empty()) << cluster->error();           \
  } while (false)

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

// A CustomResourceDefinition that accepts any body, for the kinds deploy/ uses from operators
// that are not part of Kubernetes (prometheus-operator, cert-manager): the apiserver then checks
// their apiVersion, kind, names and namespaces, not their schema.
std::string OpenCrd(const std::string& group, const std::string& kind, const std::string& plural) {
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", plural + "." + group}}},
              {"spec",
               {{"group", group},
                {"scope", "Namespaced"},
                {"names", {{"kind", kind}, {"plural", plural}, {"singular", ""}}},
                {"versions",
                 {{{"name", "v1"},
                   {"served", true},
                   {"storage", true},
                   {"schema",
                    {{"openAPIV3Schema",
                      {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
  return crd.dump();
}

void Apply(const std::string& manifest) {
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", "-"}, manifest);
  ASSERT_EQ(r.exit_code, 0) << manifest << "\n" << r.err;
}

// The namespaces deploy/ puts things in, and the custom resources it uses.
void PrepareForDeploy() {
  static bool done = false;
  if (done) return;
  Apply(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gpunode-system"}})");
  // The first step of deploy/: without the RuntimeClass the apiserver's admission refuses every
  // pod that names it.
  testing::ProcessResult refused =
      cluster->Kubectl({"apply", "--dry-run=server", "-f", kDeploy + "/doctor-pod.yaml"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("RuntimeClass \"nvidia\" not found"));
  testing::ProcessResult r =
      cluster->Kubectl({"apply", "-f", kDeploy + "/runtime/runtimeclass.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [group, kind, plural] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"monitoring.coreos.com", "ServiceMonitor", "servicemonitors"},
           {"monitoring.coreos.com", "PrometheusRule", "prometheusrules"},
           {"cert-manager.io", "Certificate", "certificates"},
           {"cert-manager.io", "Issuer", "issuers"}}) {
    Apply(OpenCrd(group, kind, plural));
    r = cluster->Kubectl(
        {"wait", "--for=condition=Established", "--timeout=30s", "crd/" + plural + "." + group});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  done = true;
}

bool IsManifest(const fs::path& file) {
  if (file.extension() != ".yaml") return false;
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return text.find("\napiVersion:") != std::string::npos || text.rfind("apiVersion:", 0) == 0;
}

// Every file under deploy/ but the Helm chart's: deploy/helm is rendered by helm, not applied
// (ChartOnTheRealApiServer below).
std::vector<fs::path> DeployFiles() {
  std::vector<fs::path> files;
  for (auto entry = fs::recursive_directory_iterator(kDeploy);
       entry != fs::recursive_directory_iterator(); ++entry) {
    if (entry->path() == kDeploy + "/helm") {
      entry.disable_recursion_pending();
    } else if (entry->is_regular_file()) {
      files.push_back(entry->path());
    }
  }
  return files;
}

// What an operator applies: each kustomization (with kubectl's own kustomize) and each manifest
// in a directory without one.
std::vector<std::vector<std::string>> DeployApplies() {
  std::vector<std::vector<std::string>> applies;
  std::set<fs::path> kustomized;
  std::vector<fs::path> files = DeployFiles();
  for (const fs::path& file : files) {
    if (file.filename() == "kustomization.yaml") {
      kustomized.insert(file.parent_path());
      applies.push_back({"-k", file.parent_path().string()});
    }
  }
  for (const fs::path& file : files) {
    if (kustomized.contains(file.parent_path())) continue;
    if (IsManifest(file)) applies.push_back({"-f", file.string()});
  }
  return applies;
}

// The real apiserver's validation, defaulting and admission of every object in deploy/, without
// storing it: a field the API does not know, a bad selector or a name the API refuses fails here.
TEST(DeployOnTheRealApiServer, ServerDryRunAcceptsEveryManifest) {
  REQUIRE_CLUSTER();
  PrepareForDeploy();
  std::vector<std::vector<std::string>> applies = DeployApplies();
  ASSERT_GE(applies.size(), 10u);
  for (const std::vector<std::string>& what : applies) {
    testing::ProcessResult r =
        cluster->Kubectl({"apply", "--dry-run=server", "--validate=strict", what[0], what[1]});
    EXPECT_EQ(r.exit_code, 0) << "kubectl apply --dry-run=server " << what[0] << " " << what[1]
                              << "\n"
                              << r.err;
  }
}

// Two GPU nodes as the device plugin leaves them: capacity in the Node's status.
void MakeGpuNodes() {
  static bool done = false;
  if (done) return;
  for (const char* name : {"gpu-a", "gpu-b"}) {
    Apply(json({{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.count", "8"}}}}}})
              .dump());
    json status = {{"status",
                    {{"capacity", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}, {"pods", "110"}}},
                     {"allocatable", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}, {"pods", "110"}}}}}};
    testing::ProcessResult r = cluster->Kubectl(
        {"patch", "node", name, "--subresource=status", "--type=merge", "-p", status.dump()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  done = true;
}

// `cluster audit` with the token of deploy/cluster/rbac.yaml's ServiceAccount: the real
// authorizer allows every request it makes, and it reads the real Nodes' GPU capacity.
TEST(ClusterCommandsOnTheRealApiServer, AuditRunsWithExactlyTheGrantsOfDeployCluster) {
  REQUIRE_CLUSTER();
  PrepareForDeploy();
  MakeGpuNodes();
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", kDeploy + "/cluster/rbac.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string kubeconfig = cluster->ServiceAccountKubeconfig("gpunode-system", "gpunode-cluster");
  ASSERT_FALSE(kubeconfig.empty());

  r = Gpunode({"cluster", "audit", "-o", "json", "--kubeconfig", kubeconfig});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << "\n" << r.err;
  json audit = json::parse(r.out);
  std::set<std::string> names;
  for (const json& node : audit["nodes"]) {
    names.insert(node["name"].get<std::string>());
    EXPECT_EQ(node["capacity"], 8) << node.dump();
    EXPECT_EQ(node["allocatable"], 8) << node.dump();
  }
  EXPECT_EQ(names, (std::set<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_EQ(audit["summary"]["gpu_nodes"], 2);
}

// A ServiceAccount without those grants: the real authorizer's 403, said in one line with the
// request and the fix, and a non-zero exit.
TEST(ClusterCommandsOnTheRealApiServer, AuditWithoutTheGrantsFailsWithTheAuthorizersWords) {
  REQUIRE_CLUSTER();
  PrepareForDeploy();
  Apply(R"({"apiVersion":"v1","kind":"ServiceAccount",
            "metadata":{"name":"nobody","namespace":"gpunode-system"}})");
  std::string kubeconfig = cluster->ServiceAccountKubeconfig("gpunode-system", "nobody");
  ASSERT_FALSE(kubeconfig.empty());
  testing::ProcessResult r = Gpunode({"cluster", "audit", "--kubeconfig", kubeconfig});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("403 Forbidden: nodes is forbidden: User "
                               "\"system:serviceaccount:gpunode-system:nobody\" cannot list "
                               "resource \"nodes\""));
  EXPECT_THAT(r.err, HasSubstr("grant the permissions in deploy/cluster/rbac.yaml"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The webhook configurations of deploy/webhook, pointed at a `gpunode webhook` on loopback (a URL
// in place of the Service, which has no pods here) with the run's CA as caBundle.
json WebhookConfigurations(int port) {
  testing::ProcessResult r = cluster->Kubectl({"create", "--dry-run=client", "-o", "json", "-f",
                                               kDeploy + "/webhook/webhook-configurations.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // One JSON object per document of the file.
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  std::istringstream objects(r.out);
  while ((objects >> std::ws).peek() != EOF) {
    json object;
    objects >> object;
    list["items"].push_back(std::move(object));
  }
  std::ifstream in(cluster->dir() + "/pki/ca.crt");
  std::string ca((std::istreambuf_iterator<char>(in)), {});
  testing::ProcessResult b64 = testing::RunProcess({"/usr/bin/base64", "-w0"}, {}, ca);
  for (json& configuration : list["items"]) {
    for (json& webhook : configuration["webhooks"]) {
      json& client = webhook["clientConfig"];
      client["url"] = "https://127.0.0.1:" + std::to_string(port) +
                      client["service"]["path"].get<std::string>();
      client.erase("service");
      client["caBundle"] = b64.out;
    }
  }
  return list;
}

// `gpunode webhook` as the real apiserver calls it: AdmissionReview v1 over TLS, its JSON Patch
// applied by the apiserver, its refusal shown to kubectl, and with the webhook gone the
// failurePolicy deploy/webhook sets (Ignore: pods are created as they are).
TEST(WebhookOnTheRealApiServer, MutatesRefusesAndIsIgnoredWhenDown) {
  REQUIRE_CLUSTER();
  auto webhook = std::make_unique<testing::BackgroundProcess>(
      std::vector<std::string>{build_paths::kBinary, "webhook", "--tls-cert",
                               cluster->dir() + "/pki/apiserver.crt", "--tls-key",
                               cluster->dir() + "/pki/apiserver.key", "--listen", "127.0.0.1:0",
                               "--max-gpus-per-node", "8"},
      testing::BackgroundProcess::Options{.stdout_pipe = true});
  std::string line;
  ASSERT_TRUE(webhook->ReadLine(line)) << webhook->Log();
  const std::string prefix = "gpunode webhook listening on port ";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  Apply(WebhookConfigurations(std::stoi(line.substr(prefix.size()))).dump());
  Apply(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ml"}})");

  auto pod = [](const std::string& name, const std::string& request, const std::string& limit) {
    return json({{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", name}, {"namespace", "ml"}}},
                 {"spec",
                  {{"containers",
                    {{{"name", "train"},
                      {"image", "registry.example/train:1"},
                      {"resources",
                       {{"requests", {{"nvidia.com/gpu", request}}},
                        {"limits", {{"nvidia.com/gpu", limit}}}}}}}}}}})
        .dump();
  };
  auto tolerates_gpu_taint = [](const std::string& name) {
    testing::ProcessResult r = cluster->Kubectl({"get", "pod", "-n", "ml", name, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return false;
    for (const json& t : json::parse(r.out)["spec"].value("tolerations", json::array())) {
      if (t.value("key", "") == "nvidia.com/gpu" && t.value("operator", "") == "Exists" &&
          t.value("effect", "") == "NoSchedule") {
        return true;
      }
    }
    return false;
  };

  // The configuration takes effect once the apiserver's informer has it: a created pod is the
  // event that says so; retried until then (bounded), as a user would see it within a second.
  bool mutated = false;
  for (int attempt = 0; attempt < 50 && !mutated; ++attempt) {
    std::string name = "train-" + std::to_string(attempt);
    testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod(name, "2", "2"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    mutated = tolerates_gpu_taint(name);
  }
  EXPECT_TRUE(mutated) << webhook->Log();

  // A toleration that can never match the GPU taint: only the webhook knows, and says so.
  json bad = json::parse(pod("bad", "1", "1"));
  bad["spec"]["tolerations"] = {
      {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoExecute"}}};
  testing::ProcessResult refused = cluster->Kubectl({"create", "-f", "-"}, bad.dump());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err,
              HasSubstr("Error from server (Forbidden): error when creating \"STDIN\": admission "
                        "webhook \"gpu-requests.gpunode.io\" denied the request: gpunode: "
                        "spec.tolerations[0].effect: NoExecute never matches the GPU taint, whose "
                        "effect is NoSchedule; use NoSchedule or leave effect empty"));
  // A request unlike its limit: the apiserver's own validation refuses it before validating
  // admission, with its words (docs/CLUSTER.md says so).
  refused = cluster->Kubectl({"create", "-f", "-"}, pod("uneven", "2", "1"));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("The Pod \"uneven\" is invalid: "
                                     "spec.containers[0].resources.requests: Invalid value: "
                                     "\"2\": must be equal to nvidia.com/gpu limit of 1"));

  // Down: failurePolicy Ignore, as docs/CLUSTER.md says — the pod is created, untouched.
  EXPECT_EQ(webhook->Stop(SIGTERM), 0) << webhook->Log();
  testing::ProcessResult r = cluster->Kubectl({"create", "-f", "-"}, pod("while-down", "1", "1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(tolerates_gpu_taint("while-down"));
  cluster->Kubectl({"delete", "-f", "-"}, WebhookConfigurations(1).dump());
}

// The Job defaults: with --default-active-deadline and --default-ttl the webhook reads the Job's
// namespace from the real apiserver under deploy/webhook/rbac.yaml's grants, and gives GPU Jobs
// and their pods in namespaces that opted in (gpunode.io/gpu-job-defaults=enabled) a TTL and a
// deadline.
TEST(WebhookOnTheRealApiServer, GivesGpuJobsDefaultsWhereTheNamespaceOptedIn) {
  REQUIRE_CLUSTER();
  PrepareForDeploy();
  testing::ProcessResult r = cluster->Kubectl({"apply", "-f", kDeploy + "/webhook/rbac.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string kubeconfig = cluster->ServiceAccountKubeconfig("gpunode-system", "gpunode-webhook");
  ASSERT_FALSE(kubeconfig.empty());
  testing::BackgroundProcess webhook(
      {build_paths::kBinary, "webhook", "--tls-cert", cluster->dir() + "/pki/apiserver.crt",
       "--tls-key", cluster->dir() + "/pki/apiserver.key", "--listen", "127.0.0.1:0",
       "--default-active-deadline", "2h", "--default-ttl", "1h", "--kubeconfig", kubeconfig},
      testing::BackgroundProcess::Options{.stdout_pipe = true});
  std::string line;
  ASSERT_TRUE(webhook.ReadLine(line)) << webhook.Log();
  const std::string prefix = "gpunode webhook listening on port ";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  Apply(WebhookConfigurations(std::stoi(line.substr(prefix.size()))).dump());
  Apply(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ci-opted-in",)"
        R"("labels":{"gpunode.io/gpu-job-defaults":"enabled"}}})");
  Apply(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ci-not-opted-in"}})");

  auto job = [](const std::string& ns, const std::string& name) {
    return json({{"apiVersion", "batch/v1"},
                 {"kind", "Job"},
                 {"metadata", {{"name", name}, {"namespace", ns}}},
                 {"spec",
                  {{"template",
                    {{"spec",
                      {{"restartPolicy", "Never"},
                       {"containers",
                        {{{"name", "test"},
                          {"image", "registry.example/cuda-test:1"},
                          {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}}}}}})
        .dump();
  };
  auto spec_of = [](const std::string& ns, const std::string& name) {
    testing::ProcessResult got = cluster->Kubectl({"get", "job", "-n", ns, name, "-o", "json"});
    return got.exit_code == 0 ? json::parse(got.out)["spec"] : json::object();
  };
  // As in the test above: retried until the apiserver's informer has the configuration.
  json defaulted;
  std::string warned;
  for (int attempt = 0; attempt < 50 && !defaulted.contains("ttlSecondsAfterFinished"); ++attempt) {
    std::string name = "gpu-test-" + std::to_string(attempt);
    r = cluster->Kubectl({"create", "-f", "-"}, job("ci-opted-in", name));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    warned = r.err;
    defaulted = spec_of("ci-opted-in", name);
  }
  EXPECT_EQ(defaulted.value("ttlSecondsAfterFinished", 0), 3600) << webhook.Log();
  // kubectl shows the webhook's warning, as docs/CLUSTER.md has it.
  EXPECT_THAT(warned, HasSubstr("Warning: gpunode: set spec.ttlSecondsAfterFinished=3600 (1h), "
                                "the default of namespace ci-opted-in "
                                "(gpunode.io/gpu-job-defaults=enabled)"));
  // A bare GPU pod there gets the deadline.
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "notebook"}, {"namespace", "ci-opted-in"}}},
              {"spec",
               {{"containers",
                 {{{"name", "main"},
                   {"image", "registry.example/cuda-test:1"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  r = cluster->Kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"get", "pod", "-n", "ci-opted-in", "notebook", "-o",
                        "jsonpath={.spec.activeDeadlineSeconds}"});
  EXPECT_EQ(r.out, "7200") << webhook.Log();

  r = cluster->Kubectl({"create", "-f", "-"}, job("ci-not-opted-in", "gpu-test"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(spec_of("ci-not-opted-in", "gpu-test").contains("ttlSecondsAfterFinished"));
  cluster->Kubectl({"delete", "-f", "-"}, WebhookConfigurations(1).dump());
}

// The chart with the real helm (scripts/build-helm.sh) against this apiserver: a server-side dry
// run, an install with NVIDIA's documented configs and the exporter, labeller, MIG manager and DRA
// plugin beside the device plugin on the nodes labelled away from it (the Prometheus operator's
// kinds too, as the cluster serves them, and the DeviceClasses with their extendedResourceName,
// which the pinned apiserver keeps with DRAExtendedResource on by default), an upgrade whose
// changed config rolls the plugin's pods and one without a change that leaves them, a refused value
// that creates nothing, and an uninstall that leaves nothing behind.
TEST(ChartOnTheRealApiServer, InstallsUpgradesAndUninstalls) {
  REQUIRE_CLUSTER();
  testing::HelmRunner helm;
  if (!helm.missing().empty()) GTEST_SKIP() << helm.missing();
  PrepareForDeploy();
  const std::vector<std::string> kubeconfig = {"KUBECONFIG=" + cluster->admin_kubeconfig()};
  const std::string fixtures = std::string(build_paths::kSourceDir) + "/tests/fixtures/helm";
  const std::string ns = "gpunode-helm";
  auto helm_run = [&](const std::vector<std::string>& args) { return helm.Run(args, kubeconfig); };
  const std::vector<std::string> values = {
      "--set",        "config.default=config0",
      "--set-file",   "config.map.config0=" + fixtures + "/dp-example-config0.yaml",
      "--set-file",   "config.map.config1=" + fixtures + "/dp-example-config1.yaml",
      "--set",        "exporter.enabled=true",
      "--set",        "gfd.enabled=true",
      "--set",        "migManager.enabled=true",
      "--set",        "draPlugin.enabled=true",
      "--set-string", "draPlugin.nodeSelector.nvidia\\.com/gpu\\.deploy\\.device-plugin=false"};
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };

  testing::ProcessResult r = helm_run(with({"install", "gpunode", testing::HelmRunner::Chart(),
                                            "-n", ns, "--create-namespace", "--dry-run=server"},
                                           values));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(cluster->Kubectl({"get", "namespace", ns}).exit_code, 1) << "a dry run created it";

  r = helm_run(
      with({"install", "gpunode", testing::HelmRunner::Chart(), "-n", ns, "--create-namespace"},
           values));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("device plugin: DaemonSet gpunode-device-plugin"));
  r = cluster->Kubectl(
      {"get", "daemonsets", "-n", ns, "-o", "jsonpath={range .items[*]}{.metadata.name} {end}"});
  EXPECT_EQ(r.out,
            "gpunode-device-plugin gpunode-dra-plugin gpunode-exporter gpunode-labels "
            "gpunode-mig-manager ");
  r = cluster->Kubectl(
      {"get", "deviceclass", "gpu.nvidia.com", "-o", "jsonpath={.spec.extendedResourceName}"});
  EXPECT_EQ(r.out, "nvidia.com/gpu") << r.err;
  EXPECT_EQ(cluster->Kubectl({"get", "deviceclass", "mig.nvidia.com"}).exit_code, 0);
  EXPECT_EQ(cluster->Kubectl({"get", "servicemonitor", "-n", ns, "gpunode-exporter"}).exit_code, 0);
  EXPECT_EQ(cluster->Kubectl({"get", "prometheusrule", "-n", ns, "gpunode-exporter"}).exit_code, 0);
  auto plugin_template = [&]() {
    testing::ProcessResult got =
        cluster->Kubectl({"get", "daemonset", "-n", ns, "gpunode-device-plugin", "-o", "json"});
    json ds = json::parse(got.out, nullptr, false);
    if (ds.is_discarded()) return std::make_pair(std::string(), int64_t{-1});
    return std::make_pair(
        ds["spec"]["template"]["metadata"]["annotations"].value("checksum/config", ""),
        ds["metadata"]["generation"].get<int64_t>());
  };
  auto [checksum, generation] = plugin_template();
  EXPECT_EQ(checksum.size(), 64u);

  // The same values again: nothing in the pods' template changes, so nothing rolls.
  r = helm_run({"upgrade", "gpunode", testing::HelmRunner::Chart(), "-n", ns, "--reuse-values"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(plugin_template(), std::make_pair(checksum, generation));
  // A changed config: the checksum changes and the DaemonSet rolls its pods.
  testing::TempDir dir("gpunode-helm-upgrade");
  std::string changed = dir.Write("config1.yaml", "version: v1\nflags:\n  migStrategy: single\n");
  r = helm_run({"upgrade", "gpunode", testing::HelmRunner::Chart(), "-n", ns, "--reuse-values",
                "--set-file", "config.map.config1=" + changed});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto [new_checksum, new_generation] = plugin_template();
  EXPECT_NE(new_checksum, checksum);
  EXPECT_EQ(new_generation, generation + 1);
  r = cluster->Kubectl({"get", "configmap", "-n", ns, "gpunode-device-plugin-configs", "-o",
                        "jsonpath={.data.config1}"});
  EXPECT_EQ(r.out, "version: v1\nflags:\n  migStrategy: single\n");

  // A key gpunode does not have: refused before anything is made.
  r = helm_run({"install", "refused", testing::HelmRunner::Chart(), "-n", "gpunode-helm-refused",
                "--create-namespace", "--set", "gdsEnabled=true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("additional properties 'gdsEnabled' not allowed"));
  EXPECT_EQ(cluster->Kubectl({"get", "namespace", "gpunode-helm-refused"}).exit_code, 1);

  r = helm_run({"uninstall", "gpunode", "-n", ns, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cluster->Kubectl({"get", "daemonsets,configmaps,serviceaccounts,servicemonitors", "-n", ns,
                        "-l", "app.kubernetes.io/managed-by=Helm", "-o", "name"});
  EXPECT_EQ(r.out, "");
  for (const char* role :
       {"gpunode-device-plugin", "gpunode-mig-manager", "gpunode-dra-plugin", "gpunode-labels"}) {
    EXPECT_EQ(cluster->Kubectl({"get", "clusterrole", role}).exit_code, 1) << role;
  }
  EXPECT_EQ(cluster->Kubectl({"get", "validatingadmissionpolicy", "gpunode-labels"}).exit_code, 1);
  for (const char* deviceclass : {"gpu.nvidia.com", "mig.nvidia.com"}) {
    EXPECT_EQ(cluster->Kubectl({"get", "deviceclass", deviceclass}).exit_code, 1) << deviceclass;
  }
}

// The kubectl lines of README.md and docs/ that need a cluster (tests/integration's doc example
// test lists them as run here), each run as written by bash in a directory where `deploy` is the
// repository's, with kubectl and gpunode on PATH and KUBECONFIG naming this cluster. The objects
// they name are made first, as a reader's cluster would have them.
TEST(DocsOnTheRealApiServer, TheDocumentedKubectlLinesRun) {
  REQUIRE_CLUSTER();
  PrepareForDeploy();
  const std::vector<std::string> lines = {
      "kubectl label node gpu-node-3 nvidia.com/device-plugin.config=time-slicing-4 --overwrite",
      "kubectl label node gpu-node-3 nvidia.com/mig.config=all-balanced --overwrite",
      "kubectl get node gpu-node-3 -L nvidia.com/mig.config.state",
      "kubectl label namespace ci gpunode.io/gpu-job-defaults=enabled",
      "kubectl apply -k deploy/webhook",
      "kubectl apply -f deploy/webhook/cert-manager.yaml",
      "kubectl get nodes,pods -A -o json > snapshot.json",
      "kubectl get nodes,pods,jobs,cronjobs,events -A -o json > snapshot.json",
      "kubectl get nodes,pods,pdb -A -o json > snapshot.json",
      "kubectl get nodes,pods -A -o json | gpunode cluster audit -f -",
      // README.md, "Install into a cluster with Helm".
      "helm install gpunode deploy/helm/gpunode -n gpunode-system --create-namespace",
      "helm upgrade gpunode deploy/helm/gpunode -n gpunode-system --reuse-values --set "
      "exporter.enabled=true",
      "kubectl get daemonsets -n gpunode-system",
      "helm uninstall gpunode -n gpunode-system",
      // README.md and docs/DEPLOY.md, "A cluster without NFD" (after the chart, which makes the
      // same cluster-wide objects).
      "kubectl apply -k deploy/labels",
      "kubectl apply -k deploy/device-plugin/base",
      "kubectl get nodes -L nvidia.com/gpu.present,nvidia.com/gpu.product,accelerator",
  };
  testing::HelmRunner helm;
  // Each is still in the docs, word for word.
  std::string docs;
  for (const fs::path& file : {fs::path(build_paths::kSourceDir) / "README.md"}) {
    std::ifstream in(file);
    docs += std::string((std::istreambuf_iterator<char>(in)), {});
  }
  for (const fs::directory_entry& file :
       fs::directory_iterator(fs::path(build_paths::kSourceDir) / "docs")) {
    std::ifstream in(file.path());
    docs += std::string((std::istreambuf_iterator<char>(in)), {});
  }
  Apply(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-node-3"}})");
  Apply(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ci"}})");
  testing::TempDir work("gpunode-doc-kubectl");
  fs::create_directory_symlink(kDeploy, work.path() + "/deploy");
  std::string path = fs::path(cluster->kubectl()).parent_path().string() + ":" +
                     fs::path(build_paths::kBinary).parent_path().string() + ":" + helm.bin_dir() +
                     ":/usr/bin:/bin";
  std::vector<std::string> env = helm.Env();
  env.insert(env.end(), {"PATH=" + path, "KUBECONFIG=" + cluster->admin_kubeconfig()});
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    EXPECT_NE(docs.find(line), std::string::npos) << "no longer in the docs";
    if (line.rfind("helm ", 0) == 0 && !helm.missing().empty()) {
      std::cout << "not run: " << line << ": " << helm.missing() << "\n";
      continue;
    }
    testing::ProcessResult r = testing::RunProcess(
        {"/bin/bash", "-c", "set -o pipefail; cd " + work.path() + " && " + line}, env);
    if (line.find("gpunode cluster audit") != std::string::npos) {
      // audit exits 1 when it reports errors, as the other suites' objects here make it.
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
      EXPECT_THAT(r.out, HasSubstr("ALLOCATABLE")) << r.err;
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }
  json snapshot = json::parse(std::ifstream(work.path() + "/snapshot.json"), nullptr, false);
  ASSERT_FALSE(snapshot.is_discarded());
  EXPECT_EQ(snapshot["kind"], "List");
  // The pinned kubectl finds the plugin (kubectl-gpunode beside the binary) and runs it.
  testing::ProcessResult plugin =
      testing::RunProcess({"/bin/bash", "-c", "kubectl gpunode cluster audit -o json"},
                          {"PATH=" + path, "KUBECONFIG=" + cluster->admin_kubeconfig()});
  json audit = json::parse(plugin.out, nullptr, false);
  ASSERT_FALSE(audit.is_discarded()) << plugin.out << plugin.err;
  EXPECT_GE(audit["summary"]["nodes"].get<int>(), 1);
  // The webhook's configurations point at a Service with no pods here: remove them so that they
  // are not called for the rest of the binary; and the labeller and plugin of the lines above.
  cluster->Kubectl({"delete", "-k", kDeploy + "/webhook", "--wait=false"});
  cluster->Kubectl({"delete", "-k", kDeploy + "/device-plugin/base", "--wait=false"});
  cluster->Kubectl({"delete", "-k", kDeploy + "/labels"});
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A node as its kubelet leaves it: Ready, with room for pods, and the labels it is given.
void MakeReadyNode(const std::string& name, const json& labels) {
  Apply(json({{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", labels}}}})
            .dump());
  std::string now = Trimmed(testing::RunProcess({"/bin/date", "-u", "+%Y-%m-%dT%H:%M:%SZ"}).out);
  json status = {{"status",
                  {{"conditions",
                    {{{"type", "Ready"},
                      {"status", "True"},
                      {"reason", "KubeletReady"},
                      {"message", "kubelet is posting ready status"},
                      {"lastHeartbeatTime", now},
                      {"lastTransitionTime", now}}}},
                   {"capacity", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}},
                   {"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
  testing::ProcessResult r = cluster->Kubectl(
      {"patch", "node", name, "--subresource=status", "--type=merge", "-p", status.dump()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

json NodeObject(const std::string& name) {
  testing::ProcessResult r = cluster->Kubectl({"get", "node", name, "-o", "json"});
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

std::map<std::string, std::string> NodeLabels(const std::string& name) {
  std::map<std::string, std::string> labels;
  json node = NodeObject(name);
  const json on_node = node["metadata"].value("labels", json::object());
  for (const auto& [key, value] : on_node.items()) labels[key] = value.get<std::string>();
  return labels;
}

// The credentials the kubelet mounts into deploy/labels' pod on `node`: a token of its
// ServiceAccount bound to a pod on that node, which therefore carries the node's name
// (authentication.kubernetes.io/node-name), as a kubeconfig.
std::string LabellerPodKubeconfig(const testing::TempDir& dir, const std::string& node) {
  const std::string pod = "gpunode-labels-" + node;
  Apply(
      json({{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", pod}, {"namespace", "kube-system"}}},
            {"spec",
             {{"nodeName", node},
              {"serviceAccountName", "gpunode-labels"},
              {"containers", {{{"name", "labels"}, {"image", "ghcr.io/gpunode/gpunode:0.1.0"}}}}}}})
          .dump());
  testing::ProcessResult token =
      cluster->Kubectl({"create", "token", "gpunode-labels", "-n", "kube-system",
                        "--bound-object-kind", "Pod", "--bound-object-name", pod});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  return dir.Write(
      node + ".kubeconfig",
      "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
      "    server: " +
          cluster->server() + "\n    certificate-authority: " + cluster->dir() +
          "/pki/ca.crt\nusers:\n- name: labeller\n  user:\n    token: " + Trimmed(token.out) +
          "\ncontexts:\n- name: local\n  context: {cluster: local, user: labeller}\n"
          "current-context: local\n");
}

// The cluster of docs/DEPLOY.md's "A cluster without NFD": nothing but gpunode's manifests.
// deploy/labels is applied as written; the labeller runs as its pod would on each node, with the
// token the kubelet gives that pod, under the real RBAC and the real admission policy. It labels
// its own node (nvidia.com/gpu.present=true and the bare accelerator=nvidia-a10 on the GPU node,
// nvidia.com/gpu.present=false where NVML does not load), and nothing else: another node, the
// node's spec and labels that are not its own are refused. The real DaemonSet controller and
// scheduler then put deploy/device-plugin's pod on the GPU node only, and a pod selecting
// accelerator=nvidia-a10 lands there.
TEST(LabelsOnTheRealApiServer, TheLabellerLabelsItsOwnNodeAndTheDevicePluginFollows) {
  REQUIRE_CLUSTER();
  testing::ProcessResult r = cluster->Kubectl({"apply", "-k", kDeploy + "/labels"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  MakeReadyNode("gpu-l", {{"team", "ml"}});
  MakeReadyNode("cpu-l", {{"team", "web"}});
  testing::TempDir dir("gpunode-labels-k8s");
  const std::string gpu_node = LabellerPodKubeconfig(dir, "gpu-l");
  const std::string cpu_node = LabellerPodKubeconfig(dir, "cpu-l");
  auto labeller = [&](const std::string& kubeconfig, const std::string& node,
                      std::vector<std::string> args) {
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv, {"KUBECONFIG=" + kubeconfig, "NODE_NAME=" + node});
  };
  // kubectl with the labeller's credentials.
  auto as_labeller = [&](const std::string& kubeconfig, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {cluster->kubectl(), "--kubeconfig", kubeconfig};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv);
  };
  // The policy is in force once the apiserver has loaded it: a server-side dry run (admitted or
  // refused, nothing stored) says when.
  const std::string other_node =
      "gpunode-labels on node gpu-l may change only that Node, not cpu-l";
  EXPECT_TRUE(testing::AwaitCluster(
      [&] {
        return as_labeller(gpu_node, {"label", "node", "cpu-l", "nvidia.com/gpu.present=true",
                                      "--dry-run=server"})
                   .err.find(other_node) != std::string::npos;
      },
      std::chrono::seconds(30)));

  // Another node: refused by the policy, in one line that names deploy/labels; nothing written.
  r = labeller(
      gpu_node, "cpu-l",
      {"--sim", "a10-pcie-4", "labels", "--write", "node", "--oneshot", "--stable-labels"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("403 Forbidden: nodes \"cpu-l\" is forbidden: "
                               "ValidatingAdmissionPolicy 'gpunode-labels' with binding "
                               "'gpunode-labels' denied request: " +
                               other_node));
  EXPECT_THAT(r.err, HasSubstr("apply deploy/labels/rbac.yaml"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(NodeLabels("cpu-l"), (std::map<std::string, std::string>{{"team", "web"}}));

  // Its own node: GFD's labels, nvidia.com/gpu.present=true and the bare stable scheme; the
  // operator's label stays.
  r = labeller(
      gpu_node, "gpu-l",
      {"--sim", "a10-pcie-4", "labels", "--write", "node", "--oneshot", "--stable-labels"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> labels = NodeLabels("gpu-l");
  EXPECT_EQ(labels["nvidia.com/gpu.present"], "true");
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-A10");
  EXPECT_EQ(labels["accelerator"], "nvidia-a10");
  EXPECT_EQ(labels["gpu.count"], "4");
  EXPECT_EQ(labels["gpu.memory"], "24g");
  EXPECT_EQ(labels["team"], "ml");
  std::string owned = NodeObject("gpu-l")["metadata"]["annotations"].value("gpunode.io/labels", "");
  EXPECT_THAT(owned, HasSubstr("accelerator,gpu.count,gpu.memory,nvidia.com/"));
  EXPECT_THAT(owned, Not(HasSubstr("team")));

  // The node without NVML: nvidia.com/gpu.present=false, and it does not fail.
  testing::TempDir no_driver("gpunode-no-driver");
  r = labeller(cpu_node, "cpu-l",
               {"--driver-root", no_driver.path(), "labels", "--write", "node", "--oneshot"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(NodeLabels("cpu-l"), (std::map<std::string, std::string>{
                                     {"nvidia.com/gpu.present", "false"}, {"team", "web"}}));

  // deploy/device-plugin as applied: the DaemonSet controller makes a pod for the GPU node only,
  // and the scheduler binds it there; the guide's accelerator=nvidia-a10 selector finds it too.
  r = cluster->Kubectl({"apply", "-k", kDeploy + "/device-plugin/base"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plugin_nodes = [] {
    testing::ProcessResult pods = cluster->Kubectl(
        {"get", "pods", "-n", "kube-system", "-l", "app.kubernetes.io/name=gpunode-device-plugin",
         "-o", "jsonpath={range .items[*]}{.spec.nodeName} {end}"});
    return pods.out;
  };
  std::string nodes;
  EXPECT_TRUE(testing::AwaitCluster(
      [&] { return !(nodes = plugin_nodes()).empty() && nodes.find(' ') != 0; },
      std::chrono::seconds(30)));
  EXPECT_EQ(nodes, "gpu-l ");
  r = cluster->Kubectl({"get", "daemonset", "-n", "kube-system", "gpunode-device-plugin", "-o",
                        "jsonpath={.status.desiredNumberScheduled}"});
  EXPECT_EQ(r.out, "1");
  Apply(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a10-job","namespace":"default"},
            "spec":{"nodeSelector":{"accelerator":"nvidia-a10"},
                    "containers":[{"name":"main","image":"registry.example/train:1"}]}})");
  std::string placed;
  EXPECT_TRUE(testing::AwaitCluster(
      [&] {
        placed = cluster->Kubectl({"get", "pod", "a10-job", "-o", "jsonpath={.spec.nodeName}"}).out;
        return !placed.empty();
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(placed, "gpu-l");

  // Without the stable scheme, its labels go and the operator's stay.
  r = labeller(gpu_node, "gpu-l",
               {"--sim", "a10-pcie-4", "labels", "--write", "node", "--oneshot"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  labels = NodeLabels("gpu-l");
  EXPECT_FALSE(labels.contains("accelerator"));
  EXPECT_FALSE(labels.contains("gpu.count"));
  EXPECT_EQ(labels["nvidia.com/gpu.present"], "true");
  EXPECT_EQ(labels["team"], "ml");

  // As a daemon: a pass that finds the node as it is reads it and sends nothing (the timestamp
  // alone is no change); a label taken away is put back at the next pass; SIGTERM leaves the
  // labels on the node.
  {
    testing::BackgroundProcess daemon(
        {build_paths::kBinary, "--log-level", "debug", "--sim", "a10-pcie-4", "labels", "--write",
         "node", "--interval", "1s"},
        {"KUBECONFIG=" + gpu_node, "NODE_NAME=gpu-l"});
    ASSERT_TRUE(daemon.WaitForLog("node gpu-l: labels unchanged", std::chrono::seconds(15)))
        << daemon.Log();
    EXPECT_THAT(daemon.Log(), Not(HasSubstr("PATCH")));
    r = cluster->Kubectl({"label", "node", "gpu-l", "nvidia.com/gpu.product-"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(
        daemon.WaitForLog("node gpu-l: 1 label(s) set, 0 removed", std::chrono::seconds(15)))
        << daemon.Log();
    EXPECT_EQ(NodeLabels("gpu-l")["nvidia.com/gpu.product"], "NVIDIA-A10");
    EXPECT_EQ(daemon.Stop(SIGTERM), 0) << daemon.Log();
    EXPECT_EQ(NodeLabels("gpu-l")["nvidia.com/gpu.present"], "true");
  }

  // What the policy refuses the labeller's token on its own node: the spec, an annotation or a
  // label that is not its own; and a token not bound to a pod on a node.
  struct Refused {
    std::vector<std::string> args;
    std::string why;
  };
  for (const Refused& c : std::vector<Refused>{
           {{"patch", "node", "gpu-l", "-p", R"({"spec":{"unschedulable":true}})"},
            "may change only a Node's labels and its gpunode.io/labels annotation, not its spec"},
           {{"annotate", "node", "gpu-l", "example.com/owner=me"}, "not its other annotations"},
           {{"label", "node", "gpu-l", "team=ai", "--overwrite"},
            "may change only labels under nvidia.com/ and its accelerator, gpu.count and "
            "gpu.memory, not team"},
       }) {
    testing::ProcessResult refused = as_labeller(gpu_node, c.args);
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.err, HasSubstr(c.why)) << c.args[0];
  }
  EXPECT_FALSE(NodeObject("gpu-l")["spec"].value("unschedulable", false));
  std::string unbound = cluster->ServiceAccountKubeconfig("kube-system", "gpunode-labels");
  r = labeller(
      unbound, "gpu-l",
      {"--sim", "a10-pcie-4", "labels", "--write", "node", "--oneshot", "--stable-labels"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("may change only the Node its pod runs on, and this request names "
                               "no node"));

  cluster->Kubectl({"delete", "pod", "a10-job", "--grace-period=0", "--force"});
  cluster->Kubectl({"delete", "-k", kDeploy + "/device-plugin/base", "--wait=false"});
  cluster->Kubectl({"delete", "pods", "-n", "kube-system", "gpunode-labels-gpu-l",
                    "gpunode-labels-cpu-l", "--grace-period=0", "--force"});
  cluster->Kubectl({"delete", "-k", kDeploy + "/labels", "--wait=false"});
  cluster->Kubectl({"delete", "node", "gpu-l", "cpu-l", "--wait=false"});
}

}  // namespace
}  // namespace gpunode
