#include "labels/sanitize.h"

#include "absl/strings/ascii.h"

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

}  // namespace gpunode::labels
