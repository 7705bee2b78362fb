// The node label gpu.missing, which `gpunode labels --stable-labels` writes next to gpu.count: the
// PCI addresses of the NVIDIA GPUs the machine has that the driver (NVML) does not see. The
// cluster commands see only the Node object; this is how they name the GPU a node is short of.
//
// The value is a label value (at most 63 characters of [A-Za-z0-9-_.]): one token per GPU, its
// address with a 0000 domain left out and ':' as '-' (0000:3b:00.0 is 3b-00.0, 0001:3b:00.0 is
// 0001-3b-00.0), in address order, joined with '_'; then N-more for missing GPUs whose addresses
// did not fit, and N-unknown for missing GPUs whose address could not be read (no PCI bus to
// read): "17-00.0_b3-00.0", "17-00.0_3-more", "1-unknown".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::kube {

// The key, after the stable labels' prefix (`--stable-label-prefix`).
inline constexpr std::string_view kMissingGpusKey = "gpu.missing";

struct MissingGpus {
  std::vector<std::string> addresses;  // sysfs form, "0000:3b:00.0"
  int64_t unlisted = 0;                // more, at addresses the value had no room for
  int64_t unknown = 0;                 // more, at addresses nobody could read

  int64_t Count() const { return static_cast<int64_t>(addresses.size()) + unlisted + unknown; }
  bool empty() const { return Count() == 0; }
  // "0000:17:00.0", "0000:17:00.0, 0000:b3:00.0 and 3 more", "1 at an unknown PCI address".
  std::string Describe() const;
};

// The label's value: the addresses that fit in 63 characters, in the order given, the rest
// counted as N-more. An address that is no PCI address counts as one more. Empty when nothing
// is missing.
std::string FormatMissingGpus(const MissingGpus& missing);

// The value back, addresses in the sysfs form. An error says which token is wrong and what the
// value should look like.
absl::StatusOr<MissingGpus> ParseMissingGpus(std::string_view value);

}  // namespace gpunode::kube
