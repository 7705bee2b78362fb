// The exposition of every simulator profile and every real capture, series by series, against
// what dcgm-exporter 4.x writes for the same counters: the label keys of each series in
// dcgm-exporter's order, the XID gauge's err_code/err_msg, and the series it writes on every GPU
// (XID, vGPU licence, NVLink bandwidth), run through the real binary. An XID from the
// simulator's timeline is in exporter_test (CountsXidsAndKeepsALostGpusHealthSeries).
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "build_paths.h"
#include "captures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"
#include "test_support.h"

namespace gpunode {
namespace {

const std::string kFixtures = build_paths::kFixturesDir;

std::string Once(const std::string& spec) {
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", spec, "exporter", "--once", "--pod-resources-socket", ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

struct Sample {
  std::string metric;
  std::vector<std::string> keys;  // in the order written
  std::map<std::string, std::string> labels;
  std::string value;
};

// One exposition line `name{k="v",...} value`; values may hold escaped quotes.
Sample ParseSample(const std::string& line) {
  Sample sample;
  size_t brace = line.find('{');
  size_t space = line.find(' ');
  if (brace == std::string::npos || brace > space) {
    sample.metric = line.substr(0, space);
    sample.value = line.substr(space + 1);
    return sample;
  }
  sample.metric = line.substr(0, brace);
  size_t at = brace + 1;
  while (at < line.size() && line[at] != '}') {
    size_t equals = line.find('=', at);
    std::string key = line.substr(at, equals - at);
    std::string value;
    at = equals + 2;  // past ="
    while (line[at] != '"') {
      if (line[at] == '\\') ++at;
      value += line[at++];
    }
    ++at;  // past the closing quote
    if (line[at] == ',') ++at;
    sample.keys.push_back(key);
    sample.labels[key] = value;
  }
  sample.value = line.substr(at + 2);
  return sample;
}

std::vector<Sample> Samples(const std::string& exposition) {
  std::vector<Sample> out;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(ParseSample(line));
  }
  return out;
}

std::set<std::string> DefaultCounters() {
  std::ifstream in(kFixtures + "/metrics/dcgm-exporter-default-counters.txt");
  std::set<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

// dcgm-exporter's order (internal/pkg/rendermetrics/render_metrics.go): gpu, UUID, pci_bus_id,
// device, modelName, GPU_I_PROFILE and GPU_I_ID for a MIG device, Hostname, the label-type
// fields (DCGM_FI_DRIVER_VERSION in the default counters; on no series where the driver does not
// say its version), then the attributes sorted by name.
std::vector<std::string> DcgmExporterKeys(const Sample& sample, bool driver_version) {
  std::vector<std::string> keys = {"gpu", "UUID", "pci_bus_id", "device", "modelName"};
  if (sample.labels.contains("GPU_I_ID")) keys.insert(keys.end(), {"GPU_I_PROFILE", "GPU_I_ID"});
  keys.push_back("Hostname");
  if (driver_version) keys.push_back("DCGM_FI_DRIVER_VERSION");
  std::vector<std::string> attributes;
  for (const char* attribute :
       {"container", "err_code", "err_msg", "namespace", "pod", "pod_uid", "vgpu"}) {
    if (sample.labels.contains(attribute)) attributes.push_back(attribute);
  }
  std::sort(attributes.begin(), attributes.end());
  keys.insert(keys.end(), attributes.begin(), attributes.end());
  return keys;
}

void ExpectDcgmExporterSeries(const std::string& exposition, const std::string& where) {
  std::set<std::string> defaults = DefaultCounters();
  ASSERT_EQ(defaults.size(), 25u);
  std::vector<Sample> samples = Samples(exposition);
  std::set<std::string> healthy;
  for (const Sample& sample : samples) {
    if (sample.metric == "gpunode_gpu_health" && sample.value == "1")
      healthy.insert(sample.labels.at("gpu"));
  }
  ASSERT_FALSE(healthy.empty()) << where;
  bool driver_version = exposition.find("DCGM_FI_DRIVER_VERSION=\"") != std::string::npos;

  std::map<std::string, std::set<std::string>> gpus_of;  // metric -> GPUs with a sample
  for (const Sample& sample : samples) {
    if (!defaults.contains(sample.metric)) continue;
    gpus_of[sample.metric].insert(sample.labels.at("gpu"));
    EXPECT_EQ(sample.keys, DcgmExporterKeys(sample, driver_version))
        << where << ": " << sample.metric;
    bool xid = sample.metric == "DCGM_FI_DEV_XID_ERRORS";
    EXPECT_EQ(sample.labels.contains("err_code"), xid) << where << ": " << sample.metric;
    EXPECT_EQ(sample.labels.contains("err_msg"), xid) << where << ": " << sample.metric;
    if (!xid) continue;
    // The value is the last XID, and err_code says it again.
    EXPECT_EQ(sample.labels.at("err_code"), sample.value) << where;
    if (sample.value == "0") {
      EXPECT_EQ(sample.labels.at("err_msg"), "No Error") << where;
    }
  }
  // What dcgm-exporter writes on every GPU, NVLink or vGPU or not.
  for (const char* always : {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
                             "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"})
    EXPECT_EQ(gpus_of[always], healthy) << where << ": " << always;
}

class BuiltinProfileParity : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinProfileParity, SeriesAndLabelKeysAsDcgmExporter4) {
  ExpectDcgmExporterSeries(Once(GetParam()), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Parity, BuiltinProfileParity,
                         ::testing::Values("dgx-h100", "dgx1-v100", "a10-pcie-4", "a100-mig",
                                           "h200-1"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

class CaptureParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptureParity, SeriesAndLabelKeysAsDcgmExporter4) {
  ExpectDcgmExporterSeries(Once(kFixtures + "/nvidia-smi-xml/" + GetParam()), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Parity, CaptureParity,
                         ::testing::ValuesIn(testing::CaptureFiles(kFixtures + "/nvidia-smi-xml")),
                         testing::CaptureTestName);

// dcgm-exporter writes 0 on every GPU; gpunode writes what a vGPU guest's driver says of its
// licence, and 0 where there is none to hold.
TEST(Parity, VgpuLicenceAsTheGuestsDriverSaysIt) {
  std::string out = Once(kFixtures + "/metrics/vgpu-guest.yaml");
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", {"gpu=\"0\""}), 1) << out;
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", {"gpu=\"1\""}), 0);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", {"gpu=\"2\""}), 0);
  EXPECT_THAT(out, ::testing::HasSubstr("# TYPE DCGM_FI_DEV_VGPU_LICENSE_STATUS gauge\n"));
  ExpectDcgmExporterSeries(out, "vgpu-guest.yaml");
}

}  // namespace
}  // namespace gpunode
