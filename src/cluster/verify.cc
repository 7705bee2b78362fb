#include "cluster/verify.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "cluster/restore.h"
#include "cluster/scheduling.h"
#include "cluster/smoke_pod.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_loader.h"
#include "kube/daemonset_view.h"
#include "kube/gpu_resources.h"
#include "kube/label_selector.h"
#include "kube/quantity.h"
#include "kube/snapshot_reader.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

using json = nlohmann::json;
using core::StrCat;

namespace {

// The labels GPU feature discovery (and `gpunode labels`) writes on every GPU node.
constexpr std::string_view kGfdLabels[] = {"nvidia.com/gpu.product", "nvidia.com/gpu.count"};

// A device plugin DaemonSet, with its pod template parsed as a pod so the scheduler's rules
// (scheduling.h) can say whether it covers a node.
struct DevicePlugin {
  std::string ns, name;
  std::string node_selector_text;  // for the evidence: "k=v, k2=v2", or "none"
};

struct DevicePlugins {
  std::vector<DevicePlugin> sets;
  kube::ClusterSnapshot templates;  // pods[i] is sets[i]'s template, with details
  std::string error;                // why they could not be listed
};

bool LooksLikeNvidiaDevicePlugin(const std::string& name) {
  return name.find("nvidia-device-plugin") != std::string::npos || name == "gpunode-device-plugin";
}

absl::StatusOr<DevicePlugins> FindDevicePlugins(kube::Client& client,
                                                const VerifyOptions& options) {
  DevicePlugins found;
  std::vector<kube::DaemonSetView> sets;
  if (!options.device_plugin.empty()) {
    size_t slash = options.device_plugin.find('/');
    std::string ns = options.device_plugin.substr(0, slash);
    std::string name = options.device_plugin.substr(slash + 1);
    std::string path = StrCat("/apis/apps/v1/namespaces/", kube::UrlEncode(ns), "/daemonsets/",
                              kube::UrlEncode(name));
    absl::StatusOr<std::string> body = client.Get(path);
    if (absl::IsNotFound(body.status())) {
      found.error = StrCat("DaemonSet ", options.device_plugin, " (--device-plugin) not found");
      return found;
    }
    if (!body.ok()) return body.status();
    ASSIGN_OR_RETURN(kube::DaemonSetView ds, kube::ReadDaemonSet(*body, StrCat("GET ", path)));
    sets.push_back(std::move(ds));
  } else {
    std::vector<kube::DaemonSetView> all;
    absl::Status listed =
        client.List("/apis/apps/v1/daemonsets", {},
                    [&](simdjson::padded_string_view body,
                        std::string_view source) -> absl::StatusOr<std::string> {
                      std::string continue_token;
                      RETURN_IF_ERROR(kube::ReadDaemonSetPage(
                          std::string_view(body.data(), body.size()), source, all, continue_token));
                      return continue_token;
                    });
    if (absl::IsPermissionDenied(listed)) {
      found.error = StrCat("cannot list DaemonSets: ", core::View(listed.message()));
      return found;
    }
    RETURN_IF_ERROR(listed);
    for (kube::DaemonSetView& ds : all) {
      if (LooksLikeNvidiaDevicePlugin(ds.name)) sets.push_back(std::move(ds));
    }
  }
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView&) { return true; };
  kube::SnapshotBuilder builder(read);
  for (const kube::DaemonSetView& ds : sets) {
    DevicePlugin plugin;
    plugin.ns = ds.ns;
    plugin.name = ds.name;
    std::vector<std::string> selector;
    for (const auto& [k, v] : ds.node_selector) selector.push_back(StrCat(k, "=", v));
    plugin.node_selector_text = selector.empty() ? "none" : absl::StrJoin(selector, ", ");
    // The template as a pod of the DaemonSet's name, for the snapshot reader.
    json metadata = {{"name", plugin.name}, {"namespace", plugin.ns}};
    std::string text = StrCat(R"({"kind":"Pod","apiVersion":"v1","metadata":)", metadata.dump(),
                              R"(,"spec":)", ds.pod_spec_json, "}");
    RETURN_IF_ERROR(
        builder.Add(kube::PadInPlace(text), StrCat("DaemonSet ", plugin.ns, "/", plugin.name)));
    found.sets.push_back(std::move(plugin));
  }
  found.templates = builder.Take();
  return found;
}

// The device-plugin step's words, live and from a snapshot alike.
std::string PluginPodReady(std::string_view pod, std::string_view ds_ns, std::string_view ds) {
  return StrCat("pod ", pod, " of DaemonSet ", ds_ns, "/", ds, " is Running and Ready");
}
std::string PluginPodNotReady(std::string_view pod, std::string_view phase) {
  return StrCat("pod ", pod, " is ", phase, " and not Ready");
}
std::string PluginPodNotReadyFix(std::string_view node) {
  return StrCat("`kubectl describe pod` and `kubectl logs` of the device plugin pod on ", node);
}

VerifyStep ReadyStep(const kube::NodeView& node) {
  VerifyStep step;
  step.step = VerifyCheck::kReady;
  if (node.ready == kube::ConditionStatus::kTrue) {
    step.result = StepResult::kPass;
    step.evidence = "condition Ready is True";
    return step;
  }
  step.result = StepResult::kFail;
  step.evidence = StrCat("condition Ready is ",
                         node.ready == kube::ConditionStatus::kFalse ? "False" : "Unknown");
  step.fix = StrCat("`kubectl describe node ", node.name,
                    "`: look at the kubelet and the container runtime on the node");
  return step;
}

VerifyStep LabelsStep(const kube::NodeView& node, const VerifyOptions& options) {
  VerifyStep step;
  step.step = VerifyCheck::kLabels;
  std::vector<std::string> seen, missing;
  for (std::string_view key : kGfdLabels) {
    if (auto v = kube::FindLabel(node.labels, key)) {
      seen.push_back(StrCat(key, "=", *v));
    } else {
      missing.push_back(std::string(key));
    }
  }
  ExpectedGpus expected = ExpectedGpusOf(node, options.count_label);
  if (expected.own_count) seen.push_back(StrCat(expected.own_key, "=", *expected.own_count));
  if (!expected.missing_key.empty()) {
    seen.push_back(StrCat(expected.missing_key, "=", expected.missing_value));
  }
  std::vector<std::string> wrong;
  for (const std::string& want : options.require_labels) {
    size_t eq = want.find('=');
    std::string key = want.substr(0, eq);
    auto have = kube::FindLabel(node.labels, key);
    if (!have) {
      missing.push_back(key);
    } else if (eq != std::string::npos && *have != std::string_view(want).substr(eq + 1)) {
      wrong.push_back(StrCat(key, "=", *have, " (want ", want.substr(eq + 1), ")"));
    } else {
      seen.push_back(StrCat(key, "=", *have));
    }
  }
  std::string disagreement = expected.Disagreement();
  if (missing.empty() && wrong.empty() && disagreement.empty()) {
    step.result = StepResult::kPass;
    step.evidence = absl::StrJoin(seen, ", ");
    if (!expected.own_count) {
      core::StrAppend(&step.evidence, " (no ", options.count_label.Keys().front(),
                      " label of your own)");
    }
    return step;
  }
  step.result = StepResult::kFail;
  std::vector<std::string> problems;
  if (!missing.empty()) problems.push_back(StrCat("missing ", absl::StrJoin(missing, ", ")));
  if (!wrong.empty()) problems.push_back(StrCat("wrong ", absl::StrJoin(wrong, ", ")));
  if (!disagreement.empty()) problems.push_back(disagreement);
  step.evidence = absl::StrJoin(problems, "; ");
  step.fix = StrCat(
      "GPU feature discovery (or `gpunode labels`) writes the nvidia.com/ labels: check that it "
      "runs on ",
      node.name, "; set your own with `kubectl label node ", node.name, " KEY=VALUE --overwrite`");
  return step;
}

VerifyStep CapacityStep(const kube::NodeView& node, const VerifyOptions& options) {
  VerifyStep step;
  step.step = VerifyCheck::kCapacity;
  RestoreCheck check = CheckRestore(node, options.count_label);
  step.result = check.ok ? StepResult::kPass : StepResult::kFail;
  step.evidence = check.message;
  if (!check.ok) {
    step.fix = StrCat("run `gpunode doctor` on ", node.name,
                      " and read the nvidia-device-plugin pod's log");
  }
  return step;
}

absl::StatusOr<VerifyStep> DevicePluginStep(kube::Client& client, const kube::NodeView& node,
                                            const DevicePlugins& plugins) {
  VerifyStep step;
  step.step = VerifyCheck::kDevicePlugin;
  step.result = StepResult::kFail;
  if (!plugins.error.empty()) {
    step.evidence = plugins.error;
    step.fix =
        "grant `list` on daemonsets (deploy/cluster/rbac.yaml), or name the DaemonSet with "
        "--device-plugin NAMESPACE/NAME";
    return step;
  }
  if (plugins.sets.empty()) {
    step.evidence =
        "no NVIDIA device plugin DaemonSet found (looked for DaemonSets named "
        "*nvidia-device-plugin* or gpunode-device-plugin in every namespace)";
    step.fix =
        "deploy the device plugin, or name its DaemonSet with --device-plugin NAMESPACE/NAME";
    return step;
  }
  kube::ListOptions on_node;
  on_node.field_selector = StrCat("spec.nodeName=", node.name);
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView&) { return true; };
  kube::SnapshotBuilder builder(read);
  RETURN_IF_ERROR(client.List("/api/v1/pods", on_node,
                              [&](simdjson::padded_string_view body,
                                  std::string_view source) -> absl::StatusOr<std::string> {
                                std::string continue_token;
                                RETURN_IF_ERROR(builder.Add(body, source, &continue_token));
                                return continue_token;
                              }));
  const kube::ClusterSnapshot on_node_pods = builder.Take();
  std::vector<std::string> not_ready, not_covered;
  bool covered = false;
  for (size_t i = 0; i < plugins.sets.size(); ++i) {
    const DevicePlugin& ds = plugins.sets[i];
    for (const kube::PodView& pod : on_node_pods.pods) {
      if (pod.ns != ds.ns || pod.details == nullptr ||
          pod.details->controller_kind != "DaemonSet" || pod.details->controller_name != ds.name)
        continue;
      std::string pod_name = kube::NamespacedName(pod);
      if (pod.phase == kube::PodPhase::kRunning && pod.details->ready) {
        step.result = StepResult::kPass;
        step.evidence = PluginPodReady(pod_name, ds.ns, ds.name);
        return step;
      }
      not_ready.push_back(PluginPodNotReady(pod_name, kube::PhaseName(pod.phase)));
    }
    const kube::PodDetails* spec = plugins.templates.pods[i].details.get();
    // The DaemonSet controller adds tolerations for the node-condition and cordon taints.
    std::vector<std::string> blocking;
    if (spec != nullptr) {
      for (const kube::Taint& t : UntoleratedTaints(spec->tolerations, node)) {
        if (!t.key.starts_with("node.kubernetes.io/")) blocking.push_back(TaintText(t));
      }
    }
    bool selects = spec != nullptr && MatchesNodeSelectorAndAffinity(*spec, node);
    if (selects && blocking.empty()) {
      covered = true;
    } else if (!selects) {
      not_covered.push_back(StrCat("DaemonSet ", ds.ns, "/", ds.name, " does not cover ", node.name,
                                   ": its nodeSelector (", ds.node_selector_text,
                                   ") or node affinity does not match the node's labels"));
    } else {
      not_covered.push_back(StrCat("DaemonSet ", ds.ns, "/", ds.name, " does not cover ", node.name,
                                   ": its pods do not tolerate the node's taint ",
                                   absl::StrJoin(blocking, ", ")));
    }
  }
  if (!not_ready.empty()) {
    step.evidence = absl::StrJoin(not_ready, "; ");
    step.fix = PluginPodNotReadyFix(node.name);
    return step;
  }
  if (!covered) {
    step.evidence = absl::StrJoin(not_covered, "; ");
    step.fix = StrCat(
        "nothing reports an error in this case: label the node to match the DaemonSet "
        "(`kubectl label node ",
        node.name, " KEY=VALUE`), or widen the DaemonSet's nodeSelector/affinity or tolerations");
    return step;
  }
  step.evidence =
      StrCat("the device plugin DaemonSet covers ", node.name, " but has no pod there yet");
  step.fix = "wait for the DaemonSet controller; `kubectl get ds -A | grep device-plugin`";
  return step;
}

// From a snapshot, which holds pods but no DaemonSets: the device plugin's pod on the node.
VerifyStep DevicePluginStepFromPods(const kube::ClusterSnapshot& snapshot,
                                    const kube::NodeView& node, const VerifyOptions& options) {
  VerifyStep step;
  step.step = VerifyCheck::kDevicePlugin;
  step.result = StepResult::kFail;
  std::string_view named = options.device_plugin;
  size_t slash = named.find('/');
  std::vector<std::string> not_ready;
  for (const kube::PodView& pod : snapshot.pods) {
    if (pod.node_name != node.name || !pod.daemonset || pod.details == nullptr) continue;
    std::string_view ds = pod.details->controller_name;
    bool plugin = named.empty() ? LooksLikeNvidiaDevicePlugin(std::string(ds))
                                : pod.ns == named.substr(0, slash) && ds == named.substr(slash + 1);
    if (!plugin) continue;
    std::string pod_name = kube::NamespacedName(pod);
    if (pod.phase == kube::PodPhase::kRunning && pod.details->ready) {
      step.result = StepResult::kPass;
      step.evidence = PluginPodReady(pod_name, pod.ns, ds);
      return step;
    }
    not_ready.push_back(PluginPodNotReady(pod_name, kube::PhaseName(pod.phase)));
  }
  if (!not_ready.empty()) {
    step.evidence = absl::StrJoin(not_ready, "; ");
    step.fix = PluginPodNotReadyFix(node.name);
    return step;
  }
  step.evidence =
      StrCat("no device plugin pod on ", node.name, " in the snapshot (looked for pods of ",
             named.empty()
                 ? std::string("DaemonSets named *nvidia-device-plugin* or gpunode-device-plugin")
                 : StrCat("DaemonSet ", named),
             "); a snapshot holds no DaemonSets, so whether one covers the node is not checked");
  step.fix = StrCat("run `gpunode cluster verify --dry-run ", node.name,
                    "` against the cluster: it says whether the DaemonSet covers the node");
  return step;
}

// The steps that only read: Ready, the labels, the device plugin (`plugin`), the capacity.
NodeVerdict ReadOnlyVerdict(const kube::NodeView& node, const VerifyOptions& options,
                            VerifyStep plugin) {
  NodeVerdict verdict;
  verdict.node = std::string(node.name);
  ExpectedGpus expected = ExpectedGpusOf(node, options.count_label);
  verdict.missing_gpus = expected.missing.addresses;
  verdict.missing_gpus_unnamed = expected.missing.unlisted + expected.missing.unknown;
  verdict.steps.push_back(ReadyStep(node));
  verdict.steps.push_back(LabelsStep(node, options));
  verdict.steps.push_back(std::move(plugin));
  verdict.steps.push_back(CapacityStep(node, options));
  return verdict;
}

bool Failed(const NodeVerdict& v, VerifyCheck step) {
  return std::any_of(v.steps.begin(), v.steps.end(), [&](const VerifyStep& s) {
    return s.step == step && s.result == StepResult::kFail;
  });
}

void Progress(std::ostream& out, const VerifyStep& step) {
  out << "  " << VerifyCheckName(step.step) << ": "
      << (step.result == StepResult::kPass   ? "pass"
          : step.result == StepResult::kFail ? "FAIL"
                                             : "skip")
      << " (" << step.evidence << ")\n"
      << std::flush;
}

}  // namespace

bool NodeVerdict::Passed() const {
  return std::none_of(steps.begin(), steps.end(),
                      [](const VerifyStep& s) { return s.result != StepResult::kPass; });
}

bool VerifyReport::Passed() const {
  return !interrupted && !nodes.empty() &&
         std::all_of(nodes.begin(), nodes.end(), [](const NodeVerdict& n) { return n.Passed(); });
}

absl::StatusOr<VerifyReport> RunVerify(kube::Client& client, const VerifyOptions& options,
                                       core::Env& env, std::ostream& progress) {
  std::vector<kube::ClusterSnapshot> snapshots;
  if (!options.selector.empty()) {
    kube::ApiQuery query;
    query.node_label_selector = options.selector;
    query.pods = false;
    ASSIGN_OR_RETURN(kube::ClusterSnapshot all, kube::LoadFromApi(client, query));
    if (all.nodes.empty()) {
      return absl::NotFoundError(StrCat("no node matches --selector ", options.selector));
    }
    snapshots.push_back(std::move(all));
  } else {
    for (const std::string& name : options.nodes) {
      kube::ApiQuery query;
      query.all_nodes = false;
      query.node_name = name;
      query.pods = false;
      absl::StatusOr<kube::ClusterSnapshot> one = kube::LoadFromApi(client, query);
      if (absl::IsNotFound(one.status())) {
        return absl::NotFoundError(StrCat("node ", name, " not found"));
      }
      if (!one.ok()) return one.status();
      snapshots.push_back(std::move(*one));
    }
  }
  ASSIGN_OR_RETURN(DevicePlugins plugins, FindDevicePlugins(client, options));

  VerifyReport report;
  report.dry_run = !options.run_smoke_pod;
  for (const kube::ClusterSnapshot& snapshot : snapshots) {
    for (const kube::NodeView& node : snapshot.nodes) {
      if (env.StopRequested()) {
        report.interrupted = true;
        return report;
      }
      progress << "verifying " << node.name << "\n";
      ASSIGN_OR_RETURN(VerifyStep plugin, DevicePluginStep(client, node, plugins));
      NodeVerdict verdict = ReadOnlyVerdict(node, options, std::move(plugin));
      ExpectedGpus expected = ExpectedGpusOf(node, options.count_label);
      for (const VerifyStep& s : verdict.steps) Progress(progress, s);
      if (!options.run_smoke_pod) {
        report.nodes.push_back(std::move(verdict));
        continue;
      }

      VerifyStep smoke;
      smoke.step = VerifyCheck::kSmokePod;
      std::vector<std::string> blocking;
      for (VerifyCheck s :
           {VerifyCheck::kReady, VerifyCheck::kDevicePlugin, VerifyCheck::kCapacity}) {
        if (Failed(verdict, s)) blocking.push_back(std::string(VerifyCheckName(s)));
      }
      int64_t capacity = kube::MilliOf(node.capacity, kube::kGpuResource) / 1000;
      int64_t gpus = std::min<int64_t>(2, expected.WantedGpus().value_or(capacity));
      if (!blocking.empty()) {
        smoke.evidence = StrCat("not run: ", absl::StrJoin(blocking, ", "), " failed");
        smoke.fix = "fix the steps above first";
      } else if (gpus <= 0) {
        smoke.result = StepResult::kFail;
        smoke.evidence = StrCat("the node has no ", kube::kGpuResource, " to request");
      } else {
        ASSIGN_OR_RETURN(smoke, RunSmokePod(client, node, gpus, options, env, progress));
      }
      Progress(progress, smoke);
      bool smoke_passed = smoke.result == StepResult::kPass;
      verdict.steps.push_back(std::move(smoke));
      if (!options.workload_image.empty() && !env.StopRequested()) {
        VerifyStep workload;
        workload.step = VerifyCheck::kWorkload;
        if (!smoke_passed) {
          workload.evidence = "not run: smoke-pod did not pass";
          workload.fix = "fix the smoke pod's step first";
        } else {
          ASSIGN_OR_RETURN(workload, RunWorkloadPod(client, node, gpus, options, env, progress));
        }
        Progress(progress, workload);
        verdict.steps.push_back(std::move(workload));
      }
      report.nodes.push_back(std::move(verdict));
      if (env.StopRequested()) {
        report.interrupted = true;
        return report;
      }
    }
  }
  return report;
}

kube::ReadOptions VerifySnapshotReadOptions() {
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView& pod) { return pod.daemonset; };
  return read;
}

absl::StatusOr<VerifyReport> VerifySnapshot(const kube::ClusterSnapshot& snapshot,
                                            const VerifyOptions& options, std::ostream& progress) {
  std::vector<const kube::NodeView*> nodes;
  if (!options.selector.empty()) {
    absl::StatusOr<kube::LabelSelector> selector = kube::ParseLabelSelector(options.selector);
    if (!selector.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--selector ", core::View(selector.status().message())));
    }
    for (const kube::NodeView& node : snapshot.nodes) {
      if (kube::Matches(*selector, node.labels)) nodes.push_back(&node);
    }
    if (nodes.empty()) {
      return absl::NotFoundError(StrCat("no node matches --selector ", options.selector));
    }
  } else {
    for (const std::string& name : options.nodes) {
      const kube::NodeView* node = snapshot.FindNode(name);
      if (node == nullptr) return absl::NotFoundError(StrCat("node ", name, " not found"));
      nodes.push_back(node);
    }
  }
  VerifyReport report;
  report.dry_run = true;
  for (const kube::NodeView* node : nodes) {
    progress << "verifying " << node->name << "\n";
    NodeVerdict verdict =
        ReadOnlyVerdict(*node, options, DevicePluginStepFromPods(snapshot, *node, options));
    for (const VerifyStep& s : verdict.steps) Progress(progress, s);
    report.nodes.push_back(std::move(verdict));
  }
  return report;
}

}  // namespace gpunode::cluster
