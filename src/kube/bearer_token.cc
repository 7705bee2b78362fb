#include "kube/bearer_token.h"

#include "core/file_io.h"
#include "core/io_deadline.h"
#include "core/text.h"

namespace gpunode::kube {

BearerToken::BearerToken(std::string token, std::string token_file)
    : token_(token_file.empty() ? std::move(token) : std::string()),
      token_file_(std::move(token_file)) {}

absl::StatusOr<std::string> BearerToken::Get() {
  if (token_file_.empty()) return token_;
  // Re-read once a minute, as client-go does: the kubelet rotates a projected token in place.
  if (reread_.Passed()) {
    absl::StatusOr<std::string> text = core::ReadFile(token_file_);
    if (!text.ok()) {
      if (!token_.empty()) return token_;
      return absl::UnauthenticatedError(core::StrCat("token file: ", text.status().message()));
    }
    token_ = std::string(core::TrimSpace(*text));
    reread_ = core::IoDeadline::After(absl::Minutes(1));
  }
  return token_;
}

}  // namespace gpunode::kube
