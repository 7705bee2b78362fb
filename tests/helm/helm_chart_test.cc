// The chart of deploy/helm/gpunode with the real helm (scripts/build-helm.sh): lint, what each
// role renders, the schema and the template checks refusing bad values with one line naming the
// key, NVIDIA's documented values installing unchanged, least privilege over every container, and
// one source with deploy/: each role renders the objects kubectl's own kustomize builds from
// deploy/. Installing, upgrading and uninstalling against the real apiserver is in
// tests/k8s/real_cluster_test.cc.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "core/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "helm_runner.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"
#include "yaml-cpp/yaml.h"

namespace gpunode {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSource = build_paths::kSourceDir;
const std::string kFixtures = kSource + "/tests/fixtures/helm";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The objects of a multi-document YAML stream, read as kubectl reads them.
std::vector<json> Objects(const std::string& yaml) {
  std::vector<json> objects;
  for (const YAML::Node& document : YAML::LoadAll(yaml)) {
    if (!document.IsMap()) continue;
    objects.push_back(json::parse(core::YamlToJson(document).dump()));
  }
  return objects;
}

// "Kind/name" of each object, sorted.
std::vector<std::string> Names(const std::vector<json>& objects) {
  std::vector<std::string> names;
  for (const json& o : objects) {
    names.push_back(o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>());
  }
  std::sort(names.begin(), names.end());
  return names;
}

const json* Find(const std::vector<json>& objects, const std::string& kind,
                 const std::string& name) {
  for (const json& o : objects) {
    if (o["kind"] == kind && o["metadata"]["name"] == name) return &o;
  }
  return nullptr;
}

// A container's environment as name -> value (valueFrom as its JSON).
std::map<std::string, std::string> Env(const json& container) {
  std::map<std::string, std::string> env;
  for (const json& e : container.value("env", json::array())) {
    env[e["name"]] = e.contains("value") ? e["value"].get<std::string>() : e["valueFrom"].dump();
  }
  return env;
}

const json& Container(const json& workload, const std::string& name) {
  for (const json& c : workload["spec"]["template"]["spec"]["containers"]) {
    if (c["name"] == name) return c;
  }
  static const json none = json::object();
  return none;
}

class HelmChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!helm_.missing().empty()) GTEST_SKIP() << helm_.missing();
  }

  // `helm template` of the chart in namespace `ns`; fails the test when helm does.
  std::vector<json> Render(const std::vector<std::string>& values,
                           const std::string& ns = "gpunode-system") {
    testing::ProcessResult r = Template(values, ns);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Objects(r.out);
  }

  testing::ProcessResult Template(const std::vector<std::string>& values,
                                  const std::string& ns = "gpunode-system") {
    std::vector<std::string> args = {"template", "gpunode", testing::HelmRunner::Chart(), "-n", ns};
    args.insert(args.end(), values.begin(), values.end());
    return helm_.Run(args);
  }

  // What a refused value prints: helm's error line(s), without the INFO lines about the files
  // the chart links from deploy/.
  std::string Refusal(const std::vector<std::string>& values) {
    testing::ProcessResult r = Template(values);
    EXPECT_NE(r.exit_code, 0) << "accepted:\n" << r.out.substr(0, 400);
    std::string lines;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      if (line.find("level=INFO") == std::string::npos) lines += line + "\n";
    }
    return lines;
  }

  testing::HelmRunner helm_;
};

// The DRA plugin beside the device plugin on the nodes moved to it by label (docs/DRA.md), which
// the device plugin's affinity leaves out.
const std::vector<std::string> kEveryRole = {
    "--set",        "gfd.enabled=true",
    "--set",        "exporter.enabled=true",
    "--set",        "migManager.enabled=true",
    "--set",        "webhook.enabled=true",
    "--set",        "upgrade.enabled=true",
    "--set",        "upgrade.driverVersion=550.90.07",
    "--set",        "upgrade.pools={training,inference}",
    "--set",        "draPlugin.enabled=true",
    "--set-string", "draPlugin.nodeSelector.nvidia\\.com/gpu\\.deploy\\.device-plugin=false"};

TEST_F(HelmChartTest, LintsStrictByDefaultAndWithEveryRole) {
  std::vector<std::string> lint = {"lint", "--strict", testing::HelmRunner::Chart()};
  testing::ProcessResult r = helm_.Run(lint);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  lint.insert(lint.end(), kEveryRole.begin(), kEveryRole.end());
  r = helm_.Run(lint);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 chart(s) failed"));
}

// What a cluster without NFD needs to get capacity: the device plugin, and the labeller that
// puts nvidia.com/gpu.present=true on the GPU nodes, which the plugin's affinity selects.
TEST_F(HelmChartTest, TheDefaultsInstallTheDevicePluginAndTheLabellerOfTheNodes) {
  std::vector<json> objects = Render({});
  EXPECT_THAT(Names(objects),
              ::testing::ElementsAre(
                  "ClusterRole/gpunode-labels", "ClusterRoleBinding/gpunode-labels",
                  "DaemonSet/gpunode-device-plugin", "DaemonSet/gpunode-labels",
                  "ServiceAccount/gpunode-labels", "ValidatingAdmissionPolicy/gpunode-labels",
                  "ValidatingAdmissionPolicyBinding/gpunode-labels"));
  const json* labeller = Find(objects, "DaemonSet", "gpunode-labels");
  ASSERT_NE(labeller, nullptr);
  EXPECT_EQ(Container(*labeller, "labels")["args"],
            json::array({"--log-level", "info", "labels", "--write", "node", "--stable-labels"}));
  const json* daemonset = Find(objects, "DaemonSet", "gpunode-device-plugin");
  ASSERT_NE(daemonset, nullptr);
  EXPECT_THAT((*daemonset)["spec"]["template"]["spec"]["affinity"].dump(),
              HasSubstr(R"({"key":"nvidia.com/gpu.present","operator":"In","values":["true"]})"));
  const json& plugin = Container(*daemonset, "device-plugin");
  EXPECT_EQ(plugin["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(plugin["image"], "ghcr.io/gpunode/gpunode:0.1.0");
  // --set reads a tag of digits as a number; it is still the tag.
  std::vector<json> tagged = Render({"--set", "image.tag=2", "--set", "gfd.enabled=false"});
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_EQ(Container(tagged[0], "device-plugin")["image"], "ghcr.io/gpunode/gpunode:2");
  // No NVIDIA value set: none of their variables, so the plugin's own defaults hold.
  for (const char* name : {"MIG_STRATEGY", "FAIL_ON_INIT_ERROR", "DEVICE_LIST_STRATEGY",
                           "CONFIG_FILE", "NODE_NAME", "MPS_ROOT"}) {
    EXPECT_FALSE(Env(plugin).contains(name)) << name;
  }
}

TEST_F(HelmChartTest, EachRoleRendersItsObjects) {
  std::vector<json> objects = Render(kEveryRole);
  std::vector<std::string> names = Names(objects);
  for (const char* expected :
       {"DaemonSet/gpunode-device-plugin",      "DaemonSet/gpunode-labels",
        "DaemonSet/gpunode-exporter",           "Service/gpunode-exporter",
        "ConfigMap/gpunode-exporter-dashboard", "DaemonSet/gpunode-mig-manager",
        "ConfigMap/gpunode-mig-config",         "ClusterRole/gpunode-mig-manager",
        "Deployment/gpunode-webhook",           "Secret/gpunode-webhook-tls",
        "MutatingWebhookConfiguration/gpunode", "ValidatingWebhookConfiguration/gpunode",
        "PodDisruptionBudget/gpunode-webhook",  "Deployment/gpunode-upgrade",
        "Role/gpunode-upgrade-namespaced",      "ConfigMap/gpunode-upgrade-maintenance",
        "DaemonSet/gpunode-dra-plugin",         "ServiceAccount/gpunode-dra-plugin",
        "ClusterRole/gpunode-dra-plugin",       "ClusterRoleBinding/gpunode-dra-plugin",
        "DeviceClass/gpu.nvidia.com",           "DeviceClass/mig.nvidia.com"}) {
    EXPECT_THAT(names, ::testing::Contains(expected));
  }
  // The Prometheus operator's kinds only where the cluster serves them.
  EXPECT_THAT(names, Not(::testing::Contains("ServiceMonitor/gpunode-exporter")));
  std::vector<std::string> with_operator = kEveryRole;
  with_operator.insert(with_operator.end(), {"--api-versions", "monitoring.coreos.com/v1"});
  names = Names(Render(with_operator));
  EXPECT_THAT(names, ::testing::Contains("ServiceMonitor/gpunode-exporter"));
  EXPECT_THAT(names, ::testing::Contains("PrometheusRule/gpunode-exporter"));
  // Every object in the release's namespace, none in a namespace of its own choosing, and every
  // binding's ServiceAccount there too.
  for (const json& o : Render(kEveryRole, "gpu-ops")) {
    if (o["metadata"].contains("namespace")) {
      EXPECT_EQ(o["metadata"]["namespace"], "gpu-ops") << o["kind"] << "/" << o["metadata"]["name"];
    }
    for (const json& subject : o.value("subjects", json::array())) {
      if (subject["kind"] == "ServiceAccount") {
        EXPECT_EQ(subject["namespace"], "gpu-ops") << o["kind"] << "/" << o["metadata"]["name"];
      }
    }
  }
  // The dashboard is the exporter's, for Grafana's sidecar.
  const json* dashboard = Find(objects, "ConfigMap", "gpunode-exporter-dashboard");
  ASSERT_NE(dashboard, nullptr);
  EXPECT_EQ((*dashboard)["metadata"]["labels"]["grafana_dashboard"], "1");
  EXPECT_EQ((*dashboard)["data"]["gpunode-exporter.json"],
            Slurp(kSource + "/deploy/exporter/dashboard.json"));
  EXPECT_EQ((*dashboard)["data"]["gpunode-fleet.json"],
            Slurp(kSource + "/deploy/exporter/fleet-dashboard.json"));
}

// The objects as the chart and deploy/ spell them, for comparison: without Namespaces (Helm's
// --create-namespace makes those) and without the labels Helm adds for its own bookkeeping.
std::vector<json> Comparable(std::vector<json> objects) {
  std::vector<json> kept;
  for (json& o : objects) {
    if (o["kind"] == "Namespace") continue;
    json& labels = o["metadata"]["labels"];
    if (labels.is_object()) {
      for (const char* key :
           {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"}) {
        labels.erase(key);
      }
      if (labels.empty()) o["metadata"].erase("labels");
    } else {
      o["metadata"].erase("labels");
    }
    kept.push_back(o);
  }
  std::sort(kept.begin(), kept.end(), [](const json& a, const json& b) {
    return std::make_pair(a["kind"].get<std::string>(), a["metadata"]["name"].get<std::string>()) <
           std::make_pair(b["kind"].get<std::string>(), b["metadata"]["name"].get<std::string>());
  });
  return kept;
}

// One source: deploy/'s kustomize bases (built by kubectl's own kustomize) and the chart with
// that role switched on render the same objects, field for field.
TEST_F(HelmChartTest, EachRoleRendersWhatDeployHolds) {
  testing::ProcessResult where =
      testing::RunProcess({"/bin/bash", kSource + "/scripts/build-k8s.sh", "--print-dir"});
  std::string kubectl = where.out.substr(0, where.out.find('\n')) + "/kubectl";
  if (!std::filesystem::exists(kubectl)) {
    GTEST_SKIP() << "kubectl is not built (" << kubectl << "): run scripts/build-k8s.sh";
  }
  struct Role {
    std::string deploy;  // a kustomization under deploy/ (or an absolute path), or files joined
    std::vector<std::string> files;
    std::string ns;
    std::vector<std::string> values;
  };
  const std::vector<std::string> off = {"--set", "devicePlugin.enabled=false", "--set",
                                        "gfd.enabled=false"};
  auto with = [&off](std::vector<std::string> values) {
    values.insert(values.begin(), off.begin(), off.end());
    return values;
  };
  // deploy/dra with its extended-resource-off.yaml patch, added to a kustomization's patches as
  // docs/DRA.md tells an operator to.
  testing::TempDir overlay("gpunode-helm-dra-overlay");
  overlay.Write("extended-resource-off.yaml",
                Slurp(kSource + "/deploy/dra/extended-resource-off.yaml"));
  overlay.Write(
      "kustomization.yaml",
      "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " +
          std::filesystem::relative(kSource + "/deploy/dra", overlay.path()).string() +
          "\npatches:\n  - path: extended-resource-off.yaml\n");
  std::vector<Role> roles = {
      {"device-plugin/base", {}, "kube-system", {"--set", "gfd.enabled=false"}},
      {"device-plugin/overlays/gpu-node-label",
       {},
       "kube-system",
       {"--set", "gfd.enabled=false", "--set", "gpuNodeLabels={hardware-type=gpu}"}},
      {"labels", {}, "kube-system", {"--set", "devicePlugin.enabled=false"}},
      {"mig-manager", {}, "gpunode-system", with({"--set", "migManager.enabled=true"})},
      {"webhook",
       {},
       "gpunode-system",
       with({"--set", "webhook.enabled=true", "--set", "webhook.tls.certManager=true"})},
      {"upgrade",
       {},
       "gpunode-system",
       with({"--set", "upgrade.enabled=true", "--set", "upgrade.driverVersion=550.90.07", "--set",
             "upgrade.pools={training,inference}"})},
      {"dra", {}, "gpunode-system", with({"--set", "draPlugin.enabled=true"})},
      {overlay.path(),
       {},
       "gpunode-system",
       with({"--set", "draPlugin.enabled=true", "--set", "draPlugin.extendedResourceName=false"})},
      {"",
       {"exporter/daemonset.yaml", "exporter/service.yaml", "exporter/servicemonitor.yaml",
        "exporter/prometheusrule.yaml"},
       "gpunode-system",
       with({"--set", "exporter.enabled=true", "--set", "exporter.dashboard.enabled=false",
             "--api-versions", "monitoring.coreos.com/v1"})},
  };
  for (const Role& role : roles) {
    std::string built;
    std::string what = role.deploy;
    if (!role.deploy.empty()) {
      std::string dir =
          role.deploy.starts_with("/") ? role.deploy : kSource + "/deploy/" + role.deploy;
      testing::ProcessResult k = testing::RunProcess({kubectl, "kustomize", dir});
      ASSERT_EQ(k.exit_code, 0) << k.err;
      built = k.out;
    } else {
      for (const std::string& file : role.files) {
        built += "---\n" + Slurp(kSource + "/deploy/" + file);
        what += file + " ";
      }
    }
    std::vector<json> from_deploy = Comparable(Objects(built));
    std::vector<json> from_chart = Comparable(Render(role.values, role.ns));
    ASSERT_FALSE(from_deploy.empty()) << what;
    EXPECT_EQ(Names(from_chart), Names(from_deploy)) << what;
    for (size_t i = 0; i < std::min(from_chart.size(), from_deploy.size()); ++i) {
      EXPECT_TRUE(from_chart[i] == from_deploy[i])
          << what << ": " << from_deploy[i]["kind"] << "/" << from_deploy[i]["metadata"]["name"]
          << " differs; the patch from deploy/ to the chart:\n"
          << json::diff(from_deploy[i], from_chart[i]).dump(1);
    }
  }
}

// The README of NVIDIA's plugin: two config files given with --set-file and config.default, as
// printed there, and a values file of that chart's keys.
TEST_F(HelmChartTest, NvidiasDocumentedValuesInstallUnchanged) {
  std::vector<json> objects =
      Render({"--set", "config.default=config0", "--set-file",
              "config.map.config0=" + kFixtures + "/dp-example-config0.yaml", "--set-file",
              "config.map.config1=" + kFixtures + "/dp-example-config1.yaml"},
             "nvidia-device-plugin");
  const json* configs = Find(objects, "ConfigMap", "gpunode-device-plugin-configs");
  ASSERT_NE(configs, nullptr);
  EXPECT_EQ((*configs)["data"]["config0"], Slurp(kFixtures + "/dp-example-config0.yaml"));
  EXPECT_EQ((*configs)["data"]["config1"], Slurp(kFixtures + "/dp-example-config1.yaml"));
  const json* plugin = Find(objects, "DaemonSet", "gpunode-device-plugin");
  ASSERT_NE(plugin, nullptr);
  std::map<std::string, std::string> env = Env(Container(*plugin, "device-plugin"));
  EXPECT_EQ(env["CONFIG_FILE"], "/config");
  EXPECT_EQ(env["CONFIG_DEFAULT"], "config0");
  EXPECT_THAT(env["NODE_NAME"], HasSubstr("spec.nodeName"));
  EXPECT_EQ((*plugin)["spec"]["template"]["spec"]["serviceAccountName"], "gpunode-device-plugin");
  EXPECT_NE(Find(objects, "ClusterRole", "gpunode-device-plugin"), nullptr);
  // The configs are ones gpunode's plugin runs.
  for (const char* file : {"dp-example-config0.yaml", "dp-example-config1.yaml"}) {
    testing::ProcessResult check = testing::RunProcess(
        {build_paths::kBinary, "device-plugin", "--check-config", kFixtures + "/" + file});
    EXPECT_EQ(check.exit_code, 0) << file << ": " << check.out << check.err;
  }

  objects = Render({"-f", kFixtures + "/time-slicing-values.yaml"}, "nvidia-device-plugin");
  plugin = Find(objects, "DaemonSet", "gpunode-device-plugin");
  ASSERT_NE(plugin, nullptr);
  env = Env(Container(*plugin, "device-plugin"));
  EXPECT_EQ(env["MIG_STRATEGY"], "single");
  EXPECT_EQ(env["FAIL_ON_INIT_ERROR"], "false");
  EXPECT_EQ(env["DEVICE_LIST_STRATEGY"], "envvar,cdi-annotations");
  EXPECT_EQ(env["PASS_DEVICE_SPECS"], "true");
  EXPECT_EQ(env["NVIDIA_DRIVER_ROOT"], "/run/nvidia/driver");
  EXPECT_EQ(env["CONFIG_DEFAULT"], "default");
  EXPECT_EQ((*plugin)["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.present"],
            "true");
  // gfd.enabled: the labeller, on the same configs and MIG strategy, none of the plugin's own.
  const json* labels = Find(objects, "DaemonSet", "gpunode-labels");
  ASSERT_NE(labels, nullptr);
  std::map<std::string, std::string> labels_env = Env(Container(*labels, "labels"));
  EXPECT_EQ(labels_env["MIG_STRATEGY"], "single");
  EXPECT_EQ(labels_env["CONFIG_DEFAULT"], "default");
  EXPECT_FALSE(labels_env.contains("DEVICE_LIST_STRATEGY"));
}

// As NVIDIA's chart: a changed config map rolls the plugin's pods (the template's checksum
// annotation changes); an unchanged one leaves them.
TEST_F(HelmChartTest, AChangedConfigMapChangesThePodTemplate) {
  testing::TempDir dir("gpunode-helm-values");
  auto checksum = [&](int replicas) {
    std::string values = dir.Write("values.yaml",
                                   "config:\n  map:\n    default: \"version: v1\"\n    ts: |\n"
                                   "      version: v1\n      sharing:\n        timeSlicing:\n"
                                   "          resources:\n          - name: nvidia.com/gpu\n"
                                   "            replicas: " +
                                       std::to_string(replicas) + "\n");
    std::vector<json> objects = Render({"-f", values});
    const json* plugin = Find(objects, "DaemonSet", "gpunode-device-plugin");
    return plugin ? (*plugin)["spec"]["template"]["metadata"]["annotations"].value(
                        "checksum/config", "")
                  : "";
  };
  std::string two = checksum(2);
  EXPECT_EQ(two.size(), 64u);
  EXPECT_EQ(checksum(2), two);
  EXPECT_NE(checksum(4), two);
}

TEST_F(HelmChartTest, TheSchemaRefusesWhatGpunodeDoesNotHaveNamingTheKey) {
  for (const char* key : {"gdsEnabled", "mofedEnabled", "gdrcopyEnabled"}) {
    EXPECT_THAT(Refusal({"--set", std::string(key) + "=true"}),
                HasSubstr("additional properties '" + std::string(key) + "' not allowed"));
  }
  EXPECT_THAT(Refusal({"--set", "nfd.enabled=true"}),
              HasSubstr("additional properties 'nfd' not allowed"));
  EXPECT_THAT(Refusal({"--set", "migStrategy=sometimes"}), HasSubstr("/migStrategy"));
  EXPECT_THAT(Refusal({"--set", "devicePlugin.enabled=yes"}),
              HasSubstr("/devicePlugin/enabled': got string, want boolean"));
  EXPECT_THAT(Refusal({"--set", "exporter.service.port=94000"}),
              HasSubstr("/exporter/service/port"));
  EXPECT_THAT(Refusal({"--set", "devicePlugin.healthRecoveryPeriod=a minute"}),
              HasSubstr("/devicePlugin/healthRecoveryPeriod"));
}

TEST_F(HelmChartTest, ValuesThatCannotWorkAreOneLineNamingTheKeyAndTheFix) {
  EXPECT_THAT(Refusal({"--set-string", "config.map.a=version: v1", "--set-string",
                       "config.map.b=version: v1"}),
              HasSubstr("config.default: empty, and config.map has several configs (a, b) none "
                        "named default; set config.default"));
  EXPECT_THAT(Refusal({"--set-string", "config.map.a=version: v1", "--set", "config.default=b"}),
              HasSubstr("config.default: \"b\" is not a key of config.map (a); name one of them"));
  EXPECT_THAT(Refusal({"--set-string", "config.map.a=version: v1", "--set", "config.name=mine"}),
              HasSubstr("config.map and config.name: give one"));
  EXPECT_THAT(Refusal({"--set", "upgrade.enabled=true"}),
              HasSubstr("upgrade.driverVersion: empty; set the driver version"));
  EXPECT_THAT(Refusal({"--set", "webhook.enabled=true", "--set", "webhook.tls.secretName=mine"}),
              HasSubstr("webhook.tls.caBundle: empty with webhook.tls.secretName set"));
}

// dcgm-exporter's kubernetesDRA.enabled turns on the same labels in gpunode's exporter.
TEST_F(HelmChartTest, TheExportersDraLabelsFollowDcgmExportersKey) {
  for (bool enabled : {false, true}) {
    std::vector<json> objects =
        Render({"--set", "exporter.enabled=true", "--set",
                std::string("exporter.kubernetesDRA.enabled=") + (enabled ? "true" : "false")});
    const json* exporter = Find(objects, "DaemonSet", "gpunode-exporter");
    ASSERT_NE(exporter, nullptr);
    const json& args = (*exporter)["spec"]["template"]["spec"]["containers"][0]["args"];
    EXPECT_EQ(std::count(args.begin(), args.end(), json("--kubernetes-enable-dra")),
              enabled ? 1 : 0)
        << args.dump();
  }
}

// A device plugin and a DRA plugin must never serve one node (NVIDIA's rule; gpunode's DRA plugin
// exits beside a device plugin): both on without node selectors that keep them apart is refused
// with one line naming both keys and the fixes.
TEST_F(HelmChartTest, TheDevicePluginAndTheDraPluginOnTheSameNodesAreRefused) {
  const std::string line =
      "draPlugin.enabled and devicePlugin.enabled: both on with nothing keeping them off the same "
      "node, and a device plugin and a DRA plugin must never serve one node; give each a "
      "nodeSelector for its node pool (devicePlugin.nodeSelector and draPlugin.nodeSelector with "
      "different values of one label), or set devicePlugin.enabled=false\n";
  auto refused = [&](const std::vector<std::string>& values) {
    std::string got = Refusal(values);
    EXPECT_THAT(got, HasSubstr(line)) << ::testing::PrintToString(values);
  };
  // The defaults of both.
  refused({"--set", "draPlugin.enabled=true"});
  // The same pool for both, through their own selectors or the top-level one.
  refused({"--set", "draPlugin.enabled=true", "--set", "devicePlugin.nodeSelector.pool=training",
           "--set", "draPlugin.nodeSelector.pool=training"});
  refused({"--set", "draPlugin.enabled=true", "--set", "nodeSelector.pool=training"});
  // A label only one of them selects on does not keep the other off those nodes.
  refused({"--set", "draPlugin.enabled=true", "--set", "draPlugin.nodeSelector.pool=inference"});
  // The device plugin's label left out by its default affinity, but that affinity replaced.
  refused(
      {"--set", "draPlugin.enabled=true", "--set-string",
       "draPlugin.nodeSelector.nvidia\\.com/gpu\\.deploy\\.device-plugin=false", "--set",
       "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
       ".matchExpressions[0].key=gpu"});
}

// Migration pool by pool (docs/DRA.md): each plugin on its own pool, or the DRA plugin on the
// nodes labelled away from the device plugin; each DaemonSet selects only its own nodes.
TEST_F(HelmChartTest, TheDevicePluginAndTheDraPluginOnSeparateNodesBothRender) {
  std::vector<json> objects =
      Render({"--set", "draPlugin.enabled=true", "--set", "devicePlugin.nodeSelector.pool=training",
              "--set", "draPlugin.nodeSelector.pool=inference"});
  const json* plugin = Find(objects, "DaemonSet", "gpunode-device-plugin");
  const json* dra = Find(objects, "DaemonSet", "gpunode-dra-plugin");
  ASSERT_NE(plugin, nullptr);
  ASSERT_NE(dra, nullptr);
  EXPECT_EQ((*plugin)["spec"]["template"]["spec"]["nodeSelector"], json({{"pool", "training"}}));
  EXPECT_EQ((*dra)["spec"]["template"]["spec"]["nodeSelector"],
            json({{"pool", "inference"}, {"nvidia.com/gpu.deploy.dra-plugin", "true"}}));

  objects = Render({"--set", "draPlugin.enabled=true", "--set-string",
                    "draPlugin.nodeSelector.nvidia\\.com/gpu\\.deploy\\.device-plugin=false"});
  plugin = Find(objects, "DaemonSet", "gpunode-device-plugin");
  dra = Find(objects, "DaemonSet", "gpunode-dra-plugin");
  ASSERT_NE(plugin, nullptr);
  ASSERT_NE(dra, nullptr);
  EXPECT_EQ(
      (*dra)["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.deploy.device-plugin"],
      "false");
  // The device plugin's affinity is what leaves those nodes out.
  for (const json& term :
       (*plugin)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]) {
    EXPECT_THAT(term["matchExpressions"].dump(),
                HasSubstr(R"({"key":"nvidia.com/gpu.deploy.device-plugin","operator":"NotIn",)"
                          R"("values":["paused-for-mig-change","false"]})"));
  }
  // Off: no selector of its own is needed.
  EXPECT_THAT(
      Names(Render({"--set", "devicePlugin.enabled=false", "--set", "draPlugin.enabled=true"})),
      ::testing::Contains("DaemonSet/gpunode-dra-plugin"));
}

// The DRA plugin's values: its DeviceClasses and their extendedResourceName, and the kubelet's
// directories where the kubelet's root is elsewhere, mounted at the paths the plugin is told.
TEST_F(HelmChartTest, TheDraPluginsValuesReachItsObjects) {
  const std::vector<std::string> dra = {"--set", "devicePlugin.enabled=false",
                                        "--set", "gfd.enabled=false",
                                        "--set", "draPlugin.enabled=true"};
  auto with = [&dra](std::vector<std::string> values) {
    values.insert(values.begin(), dra.begin(), dra.end());
    return values;
  };
  std::vector<json> objects = Render(dra);
  const json* gpu = Find(objects, "DeviceClass", "gpu.nvidia.com");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ((*gpu)["spec"]["extendedResourceName"], "nvidia.com/gpu");
  const json* daemonset = Find(objects, "DaemonSet", "gpunode-dra-plugin");
  ASSERT_NE(daemonset, nullptr);
  EXPECT_EQ(Container(*daemonset, "dra-plugin")["args"],
            json::array({"--log-level", "info", "dra-plugin"}));

  objects = Render(with({"--set", "draPlugin.extendedResourceName=false"}));
  gpu = Find(objects, "DeviceClass", "gpu.nvidia.com");
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE((*gpu)["spec"].contains("extendedResourceName"));
  EXPECT_EQ((*gpu)["spec"]["selectors"].size(), 1u);
  const json* mig = Find(objects, "DeviceClass", "mig.nvidia.com");
  ASSERT_NE(mig, nullptr);
  EXPECT_FALSE((*mig)["spec"].contains("extendedResourceName"));

  EXPECT_THAT(Names(Render(with({"--set", "draPlugin.deviceClasses=false"}))),
              ::testing::ElementsAre(
                  "ClusterRole/gpunode-dra-plugin", "ClusterRoleBinding/gpunode-dra-plugin",
                  "DaemonSet/gpunode-dra-plugin", "Role/gpunode-dra-plugin-mps",
                  "RoleBinding/gpunode-dra-plugin-mps", "ServiceAccount/gpunode-dra-plugin"));

  objects = Render(with(
      {"--set", "draPlugin.kubeletRegistrarDirectoryPath=/var/lib/k0s/kubelet/plugins_registry",
       "--set", "draPlugin.kubeletPluginsDirectoryPath=/var/lib/k0s/kubelet/plugins", "--set",
       "draPlugin.devicePluginsDirectoryPath=/var/lib/k0s/kubelet/device-plugins", "--set",
       "draPlugin.cdiRoot=/etc/cdi", "--set", "draPlugin.rescanInterval=1m", "--set",
       "draPlugin.resources.limits.memory=256Mi"}));
  daemonset = Find(objects, "DaemonSet", "gpunode-dra-plugin");
  ASSERT_NE(daemonset, nullptr);
  const json& container = Container(*daemonset, "dra-plugin");
  EXPECT_EQ(container["args"],
            json::array({"--log-level", "info", "dra-plugin",
                         "--kubelet-registrar-directory-path=/var/lib/k0s/kubelet/plugins_registry",
                         "--kubelet-plugins-directory-path=/var/lib/k0s/kubelet/plugins",
                         "--device-plugins-directory-path=/var/lib/k0s/kubelet/device-plugins",
                         "--cdi-root=/etc/cdi", "--rescan-interval=1m"}));
  EXPECT_EQ(container["resources"]["limits"]["memory"], "256Mi");
  // Each directory at the same path inside as on the host: the kubelet dials the socket path the
  // plugin registers, and the runtime reads the CDI specs where the plugin names them.
  std::map<std::string, std::string> host;
  for (const json& volume : (*daemonset)["spec"]["template"]["spec"]["volumes"]) {
    host[volume["name"]] = volume["hostPath"]["path"];
  }
  std::map<std::string, std::string> mounted;
  for (const json& mount : container["volumeMounts"]) mounted[mount["name"]] = mount["mountPath"];
  EXPECT_EQ(mounted, host);
  EXPECT_EQ(host["plugins"], "/var/lib/k0s/kubelet/plugins");
  EXPECT_EQ(host["cdi"], "/etc/cdi");

  EXPECT_THAT(Refusal(with({"--set", "draPlugin.kubeletPluginsDirectoryPath=plugins"})),
              HasSubstr("/draPlugin/kubeletPluginsDirectoryPath"));
  EXPECT_THAT(Refusal(with({"--set", "draPlugin.rescanInterval=often"})),
              HasSubstr("/draPlugin/rescanInterval"));
  EXPECT_THAT(Refusal(with({"--set", "draPlugin.extendedResourceName=nvidia.com/gpu"})),
              HasSubstr("/draPlugin/extendedResourceName': got string, want boolean"));
  EXPECT_THAT(Refusal(with({"--set", "draPlugin.image=mine"})),
              HasSubstr("additional properties 'image' not allowed"));
}

// The GPU roles' nodes (the device plugin's, the exporter's) are a documented choice: any of
// gpuNodeLabels (nvidia.com/gpu.present=true,
// which the labeller sets, or NFD's PCI label by default; or only one of them, or the operator's
// own label), each a term of the node affinity with the MIG manager's pause.
TEST_F(HelmChartTest, GpuNodeLabelsPickTheNodesOfTheGpuRoles) {
  auto terms = [&](const std::vector<std::string>& values) {
    std::vector<std::string> with = {"--set", "exporter.enabled=true"};
    with.insert(with.end(), values.begin(), values.end());
    std::vector<json> objects = Render(with);
    std::map<std::string, json> by_role;
    for (const char* name : {"gpunode-device-plugin", "gpunode-exporter"}) {
      const json* daemonset = Find(objects, "DaemonSet", name);
      if (daemonset == nullptr) {
        ADD_FAILURE() << name;
        continue;
      }
      by_role[name] =
          (*daemonset)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                      ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    }
    return by_role;
  };
  auto term = [](const std::string& key, const std::string& value, const std::string& deploy) {
    return json::parse(
        R"({"matchExpressions": [{"key": ")" + key + R"(", "operator": "In", "values": [")" +
        value + R"("]}, {"key": ")" + deploy +
        R"(", "operator": "NotIn", "values": ["paused-for-mig-change", "false"]}]})");
  };
  std::map<std::string, json> defaults = terms({});
  EXPECT_EQ(
      defaults["gpunode-device-plugin"],
      json::array({term("nvidia.com/gpu.present", "true", "nvidia.com/gpu.deploy.device-plugin"),
                   term("feature.node.kubernetes.io/pci-10de.present", "true",
                        "nvidia.com/gpu.deploy.device-plugin")}));
  EXPECT_EQ(defaults["gpunode-exporter"].size(), 2u);
  std::map<std::string, json> own = terms({"--set", "gpuNodeLabels={hardware-type=gpu}"});
  EXPECT_EQ(own["gpunode-device-plugin"],
            json::array({term("hardware-type", "gpu", "nvidia.com/gpu.deploy.device-plugin")}));
  EXPECT_EQ(own["gpunode-exporter"],
            json::array({term("hardware-type", "gpu", "nvidia.com/gpu.deploy.dcgm-exporter")}));
  std::map<std::string, json> nfd =
      terms({"--set", "gpuNodeLabels={feature.node.kubernetes.io/pci-10de.present=true}"});
  EXPECT_EQ(nfd["gpunode-device-plugin"],
            json::array({term("feature.node.kubernetes.io/pci-10de.present", "true",
                              "nvidia.com/gpu.deploy.device-plugin")}));
  // The labeller of gfd.mode=node is not kept to them: it is what labels a GPU node.
  std::vector<json> objects = Render({"--set", "gpuNodeLabels={hardware-type=gpu}"});
  const json* labeller = Find(objects, "DaemonSet", "gpunode-labels");
  ASSERT_NE(labeller, nullptr);
  EXPECT_THAT((*labeller)["spec"]["template"]["spec"].dump(), Not(HasSubstr("hardware-type")));
  EXPECT_THAT(Refusal({"--set", "gpuNodeLabels={hardware-type}"}), HasSubstr("/gpuNodeLabels/0"));
  EXPECT_THAT(Refusal({"--set", "gpuNodeLabels=null"}),
              HasSubstr("gpuNodeLabels: empty, and no affinity; name the label that marks a GPU "
                        "node (KEY=VALUE), such as nvidia.com/gpu.present=true"));
}

// gfd.mode=node (the default) labels the node through the API server from every Linux node,
// unprivileged and without a host path; gfd.mode=nfd writes NFD's features.d on the GPU nodes.
TEST_F(HelmChartTest, TheLabellerLabelsTheNodeOrWritesNfdsFeatures) {
  std::vector<json> objects =
      Render({"--set", "devicePlugin.enabled=false", "--set", "runtimeClassName=nvidia",
              "--set-string", "nodeSelector.nvidia\\.com/gpu\\.present=true", "--set",
              "gfd.nodeSelector.pool=gpu", "--set", "gfd.stableLabelPrefix=example.com/"});
  const json* labeller = Find(objects, "DaemonSet", "gpunode-labels");
  ASSERT_NE(labeller, nullptr);
  const json& pod = (*labeller)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "gpunode-labels");
  // Not on GPU nodes only, which it is the one to label, nor through a runtime every node lacks.
  EXPECT_EQ(pod["nodeSelector"], json({{"kubernetes.io/os", "linux"}, {"pool", "gpu"}}));
  EXPECT_FALSE(pod.contains("runtimeClassName"));
  EXPECT_FALSE(pod.contains("volumes"));
  const json& container = Container(*labeller, "labels");
  EXPECT_EQ(container["args"],
            json::array({"--log-level", "info", "labels", "--write", "node", "--stable-labels",
                         "--stable-label-prefix=example.com/"}));
  EXPECT_THAT(Env(container)["NODE_NAME"], HasSubstr("spec.nodeName"));
  EXPECT_FALSE(container["securityContext"].contains("runAsUser"));
  const json* policy = Find(objects, "ValidatingAdmissionPolicy", "gpunode-labels");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ((*policy)["spec"]["failurePolicy"], "Fail");
  // With a config to follow: NODE_NAME once, the configs mounted.
  objects = Render(
      {"--set", "devicePlugin.enabled=false", "--set-string", "config.map.default=version: v1"});
  labeller = Find(objects, "DaemonSet", "gpunode-labels");
  ASSERT_NE(labeller, nullptr);
  const json& env = Container(*labeller, "labels")["env"];
  EXPECT_EQ(
      std::count_if(env.begin(), env.end(), [](const json& e) { return e["name"] == "NODE_NAME"; }),
      1)
      << env.dump();
  EXPECT_EQ(Container(*labeller, "labels")["volumeMounts"][0]["mountPath"], "/config");

  objects = Render({"--set", "devicePlugin.enabled=false", "--set", "gfd.mode=nfd", "--set",
                    "gfd.stableLabels=false"});
  EXPECT_THAT(Names(objects), ::testing::ElementsAre("DaemonSet/gpunode-labels"));
  const json& nfd = Container(objects[0], "labels");
  EXPECT_EQ(nfd["args"], json::array({"--log-level", "info", "labels"}));
  EXPECT_EQ(nfd["volumeMounts"][0]["mountPath"],
            "/etc/kubernetes/node-feature-discovery/features.d");
  EXPECT_EQ(nfd["securityContext"]["runAsUser"], 0);
  EXPECT_THAT(objects[0]["spec"]["template"]["spec"]["affinity"].dump(),
              HasSubstr("nvidia.com/gpu.present"));

  EXPECT_THAT(Refusal({"--set", "gfd.mode=api"}), HasSubstr("/gfd/mode"));
  EXPECT_THAT(Refusal({"--set", "gfd.stableLabelPrefix=example.com"}),
              HasSubstr("/gfd/stableLabelPrefix"));
}

// Privileged only where a role needs it: the MPS daemon and its shm mount (compute mode, a tmpfs)
// and the MIG manager (NVML administrator calls). Every other container drops every capability
// and cannot gain privilege.
TEST_F(HelmChartTest, OnlyTheMpsDaemonAndTheMigManagerArePrivileged) {
  testing::TempDir dir("gpunode-helm-values");
  std::string mps = dir.Write("mps.yaml",
                              "config:\n  map:\n    mps: |\n      version: v1\n      sharing:\n"
                              "        mps:\n          resources:\n"
                              "          - {name: nvidia.com/gpu, replicas: 2}\n");
  std::vector<std::string> values = kEveryRole;
  values.insert(values.end(), {"-f", kFixtures + "/time-slicing-values.yaml", "-f", mps, "--set",
                               "config.default=mps"});
  std::set<std::string> privileged;
  int containers = 0;
  for (const json& o : Render(values)) {
    if (!o.contains("spec") || !o["spec"].contains("template")) continue;
    const json& pod = o["spec"]["template"]["spec"];
    for (const char* list : {"initContainers", "containers"}) {
      for (const json& c : pod.value(list, json::array())) {
        ++containers;
        const json security = c.value("securityContext", json::object());
        if (security.value("privileged", false)) {
          privileged.insert(c["name"].get<std::string>());
          continue;
        }
        EXPECT_EQ(security.value("allowPrivilegeEscalation", true), false) << c["name"];
        EXPECT_EQ(security["capabilities"]["drop"], json::array({"ALL"})) << c["name"];
        EXPECT_EQ(security.value("readOnlyRootFilesystem", false), true) << c["name"];
      }
    }
  }
  EXPECT_EQ(privileged,
            (std::set<std::string>{"mps-mount-shm", "mps-control-daemon", "mig-manager"}));
  EXPECT_GE(containers, 8);
}

// The chart's own CA and certificate: the webhook configurations trust the CA that signed the
// Secret's certificate, and the certificate names the Service.
TEST_F(HelmChartTest, TheWebhooksOwnCertificateIsSignedByTheCaTheApiServerIsGiven) {
  std::vector<json> objects =
      Render({"--set", "devicePlugin.enabled=false", "--set", "webhook.enabled=true"}, "gpu-ops");
  const json* secret = Find(objects, "Secret", "gpunode-webhook-tls");
  ASSERT_NE(secret, nullptr);
  const json* mutating = Find(objects, "MutatingWebhookConfiguration", "gpunode");
  ASSERT_NE(mutating, nullptr);
  std::string ca = (*secret)["data"]["ca.crt"];
  for (const json& webhook : (*mutating)["webhooks"]) {
    EXPECT_EQ(webhook["clientConfig"]["caBundle"], ca);
    EXPECT_EQ(webhook["clientConfig"]["service"]["namespace"], "gpu-ops");
  }
  testing::TempDir dir("gpunode-helm-tls");
  auto pem = [&dir](const std::string& name, const std::string& base64) {
    testing::ProcessResult d = testing::RunProcess({"/usr/bin/base64", "-d"}, {}, base64);
    return dir.Write(name, d.out);
  };
  std::string ca_file = pem("ca.crt", ca);
  std::string crt_file = pem("tls.crt", (*secret)["data"]["tls.crt"]);
  testing::ProcessResult verify =
      testing::RunProcess({"/usr/bin/openssl", "verify", "-CAfile", ca_file, crt_file});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  testing::ProcessResult text = testing::RunProcess(
      {"/usr/bin/openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", crt_file});
  EXPECT_THAT(text.out, HasSubstr("DNS:gpunode-webhook.gpu-ops.svc"));
}

}  // namespace
}  // namespace gpunode
