#include "doctor/parsers.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "containerd/toml_document.h"
#include "core/status_macros.h"

namespace gpunode::doctor {
namespace {

bool IsVersionToken(absl::string_view token) {
  if (token.empty() || !absl::ascii_isdigit(token.front()) || !absl::StrContains(token, '.')) {
    return false;
  }
  return std::all_of(token.begin(), token.end(),
                     [](char c) { return absl::ascii_isdigit(c) || c == '.'; });
}

}  // namespace

absl::StatusOr<std::string> ParseNvrmVersion(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "NVRM version:")) continue;
    // "NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." or "... Open Kernel Module
    // for x86_64  550.54.15  Release Build ...": the first dotted number is the version.
    for (absl::string_view token :
         absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      if (IsVersionToken(token)) return std::string(token);
    }
    return absl::InvalidArgumentError("NVRM version line without a version number");
  }
  return absl::InvalidArgumentError("no \"NVRM version:\" line");
}

absl::StatusOr<ToolkitConfig> ParseToolkitConfig(absl::string_view text, const std::string& path) {
  ASSIGN_OR_RETURN(toml::table doc,
                   containerd::ParseToml(std::string_view(text.data(), text.size()), path));
  ToolkitConfig config;
  if (const toml::table* cli = containerd::FindTable(doc, {"nvidia-container-cli"})) {
    if (const toml::node* node = cli->get("no-cgroups")) {
      std::optional<bool> value = node->value_exact<bool>();
      if (!value) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", node->source().begin.line,
            ": nvidia-container-cli.no-cgroups must be true or false (without quotes)"));
      }
      config.no_cgroups = value;
    }
  }
  if (const toml::table* runtime = containerd::FindTable(doc, {"nvidia-container-runtime"})) {
    if (std::optional<std::string> mode = (*runtime)["mode"].value_exact<std::string>()) {
      config.mode = *mode;
    }
  }
  return config;
}

std::optional<std::string> DpkgInstalledVersion(absl::string_view status,
                                                absl::string_view package) {
  // Stanzas are separated by blank lines; "Status: install ok installed" marks an installed one.
  for (absl::string_view stanza : absl::StrSplit(status, "\n\n")) {
    bool match = false;
    bool installed = false;
    std::optional<std::string> version;
    for (absl::string_view line : absl::StrSplit(stanza, '\n')) {
      if (absl::ConsumePrefix(&line, "Package:")) {
        match = absl::StripAsciiWhitespace(line) == package;
      } else if (absl::ConsumePrefix(&line, "Status:")) {
        installed = absl::EndsWith(absl::StripAsciiWhitespace(line), " installed");
      } else if (absl::ConsumePrefix(&line, "Version:")) {
        version = std::string(absl::StripAsciiWhitespace(line));
      }
    }
    if (match && installed && version) return version;
  }
  return std::nullopt;
}

}  // namespace gpunode::doctor
