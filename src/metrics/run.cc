#include "metrics/run.h"

#include <algorithm>
#include <memory>

#include "core/status_macros.h"
#include "metrics/attribution_watcher.h"
#include "metrics/metrics_server.h"
#include "metrics/sampler.h"
#include "metrics/xid_watcher.h"
#include "spdlog/spdlog.h"

namespace gpunode::metrics {

absl::Status Run(const RunOptions& options, const nvml::Library& library, core::Env& env,
                 std::ostream& out) {
  std::unique_ptr<AttributionWatcher> pods;
  if (!options.pod_resources_socket.empty()) {
    AttributionOptions pod_options;
    pod_options.socket = options.pod_resources_socket;
    pod_options.refresh = options.interval;
    pod_options.stale_after = std::max(3 * options.interval, absl::Seconds(10));
    pods = std::make_unique<AttributionWatcher>(env, pod_options);
    pods->Refresh().IgnoreError();
  }
  XidWatcher xids(library, env);
  xids.Register();

  Sampler sampler(library, env, &xids, pods.get(),
                  {.hostname = options.hostname,
                   .interval = options.interval,
                   .dra_labels = options.dra_labels});
  // Profiling values compare two GPM samples: open the window before the first sample.
  if (sampler.PrimeProfiling()) env.SleepFor(Sampler::kProfilingWindow);
  if (options.once) {
    xids.Poll();
    sampler.SampleNow();
    out << *sampler.Latest() << std::flush;
    return absl::OkStatus();
  }

  sampler.SampleNow();
  MetricsServer server(sampler);
  RETURN_IF_ERROR(server.Start(options.listen));
  spdlog::info("exporter: serving /metrics on {}:{} for {}, sampling every {}, pod attribution {}",
               options.listen.host, server.port(), options.hostname,
               absl::FormatDuration(options.interval),
               options.pod_resources_socket.empty() ? std::string("off")
                                                    : "from " + options.pod_resources_socket);
  xids.Start();
  if (pods != nullptr) pods->Start();
  sampler.Start();

  env.SleepUntil(absl::InfiniteFuture());
  server.Stop();
  return absl::OkStatus();
}

}  // namespace gpunode::metrics
