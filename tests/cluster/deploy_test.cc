// deploy/webhook and deploy/cluster say what the code does: the opt-in defaults webhook is sent
// only opted-in namespaces, on the path and label the webhook uses, and the RBAC grants no more
// than the commands need.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cluster/gpu_job_defaults.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::cluster {
namespace {

const std::string kDeploy = std::string(GPUNODE_SOURCE_DIR) + "/deploy";

YAML::Node Find(const std::vector<YAML::Node>& docs, const std::string& kind,
                const std::string& name) {
  for (const YAML::Node& d : docs) {
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>() == name) {
      return d;
    }
  }
  return YAML::Node();
}

std::set<std::string> Strings(const YAML::Node& list) {
  std::set<std::string> out;
  for (const YAML::Node& n : list) out.insert(n.as<std::string>());
  return out;
}

TEST(DeployTest, DefaultsWebhookIsOptInPerNamespace) {
  std::vector<YAML::Node> docs =
      YAML::LoadAllFromFile(kDeploy + "/webhook/webhook-configurations.yaml");
  YAML::Node mutating = Find(docs, "MutatingWebhookConfiguration", "gpunode");
  ASSERT_TRUE(mutating.IsDefined());
  YAML::Node defaults;
  for (const YAML::Node& w : mutating["webhooks"]) {
    if (w["name"].as<std::string>() == "gpu-job-defaults.gpunode.io") defaults = w;
  }
  ASSERT_TRUE(defaults.IsDefined());
  EXPECT_EQ(defaults["clientConfig"]["service"]["path"].as<std::string>(), "/defaults");
  EXPECT_EQ(defaults["namespaceSelector"]["matchLabels"][std::string(kJobDefaultsLabel)]
                .as<std::string>(),
            std::string(kJobDefaultsEnabled));
  EXPECT_EQ(defaults["sideEffects"].as<std::string>(), "None");
  std::set<std::string> resources;
  for (const YAML::Node& rule : defaults["rules"]) {
    EXPECT_EQ(Strings(rule["operations"]), std::set<std::string>{"CREATE"});
    for (const std::string& group : Strings(rule["apiGroups"])) {
      for (const std::string& resource : Strings(rule["resources"])) {
        resources.insert(group + "/" + resource);
      }
    }
  }
  EXPECT_EQ(resources, (std::set<std::string>{"/pods", "batch/jobs"}));
}

TEST(DeployTest, RbacIsLeastPrivilege) {
  std::vector<YAML::Node> webhook = YAML::LoadAllFromFile(kDeploy + "/webhook/rbac.yaml");
  YAML::Node role = Find(webhook, "ClusterRole", "gpunode-webhook");
  ASSERT_TRUE(role.IsDefined());
  for (const YAML::Node& rule : role["rules"]) {
    if (Strings(rule["resources"]).count("namespaces")) {
      EXPECT_EQ(Strings(rule["verbs"]), std::set<std::string>{"get"});
    }
  }
  std::vector<YAML::Node> cluster = YAML::LoadAllFromFile(kDeploy + "/cluster/rbac.yaml");
  // prepull's DaemonSets and verify's smoke pods: namespaced Roles; cluster-wide only reads.
  for (const YAML::Node& rule : Find(cluster, "ClusterRole", "gpunode-cluster")["rules"]) {
    if (Strings(rule["resources"]).count("daemonsets") ||
        Strings(rule["resources"]).count("pods")) {
      EXPECT_EQ(Strings(rule["verbs"]), (std::set<std::string>{"get", "list"}));
    }
    if (Strings(rule["apiGroups"]).count("batch")) {
      EXPECT_EQ(Strings(rule["verbs"]), std::set<std::string>{"list"});
    }
  }
  YAML::Node prepull = Find(cluster, "Role", "gpunode-prepull");
  ASSERT_TRUE(prepull.IsDefined());
  EXPECT_EQ(Strings(prepull["rules"][0]["verbs"]),
            (std::set<std::string>{"create", "get", "update", "delete"}));
  YAML::Node verify = Find(cluster, "Role", "gpunode-verify");
  ASSERT_TRUE(verify.IsDefined());
  EXPECT_EQ(verify["metadata"]["namespace"].as<std::string>(), "gpunode-system");
  EXPECT_EQ(Strings(verify["rules"][0]["verbs"]),
            (std::set<std::string>{"create", "get", "delete"}));
}

TEST(DeployTest, WebhookDeploymentSetsTheDefaults) {
  std::vector<YAML::Node> docs = YAML::LoadAllFromFile(kDeploy + "/webhook/deployment.yaml");
  YAML::Node deployment = Find(docs, "Deployment", "gpunode-webhook");
  ASSERT_TRUE(deployment.IsDefined());
  std::set<std::string> args =
      Strings(deployment["spec"]["template"]["spec"]["containers"][0]["args"]);
  EXPECT_TRUE(args.count("--default-active-deadline=24h"));
  EXPECT_TRUE(args.count("--default-ttl=1h"));
}

}  // namespace
}  // namespace gpunode::cluster
