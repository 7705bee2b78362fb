#include "metrics/listen_address.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpunode::metrics {

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--listen \"", text, "\": ", std::string(why),
                                                   "; give [HOST]:PORT, e.g. :9400 or "
                                                   "127.0.0.1:9400"));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  ListenAddress address;
  std::string host = text.substr(0, colon);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unbalanced [ ] around the IPv6 host");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 host needs brackets");
  }
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':' &&
        c != '_') {
      return bad("the host has characters a host name or address cannot have");
    }
  }
  address.host = host.empty() ? "0.0.0.0" : host;
  std::string port = text.substr(colon + 1);
  if (port.empty() || !absl::SimpleAtoi(port, &address.port) || address.port < 0 ||
      address.port > 65535 || !absl::ascii_isdigit(static_cast<unsigned char>(port[0]))) {
    return bad("the port must be a number from 0 to 65535");
  }
  return address;
}

}  // namespace gpunode::metrics
