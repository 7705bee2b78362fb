// Prometheus text exposition (format 0.0.4) written straight into one string, the way
// dcgm-exporter renders it: integers as %d, fractional values with six decimals.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpunode::metrics {

enum class MetricType { kGauge, kCounter };

// Appends `value` to `out` escaped for a label value (backslash, double quote, newline).
void AppendEscapedLabelValue(std::string_view value, std::string* out);

// Appends `name="value",` (escaped, with the trailing comma) to a label list under construction.
void AppendLabel(std::string_view name, std::string_view value, std::string* labels);

class ExpositionWriter {
 public:
  explicit ExpositionWriter(std::string* out) : out_(out) {}

  // The # HELP and # TYPE lines of a family; once per family, before its samples.
  void Family(std::string_view name, MetricType type, std::string_view help);

  // One sample. `labels` is a list built with AppendLabel (its trailing comma is dropped) and
  // `extra` more of the same, so the labels every series of an entity shares are built once.
  void Sample(std::string_view name, std::string_view labels, std::string_view extra,
              uint64_t value);
  void Sample(std::string_view name, std::string_view labels, std::string_view extra, double value);

 private:
  void Head(std::string_view name, std::string_view labels, std::string_view extra);

  std::string* out_;
};

}  // namespace gpunode::metrics
