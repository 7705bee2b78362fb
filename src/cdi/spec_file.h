// A CDI spec as a file: YAML or JSON, the two forms CDI registries read from /etc/cdi and
// /var/run/cdi.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cdi/spec.h"

namespace gpunode::cdi {

enum class SpecFormat { kYaml, kJson };

// "yaml" or "json"; anything else is InvalidArgument naming the flag.
absl::StatusOr<SpecFormat> ParseSpecFormat(absl::string_view name);

// The format a file name asks for: ".json" -> JSON, ".yaml"/".yml" -> YAML, else nullopt.
std::optional<SpecFormat> FormatOfFileName(absl::string_view path);

// JSON with two-space indents, or YAML in block style with every string value double-quoted (so
// that a device named "0" stays a string for every YAML reader). Ends in a newline.
std::string RenderSpec(const Spec& spec, SpecFormat format);

// Reads YAML (a superset of JSON) into the JSON model: a plain scalar becomes null, a boolean,
// an integer or a float when it reads as one (YAML 1.2 core schema), a quoted one a string.
// InvalidArgument names `source` and the line and column of a syntax error.
absl::StatusOr<Spec> ParseSpecText(absl::string_view text, absl::string_view source);

// Writes the spec atomically, creating the file's directory (mode 0755) if it is missing.
absl::Status WriteSpecFile(const std::string& path, const Spec& spec, SpecFormat format);

}  // namespace gpunode::cdi
