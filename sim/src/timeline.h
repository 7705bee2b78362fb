// The timeline section of a profile: durations, event names, and the consistency rules events
// must follow in time order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "node_model.h"

namespace gpunode::sim {

// "250ms", "2s", "1.5s", "1m", "1h", "0" (also "us"); at most 24 hours. nullopt for anything else.
std::optional<SimTime> parse_duration(std::string_view text);

// "xid", "fall_off_bus", ... as written in profiles.
std::optional<TimelineKind> parse_timeline_kind(std::string_view text);
std::string_view timeline_kind_name(TimelineKind kind);
// All event names, for "use one of ..." hints.
std::string timeline_kind_names();

// Replays `node.timeline` (sorted) against the initial state and returns the index of the first
// event that cannot happen then, with why: a process exiting that never started, a GPU recovering
// that was not lost, an Xid naming a MIG instance the GPU does not have.
struct TimelineProblem {
  size_t index;
  std::string what;
};
std::optional<TimelineProblem> check_timeline(const NodeModel& node);

}  // namespace gpunode::sim
