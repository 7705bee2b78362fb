#include "log_time.h"

#include <cstdio>
#include <ctime>

namespace gpunode::testing {
namespace {

std::optional<std::chrono::system_clock::time_point> TimeOfLineAt(const std::string& log,
                                                                  size_t pos) {
  if (pos == std::string::npos) return std::nullopt;
  size_t start = log.rfind('\n', pos);
  start = start == std::string::npos ? 0 : start + 1;
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(log.c_str() + start, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::milliseconds(ms);
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> LogTime(const std::string& log,
                                                             const std::string& text) {
  return TimeOfLineAt(log, log.find(text));
}

std::optional<std::chrono::system_clock::time_point> LastLogTime(const std::string& log,
                                                                 const std::string& text) {
  return TimeOfLineAt(log, log.rfind(text));
}

}  // namespace gpunode::testing
