// A coordination.k8s.io/v1 Lease held the way client-go's leader election holds one, so that two
// copies of a long-running cluster command (a CLI and a Deployment, or a Deployment's old and new
// pod) never both act: the holder renews it well within its duration; anyone may take it once it
// has gone unrenewed for longer; the holder's own identity takes it back at once (a restart).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/client.h"
#include "kube/lease_view.h"

namespace gpunode::kube {

struct LeaseSettings {
  std::string ns;
  std::string name;
  std::string identity;  // holderIdentity: unique per copy, stable across its restarts
  absl::Duration duration = absl::Seconds(60);
};

// Someone else's hold on the lease.
struct LeaseHolder {
  std::string identity;
  absl::Time renewed = absl::InfinitePast();
  absl::Duration duration = absl::ZeroDuration();
  // "held by upgrader-1 (renewed 12s ago, free in 48s if it stops renewing)"
  std::string Describe(absl::Time now) const;
};

// Thread-safety: none; one per thread, like its Client.
class LeaseLock {
 public:
  LeaseLock(Client& client, LeaseSettings settings);

  // Takes the lease when it is absent, free, expired or already ours; returns the holder when
  // someone else holds it (nothing changed). An error Status is an API failure.
  absl::StatusOr<std::optional<LeaseHolder>> TryAcquire(absl::Time now);
  // Renews a lease TryAcquire took. FailedPrecondition when it was taken over meanwhile, or when
  // it lapsed: `now` is a whole duration or more after the last renewal, so another copy may have
  // found it free and acted (client-go's renew deadline). Either way the caller must stop acting.
  absl::Status Renew(absl::Time now);
  // Gives the lease up (empty holder), so the next copy need not wait out the duration.
  absl::Status Release(absl::Time now);

  const LeaseSettings& settings() const { return settings_; }

 private:
  std::string Path() const;
  absl::StatusOr<std::optional<LeaseView>> Read();
  // PUT of `lease` with its resourceVersion: false on 409 (someone wrote it since).
  absl::StatusOr<bool> Write(const LeaseView& lease);

  Client& client_;
  LeaseSettings settings_;
  std::optional<LeaseView> held_;  // the lease as last written by us; empty when not held
  absl::Time renewed_ = absl::InfinitePast();  // when we last wrote it
};

}  // namespace gpunode::kube
