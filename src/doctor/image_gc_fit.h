// Whether a node's images fit its image filesystem under the kubelet's image GC thresholds, in
// the kubelet's own integer arithmetic (pkg/kubelet/images/image_gc_manager.go, SOURCES.md):
//
//   usage%        = 100 - available*100/capacity      GC runs when usage% >= high
//   room after GC = capacity*(100-low)/100            GC frees until this much is available
//
// The problems, most pressing first:
//   kAboveHighThreshold  usage% >= high now: every GC cycle deletes unused images, and pods
//                        pull them again.
//   kLargestDoesNotFit   largest > room after GC: even right after GC the largest image cannot
//                        be pulled.
//   kChurn               it fits, but pulling it into the room after GC puts usage% back at or
//                        above high, so the next GC deletes other unused images (re-pull churn).
//   kGcOff               high is 100, which the kubelet documents as image GC off.
//   kSerializedLargePull serializeImagePulls with an image over kLargeImageBytes: one pull of
//                        it holds every other pull on the node.
// With GC off the fit and churn problems are not judged: nothing is ever freed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpunode::doctor {

inline constexpr uint64_t kLargeImageBytes = uint64_t{5} << 30;  // 5 GiB

struct ImageSize {
  std::string name;
  uint64_t bytes = 0;
};

struct ImageGcInputs {
  uint64_t capacity_bytes = 0;  // must be > 0
  uint64_t available_bytes = 0;
  int high_percent = 85;  // 0..100, low < high (the kubelet refuses anything else)
  int low_percent = 80;
  bool serialize_image_pulls = true;
  std::vector<ImageSize> images;
};

enum class ImageGcProblem {
  kAboveHighThreshold,
  kLargestDoesNotFit,
  kChurn,
  kGcOff,
  kSerializedLargePull,
};

struct ImageGcFit {
  int usage_percent = 0;
  uint64_t room_after_gc_bytes = 0;
  std::optional<ImageSize> largest;
  // The highest low threshold (below high) at which the largest image fits after GC without
  // churn; nullopt when none does, or when there is no fit or churn problem to cure.
  std::optional<int> suggested_low_percent;
  std::vector<ImageGcProblem> problems;  // in the order of the enum
};

// The kubelet's usage percentage of a filesystem (available is clamped to capacity > 0).
int UsagePercent(uint64_t capacity_bytes, uint64_t available_bytes);

// The bytes available once GC has freed down to `low_percent`.
uint64_t RoomAfterGc(uint64_t capacity_bytes, int low_percent);

ImageGcFit AssessImageGc(const ImageGcInputs& inputs);

}  // namespace gpunode::doctor
