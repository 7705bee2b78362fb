#include "metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace gpunode::metrics {

void AppendEscapedLabelValue(std::string_view value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

void AppendLabel(std::string_view name, std::string_view value, std::string* labels) {
  labels->append(name);
  labels->append("=\"");
  AppendEscapedLabelValue(value, labels);
  labels->append("\",");
}

void ExpositionWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  out_->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out_->append("# TYPE ").append(name).append(type == MetricType::kCounter ? " counter\n"
                                                                           : " gauge\n");
}

void ExpositionWriter::Head(std::string_view name, std::string_view labels,
                            std::string_view extra) {
  out_->append(name);
  std::string_view all_but_comma = labels;
  if (!labels.empty() || !extra.empty()) {
    out_->push_back('{');
    if (extra.empty()) {
      all_but_comma.remove_suffix(1);
      out_->append(all_but_comma);
    } else {
      out_->append(labels);
      out_->append(extra.substr(0, extra.size() - 1));
    }
    out_->push_back('}');
  }
  out_->push_back(' ');
}

void ExpositionWriter::Sample(std::string_view name, std::string_view labels,
                              std::string_view extra, uint64_t value) {
  Head(name, labels, extra);
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out_->append(buffer, end);
  out_->push_back('\n');
}

void ExpositionWriter::Sample(std::string_view name, std::string_view labels,
                              std::string_view extra, double value) {
  Head(name, labels, extra);
  if (std::isnan(value)) {
    out_->append("NaN\n");
    return;
  }
  char buffer[64];
  int n = std::snprintf(buffer, sizeof buffer, "%f", value);
  out_->append(buffer, static_cast<size_t>(n));
  out_->push_back('\n');
}

}  // namespace gpunode::metrics
