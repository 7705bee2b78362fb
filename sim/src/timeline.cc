#include "timeline.h"

#include <array>
#include <set>
#include <utility>

#include "messages.h"
#include "text_values.h"

namespace gpunode::sim {
namespace {

constexpr std::array<std::pair<TimelineKind, std::string_view>, 8> kKinds = {{
    {TimelineKind::kXid, "xid"},
    {TimelineKind::kFallOffBus, "fall_off_bus"},
    {TimelineKind::kRecover, "recover"},
    {TimelineKind::kProcessStart, "process_start"},
    {TimelineKind::kProcessExit, "process_exit"},
    {TimelineKind::kSet, "set"},
    {TimelineKind::kEcc, "ecc"},
    {TimelineKind::kRemap, "remap"},
}};

bool has_instance(const GpuModel& gpu, unsigned gi, unsigned ci) {
  for (const MigDevice& mig : gpu.mig_devices) {
    if (mig.gpu_instance_id == gi && (ci == kNoInstance || mig.compute_instance_id == ci))
      return true;
  }
  return false;
}

}  // namespace

std::optional<SimTime> parse_duration(std::string_view text) {
  text = trim(text);
  struct Unit {
    std::string_view suffix;
    int64_t nanoseconds;
  };
  // Longest suffix first, so "ms" is not read as "s".
  constexpr std::array<Unit, 5> kUnits = {{
      {"ms", 1'000'000},
      {"us", 1'000},
      {"s", 1'000'000'000},
      {"m", 60'000'000'000},
      {"h", 3'600'000'000'000},
  }};
  if (text == "0") return SimTime{0};
  for (const Unit& unit : kUnits) {
    if (text.size() <= unit.suffix.size() ||
        text.substr(text.size() - unit.suffix.size()) != unit.suffix) {
      continue;
    }
    auto scaled = parse_fixed(trim(text.substr(0, text.size() - unit.suffix.size())), 9);
    constexpr int64_t kMaxNanoseconds = 24LL * 3600 * 1'000'000'000;
    if (!scaled) return std::nullopt;
    // scaled is the number times 1e9: multiply by the unit and divide by 1e9, exactly.
    __int128 nanoseconds = static_cast<__int128>(*scaled) * unit.nanoseconds / 1'000'000'000;
    if (nanoseconds > static_cast<__int128>(kMaxNanoseconds)) return std::nullopt;
    return SimTime{static_cast<int64_t>(nanoseconds)};
  }
  return std::nullopt;
}

std::optional<TimelineKind> parse_timeline_kind(std::string_view text) {
  for (const auto& [kind, name] : kKinds) {
    if (name == text) return kind;
  }
  return std::nullopt;
}

std::string_view timeline_kind_name(TimelineKind kind) {
  for (const auto& [k, name] : kKinds) {
    if (k == kind) return name;
  }
  return "?";
}

std::string timeline_kind_names() {
  std::string names;
  for (const auto& [kind, name] : kKinds) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

std::optional<TimelineProblem> check_timeline(const NodeModel& node) {
  std::vector<bool> lost(node.gpus.size(), false);
  std::vector<std::set<unsigned>> running(node.gpus.size());
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    for (const ProcessInfo& p : node.gpus[g].processes) running[g].insert(p.pid);
  }
  for (size_t i = 0; i < node.timeline.size(); ++i) {
    const TimelineEvent& event = node.timeline[i];
    auto problem = [&](std::string what) { return TimelineProblem{i, std::move(what)}; };
    if (event.gpu >= node.gpus.size()) {
      return problem(str_cat("gpu ", event.gpu, " does not exist; the node has ", node.gpus.size(),
                             " GPUs, numbered from 0"));
    }
    const GpuModel& gpu = node.gpus[event.gpu];
    bool mig = gpu.mig_enabled.value_or(false);
    unsigned gi = event.kind == TimelineKind::kProcessStart ? event.process.gpu_instance_id
                                                            : event.gpu_instance_id;
    unsigned ci = event.kind == TimelineKind::kProcessStart ? event.process.compute_instance_id
                                                            : event.compute_instance_id;
    if (gi != kNoInstance && !mig) {
      return problem(str_cat("names gpu_instance_id ", gi, " but GPU ", event.gpu,
                             " does not have MIG enabled"));
    }
    if (ci != kNoInstance && gi == kNoInstance) {
      return problem("names compute_instance_id without gpu_instance_id; give both");
    }
    if (gi != kNoInstance && !has_instance(gpu, gi, ci)) {
      return problem(
          str_cat("GPU ", event.gpu, " has no MIG instance with gpu_instance_id ", gi,
                  ci == kNoInstance ? std::string() : str_cat(" and compute_instance_id ", ci)));
    }
    switch (event.kind) {
      case TimelineKind::kFallOffBus:
        if (lost[event.gpu])
          return problem(str_cat("GPU ", event.gpu, " has already fallen off the bus then"));
        lost[event.gpu] = true;
        break;
      case TimelineKind::kRecover:
        if (!lost[event.gpu]) {
          return problem(str_cat("GPU ", event.gpu,
                                 " cannot recover: it has not fallen off the bus before then"));
        }
        lost[event.gpu] = false;
        break;
      case TimelineKind::kProcessStart:
        if (mig && gi == kNoInstance) {
          return problem(str_cat("GPU ", event.gpu,
                                 " has MIG enabled, so a process runs in a MIG instance; give "
                                 "gpu_instance_id and compute_instance_id"));
        }
        if (!running[event.gpu].insert(event.process.pid).second) {
          return problem(str_cat("pid ", event.process.pid, " is already running on GPU ",
                                 event.gpu, " then"));
        }
        break;
      case TimelineKind::kProcessExit:
        if (running[event.gpu].erase(event.process.pid) == 0) {
          return problem(
              str_cat("pid ", event.process.pid, " is not running on GPU ", event.gpu, " then"));
        }
        break;
      case TimelineKind::kEcc:
        if (!gpu.ecc_enabled.value_or(false)) {
          return problem(
              str_cat("GPU ", event.gpu, " does not have ECC enabled; set its ecc.mode: enabled"));
        }
        break;
      case TimelineKind::kRemap:
        if (!gpu.remapped_rows) {
          return problem(
              str_cat("GPU ", event.gpu, " has no row remapper; give it remapped_rows: {...}"));
        }
        break;
      case TimelineKind::kXid:
      case TimelineKind::kSet:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace gpunode::sim
