// Label values as Kubernetes accepts them: at most 63 characters of [A-Za-z0-9-_.], beginning
// and ending with a letter or digit (or empty); and label key prefixes.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gpunode::labels {

// GFD's rule first (characters outside [A-Za-z0-9-_. ] dropped, runs of spaces become one '-'),
// then cut to 63 characters and trimmed of leading and trailing '-', '_' and '.'.
std::string SanitizeLabelValue(std::string_view value);

// True when `value` is a valid Kubernetes label value.
bool IsValidLabelValue(std::string_view value);

// Why `prefix` cannot start a label key, or OK: it must be empty or a DNS subdomain (RFC 1123:
// lowercase letters, digits, '-' and '.', dot-separated parts of 1-63 characters that begin and
// end with a letter or digit, at most 253 in all) followed by '/'. The message starts with the
// problem, for the caller to prefix with the flag's name.
absl::Status CheckLabelKeyPrefix(std::string_view prefix);

}  // namespace gpunode::labels
