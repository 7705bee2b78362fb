// One HTTP/2 header field for nghttp2's submit functions, which copy what they are given.
#pragma once

#include <nghttp2/nghttp2.h>

#include <string_view>

namespace gpunode::h2grpc {

inline nghttp2_nv Header(std::string_view name, std::string_view value) {
  // nghttp2 takes non-const pointers but only reads them.
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

}  // namespace gpunode::h2grpc
