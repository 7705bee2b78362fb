// The bearer token of a ClusterAccess, as both HTTP transports send it: the literal token, or a
// token file read again about once a minute (as client-go does: the kubelet rotates projected
// service account tokens well before they expire). While the file cannot be read, the last token
// read is kept; with none yet, the error (Unauthenticated) names the file's problem.
//
// Thread-safety: none; each transport owns one.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/io_deadline.h"

namespace gpunode::kube {

class BearerToken {
 public:
  // With a token file, the literal token is not used (as before the file could be read).
  BearerToken(std::string token, std::string token_file);

  // Empty when the access has neither.
  absl::StatusOr<std::string> Get();

 private:
  std::string token_;  // the literal token, or the last one read from token_file_
  const std::string token_file_;
  core::IoDeadline reread_;  // passed: read the file at the next Get
};

}  // namespace gpunode::kube
