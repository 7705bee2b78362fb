// The sampler from several threads at once: a scrape-triggered or test-triggered SampleNow while
// the background thread samples. Run under ThreadSanitizer too (label `threads`).
#include "metrics/sampler.h"

#include <string>
#include <thread>
#include <vector>

#include "core/system_env.h"
#include "gtest/gtest.h"
#include "sim_library.h"

namespace gpunode::metrics {
namespace {

// The value of the exporter's own sample counter in an exposition.
long SamplesTotal(const std::string& exposition) {
  const std::string name = "\ngpunode_exporter_samples_total ";
  size_t at = exposition.find(name);
  if (at == std::string::npos) return -1;
  return std::stol(exposition.substr(at + name.size()));
}

TEST(Sampler, SamplesFromSeveralThreadsAreTakenOneAtATime) {
  std::unique_ptr<nvml::Library> library = testing::OpenSimulator("dgx-h100");
  ASSERT_NE(library, nullptr);
  core::SystemEnv env;
  // The background thread samples every millisecond, next to the callers' samples.
  Sampler sampler(*library, env, nullptr, nullptr,
                  {.hostname = "node-a", .interval = absl::Milliseconds(1)});
  sampler.Start();
  constexpr int kThreads = 4;
  constexpr int kSamplesEach = 25;
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kSamplesEach; ++i) sampler.SampleNow();
    });
  }
  for (std::thread& caller : callers) caller.join();
  std::shared_ptr<const std::string> latest = sampler.Latest();
  ASSERT_NE(latest, nullptr);
  // Samples are counted one at a time and published in the order they were taken, so the latest
  // exposition carries the highest count: at least every caller's sample.
  long first = SamplesTotal(*latest);
  EXPECT_GE(first, kThreads * kSamplesEach) << *latest;
  sampler.SampleNow();
  EXPECT_GT(SamplesTotal(*sampler.Latest()), first);
  EXPECT_NE(sampler.LatestAt(), absl::InfinitePast());
}

}  // namespace
}  // namespace gpunode::metrics
