#include "mig/mig_manager.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "kube/object_meta.h"
#include "mig/mig_apply.h"
#include "mig/mig_config.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace gpunode::mig {
namespace {

using json = nlohmann::json;

std::string NodePath(const std::string& node) {
  return absl::StrCat("/api/v1/nodes/", kube::UrlEncode(node));
}

}  // namespace

MigManager::MigManager(const nvml::Library& library, kube::Client& client, ManagerOptions options,
                       core::Env& env)
    : library_(library), client_(client), options_(std::move(options)), env_(env) {}

absl::Status MigManager::SetLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  json patch = {{"metadata", {{"labels", json::object()}}}};
  for (const auto& [key, value] : labels) patch["metadata"]["labels"][key] = value;
  return client_.Patch(NodePath(options_.node), "application/merge-patch+json", patch.dump());
}

absl::Status MigManager::SetState(const std::string& state) {
  spdlog::info("node {}: {}={}", options_.node, kMigConfigStateLabel, state);
  return SetLabels({{kMigConfigStateLabel, state}});
}

absl::Status MigManager::RelabelClients(
    const std::function<bool(std::optional<std::string_view> value)>& select,
    const std::string& to) {
  absl::StatusOr<std::string> body = client_.Get(NodePath(options_.node));
  if (!body.ok()) return body.status();
  absl::StatusOr<kube::ObjectMeta> node =
      kube::ReadObjectMeta(*body, "GET " + NodePath(options_.node), "Node");
  if (!node.ok()) return node.status();
  std::vector<std::pair<std::string, std::string>> changes;
  for (const std::string& key : options_.client_labels) {
    if (select(node->Label(key))) changes.emplace_back(key, to);
  }
  if (changes.empty()) return absl::OkStatus();
  for (const auto& [key, value] : changes) {
    spdlog::info("node {}: {}={}", options_.node, key, value);
  }
  return SetLabels(changes);
}

absl::Status MigManager::PauseClients() {
  // Unset counts as deployed: the DaemonSets' affinity only excludes the paused value.
  return RelabelClients(
      [](std::optional<std::string_view> value) { return !value || *value == "true"; },
      kPausedForMigChange);
}

absl::Status MigManager::ResumeClients() {
  return RelabelClients(
      [](std::optional<std::string_view> value) { return value == kPausedForMigChange; }, "true");
}

absl::Status MigManager::AwaitClientsGone() {
  const absl::Time deadline = env_.Now() + options_.client_timeout;
  while (true) {
    std::vector<std::string> left;
    for (const std::string& selector : options_.client_selectors) {
      kube::ListOptions list{.field_selector = "spec.nodeName=" + options_.node,
                             .label_selector = selector};
      absl::Status st = client_.List(
          "/api/v1/pods", list,
          [&left](simdjson::padded_string_view body,
                  std::string_view source) -> absl::StatusOr<std::string> {
            std::vector<kube::ObjectMeta> pods;
            std::string continue_token;
            RETURN_IF_ERROR(kube::ReadObjectMetaPage(std::string_view(body.data(), body.size()),
                                                     source, "Pod", pods, continue_token));
            for (const kube::ObjectMeta& pod : pods) left.push_back(pod.ns + "/" + pod.name);
            return continue_token;
          });
      if (!st.ok()) return st;
    }
    if (left.empty()) return absl::OkStatus();
    if (env_.Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "GPU client pods still on node ", options_.node, " after ",
          absl::FormatDuration(options_.client_timeout), ": ", absl::StrJoin(left, ", "),
          "; their DaemonSets must keep off a node whose client label is ", kPausedForMigChange,
          " (docs/MIG.md, \"mig manager\")"));
    }
    if (env_.StopRequested()) {
      return absl::CancelledError(absl::StrCat("stopped while waiting for the GPU client pods ",
                                               absl::StrJoin(left, ", "), " to go"));
    }
    env_.SleepFor(options_.poll_interval);
  }
}

absl::Status MigManager::Change(const std::string& config_name) {
  absl::StatusOr<MigConfigFile> file = ReadMigConfig(options_.config_file);
  if (!file.ok()) return file.status();
  absl::StatusOr<std::vector<std::string>> differences = AssertConfig(library_, *file, config_name);
  if (!differences.ok()) return differences.status();
  if (differences->empty()) {
    spdlog::info("node {}: has MIG config \"{}\" already", options_.node, config_name);
    return ResumeClients();  // paused by a run that stopped half-way
  }
  // The plan first: a layout that cannot fit is refused with the clients still running.
  absl::StatusOr<ApplyResult> plan = ApplyConfig(
      library_, *file, config_name, ApplyOptions{.dry_run = true, .force = options_.force});
  if (!plan.ok()) return plan.status();
  if (absl::Status st = PauseClients(); !st.ok()) return st;
  absl::Status changed = AwaitClientsGone();
  if (changed.ok()) {
    absl::StatusOr<ApplyResult> result =
        ApplyConfig(library_, *file, config_name, ApplyOptions{.force = options_.force});
    if (!result.ok()) {
      changed = result.status();
    } else {
      for (const std::string& line : result->lines) spdlog::info("{}", line);
      if (!result->pending.empty()) {
        changed = absl::FailedPreconditionError(absl::StrJoin(result->pending, "; "));
      }
    }
  }
  // The clients come back whatever happened: the GPUs are in the new layout or the old one.
  absl::Status resumed = ResumeClients();
  return changed.ok() ? resumed : changed;
}

absl::Status MigManager::Reconcile(const std::string& config_name) {
  spdlog::info("node {}: {}={}", options_.node, kMigConfigLabel, config_name);
  if (absl::Status st = SetState("pending"); !st.ok()) return st;
  absl::Status changed = Change(config_name);
  if (!changed.ok()) {
    spdlog::error("node {}: MIG config \"{}\": {}", options_.node, config_name, changed.message());
  }
  absl::Status state = SetState(changed.ok() ? "success" : "failed");
  return changed.ok() ? state : changed;
}

}  // namespace gpunode::mig
