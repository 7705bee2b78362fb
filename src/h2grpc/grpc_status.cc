#include "h2grpc/grpc_status.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpunode::h2grpc {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentEncode(std::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string PercentDecode(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '%' && i + 2 < message.size()) {
      int high = HexValue(message[i + 1]), low = HexValue(message[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(message[i]);
  }
  return out;
}

absl::Status StatusFromTrailers(std::string_view grpc_status, std::string_view grpc_message) {
  int code = 0;
  if (!absl::SimpleAtoi(std::string(grpc_status), &code) || code < 0 || code > 16) {
    return absl::UnknownError(absl::StrCat("invalid grpc-status '", std::string(grpc_status), "'"));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), PercentDecode(grpc_message));
}

absl::Status StatusFromHttp(int http_status) {
  std::string message = absl::StrCat("HTTP status ", http_status, " without grpc-status");
  switch (http_status) {
    case 400:
      return absl::InternalError(message);
    case 401:
      return absl::UnauthenticatedError(message);
    case 403:
      return absl::PermissionDeniedError(message);
    case 404:
      return absl::UnimplementedError(message);
    case 429:
    case 502:
    case 503:
    case 504:
      return absl::UnavailableError(message);
    default:
      return absl::UnknownError(message);
  }
}

}  // namespace gpunode::h2grpc
