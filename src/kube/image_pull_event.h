// What gpunode keeps of the kubelet's image pull events (core/v1 or events.k8s.io/v1 Events):
// which image a pod waited for, on which node, for how long, and whether the pull failed.
// Every other event is dropped while reading.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpunode::kube {

enum class PullOutcome : uint8_t {
  kPulled,   // reason Pulled: "Successfully pulled image \"X\" in 3m12.5s (3m12.5s including ...)"
  kFailed,   // reason Failed: "Failed to pull image \"X\": ..."
  kBackOff,  // reason BackOff: "Back-off pulling image \"X\""
};

struct ImagePullEvent {
  std::string_view ns;
  std::string_view pod;
  std::string_view node;  // source.host (core/v1) or deprecatedSource.host / reportingInstance
  std::string_view image;
  PullOutcome outcome = PullOutcome::kPulled;
  // kPulled: how long the pod waited for the image ("including waiting" when the message says it,
  // the pull itself otherwise), and the pull alone.
  int64_t waited_millis = 0;
  int64_t pulled_millis = 0;
  int64_t first_unix = 0;  // firstTimestamp (or eventTime); 0 when absent
  int64_t last_unix = 0;   // lastTimestamp (or series.lastObservedTime); 0 when absent
  int64_t count = 1;
};

// The image, outcome and durations of a kubelet message, as kubelets from 1.20 to today write
// them (1.30+ append ". Image size: N bytes."); nullopt for any other event.
struct PullMessage {
  PullOutcome outcome = PullOutcome::kPulled;
  std::string_view image;  // points into `message`
  int64_t waited_millis = 0;
  int64_t pulled_millis = 0;
};
std::optional<PullMessage> ParsePullMessage(std::string_view reason, std::string_view message);

// A Go time.Duration as String() prints it ("3m12.5s", "1h0m2s", "850ms", "12µs"), in
// milliseconds; nullopt when it is not one.
std::optional<int64_t> ParseGoDurationMillis(std::string_view text);

}  // namespace gpunode::kube
