#include "metrics/gpm_reader.h"

#include "core/status_macros.h"
#include "nvml/status.h"

namespace gpunode::metrics {
namespace {

constexpr unsigned kWholeGpu = ~0u;

}  // namespace

absl::StatusOr<bool> GpmReader::Supported(unsigned index, const nvml::Device& gpu) {
  if (supported_.size() <= index) supported_.resize(index + 1);
  std::optional<bool>& known = supported_[index];
  if (!known) {
    absl::StatusOr<bool> asked = nvml::GpmSupported(library_, gpu);
    // Other failures (a GPU lost now) are asked again next time.
    if (!asked.ok() && !nvml::IsNotSupported(asked.status())) return asked.status();
    known = asked.ok() && *asked;
  }
  return *known;
}

absl::StatusOr<std::optional<nvml::GpmValues>> GpmReader::Read(
    unsigned index, const nvml::Device& gpu, std::optional<unsigned> gpu_instance_id) {
  Stream& stream = streams_[{index, gpu_instance_id.value_or(kWholeGpu)}];
  // Two buffers per stream, allocated once and swapped.
  if (!stream.current) {
    ASSIGN_OR_RETURN(nvml::GpmSample sample, nvml::GpmSample::Allocate(library_));
    stream.current = std::move(sample);
  }
  absl::Status taken =
      gpu_instance_id ? stream.current->TakeMig(gpu, *gpu_instance_id) : stream.current->Take(gpu);
  if (!taken.ok()) {
    stream.previous.reset();  // the next sample starts the stream again
    return taken;
  }
  std::optional<nvml::GpmValues> values;
  if (stream.previous) {
    ASSIGN_OR_RETURN(values, nvml::GpmMetrics(library_, *stream.previous, *stream.current));
  }
  std::swap(stream.previous, stream.current);
  return values;
}

void GpmReader::Forget(unsigned index) {
  for (auto it = streams_.lower_bound({index, 0});
       it != streams_.end() && it->first.first == index;)
    it = streams_.erase(it);
}

}  // namespace gpunode::metrics
