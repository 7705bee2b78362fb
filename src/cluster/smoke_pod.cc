#include "cluster/smoke_pod.h"

#include <algorithm>
#include <functional>

#include "cluster/doctor_report.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/pod_status.h"

namespace gpunode::cluster {

using json = nlohmann::json;
using core::StrCat;

namespace {

constexpr std::string_view kContainer = "smoke";
constexpr std::string_view kWorkloadContainer = "workload";
// Label values are at most 63 characters; longer node names are only in the pod's name.
constexpr size_t kMaxLabelValue = 63;
// Enough of a log for any doctor report; a chatty custom image is cut.
constexpr int kLogLimitBytes = 256 * 1024;

std::string PodPath(const std::string& ns, std::string_view name) {
  return StrCat("/api/v1/namespaces/", kube::UrlEncode(ns), "/pods/", kube::UrlEncode(name));
}

// Why a Pending pod waits, in the scheduler's or the kubelet's words.
std::string PendingReason(const kube::PodStatus& pod) {
  for (const kube::PodCondition& c : pod.conditions) {
    if (c.type == "PodScheduled" && c.status == "False") {
      return StrCat("not scheduled: ", c.message);
    }
  }
  for (const kube::ContainerStatus& c : pod.containers) {
    if (!c.waiting_reason.empty()) {
      return StrCat("container waiting: ", c.waiting_reason, " ", c.waiting_message);
    }
  }
  return "Pending";
}

std::string LastLine(std::string_view log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.remove_suffix(1);
  size_t nl = log.rfind('\n');
  std::string_view line = nl == std::string_view::npos ? log : log.substr(nl + 1);
  if (line.size() > 200) line = line.substr(0, 200);
  return std::string(line);
}

// DELETE with a short grace period; 404 means it is gone already.
absl::Status DeletePod(kube::Client& client, const std::string& ns, std::string_view name) {
  json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"gracePeriodSeconds", 0}};
  kube::HttpRequest del{"DELETE", PodPath(ns, name), "application/json", options.dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse response, client.Send(del));
  if (response.status == 404 || response.status == 200 || response.status == 202) {
    return absl::OkStatus();
  }
  return kube::StatusFromResponse(del, response);
}

// Waits until a pod of that name no longer exists (a leftover's deletion takes its grace period).
absl::Status WaitGone(kube::Client& client, const std::string& ns, std::string_view name,
                      const VerifyOptions& options, core::Env& env) {
  absl::Time deadline = env.Now() + options.timeout;
  for (;;) {
    absl::StatusOr<std::string> body = client.Get(PodPath(ns, name));
    if (absl::IsNotFound(body.status())) return absl::OkStatus();
    if (!body.ok()) return body.status();
    if (env.Now() >= deadline || env.StopRequested()) {
      return absl::DeadlineExceededError(
          StrCat("pod ", ns, "/", name, " of an earlier run is still being deleted after ",
                 absl::FormatDuration(options.timeout), "; `kubectl delete pod -n ", ns, " ", name,
                 " --grace-period=0 --force` if its node is gone"));
    }
    env.SleepFor(options.poll_interval);
  }
}

}  // namespace

std::string SmokePodName(std::string_view node) { return StrCat(kSmokePodPrefix, node); }

std::string WorkloadPodName(std::string_view node) {
  return StrCat(kSmokePodPrefix, node, "-workload");
}

json WorkloadPodManifest(const kube::NodeView& node, int64_t gpus, const VerifyOptions& options) {
  json pod = SmokePodManifest(node, gpus, options);
  pod["metadata"]["name"] = WorkloadPodName(node.name);
  json& container = pod["spec"]["containers"][0];
  container["name"] = std::string(kWorkloadContainer);
  container["image"] = options.workload_image;
  container.erase("command");
  if (!options.workload_command.empty()) container["command"] = options.workload_command;
  // A CUDA program needs more than the smoke pod's 64Mi, and may write its scratch files.
  container["resources"]["limits"]["memory"] = "1Gi";
  container["resources"]["requests"]["memory"] = "256Mi";
  container["securityContext"]["readOnlyRootFilesystem"] = false;
  return pod;
}

void JudgeWorkload(std::string_view phase, std::string_view exit_detail, std::string_view log,
                   int64_t gpus, VerifyStep& step) {
  if (phase == "Succeeded") {
    step.result = StepResult::kPass;
    step.evidence =
        StrCat("the workload succeeded with ", gpus, " GPU(s); last line: ", LastLine(log));
    return;
  }
  step.result = StepResult::kFail;
  step.evidence = StrCat("the workload pod ", phase, exit_detail.empty() ? "" : " (", exit_detail,
                         exit_detail.empty() ? "" : ")", "; last line of its log: ", LastLine(log));
  step.fix =
      "the GPUs are visible but the workload fails on them: read its log (CUDA's error names "
      "the cause, e.g. \"CUDA driver version is insufficient\"), then `gpunode doctor` on the "
      "node";
}

json SmokePodManifest(const kube::NodeView& node, int64_t gpus, const VerifyOptions& options) {
  json labels = {{"app.kubernetes.io/name", std::string(kSmokePodAppLabel)},
                 {"app.kubernetes.io/managed-by", "gpunode"}};
  if (node.name.size() <= kMaxLabelValue) labels["gpunode.io/node"] = std::string(node.name);
  // The GPU taint, the cordon (verify runs before a node is put back), and the node's own
  // NoSchedule taints: the pod is meant for this node whatever keeps other work off it.
  json tolerations =
      json::array({{{"key", std::string(kube::kGpuTaintKey)}, {"operator", "Exists"}},
                   {{"key", "node.kubernetes.io/unschedulable"},
                    {"operator", "Exists"},
                    {"effect", "NoSchedule"}}});
  for (const kube::Taint& t : node.taints) {
    if (t.key == kube::kGpuTaintKey || t.key.starts_with("node.kubernetes.io/") ||
        t.effect != "NoSchedule") {
      continue;
    }
    tolerations.push_back(
        {{"key", std::string(t.key)}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  }
  std::vector<std::string> command = options.command;
  bool doctor = options.image == kGpunodeImage && command.empty();
  if (doctor) command = {"gpunode", "doctor", "--in-container", "-o", "json"};
  json container = {
      {"name", std::string(kContainer)},
      {"image", options.image},
      // libnvidia-ml (utility) for NVML and libcuda (compute) for container.driver-libraries.
      {"env", {{{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "compute,utility"}}}},
      {"resources",
       {{"limits",
         {{std::string(kube::kGpuResource), std::to_string(gpus)},
          {"cpu", "100m"},
          {"memory", "64Mi"}}},
        {"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}}},
      // Not privileged: a privileged container sees every GPU, hiding broken isolation.
      {"securityContext",
       {{"privileged", false},
        {"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", {"ALL"}}}}}}};
  if (!command.empty()) container["command"] = command;
  json spec = {
      {"restartPolicy", "Never"},
      // Ends the pod on its own even if gpunode is killed before it can delete it.
      {"activeDeadlineSeconds", std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout))},
      {"terminationGracePeriodSeconds", 5},
      {"automountServiceAccountToken", false},
      // Through the scheduler (so its GPU accounting is part of the test), on this node only.
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             {{{"matchFields",
                {{{"key", "metadata.name"},
                  {"operator", "In"},
                  {"values", {std::string(node.name)}}}}}}}}}}}}}},
      {"tolerations", tolerations},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", 65534},
        {"runAsGroup", 65534},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"containers", {container}}};
  if (!options.runtime_class.empty()) spec["runtimeClassName"] = options.runtime_class;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", SmokePodName(node.name)}, {"namespace", options.ns}, {"labels", labels}}},
          {"spec", spec}};
}

void JudgeSmokePodWithoutLog(std::string_view phase, const absl::Status& why, bool doctor,
                             int64_t gpus, VerifyStep& step) {
  std::string unread = StrCat("its log could not be read (", why.message(), ")");
  if (!doctor && phase == "Succeeded") {
    step.result = StepResult::kPass;
    step.evidence = StrCat("the pod succeeded with ", gpus, " GPU(s); ", unread);
    return;
  }
  step.result = StepResult::kFail;
  step.evidence = StrCat("the pod ", phase, " with ", gpus, " GPU(s), but ", unread,
                         doctor ? ": the doctor report in it is what this step judges" : "");
  step.fix =
      "`kubectl logs` of a pod on this node fails too: the API server must reach the kubelet "
      "(the node's address and the kubelet's port 10250); with another --image and --command, "
      "the step judges the pod's end alone";
}

void JudgeSmokePod(std::string_view phase, std::string_view log, bool doctor, int64_t gpus,
                   VerifyStep& step) {
  step.result = StepResult::kFail;
  // A log that is not a doctor report (a custom image's output, a report cut short) is judged
  // by the pod's end.
  absl::StatusOr<std::vector<DoctorFinding>> report =
      doctor ? ReadDoctorReport(log, "the smoke pod's log")
             : absl::FailedPreconditionError("the pod runs no doctor");
  if (!report.ok()) {
    if (phase == "Succeeded") {
      step.result = StepResult::kPass;
      step.evidence =
          StrCat("the pod succeeded with ", gpus, " GPU(s); last line: ", LastLine(log));
      return;
    }
    step.evidence = StrCat("the pod ", phase, "; last line of its log: ", LastLine(log));
    step.fix = "read the pod's log and events; `gpunode doctor` on the node";
    return;
  }
  std::vector<std::string> failed;
  std::string visible;
  bool visible_ok = false;
  for (const DoctorFinding& f : *report) {
    if (f.id == "container.visible-devices") {
      visible_ok = f.status == "ok";
      visible = StrCat(f.status, ": ", f.summary);
      if (!visible_ok && !f.evidence.empty()) core::StrAppend(&visible, " (saw: ", f.evidence, ")");
    }
    if (f.status == "fail") failed.push_back(StrCat(f.id, ": ", f.summary));
  }
  if (phase == "Succeeded" && visible_ok) {
    step.result = StepResult::kPass;
    step.evidence =
        StrCat("doctor in the pod with ", gpus, " GPU(s): container.visible-devices ", visible);
    return;
  }
  step.evidence = StrCat("doctor in the pod (", phase, ") with ", gpus, " GPU(s): ",
                         visible.empty() ? "container.visible-devices not reported"
                                         : "container.visible-devices " + visible);
  for (const std::string& f : failed) core::StrAppend(&step.evidence, "; ", f);
  step.fix =
      "the GPUs the device plugin allocates are not what the container sees: check the "
      "container runtime's NVIDIA configuration (`gpunode runtime configure`) and the device "
      "plugin's DEVICE_LIST_STRATEGY; docs/DOCTOR.md explains each check";
}

namespace {

// "exit code 1 (Error)" from the terminated container's state; empty when not there.
std::string ExitDetail(const kube::PodStatus& pod) {
  if (pod.containers.empty() || !pod.containers[0].terminated) return "";
  const kube::ContainerStatus& c = pod.containers[0];
  return StrCat("exit code ", c.exit_code,
                c.terminated_reason.empty() ? "" : " (" + c.terminated_reason + ")");
}

// Creates the pod `manifest` (the smoke or workload pod of `node`, as `check` says), waits for it
// to end, judges it with `judge` and deletes it.
absl::StatusOr<VerifyStep> RunPod(
    kube::Client& client, const kube::NodeView& node, const json& manifest, int64_t gpus,
    std::string_view image, std::string_view container, VerifyCheck check,
    const VerifyOptions& options, core::Env& env, std::ostream& progress,
    const std::function<void(std::string_view phase, const kube::PodStatus& pod,
                             const absl::StatusOr<std::string>& log, VerifyStep& step)>& judge) {
  VerifyStep step;
  step.step = check;
  const std::string name =
      check == VerifyCheck::kWorkload ? WorkloadPodName(node.name) : SmokePodName(node.name);
  const std::string& ns = options.ns;
  // A leftover of a run that was killed: delete it and wait until it is gone.
  RETURN_IF_ERROR(DeletePod(client, ns, name));
  RETURN_IF_ERROR(WaitGone(client, ns, name, options, env));

  kube::HttpRequest create{"POST", StrCat("/api/v1/namespaces/", kube::UrlEncode(ns), "/pods"),
                           "application/json", manifest.dump()};
  ASSIGN_OR_RETURN(kube::HttpResponse created, client.Send(create));
  if (created.status != 201 && created.status != 200) {
    return kube::StatusFromResponse(create, created);
  }
  const std::string what = check == VerifyCheck::kWorkload ? "workload pod" : "smoke pod";
  progress << "  " << what << " " << ns << "/" << name << " created (" << gpus << " GPU(s), "
           << image << ")\n"
           << std::flush;

  // From here on the pod is deleted whatever happens.
  auto finish = [&](absl::StatusOr<VerifyStep> result) -> absl::StatusOr<VerifyStep> {
    absl::Status deleted = DeletePod(client, ns, name);
    if (deleted.ok()) {
      progress << "  " << what << " " << ns << "/" << name << " deleted\n" << std::flush;
    }
    if (!result.ok()) return result;
    if (!deleted.ok()) return deleted;
    return result;
  };

  absl::Time deadline = env.Now() + options.timeout;
  std::string phase;
  kube::PodStatus pod;
  for (;;) {
    absl::StatusOr<std::string> body = client.Get(PodPath(ns, name));
    if (!body.ok()) return finish(body.status());
    absl::StatusOr<kube::PodStatus> read =
        kube::ReadPodStatus(*body, StrCat("GET ", PodPath(ns, name)));
    if (!read.ok()) return finish(read.status());
    pod = *std::move(read);
    phase = pod.phase;
    if (phase == "Succeeded" || phase == "Failed") break;
    if (env.StopRequested()) {
      step.evidence = "interrupted while the pod was " + (phase.empty() ? "created" : phase);
      step.fix = "run verify again";
      step.result = StepResult::kFail;
      return finish(step);
    }
    if (env.Now() >= deadline) {
      step.result = StepResult::kFail;
      step.evidence =
          StrCat("the pod did not finish within ", absl::FormatDuration(options.timeout), " (",
                 phase == "Pending" ? PendingReason(pod) : phase, ")");
      step.fix = StrCat("`kubectl describe node ", node.name,
                        "` and the pod's events; raise --timeout for a slow image pull");
      return finish(step);
    }
    env.SleepFor(std::min(options.poll_interval, deadline - env.Now()));
  }
  std::string log_path =
      StrCat(PodPath(ns, name), "/log?container=", container, "&limitBytes=", kLogLimitBytes);
  judge(phase, pod, client.Get(log_path), step);
  return finish(step);
}

}  // namespace

absl::StatusOr<VerifyStep> RunSmokePod(kube::Client& client, const kube::NodeView& node,
                                       int64_t gpus, const VerifyOptions& options, core::Env& env,
                                       std::ostream& progress) {
  bool doctor = options.image == kGpunodeImage && options.command.empty();
  return RunPod(client, node, SmokePodManifest(node, gpus, options), gpus, options.image,
                kContainer, VerifyCheck::kSmokePod, options, env, progress,
                [&](std::string_view phase, const kube::PodStatus&,
                    const absl::StatusOr<std::string>& log, VerifyStep& step) {
                  if (!log.ok()) {
                    // The API server reads logs from the kubelet, a path of its own that can fail
                    // where the rest works (a node address it cannot reach, a kubelet port closed
                    // to it): the pod's end is still known, and the step says what could not be
                    // read instead of ending the command.
                    JudgeSmokePodWithoutLog(phase, log.status(), doctor, gpus, step);
                  } else {
                    JudgeSmokePod(phase, *log, doctor, gpus, step);
                  }
                });
}

absl::StatusOr<VerifyStep> RunWorkloadPod(kube::Client& client, const kube::NodeView& node,
                                          int64_t gpus, const VerifyOptions& options,
                                          core::Env& env, std::ostream& progress) {
  return RunPod(
      client, node, WorkloadPodManifest(node, gpus, options), gpus, options.workload_image,
      kWorkloadContainer, VerifyCheck::kWorkload, options, env, progress,
      [&](std::string_view phase, const kube::PodStatus& pod,
          const absl::StatusOr<std::string>& log, VerifyStep& step) {
        std::string text = log.ok() ? *log : StrCat("(not read: ", log.status().message(), ")");
        JudgeWorkload(phase, ExitDetail(pod), text, gpus, step);
      });
}

}  // namespace gpunode::cluster
