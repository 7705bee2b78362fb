// What the exporter spends per sample and per scrape at 8 and 64 simulated GPUs: rendering the
// exposition, a whole sample (NVML reads + render), and serving /metrics over HTTP on loopback
// with a kept connection (median and 99th percentile per request).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "build_paths.h"
#include "core/system_env.h"
#include "gpunode_sim.h"
#include "http/http_module.h"
#include "httplib.h"
#include "metrics/gpm_reader.h"
#include "metrics/gpu_reader.h"
#include "metrics/metrics_server.h"
#include "metrics/render.h"
#include "metrics/sampler.h"
#include "nvml/library.h"
#include "nvml/system.h"

namespace gpunode::metrics {
namespace {

std::string SpecFor(int gpus) {
  return gpus == 64 ? std::string(build_paths::kFixturesDir) + "/metrics/sim-64.yaml" : "dgx-h100";
}

// The simulator is one per process: configure it, then load it as NVML.
std::unique_ptr<nvml::Library> OpenSimulator(const std::string& spec) {
  void* handle = dlopen(build_paths::kSimLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  auto configure =
      reinterpret_cast<decltype(&gpunodeSimConfigure)>(dlsym(handle, "gpunodeSimConfigure"));
  char error[1024] = {};
  if (configure == nullptr || configure(spec.c_str(), "", error, sizeof error) != 0) {
    dlclose(handle);
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<nvml::Library>> library =
      nvml::Library::Open({.library_path = build_paths::kSimLibrary});
  dlclose(handle);
  return library.ok() ? std::move(*library) : nullptr;
}

void BM_Render(benchmark::State& state) {
  std::unique_ptr<nvml::Library> library = OpenSimulator(SpecFor(static_cast<int>(state.range(0))));
  if (library == nullptr) return state.SkipWithError("cannot load the simulator");
  GpuReader reader(*library);
  uint64_t errors = 0;
  NodeReading node;
  node.hostname = "bench-node";
  node.driver_version = "550.90.07";
  node.gpus = reader.Read(&errors);
  std::string out;
  for (auto _ : state) {
    RenderExposition(node, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_Render)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_Sample(benchmark::State& state) {
  std::unique_ptr<nvml::Library> library = OpenSimulator(SpecFor(static_cast<int>(state.range(0))));
  if (library == nullptr) return state.SkipWithError("cannot load the simulator");
  core::SystemEnv env;
  Sampler sampler(*library, env, nullptr, nullptr, {.hostname = "bench-node"});
  for (auto _ : state) sampler.SampleNow();
}
BENCHMARK(BM_Sample)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

// GPM alone: one sample of every GPU and the metrics against the previous sample, as each
// exporter sample does on Hopper.
void BM_GpmSample(benchmark::State& state) {
  std::unique_ptr<nvml::Library> library = OpenSimulator(SpecFor(static_cast<int>(state.range(0))));
  if (library == nullptr) return state.SkipWithError("cannot load the simulator");
  GpmReader gpm(*library);
  std::vector<nvml::Device> gpus;
  for (unsigned i = 0; i < static_cast<unsigned>(state.range(0)); ++i) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(*library, i);
    if (!device.ok() || !gpm.Supported(i, *device).value_or(false))
      return state.SkipWithError("GPU without GPM");
    gpus.push_back(*device);
    (void)gpm.Read(i, *device, std::nullopt);  // the opening sample
  }
  for (auto _ : state) {
    for (unsigned i = 0; i < gpus.size(); ++i) {
      absl::StatusOr<std::optional<nvml::GpmValues>> values = gpm.Read(i, gpus[i], std::nullopt);
      benchmark::DoNotOptimize(values);
    }
  }
}
BENCHMARK(BM_GpmSample)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_Scrape(benchmark::State& state) {
  std::unique_ptr<nvml::Library> library = OpenSimulator(SpecFor(static_cast<int>(state.range(0))));
  if (library == nullptr) return state.SkipWithError("cannot load the simulator");
  core::SystemEnv env;
  Sampler sampler(*library, env, nullptr, nullptr, {.hostname = "bench-node"});
  sampler.SampleNow();
  // The server's module is next to the gpunode binary, not next to this program.
  setenv(http::kModuleEnvironment, build_paths::kHttpModule, /*overwrite=*/0);
  MetricsServer server(sampler);
  if (!server.Start({"127.0.0.1", 0}).ok()) return state.SkipWithError("cannot listen");
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  std::vector<double> micros;
  micros.reserve(1 << 16);
  size_t bytes = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    httplib::Result res = client.Get("/metrics");
    auto end = std::chrono::steady_clock::now();
    if (!res || res->status != 200) return state.SkipWithError("scrape failed");
    bytes = res->body.size();
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) { return micros[static_cast<size_t>(q * (micros.size() - 1))]; };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
  state.counters["bytes"] = static_cast<double>(bytes);
  server.Stop();
}
BENCHMARK(BM_Scrape)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
}  // namespace gpunode::metrics

BENCHMARK_MAIN();
