// Kubernetes resource quantities ("1", "500m", "2Ki", "1e3"), held exactly as milli-units so GPU
// counts compare and sum without floating point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gpunode::kube {

// Parses the Kubernetes quantity grammar (sign, decimal number, binary SI, decimal SI or decimal
// exponent suffix). Values below one milli-unit round up, as the API machinery's MilliValue does.
// Errors say what is wrong with the text, without naming a field: callers add that.
absl::StatusOr<int64_t> ParseQuantityMilli(std::string_view text);

// "2" for whole values, "500m" otherwise: the canonical form kubectl prints.
std::string FormatMilli(int64_t milli);

inline bool IsWholeMilli(int64_t milli) { return milli % 1000 == 0; }

// Whole units, rounded up (a pod holding 500m of a device holds one device).
inline int64_t CeilUnits(int64_t milli) { return milli > 0 ? (milli + 999) / 1000 : milli / 1000; }

}  // namespace gpunode::kube
