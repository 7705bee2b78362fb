#include "kube/json_walk.h"

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"

namespace gpunode::kube {

using core::StrCat;
using core::View;
using simdjson::error_code;

namespace {

std::string_view TrimTrailingJsonSpace(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
    raw.remove_suffix(1);
  }
  return raw;
}

// Reads a JSON string without copying when it holds no escapes (almost always), so the view
// points into the input; escaped strings are unescaped into the parser's buffer. JSON null reads
// as the empty string.
error_code ReadJsonString(od::value& v, std::string_view& out) {
  od::json_type type{};
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::null) {
    out = {};
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::string) return simdjson::INCORRECT_TYPE;
  std::string_view raw = TrimTrailingJsonSpace(v.raw_json_token());
  if (raw.size() >= 2 && raw.back() == '"') {
    std::string_view inner = raw.substr(1, raw.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
      out = inner;
      return simdjson::SUCCESS;
    }
  }
  return v.get_string().get(out);
}

// Quantities are JSON strings in API output; hand-written files sometimes use numbers.
error_code ReadQuantityText(od::value& v, std::string_view& out) {
  od::json_type type{};
  if (error_code e = v.type().get(type)) return e;
  if (type == od::json_type::number) {
    out = TrimTrailingJsonSpace(v.raw_json_token());
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::string) return simdjson::INCORRECT_TYPE;
  return ReadJsonString(v, out);
}

// A fast filter on the raw (still escaped) key: "nvidia.com" without the slash, which JSON
// writers may escape as \/. The caller confirms the prefix on the unescaped key.
bool KeyStartsWithNvidia(const od::raw_json_string& key) {
  constexpr std::string_view kDomain = "nvidia.com";
  // The input is padded, so comparing past a shorter key reads the closing quote and beyond,
  // which simply mismatches.
  return std::memcmp(key.raw(), kDomain.data(), kDomain.size()) == 0;
}

}  // namespace

std::string Describe(const Where& w) {
  // Items whose kind is not known yet are pods, as a snapshot's items mostly are.
  std::string kind = w.kind == "item" ? "pod" : std::string(w.kind);
  std::transform(kind.begin(), kind.end(), kind.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  if (!w.name.empty()) {
    return w.ns.empty() ? StrCat(kind, " ", w.name) : StrCat(kind, " ", w.ns, "/", w.name);
  }
  if (w.in_list) return StrCat("items[", w.index, "] (", w.kind, ")");
  return StrCat(w.kind, " object");
}

std::string FieldPath::Join() const { return StrCat(head, tail); }

std::string JsonInput::Location() const {
  if (doc_ == nullptr || begin_ == nullptr) return "";
  const char* loc = nullptr;
  if (doc_->current_location().get(loc) != simdjson::SUCCESS || loc == nullptr) return "";
  size_t offset = static_cast<size_t>(loc - begin_);
  if (offset == 0) return "";  // simdjson points at the start when the document is truncated
  uint64_t byte = offset;
  uint64_t line = 1 + static_cast<uint64_t>(std::count(begin_, loc, '\n'));
  if (origin_ != nullptr) {
    byte += origin_->byte;
    line += origin_->line - 1;
    for (const TextOrigin::Cut& cut : origin_->cuts) {
      if (cut.at > offset) break;
      byte += cut.bytes;
      line += cut.lines;
    }
  }
  return StrCat(" near line ", line, " (byte ", byte, ")");
}

absl::Status JsonWalk::Fail(const FieldPath& field, std::string_view problem) const {
  return absl::InvalidArgumentError(
      StrCat(input_->source(), ": ", Describe(*where_), ": ", field.Join(), ": ", problem));
}

absl::Status JsonWalk::FailJson(const FieldPath& field, std::string_view expected,
                                error_code e) const {
  if (e == simdjson::INCORRECT_TYPE) {
    return Fail(field, StrCat("expected ", expected, "; ", input_->fix()));
  }
  std::string joined = field.Join();
  std::string context;
  if (where_->kind != "List") {
    context = StrCat(" in ", Describe(*where_), joined.empty() ? "" : " ", joined);
  }
  return absl::InvalidArgumentError(StrCat(input_->source(), ": not valid JSON (",
                                           simdjson::error_message(e), ")", input_->Location(),
                                           context, "; is the file complete?"));
}

absl::Status JsonWalk::IsNull(od::value& value, const FieldPath& field, std::string_view expected,
                              bool& null) const {
  od::json_type type{};
  RETURN_IF_ERROR(Check(value.type().get(type), field, expected));
  null = type == od::json_type::null;
  return absl::OkStatus();
}

absl::Status JsonWalk::ReadString(od::value& value, const FieldPath& field,
                                  std::string_view& out) const {
  return Check(ReadJsonString(value, out), field, "a string");
}

absl::Status JsonWalk::ReadStringCopy(od::value& value, const FieldPath& field,
                                      std::string& out) const {
  std::string_view text;
  RETURN_IF_ERROR(ReadString(value, field, text));
  out.assign(text);
  return absl::OkStatus();
}

absl::Status JsonWalk::ReadBool(od::value& value, const FieldPath& field, bool& out) const {
  bool null = false;
  RETURN_IF_ERROR(IsNull(value, field, "true or false", null));
  if (null) return absl::OkStatus();
  return Check(value.get_bool().get(out), field, "true or false");
}

absl::Status JsonWalk::ReadInt(od::value& value, const FieldPath& field, int64_t& out) const {
  bool null = false;
  RETURN_IF_ERROR(IsNull(value, field, "an integer", null));
  if (null) return absl::OkStatus();
  return Check(value.get_int64().get(out), field, "an integer");
}

absl::Status JsonWalk::ReadStringMap(od::value& value, const FieldPath& field, Labels& out) const {
  return ForEachField(value, field, [&](const FieldKey& key, od::value& val) -> absl::Status {
    std::string_view k, text;
    RETURN_IF_ERROR(UnescapedKey(key, field, k));
    if (error_code e = ReadJsonString(val, text)) {
      return FailJson(StrCat(field.Join(), "[", k, "]"), "a string", e);
    }
    out.emplace_back(k, text);
    return absl::OkStatus();
  });
}

absl::Status JsonWalk::ReadStringArray(od::value& value, const FieldPath& field,
                                       std::vector<std::string_view>& out) const {
  constexpr std::string_view kStrings = "an array of strings";
  return ForEachElement(
      value, field,
      [&](od::value& element) -> absl::Status {
        std::string_view s;
        RETURN_IF_ERROR(Check(ReadJsonString(element, s), field, kStrings));
        out.push_back(s);
        return absl::OkStatus();
      },
      kStrings, kStrings);
}

absl::Status JsonWalk::ReadNvidiaResources(od::value& value, const FieldPath& field,
                                           ResourceList& out) const {
  return ForEachField(value, field, [&](const FieldKey& key, od::value& val) -> absl::Status {
    if (!KeyStartsWithNvidia(key.raw())) return absl::OkStatus();  // cpu, memory: not parsed
    std::string_view name;
    RETURN_IF_ERROR(UnescapedKey(key, field, name));
    if (!IsNvidiaResource(name)) return absl::OkStatus();
    std::string_view text;
    if (error_code e = ReadQuantityText(val, text)) {
      return FailJson(StrCat(field.Join(), "[", name, "]"), "a quantity string such as \"1\"", e);
    }
    absl::StatusOr<int64_t> milli = ParseQuantityMilli(text);
    if (!milli.ok()) {
      return Fail(StrCat(field.Join(), "[", name, "]"), View(milli.status().message()));
    }
    if (*milli < 0) {
      return Fail(StrCat(field.Join(), "[", name, "]"),
                  StrCat("\"", text, "\" is negative; resource amounts cannot be"));
    }
    out.push_back({name, *milli, text});
    return absl::OkStatus();
  });
}

int64_t ParseRfc3339Seconds(std::string_view s) {
  auto num = [&](size_t pos, size_t len, int& out) {
    if (pos + len > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':' || !num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) ||
      !num(11, 2, h) || !num(14, 2, mi) || !num(17, 2, sec)) {
    return 0;
  }
  absl::Time t = absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, sec), absl::UTCTimeZone());
  std::string_view zone = s.substr(19);
  while (!zone.empty() && (zone.front() == '.' || (zone.front() >= '0' && zone.front() <= '9'))) {
    zone.remove_prefix(1);
  }
  int zh = 0, zm = 0;
  if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && num(s.size() - 5, 2, zh) &&
      num(s.size() - 2, 2, zm)) {
    absl::Duration offset = absl::Hours(zh) + absl::Minutes(zm);
    t = zone[0] == '+' ? t - offset : t + offset;
  }
  return absl::ToUnixSeconds(t);
}

}  // namespace gpunode::kube
