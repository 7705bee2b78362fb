// What the exporter and labels tests share: free loopback ports, HTTP GETs, bounded polling and
// reading the exposition format.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gpunode::testing {

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();

struct HttpResult {
  int status = 0;  // 0 when no answer came
  std::string body;
  std::string content_type;
};
HttpResult HttpGet(int port, const std::string& path);
// `text` as a URL query value: everything but letters, digits and "_.-" percent-encoded.
std::string UrlEncode(const std::string& text);

// Calls `done` until it returns true or `limit` passes; true when it did.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(10));

std::string ReadText(const std::string& path);
void WriteText(const std::string& path, const std::string& text);

// The value of the first sample of `metric` whose labels contain every `name="value"` in
// `labels`; nullopt-like NaN when there is none.
double SampleValue(const std::string& exposition, const std::string& metric,
                   const std::vector<std::string>& labels = {});
// The number of samples of `metric` (with those labels).
int SampleCount(const std::string& exposition, const std::string& metric,
                const std::vector<std::string>& labels = {});

}  // namespace gpunode::testing
