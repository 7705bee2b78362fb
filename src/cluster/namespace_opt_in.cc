#include "cluster/namespace_opt_in.h"

#include "cluster/gpu_job_defaults.h"
#include "core/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

NamespaceOptInCache::NamespaceOptInCache(std::unique_ptr<kube::Client> client, absl::Duration ttl,
                                         core::Env& env)
    : client_(std::move(client)), ttl_(ttl), env_(env) {}

absl::StatusOr<bool> NamespaceOptInCache::OptedIn(std::string_view ns) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::Time now = env_.Now();
  if (auto it = entries_.find(std::string(ns));
      it != entries_.end() && now - it->second.read_at < ttl_) {
    return it->second.opted_in;
  }
  absl::StatusOr<std::string> body =
      client_->Get(core::StrCat("/api/v1/namespaces/", kube::UrlEncode(ns)));
  bool opted_in = false;
  if (body.ok()) {
    nlohmann::json j = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
    const std::string key(kJobDefaultsLabel);
    if (j.is_object() && j.contains("metadata") && j["metadata"].is_object() &&
        j["metadata"].contains("labels") && j["metadata"]["labels"].is_object() &&
        j["metadata"]["labels"].contains(key) && j["metadata"]["labels"][key].is_string()) {
      opted_in = j["metadata"]["labels"][key] == kJobDefaultsEnabled;
    }
  } else if (!absl::IsNotFound(body.status())) {
    return body.status();
  }
  entries_[std::string(ns)] = Entry{opted_in, now};
  return opted_in;
}

}  // namespace gpunode::cluster
