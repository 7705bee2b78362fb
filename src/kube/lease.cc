#include "kube/lease.h"

#include <utility>

#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::kube {
namespace {

using core::StrCat;

// metav1.MicroTime, as client-go writes renewTime and acquireTime.
std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

absl::Time ParseMicroTime(const std::string& text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return absl::InfinitePast();
  return t;
}

LeaseHolder HolderOf(const LeaseView& lease) {
  LeaseHolder holder;
  holder.identity = lease.holder_identity;
  holder.renewed = ParseMicroTime(lease.renew_time);
  holder.duration = absl::Seconds(lease.duration_seconds);
  return holder;
}

std::string Ago(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(std::max(d, absl::ZeroDuration()), absl::Seconds(1)));
}

}  // namespace

std::string LeaseHolder::Describe(absl::Time now) const {
  if (renewed == absl::InfinitePast()) return StrCat("held by ", identity);
  return StrCat("held by ", identity, " (renewed ", Ago(now - renewed), " ago, free in ",
                Ago(renewed + duration - now), " if it stops renewing)");
}

LeaseLock::LeaseLock(Client& client, LeaseSettings settings)
    : client_(client), settings_(std::move(settings)) {}

std::string LeaseLock::Path() const {
  return StrCat("/apis/coordination.k8s.io/v1/namespaces/", UrlEncode(settings_.ns), "/leases/",
                UrlEncode(settings_.name));
}

absl::StatusOr<std::optional<LeaseView>> LeaseLock::Read() {
  absl::StatusOr<std::string> body = client_.Get(Path());
  if (absl::IsNotFound(body.status())) return std::nullopt;
  if (!body.ok()) return body.status();
  ASSIGN_OR_RETURN(LeaseView lease, ReadLease(*body, StrCat("GET ", Path())));
  return lease;
}

absl::StatusOr<bool> LeaseLock::Write(const LeaseView& lease) {
  HttpRequest request{.method = "PUT",
                      .path = Path(),
                      .content_type = "application/json",
                      .body = lease.ToJson().dump()};
  ASSIGN_OR_RETURN(HttpResponse response, client_.Send(request));
  if (response.status == 409) return false;
  if (response.status / 100 != 2) return StatusFromResponse(request, response);
  ASSIGN_OR_RETURN(held_, ReadLease(response.body, StrCat("PUT ", Path())));
  return true;
}

absl::StatusOr<std::optional<LeaseHolder>> LeaseLock::TryAcquire(absl::Time now) {
  const int seconds = static_cast<int>(absl::ToInt64Seconds(settings_.duration));
  // Two rounds: a create or an update that loses a race reads the winner's lease again.
  for (int round = 0; round < 2; ++round) {
    ASSIGN_OR_RETURN(std::optional<LeaseView> current, Read());
    if (!current) {
      LeaseView lease;
      lease.ns = settings_.ns;
      lease.name = settings_.name;
      lease.holder_identity = settings_.identity;
      lease.duration_seconds = seconds;
      lease.acquire_time = MicroTime(now);
      lease.renew_time = MicroTime(now);
      HttpRequest request{.method = "POST",
                          .path = StrCat("/apis/coordination.k8s.io/v1/namespaces/",
                                         UrlEncode(settings_.ns), "/leases"),
                          .content_type = "application/json",
                          .body = lease.ToJson().dump()};
      ASSIGN_OR_RETURN(HttpResponse response, client_.Send(request));
      if (response.status == 409) continue;
      if (response.status / 100 != 2) return StatusFromResponse(request, response);
      ASSIGN_OR_RETURN(held_, ReadLease(response.body, StrCat("POST ", request.path)));
      renewed_ = now;
      return std::nullopt;
    }
    LeaseHolder holder = HolderOf(*current);
    bool ours = holder.identity == settings_.identity;
    bool free = holder.identity.empty() || holder.renewed + holder.duration < now;
    if (!ours && !free) return holder;
    LeaseView lease = *current;
    if (!ours) {
      lease.acquire_time = MicroTime(now);
      lease.transitions += 1;
    }
    lease.holder_identity = settings_.identity;
    lease.duration_seconds = seconds;
    lease.renew_time = MicroTime(now);
    ASSIGN_OR_RETURN(bool written, Write(lease));
    if (written) {
      renewed_ = now;
      return std::nullopt;
    }
  }
  ASSIGN_OR_RETURN(std::optional<LeaseView> current, Read());
  if (!current) return absl::UnavailableError(StrCat("lease ", settings_.name, " keeps changing"));
  return HolderOf(*current);
}

absl::Status LeaseLock::Renew(absl::Time now) {
  if (!held_) {
    return absl::FailedPreconditionError(
        StrCat("lease ", settings_.ns, "/", settings_.name, " is not held"));
  }
  if (now - renewed_ >= settings_.duration) {
    held_.reset();
    return absl::FailedPreconditionError(
        StrCat("lease ", settings_.ns, "/", settings_.name, " lapsed: last renewed ",
               absl::FormatDuration(absl::Trunc(now - renewed_, absl::Seconds(1))),
               " ago, past its duration of ", absl::FormatDuration(settings_.duration),
               ", so another copy may have taken it; stopping"));
  }
  LeaseView lease = *held_;
  lease.renew_time = MicroTime(now);
  ASSIGN_OR_RETURN(bool written, Write(lease));
  if (written) {
    renewed_ = now;
    return absl::OkStatus();
  }
  // Someone wrote the lease since our last renewal: it is ours only if it still names us.
  ASSIGN_OR_RETURN(std::optional<LeaseView> current, Read());
  if (current && HolderOf(*current).identity == settings_.identity) {
    LeaseView retry = *current;
    retry.renew_time = MicroTime(now);
    ASSIGN_OR_RETURN(written, Write(retry));
    if (written) {
      renewed_ = now;
      return absl::OkStatus();
    }
  }
  held_.reset();
  std::string holder = current ? HolderOf(*current).identity : std::string("nobody (deleted)");
  return absl::FailedPreconditionError(
      StrCat("lost lease ", settings_.ns, "/", settings_.name, " to ", holder, "; stopping"));
}

absl::Status LeaseLock::Release(absl::Time now) {
  if (!held_) return absl::OkStatus();
  LeaseView lease = *held_;
  lease.holder_identity = "";
  lease.duration_seconds = 1;
  lease.renew_time = MicroTime(now);
  ASSIGN_OR_RETURN(bool written, Write(lease));
  held_.reset();
  (void)written;  // a lease someone else took meanwhile is theirs to keep
  return absl::OkStatus();
}

}  // namespace gpunode::kube
