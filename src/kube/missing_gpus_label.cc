#include "kube/missing_gpus_label.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/text.h"

namespace gpunode::kube {
namespace {

using core::StrCat;

// A label value's limit.
constexpr size_t kMaxValue = 63;
constexpr std::string_view kDefaultDomain = "0000";
constexpr std::string_view kMore = "-more";
constexpr std::string_view kUnknown = "-unknown";

bool IsHex(std::string_view s, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

struct PciParts {
  std::string domain, bus, device, function;
};

// "0000:3b:00.0" (sysfs; a domain of 4 or more hex digits) into its parts, lower case.
std::optional<PciParts> SplitAddress(std::string_view address) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(address.data(), address.size()), ':');
  if (parts.size() != 3) return std::nullopt;
  size_t dot = parts[2].find('.');
  if (dot == std::string::npos) return std::nullopt;
  PciParts p{absl::AsciiStrToLower(parts[0]), absl::AsciiStrToLower(parts[1]),
             absl::AsciiStrToLower(parts[2].substr(0, dot)), parts[2].substr(dot + 1)};
  if (!IsHex(p.domain, 4, 8) || !IsHex(p.bus, 2, 2) || !IsHex(p.device, 2, 2) ||
      p.function.size() != 1 || p.function[0] < '0' || p.function[0] > '7') {
    return std::nullopt;
  }
  return p;
}

// 0000:3b:00.0 -> 3b-00.0; 0001:3b:00.0 -> 0001-3b-00.0.
std::optional<std::string> Token(std::string_view address) {
  std::optional<PciParts> p = SplitAddress(address);
  if (!p) return std::nullopt;
  std::string token = p->domain == kDefaultDomain ? "" : p->domain + "-";
  core::StrAppend(&token, p->bus, "-", p->device, ".", p->function);
  return token;
}

// "3-more" -> 3, for `suffix` "-more".
std::optional<int64_t> CountToken(std::string_view token, std::string_view suffix) {
  if (!token.ends_with(suffix)) return std::nullopt;
  std::string_view digits = token.substr(0, token.size() - suffix.size());
  int64_t n = 0;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &n) || n <= 0) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::string MissingGpus::Describe() const {
  std::vector<std::string> parts;
  if (!addresses.empty()) parts.push_back(absl::StrJoin(addresses, ", "));
  if (unlisted > 0) parts.push_back(StrCat(unlisted, " more"));
  if (unknown > 0) {
    parts.push_back(
        StrCat(unknown, " at ", unknown == 1 ? "an unknown PCI address" : "unknown PCI addresses"));
  }
  if (parts.size() <= 1) return parts.empty() ? "" : parts[0];
  std::string last = parts.back();
  parts.pop_back();
  return StrCat(absl::StrJoin(parts, ", "), " and ", last);
}

std::string FormatMissingGpus(const MissingGpus& missing) {
  std::vector<std::string> names;
  int64_t unnamed = missing.unlisted;
  for (const std::string& address : missing.addresses) {
    if (std::optional<std::string> token = Token(address)) {
      names.push_back(*token);
    } else {
      ++unnamed;
    }
  }
  for (size_t listed = names.size();; --listed) {
    std::vector<std::string> tokens(names.begin(), names.begin() + listed);
    int64_t more = unnamed + static_cast<int64_t>(names.size() - listed);
    if (more > 0) tokens.push_back(StrCat(more, kMore));
    if (missing.unknown > 0) tokens.push_back(StrCat(missing.unknown, kUnknown));
    std::string value = absl::StrJoin(tokens, "_");
    if (value.size() <= kMaxValue || listed == 0) return value;
  }
}

absl::StatusOr<MissingGpus> ParseMissingGpus(std::string_view value) {
  MissingGpus missing;
  auto bad = [&](std::string_view token) {
    return absl::InvalidArgumentError(
        StrCat("\"", token,
               "\" is neither a PCI address (3b-00.0 for 0000:3b:00.0, 0001-3b-00.0) nor N-more "
               "or N-unknown; `gpunode labels --stable-labels` writes them joined with _"));
  };
  if (value.empty()) return bad(value);
  for (absl::string_view piece :
       absl::StrSplit(absl::string_view(value.data(), value.size()), '_')) {
    std::string_view token(piece.data(), piece.size());
    if (std::optional<int64_t> n = CountToken(token, kMore)) {
      missing.unlisted += *n;
      continue;
    }
    if (std::optional<int64_t> n = CountToken(token, kUnknown)) {
      missing.unknown += *n;
      continue;
    }
    std::vector<std::string> parts = absl::StrSplit(piece, '-');
    if (parts.size() == 2) parts.insert(parts.begin(), std::string(kDefaultDomain));
    if (parts.size() != 3) return bad(token);
    std::string address = StrCat(parts[0], ":", parts[1], ":", parts[2]);
    std::optional<PciParts> p = SplitAddress(address);
    if (!p) return bad(token);
    missing.addresses.push_back(StrCat(p->domain, ":", p->bus, ":", p->device, ".", p->function));
  }
  return missing;
}

}  // namespace gpunode::kube
