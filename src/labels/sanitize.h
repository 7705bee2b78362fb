// Label values as Kubernetes accepts them: at most 63 characters of [A-Za-z0-9-_.], beginning
// and ending with a letter or digit (or empty).
#pragma once

#include <string>
#include <string_view>

namespace gpunode::labels {

// GFD's rule first (characters outside [A-Za-z0-9-_. ] dropped, runs of spaces become one '-'),
// then cut to 63 characters and trimmed of leading and trailing '-', '_' and '.'.
std::string SanitizeLabelValue(std::string_view value);

// True when `value` is a valid Kubernetes label value.
bool IsValidLabelValue(std::string_view value);

}  // namespace gpunode::labels
