#include "cluster/namespace_opt_in.h"

#include "cluster/gpu_job_defaults.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/object_meta.h"

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
  const std::string path = core::StrCat("/api/v1/namespaces/", kube::UrlEncode(ns));
  absl::StatusOr<std::string> body = client_->Get(path);
  bool opted_in = false;
  if (body.ok()) {
    ASSIGN_OR_RETURN(kube::ObjectMeta meta,
                     kube::ReadObjectMeta(*body, core::StrCat("GET ", path), "Namespace"));
    opted_in = meta.Label(kJobDefaultsLabel) == kJobDefaultsEnabled;
  } else if (!absl::IsNotFound(body.status())) {
    return body.status();
  }
  entries_[std::string(ns)] = Entry{opted_in, now};
  return opted_in;
}

}  // namespace gpunode::cluster
