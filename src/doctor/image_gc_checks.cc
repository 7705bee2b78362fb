// kubelet.image-gc: whether the node's GPU images (tens of GB) fit its image filesystem under the
// kubelet's image GC thresholds, and whether one large pull holds up the others. The thresholds
// come from the running kubelet (config file, drop-ins, flags), the filesystem from containerd's
// CRI ImageFsInfo and statvfs of the path it names, the sizes from CRI ListImages.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "containerd/containerd_live.h"
#include "doctor/checks.h"
#include "doctor/image_gc_fit.h"
#include "host/kubelet_config.h"
#include "host/kubelet_process.h"

namespace gpunode::doctor {
namespace {

constexpr size_t kLargestShown = 3;

std::string Bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

template <typename T>
std::string Source(const host::KubeletSetting<T>& setting) {
  return host::DescribeSource(setting.source, setting.origin);
}

std::string ImageName(const containerd::CriImage& image) {
  if (!image.tags.empty()) return image.tags.front();
  if (!image.digests.empty()) return image.digests.front();
  return image.id;
}

bool IsZeroDuration(const std::string& text) {
  absl::Duration duration;
  return absl::ParseDuration(text, &duration) && duration == absl::ZeroDuration();
}

std::string SettingsEvidence(const host::KubeletImageSettings& s) {
  const auto& max_age = s.maximum_gc_age;
  std::string parallel =
      s.max_parallel_image_pulls.value
          ? absl::StrCat("maxParallelImagePulls ", *s.max_parallel_image_pulls.value, " (",
                         Source(s.max_parallel_image_pulls), ")")
          : std::string("maxParallelImagePulls unset");
  return absl::StrCat("imageGCHighThresholdPercent ", s.gc_high_threshold_percent.value, " (",
                      Source(s.gc_high_threshold_percent), "), imageGCLowThresholdPercent ",
                      s.gc_low_threshold_percent.value, " (", Source(s.gc_low_threshold_percent),
                      "), imageMinimumGCAge ", s.minimum_gc_age.value, " (",
                      Source(s.minimum_gc_age), "), imageMaximumGCAge ", max_age.value,
                      IsZeroDuration(max_age.value) ? " = off" : "", " (", Source(max_age),
                      "), serializeImagePulls ", s.serialize_image_pulls.value ? "true" : "false",
                      " (", Source(s.serialize_image_pulls), "), ", parallel);
}

std::string LargestEvidence(std::vector<ImageSize> images) {
  if (images.empty()) return "no images";
  std::sort(images.begin(), images.end(),
            [](const ImageSize& a, const ImageSize& b) { return a.bytes > b.bytes; });
  if (images.size() > kLargestShown) images.resize(kLargestShown);
  std::vector<std::string> shown;
  for (const ImageSize& image : images) {
    shown.push_back(absl::StrCat(image.name, " ", Bytes(image.bytes)));
  }
  return absl::StrCat("largest images: ", absl::StrJoin(shown, ", "));
}

std::string LowFix(const ImageGcFit& fit) {
  if (!fit.suggested_low_percent) {
    return "give the image filesystem more space: no low threshold makes room for this image";
  }
  return absl::StrCat("set imageGCLowThresholdPercent to ", *fit.suggested_low_percent,
                      " or lower in the kubelet's config (or give the image filesystem more "
                      "space), then restart the kubelet");
}

Finding ImageGcCheck(const Context& context) {
  std::optional<std::vector<std::string>> args = host::KubeletCommandLine(context.host());
  if (!args) return Skip("no kubelet process found", "/proc/*/cmdline");
  absl::StatusOr<host::KubeletImageSettings> settings =
      host::ReadKubeletImageSettings(context.host(), *args);
  if (!settings.ok()) {
    return Warn("cannot read the kubelet's image GC settings",
                std::string(settings.status().message()),
                "fix the file or flag named (the kubelet refuses it at its next start)");
  }
  int high = settings->gc_high_threshold_percent.value;
  int low = settings->gc_low_threshold_percent.value;
  std::string evidence = SettingsEvidence(*settings);
  if (high < 0 || high > 100 || low < 0 || low > 100 || low >= high) {
    return Fail(absl::StrCat("the kubelet refuses image GC thresholds high ", high, "%, low ", low,
                             "%: both must be within 0..100 and low below high"),
                evidence,
                "set imageGCHighThresholdPercent and imageGCLowThresholdPercent (or "
                "--image-gc-high-threshold/--image-gc-low-threshold), e.g. 85 and 70, and "
                "restart the kubelet");
  }

  std::string socket = context.ContainerdSocket();
  auto timeout = context.options().rpc_timeout;
  absl::StatusOr<std::vector<containerd::CriImageFilesystem>> filesystems =
      containerd::QueryCriImageFilesystems(socket, timeout);
  absl::StatusOr<std::vector<containerd::CriImage>> images =
      containerd::QueryCriImages(socket, timeout);
  if (!filesystems.ok() || !images.ok()) {
    absl::Status error = filesystems.ok() ? images.status() : filesystems.status();
    return Warn("containerd's CRI image service does not answer", std::string(error.message()),
                "systemctl status containerd; check that its CRI plugin is enabled");
  }
  const containerd::CriImageFilesystem& imagefs = filesystems->front();
  absl::StatusOr<core::FilesystemSpace> space = context.host().Space(imagefs.mountpoint);
  if (!space.ok() || space->capacity_bytes == 0) {
    return Warn("cannot measure the image filesystem containerd names",
                space.ok() ? absl::StrCat(imagefs.mountpoint, ": capacity 0")
                           : std::string(space.status().message()),
                "run gpunode doctor on the node, or with the host's / (and the filesystem "
                "holding containerd's root) under --host-root");
  }

  ImageGcInputs inputs{.capacity_bytes = space->capacity_bytes,
                       .available_bytes = space->available_bytes,
                       .high_percent = high,
                       .low_percent = low,
                       .serialize_image_pulls = settings->serialize_image_pulls.value,
                       .images = {}};
  for (const containerd::CriImage& image : *images) {
    inputs.images.push_back({ImageName(image), image.size_bytes});
  }
  ImageGcFit fit = AssessImageGc(inputs);
  uint64_t capacity = space->capacity_bytes;
  uint64_t used = capacity - std::min(space->available_bytes, capacity);
  absl::StrAppend(&evidence, "; image filesystem ", imagefs.mountpoint, ": ", Bytes(capacity), ", ",
                  Bytes(used), " used (", fit.usage_percent, "%), ", Bytes(imagefs.used_bytes),
                  " by images (CRI); GC frees down to ", low, "%, leaving ",
                  Bytes(fit.room_after_gc_bytes), "; ", LargestEvidence(inputs.images));

  std::vector<std::string> summaries;
  std::vector<std::string> fixes;
  for (ImageGcProblem problem : fit.problems) {
    switch (problem) {
      case ImageGcProblem::kAboveHighThreshold:
        summaries.push_back(absl::StrCat(
            "the image filesystem is at ", fit.usage_percent, "%, at or above the high threshold ",
            high, "%: every image GC cycle deletes unused images, which pods then pull again"));
        fixes.push_back(absl::StrCat("free or grow the filesystem of ", imagefs.mountpoint,
                                     " (GC cannot delete images that containers use)"));
        break;
      case ImageGcProblem::kLargestDoesNotFit:
        summaries.push_back(
            absl::StrCat("the largest image, ", fit.largest->name, " (", Bytes(fit.largest->bytes),
                         "), does not fit in the ", Bytes(fit.room_after_gc_bytes),
                         " that image GC leaves free (", 100 - low, "% of ", Bytes(capacity), ")"));
        fixes.push_back(LowFix(fit));
        break;
      case ImageGcProblem::kChurn:
        summaries.push_back(absl::StrCat(
            "pulling the largest image, ", fit.largest->name, " (", Bytes(fit.largest->bytes),
            "), right after image GC takes the disk from ", low, "% back to the high threshold ",
            high, "%: the next GC deletes other unused images (re-pull churn)"));
        fixes.push_back(LowFix(fit));
        break;
      case ImageGcProblem::kGcOff:
        summaries.push_back(
            "image GC is off (imageGCHighThresholdPercent 100): images pile up until the "
            "kubelet evicts pods for disk pressure");
        fixes.push_back("set imageGCHighThresholdPercent to 85 (the default) or lower");
        break;
      case ImageGcProblem::kSerializedLargePull:
        summaries.push_back(absl::StrCat(
            "serializeImagePulls is on and the largest image is ", Bytes(fit.largest->bytes),
            ": while it pulls, no other pod on the node can pull an image"));
        fixes.push_back(
            "set serializeImagePulls: false and maxParallelImagePulls (e.g. 3) in the kubelet's "
            "config, then restart the kubelet");
        break;
    }
  }
  if (!summaries.empty()) {
    return Warn(absl::StrJoin(summaries, "; "), evidence, absl::StrJoin(fixes, "; "));
  }
  std::string largest = fit.largest
                            ? absl::StrCat("room for the largest image (", fit.largest->name, ", ",
                                           Bytes(fit.largest->bytes), ")")
                            : std::string("no images yet");
  return Ok(absl::StrCat("image GC at ", high, "%/", low, "% of ", Bytes(capacity), " (now ",
                         fit.usage_percent, "%): ", largest),
            evidence);
}

}  // namespace

std::vector<Check> ImageGcChecks() {
  return {
      {"kubelet", "kubelet.image-gc", {"runtime.containerd-version"}, ImageGcCheck},
  };
}

}  // namespace gpunode::doctor
