// deploy/webhook, deploy/cluster and deploy/upgrade say what the code does: the opt-in defaults
// webhook is sent only opted-in namespaces, on the path and label the webhook uses, the RBAC grants
// no more than the commands need, and the upgrade runs as one unprivileged copy.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "build_paths.h"
#include "cluster/gpu_job_defaults.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::cluster {
namespace {

const std::string kDeploy = std::string(build_paths::kSourceDir) + "/deploy";

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

// Where `privileged: true` appears under `node`, as dotted paths.
void FindPrivileged(const YAML::Node& node, const std::string& path,
                    std::vector<std::string>& found) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      std::string key = path + "." + kv.first.as<std::string>();
      if (kv.first.as<std::string>() == "privileged" && kv.second.IsScalar() &&
          kv.second.as<std::string>() == "true") {
        found.push_back(key);
      }
      FindPrivileged(kv.second, key, found);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      FindPrivileged(node[i], path + "[" + std::to_string(i) + "]", found);
    }
  }
}

// Every document of every file a kustomization lists.
// The objects of a kustomization's resources, files and the directories of other
// kustomizations alike.
std::vector<YAML::Node> Kustomized(const std::string& dir) {
  std::vector<YAML::Node> docs;
  for (const YAML::Node& file : YAML::LoadFile(dir + "/kustomization.yaml")["resources"]) {
    const std::string path = dir + "/" + file.as<std::string>();
    if (std::filesystem::is_directory(path)) {
      for (YAML::Node& d : Kustomized(path)) docs.push_back(d);
      continue;
    }
    for (const YAML::Node& d : YAML::LoadAllFromFile(path)) {
      if (d.IsMap()) docs.push_back(d);
    }
  }
  return docs;
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
    if (Strings(rule["resources"]).count("daemonsets")) {
      EXPECT_EQ(Strings(rule["verbs"]), (std::set<std::string>{"get", "list"}));
    }
    // patch on pods only with the policy that narrows it to the drain notice (below).
    if (Strings(rule["resources"]).count("pods")) {
      EXPECT_EQ(Strings(rule["verbs"]), (std::set<std::string>{"get", "list", "patch"}));
    }
    if (Strings(rule["apiGroups"]).count("batch")) {
      EXPECT_TRUE(Strings(rule["verbs"]) == std::set<std::string>{"list"} ||
                  Strings(rule["verbs"]) == (std::set<std::string>{"get", "list"}));
    }
  }
  std::vector<YAML::Node> notice = Kustomized(kDeploy + "/pod-notice");
  YAML::Node policy = Find(notice, "ValidatingAdmissionPolicy", "gpunode-pod-notice");
  ASSERT_TRUE(policy.IsMap());
  EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
  YAML::Node binding = Find(notice, "ValidatingAdmissionPolicyBinding", "gpunode-pod-notice");
  ASSERT_TRUE(binding.IsMap());
  EXPECT_EQ(Strings(binding["spec"]["validationActions"]), std::set<std::string>{"Deny"});
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

TEST(DeployTest, UpgradeIsOneUnprivilegedCopyWithLeastPrivilege) {
  std::vector<YAML::Node> docs = Kustomized(kDeploy + "/upgrade");
  YAML::Node deployment = Find(docs, "Deployment", "gpunode-upgrade");
  ASSERT_TRUE(deployment.IsMap());
  const std::string ns = deployment["metadata"]["namespace"].as<std::string>();
  EXPECT_EQ(ns, "gpunode-system");
  // One copy, and never two at once during a rollout of the Deployment itself.
  EXPECT_EQ(deployment["spec"]["replicas"].as<int>(), 1);
  EXPECT_EQ(deployment["spec"]["strategy"]["type"].as<std::string>(), "Recreate");

  YAML::Node pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "gpunode-upgrade");
  EXPECT_TRUE(pod["automountServiceAccountToken"].as<bool>());
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(), 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  for (const char* host : {"hostPID", "hostNetwork", "hostIPC"}) EXPECT_FALSE(pod[host]) << host;
  ASSERT_EQ(pod["containers"].size(), 1u);
  YAML::Node container = pod["containers"][0];
  YAML::Node security = container["securityContext"];
  EXPECT_FALSE(security["privileged"] && security["privileged"].as<bool>());
  EXPECT_FALSE(security["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(security["readOnlyRootFilesystem"].as<bool>());
  EXPECT_EQ(Strings(security["capabilities"]["drop"]), std::set<std::string>{"ALL"});
  EXPECT_FALSE(security["capabilities"]["add"]);
  EXPECT_TRUE(container["resources"]["limits"]["memory"]);

  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(a.as<std::string>());
  auto after = [&](const std::string& flag) -> std::string {
    auto it = std::find(args.begin(), args.end(), flag);
    return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
  };
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[0], "cluster");
  EXPECT_EQ(args[1], "upgrade");
  EXPECT_NE(std::find(args.begin(), args.end(), "--wait-for-lease"), args.end());
  EXPECT_EQ(after("--identity"), "$(POD_NAME)");
  EXPECT_EQ(after("--lease-namespace"), "$(POD_NAMESPACE)");
  std::map<std::string, std::string> downward;
  for (const YAML::Node& e : container["env"]) {
    downward[e["name"].as<std::string>()] =
        e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
  }
  EXPECT_EQ(downward["POD_NAME"], "metadata.name");
  EXPECT_EQ(downward["POD_NAMESPACE"], "metadata.namespace");

  // The ClusterRole: exactly what the command does, no wildcards, no secrets.
  YAML::Node role = Find(docs, "ClusterRole", "gpunode-upgrade");
  ASSERT_TRUE(role.IsMap());
  std::set<std::string> granted;
  for (const YAML::Node& rule : role["rules"]) {
    EXPECT_FALSE(rule["resourceNames"]);
    EXPECT_FALSE(rule["nonResourceURLs"]);
    for (const std::string& group : Strings(rule["apiGroups"])) {
      for (const std::string& resource : Strings(rule["resources"])) {
        for (const std::string& verb : Strings(rule["verbs"])) {
          EXPECT_EQ(group.find('*') + resource.find('*') + verb.find('*'), 3 * std::string::npos)
              << group << "/" << resource << " " << verb;
          granted.insert(group + "/" + resource + ":" + verb);
        }
      }
    }
  }
  EXPECT_EQ(granted,
            (std::set<std::string>{
                "/nodes:get", "/nodes:list", "/nodes:watch", "/nodes:patch", "/pods:get",
                "/pods:list", "/pods:patch", "/pods/eviction:create",
                "policy/poddisruptionbudgets:list", "apps/daemonsets:get", "apps/daemonsets:list",
                "apps/replicasets:get", "batch/jobs:get", "/events:list", "/events:create"}));
  // The pod patch, narrowed to the drain notice, comes with it.
  EXPECT_TRUE(Find(docs, "ValidatingAdmissionPolicy", "gpunode-pod-notice").IsMap());
  YAML::Node bound = Find(docs, "ClusterRoleBinding", "gpunode-upgrade");
  ASSERT_TRUE(bound.IsMap());
  EXPECT_EQ(bound["roleRef"]["name"].as<std::string>(), "gpunode-upgrade");
  EXPECT_EQ(bound["subjects"][0]["name"].as<std::string>(), "gpunode-upgrade");

  // In the Deployment's namespace only: the Lease, smoke pods, maintenance Jobs; and no other
  // Role or ClusterRole.
  YAML::Node lease_role;
  for (const YAML::Node& d : docs) {
    std::string kind = d["kind"].as<std::string>();
    if (kind == "Role") {
      ASSERT_FALSE(lease_role.IsMap()) << "a second Role";
      lease_role = d;
    } else {
      EXPECT_TRUE(kind != "ClusterRole" ||
                  d["metadata"]["name"].as<std::string>() == "gpunode-upgrade")
          << "a second ClusterRole";
    }
  }
  ASSERT_TRUE(lease_role.IsMap());
  EXPECT_EQ(lease_role["metadata"]["namespace"].as<std::string>(), ns);
  std::set<std::string> in_namespace;
  for (const YAML::Node& rule : lease_role["rules"]) {
    for (const std::string& group : Strings(rule["apiGroups"])) {
      for (const std::string& resource : Strings(rule["resources"])) {
        for (const std::string& verb : Strings(rule["verbs"])) {
          in_namespace.insert(group + "/" + resource + ":" + verb);
        }
      }
    }
  }
  EXPECT_EQ(in_namespace,
            (std::set<std::string>{
                "coordination.k8s.io/leases:get", "coordination.k8s.io/leases:create",
                "coordination.k8s.io/leases:update", "/pods:create", "/pods:delete",
                "/pods/log:get", "batch/jobs:get", "batch/jobs:create", "batch/jobs:delete"}));
  YAML::Node lease_binding =
      Find(docs, "RoleBinding", lease_role["metadata"]["name"].as<std::string>());
  ASSERT_TRUE(lease_binding.IsMap());
  EXPECT_EQ(lease_binding["metadata"]["namespace"].as<std::string>(), ns);
  EXPECT_EQ(lease_binding["subjects"][0]["name"].as<std::string>(), "gpunode-upgrade");

  // The maintenance Job template, mounted where --maintenance-job would read it: the one
  // privileged thing of the rollout.
  std::vector<std::string> privileged;
  for (const YAML::Node& d : docs) FindPrivileged(d, d["kind"].as<std::string>(), privileged);
  EXPECT_EQ(privileged, std::vector<std::string>{});
  YAML::Node config = Find(docs, "ConfigMap", "gpunode-upgrade-maintenance");
  ASSERT_TRUE(config.IsMap());
  YAML::Node job = YAML::Load(config["data"]["maintenance-job.yaml"].as<std::string>());
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "batch/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["spec"]["backoffLimit"].as<int>(), 0);
  EXPECT_EQ(job["spec"]["template"]["spec"]["restartPolicy"].as<std::string>(), "Never");
  FindPrivileged(job, "Job", privileged);
  EXPECT_EQ(privileged, std::vector<std::string>{
                            "Job.spec.template.spec.containers[0].securityContext.privileged"});
  bool mounted = false;
  for (const YAML::Node& volume : pod["volumes"]) {
    if (!volume["configMap"] ||
        volume["configMap"]["name"].as<std::string>() != "gpunode-upgrade-maintenance") {
      continue;
    }
    for (const YAML::Node& mount : container["volumeMounts"]) {
      if (mount["name"].as<std::string>() == volume["name"].as<std::string>()) {
        EXPECT_EQ(mount["mountPath"].as<std::string>(), "/etc/gpunode/upgrade");
        EXPECT_TRUE(mount["readOnly"].as<bool>());
        mounted = true;
      }
    }
  }
  EXPECT_TRUE(mounted);
}

}  // namespace
}  // namespace gpunode::cluster
