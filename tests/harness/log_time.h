// When something happened, read off the log of one of this project's programs: every line starts
// with its UTC time to the millisecond ("2026-01-02T03:04:05.678Z info ..."), so a test can time
// an outcome the program reports only in its log.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace gpunode::testing {

// The time of the first line of `log` containing `text`; nullopt when no line does.
std::optional<std::chrono::system_clock::time_point> LogTime(const std::string& log,
                                                             const std::string& text);
// The same for the last such line.
std::optional<std::chrono::system_clock::time_point> LastLogTime(const std::string& log,
                                                                 const std::string& text);

}  // namespace gpunode::testing
