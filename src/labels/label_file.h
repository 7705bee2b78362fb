// The NFD local-feature file: `key=value` lines, replaced atomically so NFD never reads half of it.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "labels/gfd_labels.h"

namespace gpunode::labels {

std::string FormatLabels(const Labels& labels);

// Writes `contents` to a temporary file in a hidden directory next to `path` (NFD reads every
// plain file of features.d, but neither hidden files nor directories), then renames it over
// `path`. Mode 0644. On failure nothing is left behind and `path` is untouched.
absl::Status WriteLabelFile(const std::string& path, const std::string& contents);

}  // namespace gpunode::labels
