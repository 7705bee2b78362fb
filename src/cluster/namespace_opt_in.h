// Whether a namespace opted in to the webhook's GPU job defaults: its labels, read from the API
// (GET /api/v1/namespaces/NAME) and remembered for a short while, so a burst of pods costs one
// request and a label change takes effect within `ttl`.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "kube/client.h"

namespace gpunode::cluster {

class NamespaceOptInCache {
 public:
  // `env` gives the time entries are read at.
  NamespaceOptInCache(std::unique_ptr<kube::Client> client, absl::Duration ttl, core::Env& env);

  // Thread-safe. A namespace that does not exist has not opted in; other API errors are returned
  // (and not remembered).
  absl::StatusOr<bool> OptedIn(std::string_view ns);

 private:
  struct Entry {
    bool opted_in = false;
    absl::Time read_at;
  };
  std::mutex mu_;  // one request at a time: the client reuses one connection
  std::unique_ptr<kube::Client> client_;
  absl::Duration ttl_;
  core::Env& env_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

}  // namespace gpunode::cluster
