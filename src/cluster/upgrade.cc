#include "cluster/upgrade.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster/upgrade_fleet.h"
#include "cluster/upgrade_node.h"
#include "cluster/upgrade_soak.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/label_selector.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

std::string StateOf(const FleetNode& node) {
  return node.state ? std::string(UpgradeStateName(*node.state)) : std::string("(none)");
}

// The dry run: each node's state and what happens to it, and per pool how many nodes and how
// many at a time; the GPU nodes the rollout leaves alone go to `out`.
UpgradeResult PlanFleet(const Fleet& fleet, const UpgradeOptions& options, std::ostream& out) {
  UpgradeResult result;
  result.outcome = UpgradeResult::kPlanned;
  std::vector<std::string> steps;
  for (const FleetPool& pool : fleet.pools) {
    int max = options.max_unavailable.For(static_cast<int>(pool.nodes.size()));
    int to_upgrade = 0;
    for (const FleetNode* node : pool.nodes) {
      NodeProgress p{node->name, node->pool, StateOf(*node), node->driver, ""};
      if (node->NeedsReset(options.driver_version)) {
        bool on_target = node->driver == options.driver_version;
        p.note = on_target ? "already on the target: upgrade-done" : "to upgrade";
        to_upgrade += on_target ? 0 : 1;
      } else if (node->Is(UpgradeState::kUpgradeFailed)) {
        p.note = StrCat("failed: ", node->failure);
      } else if (!node->Is(UpgradeState::kUpgradeDone)) {
        p.note = node->Is(UpgradeState::kUpgradeRequired) ? "to upgrade" : "under way";
        ++to_upgrade;
      }
      result.nodes.push_back(std::move(p));
    }
    steps.push_back(StrCat(pool.name, " (", to_upgrade, " of ", pool.nodes.size(),
                           " node(s) to upgrade, ", max, " at a time, then a ",
                           Seconds(options.soak), " soak)"));
  }
  for (const std::string& outside : fleet.outside) {
    out << "left alone: " << outside << "\n";
  }
  std::string maintenance = options.maintenance_job.is_null()
                                ? StrCat("wait until each node reports ", kDriverVersionLabel, "=",
                                         options.driver_version)
                                : StrCat("run maintenance Job ", options.job_namespace,
                                         "/gpunode-upgrade-NODE on each node");
  result.summary = StrCat("dry run: driver ", options.driver_version,
                          ", pools in order: ", absl::StrJoin(steps, "; "),
                          "; maintenance: ", maintenance, "; nothing was changed");
  return result;
}

// The rollout's loop: read the nodes, act on them, wait; until done, halted or interrupted.
class Rollout {
 public:
  Rollout(kube::Client& client, const UpgradeOptions& options, core::Env& env, std::ostream& out)
      : client_(client),
        options_(options),
        env_(env),
        out_(out),
        step_env_(*this),
        ctx_{client, options, step_env_, out} {}

  absl::StatusOr<UpgradeResult> Run() {
    absl::StatusOr<UpgradeResult> result = RunHoldingLease();
    // An error ends the command as an outcome does: the next copy need not wait out the lease.
    if (!result.ok() && lease_) {
      absl::Status released = lease_->Release(env_.Now());
      if (!released.ok()) out_ << "could not release the lease: " << released.message() << "\n";
      lease_.reset();
    }
    return result;
  }

 private:
  absl::StatusOr<UpgradeResult> RunHoldingLease() {
    if (!options_.dry_run) {
      lease_.emplace(client_, options_.lease);
      ASSIGN_OR_RETURN(std::optional<UpgradeResult> refused, AcquireLease());
      if (refused) return *refused;
    }
    for (;;) {
      RETURN_IF_ERROR(lease_error_);
      if (env_.StopRequested()) return Finish(UpgradeResult::kInterrupted, Interrupted());
      RETURN_IF_ERROR(RenewLease());
      ASSIGN_OR_RETURN(Fleet fleet, ReadFleet(client_, options_));
      if (options_.dry_run) return Plan(fleet);
      ASSIGN_OR_RETURN(std::optional<UpgradeResult> result, Tick(fleet));
      if (result) return *result;
    }
  }

  // One look at the fleet: a result when the rollout ends here, nothing when it goes on.
  absl::StatusOr<std::optional<UpgradeResult>> Tick(Fleet& fleet) {
    FleetPool* active = nullptr;
    for (FleetPool& pool : fleet.pools) {
      if (!pool.Soaked()) {
        active = &pool;
        break;
      }
    }
    // The pools up to the active one take this rollout's labels; later ones stay untouched.
    bool reset = false;
    for (FleetPool& pool : fleet.pools) {
      for (FleetNode* node : pool.nodes) {
        if (node->NeedsReset(options_.driver_version)) {
          RETURN_IF_ERROR(RenewLease());
          RETURN_IF_ERROR(Reset(*node));
          reset = true;
        }
      }
      if (&pool == active) break;
    }
    if (reset) return std::nullopt;

    bool moved = false;
    for (FleetPool& pool : fleet.pools) {
      for (FleetNode* node : pool.nodes) {
        if (!node->state || !InProgress(*node->state)) continue;
        RETURN_IF_ERROR(lease_error_);
        if (env_.StopRequested()) return Finish(UpgradeResult::kInterrupted, Interrupted(), &fleet);
        RETURN_IF_ERROR(RenewLease());
        ASSIGN_OR_RETURN(bool changed, StepNode(ctx_, *node));
        RETURN_IF_ERROR(lease_error_);
        moved = moved || changed;
      }
    }
    if (moved) return std::nullopt;

    std::vector<const FleetNode*> failed;
    bool in_progress = false;
    for (const FleetPool& pool : fleet.pools) {
      for (const FleetNode* node : pool.nodes) {
        if (node->Is(UpgradeState::kUpgradeFailed) && node->target == options_.driver_version) {
          failed.push_back(node);
        }
        in_progress = in_progress || (node->state && InProgress(*node->state));
      }
    }
    if (!failed.empty()) {
      // Nodes under way finish their upgrade; nothing new starts.
      if (!in_progress) return Finish(UpgradeResult::kHalted, Halted(fleet, failed), &fleet);
      RETURN_IF_ERROR(Wait(options_.poll_interval));
      return std::nullopt;
    }
    if (active == nullptr) {
      return Finish(UpgradeResult::kDone,
                    StrCat("every pool is on driver ", options_.driver_version,
                           " and soaked: ", PoolNames(fleet)),
                    &fleet);
    }
    if (!active->Done()) {
      ASSIGN_OR_RETURN(bool started, StartNodes(*active));
      if (!started) RETURN_IF_ERROR(Wait(options_.poll_interval));
      return std::nullopt;
    }
    return Soak(*active);
  }

  // Labels a node for this rollout: upgrade-done when it already runs the target driver,
  // upgrade-required otherwise; what an earlier rollout left in the annotations goes.
  absl::Status Reset(const FleetNode& node) {
    UpgradeState state = node.driver == options_.driver_version ? UpgradeState::kUpgradeDone
                                                                : UpgradeState::kUpgradeRequired;
    json annotations = {{std::string(kUpgradeTargetAnnotation), options_.driver_version}};
    for (std::string_view key : {kUpgradeMaintenanceAnnotation, kUpgradeFailureAnnotation,
                                 kUpgradeSoakStartedAnnotation, kUpgradeSoakPassedAnnotation}) {
      annotations[std::string(key)] = nullptr;
    }
    return MoveNode(ctx_, node, state, {{"metadata", {{"annotations", annotations}}}});
  }

  // Starts as many upgrade-required nodes as --max-unavailable allows: nodes already out of
  // service (cordoned, not Ready) first, and they take no slot, as the GPU Operator counts.
  absl::StatusOr<bool> StartNodes(const FleetPool& pool) {
    const int max = options_.max_unavailable.For(static_cast<int>(pool.nodes.size()));
    int unavailable = 0;
    std::vector<const FleetNode*> waiting;
    for (const FleetNode* node : pool.nodes) {
      if (node->Unavailable() || node->Is(UpgradeState::kCordonRequired)) ++unavailable;
      if (node->Is(UpgradeState::kUpgradeRequired)) waiting.push_back(node);
    }
    std::stable_sort(waiting.begin(), waiting.end(), [](const FleetNode* a, const FleetNode* b) {
      return a->Unavailable() && !b->Unavailable();
    });
    bool started = false;
    for (const FleetNode* node : waiting) {
      if (!node->Unavailable()) {
        if (unavailable >= max) break;
        ++unavailable;
      }
      RETURN_IF_ERROR(RenewLease());
      RETURN_IF_ERROR(MoveNode(ctx_, *node, UpgradeState::kCordonRequired));
      started = true;
    }
    return started;
  }

  absl::StatusOr<std::optional<UpgradeResult>> Soak(const FleetPool& pool) {
    absl::Time started = absl::InfiniteFuture();
    std::vector<const FleetNode*> unstamped;
    for (const FleetNode* node : pool.nodes) {
      if (node->soak_started == absl::InfinitePast()) {
        unstamped.push_back(node);
      } else {
        started = std::min(started, node->soak_started);
      }
    }
    if (!unstamped.empty()) {
      // A soak half-stamped by a run that was killed keeps its first start.
      if (started == absl::InfiniteFuture()) {
        started = env_.Now();
        out_ << "pool " << pool.name << " is on driver " << options_.driver_version
             << "; soaking for " << Seconds(options_.soak) << "\n";
      }
      RETURN_IF_ERROR(Annotate(unstamped, kUpgradeSoakStartedAnnotation, started));
      return std::nullopt;
    }
    absl::Time now = env_.Now();
    absl::Time ends = started + options_.soak;
    bool final_check = now >= ends;
    if (final_check || soak_checked_pool_ != pool.name ||
        now - soak_checked_at_ >= options_.soak_check_interval) {
      ASSIGN_OR_RETURN(std::vector<Regression> regressions,
                       CheckSoak(client_, pool, started, options_, step_env_));
      RETURN_IF_ERROR(lease_error_);
      soak_checked_pool_ = pool.name;
      soak_checked_at_ = now;
      if (!regressions.empty()) {
        for (const Regression& r : regressions) {
          for (const FleetNode* node : pool.nodes) {
            if (node->name != r.node) continue;
            RETURN_IF_ERROR(RenewLease());
            RETURN_IF_ERROR(
                FailNode(ctx_, *node,
                         StrCat("regression during the soak of pool ", pool.name, ": ", r.why)));
          }
        }
        return std::nullopt;
      }
      // One line a check, whatever the pool's size: a day's soak at the default interval stays
      // readable.
      if (!final_check) {
        out_ << "pool " << pool.name << ": " << Seconds(now - started) << " of "
             << Seconds(options_.soak) << " soaked, " << pool.nodes.size()
             << " node(s) checked, no regression\n";
      } else {
        RETURN_IF_ERROR(Annotate(pool.nodes, kUpgradeSoakPassedAnnotation, now));
        out_ << "pool " << pool.name << " soaked " << Seconds(options_.soak)
             << " with no regression\n";
        return std::nullopt;
      }
    }
    absl::Time next = std::min(ends, soak_checked_at_ + options_.soak_check_interval);
    RETURN_IF_ERROR(Wait(std::max(next - env_.Now(), absl::ZeroDuration())));
    return std::nullopt;
  }

  template <typename Nodes>
  absl::Status Annotate(const Nodes& nodes, std::string_view key, absl::Time at) {
    json patch = {{"metadata", {{"annotations", {{std::string(key), Rfc3339(at)}}}}}};
    for (const FleetNode* node : nodes) {
      RETURN_IF_ERROR(RenewLease());
      RETURN_IF_ERROR(client_.Patch(StrCat("/api/v1/nodes/", kube::UrlEncode(node->name)),
                                    "application/merge-patch+json", patch.dump()));
    }
    return absl::OkStatus();
  }

  // The Env of the steps that wait inside (a smoke pod runs for minutes): their sleeps renew the
  // lease too, and a lost lease stops the rollout (lease_error_ says why, before any
  // interruption is reported).
  class StepEnv : public core::EnvWrapper {
   public:
    explicit StepEnv(Rollout& rollout) : EnvWrapper(rollout.env_), rollout_(rollout) {}
    bool SleepUntil(absl::Time deadline) override {
      bool slept = EnvWrapper::SleepUntil(deadline);
      if (rollout_.lease_error_.ok()) rollout_.lease_error_ = rollout_.RenewLease();
      if (rollout_.lease_error_.ok()) return slept;
      RequestStop();
      return false;
    }

   private:
    Rollout& rollout_;
  };

  // Sleeps, renewing the lease often enough that it never lapses; ends early on interruption.
  absl::Status Wait(absl::Duration d) {
    absl::Time until = env_.Now() + d;
    absl::Duration step = lease_ ? options_.lease.duration / 3 : absl::InfiniteDuration();
    while (env_.Now() < until && !env_.StopRequested()) {
      env_.SleepFor(std::min(until - env_.Now(), step));
      RETURN_IF_ERROR(RenewLease());
    }
    return RenewLease();
  }

  // Renews the lease once a third of its duration has passed since the last renewal. Called on
  // every pass and before every change to a node, and from the steps' sleeps: a pass over many
  // nodes can outlast the lease, and no change may be made on a lease that could have lapsed.
  absl::Status RenewLease() {
    if (!lease_) return absl::OkStatus();
    absl::Time now = env_.Now();
    if (now - renewed_at_ < options_.lease.duration / 3) return absl::OkStatus();
    RETURN_IF_ERROR(lease_->Renew(now));
    renewed_at_ = now;
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<UpgradeResult>> AcquireLease() {
    bool said = false;
    for (;;) {
      ASSIGN_OR_RETURN(std::optional<kube::LeaseHolder> holder, lease_->TryAcquire(env_.Now()));
      if (!holder) {
        renewed_at_ = env_.Now();
        return std::nullopt;
      }
      std::string where = StrCat("lease ", options_.lease.ns, "/", options_.lease.name, " is ",
                                 holder->Describe(env_.Now()));
      if (!options_.wait_for_lease) {
        lease_.reset();
        UpgradeResult result;
        result.outcome = UpgradeResult::kLeaseHeld;
        result.summary = StrCat("another gpunode cluster upgrade is running: ", where,
                                "; nothing was changed (--wait-for-lease waits for it)");
        return result;
      }
      if (!said) out_ << "waiting: " << where << "\n" << std::flush;
      said = true;
      absl::Duration free_in = holder->renewed + holder->duration - env_.Now();
      env_.SleepFor(std::clamp(free_in, absl::Seconds(1), options_.poll_interval));
      if (env_.StopRequested()) {
        lease_.reset();
        UpgradeResult result;
        result.outcome = UpgradeResult::kInterrupted;
        result.summary = "interrupted while waiting for the lease; nothing was changed";
        return result;
      }
    }
  }

  std::string Interrupted() const {
    return "interrupted: every node is in a state the rollout resumes from; run the same command "
           "again to go on";
  }

  std::string PoolNames(const Fleet& fleet) const {
    std::vector<std::string> names;
    for (const FleetPool& pool : fleet.pools) names.push_back(pool.name);
    return absl::StrJoin(names, ", ");
  }

  std::string Halted(const Fleet& fleet, const std::vector<const FleetNode*>& failed) const {
    std::vector<std::string> why;
    std::vector<std::string> names;
    for (const FleetNode* node : failed) {
      why.push_back(StrCat(node->name, " (pool ", node->pool, "): ",
                           node->failure.empty() ? std::string("upgrade-failed") : node->failure));
      names.push_back(std::string(node->name));
    }
    std::vector<std::string> untouched;
    bool after = false;
    for (const FleetPool& pool : fleet.pools) {
      if (after && !pool.Done()) untouched.push_back(pool.name);
      after = after || pool.Failed();
    }
    std::string text = StrCat("rollout halted: ", absl::StrJoin(why, "; "));
    if (!untouched.empty()) {
      core::StrAppend(&text, "; pools not started: ", absl::StrJoin(untouched, ", "));
    }
    core::StrAppend(&text, "; fix the node, then `kubectl label node ", absl::StrJoin(names, " "),
                    " ", kUpgradeStateLabel, "-` and run again to retry it");
    return text;
  }

  UpgradeResult Plan(const Fleet& fleet) { return PlanFleet(fleet, options_, out_); }

  UpgradeResult Finish(UpgradeResult::Outcome outcome, std::string summary,
                       const Fleet* fleet = nullptr) {
    if (lease_) {
      absl::Status released = lease_->Release(env_.Now());
      if (!released.ok()) out_ << "could not release the lease: " << released.message() << "\n";
      lease_.reset();
    }
    UpgradeResult result;
    result.outcome = outcome;
    result.summary = std::move(summary);
    if (fleet != nullptr) {
      for (const FleetPool& pool : fleet->pools) {
        for (const FleetNode* node : pool.nodes) {
          result.nodes.push_back(
              {node->name, node->pool, StateOf(*node), node->driver, node->failure});
        }
      }
    }
    return result;
  }

  kube::Client& client_;
  const UpgradeOptions& options_;
  core::Env& env_;
  std::ostream& out_;
  absl::Status lease_error_;  // a renewal that failed inside a step
  StepEnv step_env_;
  StepContext ctx_;
  std::optional<kube::LeaseLock> lease_;
  absl::Time renewed_at_ = absl::InfinitePast();
  std::string soak_checked_pool_;
  absl::Time soak_checked_at_ = absl::InfinitePast();
};

}  // namespace

int MaxUnavailable::For(int pool_size) const {
  int n = count;
  if (percent) n = static_cast<int>(std::ceil(pool_size * count / 100.0));
  return std::max(n, 1);
}

absl::StatusOr<MaxUnavailable> ParseMaxUnavailable(std::string_view text) {
  MaxUnavailable m;
  std::string_view number = text;
  if (!number.empty() && number.back() == '%') {
    m.percent = true;
    number.remove_suffix(1);
  }
  if (!absl::SimpleAtoi(absl::string_view(number.data(), number.size()), &m.count) || m.count < 1 ||
      (m.percent && m.count > 100)) {
    return absl::InvalidArgumentError(StrCat("--max-unavailable ", text,
                                             ": give a count of nodes (1 or more) or a "
                                             "percentage of the pool, e.g. 2 or 25%"));
  }
  return m;
}

absl::Status ParseRegressions(std::string_view text, UpgradeOptions& options) {
  options.regress_on_gpus = options.regress_on_xids = options.regress_on_verify = false;
  for (absl::string_view word :
       absl::StrSplit(absl::string_view(text.data(), text.size()), ',', absl::SkipWhitespace())) {
    if (word == "unhealthy-gpus") {
      options.regress_on_gpus = true;
    } else if (word == "xid") {
      options.regress_on_xids = true;
    } else if (word == "verify") {
      options.regress_on_verify = true;
    } else {
      return absl::InvalidArgumentError(StrCat("--regression ", text, ": \"", core::View(word),
                                               "\" is none of unhealthy-gpus, xid, verify"));
    }
  }
  if (!options.regress_on_gpus && !options.regress_on_xids && !options.regress_on_verify) {
    return absl::InvalidArgumentError(
        StrCat("--regression ", text, ": name at least one of unhealthy-gpus, xid, verify"));
  }
  return absl::OkStatus();
}

absl::StatusOr<UpgradeResult> PlanUpgrade(kube::ClusterSnapshot snapshot,
                                          const UpgradeOptions& options, std::ostream& out) {
  if (!options.selector.empty()) {
    absl::StatusOr<kube::LabelSelector> selector = kube::ParseLabelSelector(options.selector);
    if (!selector.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--selector ", core::View(selector.status().message())));
    }
    // What the API server leaves out of its answer when asked with the selector.
    std::erase_if(snapshot.nodes, [&](const kube::NodeView& node) {
      return !kube::Matches(*selector, node.labels);
    });
  }
  ASSIGN_OR_RETURN(Fleet fleet, FleetFrom(std::move(snapshot), options));
  return PlanFleet(fleet, options, out);
}

absl::StatusOr<UpgradeResult> RunUpgrade(kube::Client& client, const UpgradeOptions& options,
                                         core::Env& env, std::ostream& out) {
  Rollout rollout(client, options, env, out);
  return rollout.Run();
}

void PrintUpgradeTable(const UpgradeResult& result, std::ostream& out) {
  size_t w_node = 4, w_pool = 4, w_state = 5, w_driver = 6;
  for (const NodeProgress& n : result.nodes) {
    w_node = std::max(w_node, n.node.size());
    w_pool = std::max(w_pool, n.pool.size());
    w_state = std::max(w_state, n.state.size());
    w_driver = std::max(w_driver, n.driver.size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  if (!result.nodes.empty()) {
    out << pad("NODE", w_node) << pad("POOL", w_pool) << pad("STATE", w_state)
        << pad("DRIVER", w_driver) << "NOTE\n";
    for (const NodeProgress& n : result.nodes) {
      out << pad(n.node, w_node) << pad(n.pool, w_pool) << pad(n.state, w_state)
          << pad(n.driver.empty() ? "-" : n.driver, w_driver) << n.note << "\n";
    }
  }
  out << result.summary << "\n";
}

std::string UpgradeJson(const UpgradeResult& result) {
  static constexpr const char* kOutcomes[] = {"done", "halted", "interrupted", "planned",
                                              "lease-held"};
  json nodes = json::array();
  for (const NodeProgress& n : result.nodes) {
    nodes.push_back({{"node", n.node},
                     {"pool", n.pool},
                     {"state", n.state},
                     {"driver", n.driver},
                     {"note", n.note}});
  }
  json j = {{"outcome", kOutcomes[result.outcome]}, {"summary", result.summary}, {"nodes", nodes}};
  return j.dump(2) + "\n";
}

}  // namespace gpunode::cluster
