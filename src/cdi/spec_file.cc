#include "cdi/spec_file.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/printable.h"
#include "core/yaml_json.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::cdi {
namespace {

// A key YAML reads back as the same string when written plain.
bool PlainKey(const std::string& key) {
  if (key.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(key[0]))) return false;
  if (key == "null" || key == "true" || key == "false" || key == "Null" || key == "True" ||
      key == "False" || key == "NULL" || key == "TRUE" || key == "FALSE") {
    return false;
  }
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

void Emit(YAML::Emitter& out, const Spec& value) {
  switch (value.type()) {
    case Spec::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, v] : value.items()) {
        out << YAML::Key;
        if (!PlainKey(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, v);
      }
      out << YAML::EndMap;
      break;
    case Spec::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& v : value) Emit(out, v);
      out << YAML::EndSeq;
      break;
    case Spec::value_t::string:
      out << YAML::DoubleQuoted << value.get<std::string>();
      break;
    case Spec::value_t::null:
      out << YAML::Null;
      break;
    default:  // numbers and booleans print the same in both languages
      out << value.dump();
  }
}

}  // namespace

absl::StatusOr<SpecFormat> ParseSpecFormat(absl::string_view name) {
  if (name == "yaml") return SpecFormat::kYaml;
  if (name == "json") return SpecFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--format: \"", name, "\" is not a spec format; use yaml or json"));
}

std::optional<SpecFormat> FormatOfFileName(absl::string_view path) {
  std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".json")) return SpecFormat::kJson;
  if (absl::EndsWith(lower, ".yaml") || absl::EndsWith(lower, ".yml")) return SpecFormat::kYaml;
  return std::nullopt;
}

std::string RenderSpec(const Spec& spec, SpecFormat format) {
  if (format == SpecFormat::kJson) {
    return spec.dump(2, ' ', false, Spec::error_handler_t::replace) + "\n";
  }
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, spec);
  return absl::StrCat("---\n", out.c_str(), "\n");
}

absl::StatusOr<Spec> ParseSpecText(absl::string_view text, absl::string_view source) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    return core::YamlToJson(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1,
                                                   ": not YAML or JSON: ", core::Printable(e.msg)));
  }
}

absl::Status WriteSpecFile(const std::string& path, const Spec& spec, SpecFormat format) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create the directory ", dir.string(), ": ", ec.message()));
    }
  }
  return core::WriteFileAtomic(path, RenderSpec(spec, format), 0644, core::Backup::kNone);
}

}  // namespace gpunode::cdi
