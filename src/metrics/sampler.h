// Samples the node in the background and keeps the rendered exposition of the latest sample, so a
// scrape only hands out a string and never waits on NVML, the kubelet or /proc.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "core/env.h"
#include "metrics/attribution_watcher.h"
#include "metrics/gpu_reader.h"
#include "metrics/xid_watcher.h"
#include "nvml/library.h"

namespace gpunode::metrics {

struct SamplerOptions {
  std::string hostname;
  absl::Duration interval = absl::Seconds(1);
  // dcgm-exporter's --kubernetes-enable-dra: the dra_* labels on devices held through a claim.
  // Such devices are attributed to their pods (and their processes are not zombies) either way.
  bool dra_labels = false;
};

// Thread-safety: every method may be called from any thread, also while the background thread
// runs; samples are taken one at a time (SampleNow from a scrape or a test waits for the
// background one), and Latest and LatestAt never wait for a sample.
class Sampler {
 public:
  // `xids` and `pods` may be null (no XID watching; no pod attribution). They and `env` (the
  // host's files, the clock) must outlive this.
  Sampler(const nvml::Library& library, core::Env& env, XidWatcher* xids, AttributionWatcher* pods,
          SamplerOptions options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Takes one sample now, on the caller's thread, and publishes it.
  void SampleNow();
  // Takes the opening profiling (GPM) samples; a SampleNow at least kProfilingWindow later
  // then reports profiling values too. False when no GPU has GPM (nothing to wait for).
  bool PrimeProfiling();
  static constexpr absl::Duration kProfilingWindow = absl::Milliseconds(100);
  // Samples every `interval` on a background thread until destruction.
  void Start();

  // The exposition of the latest sample (empty before the first).
  std::shared_ptr<const std::string> Latest() const;
  // When the latest sample was taken (InfinitePast before the first), and how long ago.
  absl::Time LatestAt() const;
  absl::Duration LatestAge() const;
  absl::Duration interval() const { return options_.interval; }

 private:
  void Run();
  void Attribute(NodeReading& node);
  // Reads the DRA devices' names again when a device of `node` has none (a new MIG layout).
  void LearnDraNames(const NodeReading& node);

  // Held for a whole sample: the reader, the counters and the spare buffer are the sample's.
  std::mutex sampling_;
  const nvml::Library& library_;
  core::Env& env_;
  XidWatcher* xids_;
  AttributionWatcher* pods_;
  const SamplerOptions options_;
  GpuReader reader_;
  std::string driver_version_;
  // The NVIDIA controllers on the PCI bus, read once: a card that appears needs a reboot or a
  // rescan, after which the exporter restarts with the driver anyway.
  unsigned pci_gpus_ = 0;
  uint64_t samples_ = 0;
  uint64_t nvml_errors_ = 0;
  // The name of each GPU and MIG device in the DRA driver's pool, by UUID: PodResources names the
  // devices held through claims that way.
  std::map<std::string, std::string> dra_names_;
  bool dra_names_failed_ = false;
  // Rendering reuses the capacity of the string no scrape holds any more.
  std::shared_ptr<std::string> spare_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::shared_ptr<const std::string> latest_;
  absl::Time latest_at_ = absl::InfinitePast();
  std::thread thread_;
};

}  // namespace gpunode::metrics
