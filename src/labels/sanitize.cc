#include "labels/sanitize.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "core/text.h"

namespace gpunode::labels {
namespace {

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }
bool IsAllowed(char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; }

std::string Trim(std::string value) {
  size_t begin = 0;
  while (begin < value.size() && !IsAlnum(value[begin])) ++begin;
  size_t end = value.size();
  while (end > begin && !IsAlnum(value[end - 1])) --end;
  return value.substr(begin, end - begin);
}

}  // namespace

std::string SanitizeLabelValue(std::string_view value) {
  std::string out;
  bool pending_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      pending_space = !out.empty();
      continue;
    }
    if (!IsAllowed(c)) continue;
    if (pending_space) out.push_back('-');
    pending_space = false;
    out.push_back(c);
  }
  out = Trim(std::move(out));
  if (out.size() > 63) out = Trim(out.substr(0, 63));
  return out;
}

bool IsValidLabelValue(std::string_view value) {
  if (value.empty()) return true;
  if (value.size() > 63 || !IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAllowed(c)) return false;
  }
  return true;
}

absl::Status CheckLabelKeyPrefix(std::string_view prefix) {
  if (prefix.empty()) return absl::OkStatus();
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(core::StrCat(
        "\"", prefix, "\" ", why, "; use a DNS subdomain followed by /, such as example.com/"));
  };
  if (prefix.back() != '/') return bad("does not end with /");
  std::string_view domain = prefix.substr(0, prefix.size() - 1);
  if (domain.empty()) return bad("has no domain before the /");
  if (domain.size() > 253) return bad("is longer than 253 characters before the /");
  for (size_t begin = 0, end = 0; begin <= domain.size(); begin = end + 1) {
    end = std::min(domain.find('.', begin), domain.size());
    std::string_view part = domain.substr(begin, end - begin);
    if (part.empty() || part.size() > 63) {
      return bad("has an empty or over-63-character part between dots");
    }
    for (char c : part) {
      if (!(absl::ascii_islower(static_cast<unsigned char>(c)) ||
            absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return bad(core::StrCat("has '", std::string_view(&c, 1),
                                "': a DNS subdomain has lowercase letters, digits, - and ."));
      }
    }
    if (part.front() == '-' || part.back() == '-') {
      return bad("has a part that begins or ends with -");
    }
  }
  return absl::OkStatus();
}

}  // namespace gpunode::labels
