#include "kube/image_pull_event.h"

#include <cmath>

namespace gpunode::kube {
namespace {

// The quoted image right after `prefix`, and what follows its closing quote.
std::optional<std::string_view> QuotedAfter(std::string_view message, std::string_view prefix,
                                            std::string_view* rest) {
  if (!message.starts_with(prefix)) return std::nullopt;
  std::string_view tail = message.substr(prefix.size());
  size_t close = tail.find('"');
  if (close == std::string_view::npos || close == 0) return std::nullopt;
  if (rest) *rest = tail.substr(close + 1);
  return tail.substr(0, close);
}

}  // namespace

std::optional<int64_t> ParseGoDurationMillis(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (text == "0s") return 0;
  double millis = 0;
  while (!text.empty()) {
    size_t digits = 0;
    while (digits < text.size() &&
           ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    double value = 0, scale = 0;
    for (char c : text.substr(0, digits)) {
      if (c == '.') {
        if (scale != 0) return std::nullopt;
        scale = 1;
        continue;
      }
      if (scale != 0) {
        scale /= 10;
        value += (c - '0') * scale;
      } else {
        value = value * 10 + (c - '0');
      }
    }
    text.remove_prefix(digits);
    // Longest unit names first, so "ms" is not read as "m".
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3},
        {"ms", 1},    {"s", 1e3},   {"m", 60e3},         {"h", 3600e3}};
    bool matched = false;
    for (const auto& [unit, factor] : kUnits) {
      if (text.starts_with(unit)) {
        millis += value * factor;
        text.remove_prefix(unit.size());
        matched = true;
        break;
      }
    }
    if (!matched) return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(millis));
}

std::optional<PullMessage> ParsePullMessage(std::string_view reason, std::string_view message) {
  PullMessage out;
  std::string_view rest;
  if (reason == "Pulled") {
    // "Successfully pulled image \"X\" in 3m12.5s (3m12.5s including waiting). Image size: N
    // bytes." (1.30+); "... in 3m12.5s (3m12.5s including waiting)" (1.25-1.29);
    // "... in 3m12.5s" (earlier). "Container image \"X\" already present on machine" pulled
    // nothing.
    std::optional<std::string_view> image =
        QuotedAfter(message, "Successfully pulled image \"", &rest);
    if (!image || !rest.starts_with(" in ")) return std::nullopt;
    rest.remove_prefix(4);
    // A duration may hold a decimal point, so it ends at the first space or ". ".
    size_t end = rest.find(' ');
    if (size_t dot = rest.find(". "); dot != std::string_view::npos && dot < end) end = dot;
    std::string_view pulled = rest.substr(0, end);
    if (!pulled.empty() && pulled.back() == '.') pulled.remove_suffix(1);
    std::optional<int64_t> pulled_ms = ParseGoDurationMillis(pulled);
    if (!pulled_ms) return std::nullopt;
    out.outcome = PullOutcome::kPulled;
    out.image = *image;
    out.pulled_millis = *pulled_ms;
    out.waited_millis = *pulled_ms;
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    if (rest.starts_with(" (")) {
      std::string_view inner = rest.substr(2);
      size_t space = inner.find(' ');
      if (space != std::string_view::npos &&
          inner.substr(space).starts_with(" including waiting)")) {
        if (std::optional<int64_t> waited = ParseGoDurationMillis(inner.substr(0, space))) {
          out.waited_millis = *waited;
        }
      }
    }
    return out;
  }
  if (reason == "Failed" || reason == "ErrImagePull") {
    std::optional<std::string_view> image =
        QuotedAfter(message, "Failed to pull image \"", nullptr);
    if (!image) return std::nullopt;
    out.outcome = PullOutcome::kFailed;
    out.image = *image;
    return out;
  }
  if (reason == "BackOff" || reason == "ImagePullBackOff") {
    // BackOff also names crash loops ("Back-off restarting failed container"): not a pull.
    std::optional<std::string_view> image =
        QuotedAfter(message, "Back-off pulling image \"", nullptr);
    if (!image) return std::nullopt;
    out.outcome = PullOutcome::kBackOff;
    out.image = *image;
    return out;
  }
  return std::nullopt;
}

}  // namespace gpunode::kube
