// `gpunode exporter` as users meet it: the real binary on the simulator, served over HTTP or
// printed with --once, attributing GPUs to pods through a kubelet double, finding zombie
// processes in a fixture /proc, and surviving a GPU that falls off the bus.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "build_paths.h"
#include "captures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet_podresources_double.h"
#include "process.h"
#include "pugixml.hpp"
#include "temp_dir.h"
#include "test_support.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
namespace fs = std::filesystem;

const std::string kFixtures = build_paths::kFixturesDir;

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

std::string Once(const std::vector<std::string>& global) {
  std::vector<std::string> args = global;
  args.insert(args.end(), {"exporter", "--once", "--pod-resources-socket", ""});
  testing::ProcessResult r = Gpunode(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

std::string Label(const std::string& name, const std::string& value) {
  return name + "=\"" + value + "\"";
}

// ---- --once ----

struct Profile {
  std::string name;
  int gpus;
};

class BuiltinProfile : public ::testing::TestWithParam<Profile> {};

TEST_P(BuiltinProfile, OnceReportsEveryGpuHealthyWithItsIdentity) {
  std::string out = Once({"--sim", GetParam().name});
  int gpus = GetParam().gpus;
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_GPU_TEMP"), gpus);
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health"), gpus);
  for (int i = 0; i < gpus; ++i) {
    std::string gpu = Label("gpu", std::to_string(i));
    EXPECT_EQ(testing::SampleValue(out, "gpunode_gpu_health", {gpu}), 1) << i;
    EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_XID_ERRORS",
                                   {gpu, Label("err_code", "0"), Label("err_msg", "No Error")}),
              0)
        << i;
    EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_GPU_TEMP",
                                   {gpu, Label("device", "nvidia" + std::to_string(i)),
                                    "DCGM_FI_DRIVER_VERSION=\""}),
              1);
  }
  // FB_TOTAL is exported (dcgm-exporter's default leaves it out) wherever FB_USED is.
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_TOTAL"),
            testing::SampleCount(out, "DCGM_FI_DEV_FB_USED"));
  EXPECT_GE(testing::SampleCount(out, "DCGM_FI_DEV_FB_TOTAL"), gpus);
  EXPECT_THAT(out, HasSubstr("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  EXPECT_THAT(out, HasSubstr("# TYPE gpunode_exporter_sample_duration_seconds gauge\n"));
  EXPECT_THAT(out, Not(HasSubstr("gpunode_pod_resources_up"))) << "attribution was turned off";
  EXPECT_EQ(testing::SampleValue(out, "gpunode_physical_gpus"), gpus);
}

INSTANTIATE_TEST_SUITE_P(Exporter, BuiltinProfile,
                         ::testing::Values(Profile{"dgx-h100", 8}, Profile{"dgx1-v100", 8},
                                           Profile{"a10-pcie-4", 4}, Profile{"a100-mig", 8},
                                           Profile{"h200-1", 1}),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Two A10s answer NVML on a host whose bus has eight NVIDIA controllers (the doctor's healthy
// tree): the physical count is the bus's, so the six cards the driver did not take show.
TEST(Exporter, PhysicalGpusCountTheCardsOnTheBus) {
  std::string out = Once({"--sim", kFixtures + "/metrics/xid-lost.yaml", "--host-root",
                          kFixtures + "/doctor/healthy"});
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health"), 2);
  EXPECT_THAT(out, HasSubstr("# TYPE gpunode_physical_gpus gauge\n"));
  EXPECT_EQ(testing::SampleValue(out, "gpunode_physical_gpus"), 8);
}

TEST(Exporter, MigDevicesCarryTheirProfileAndInstance) {
  std::string out = Once({"--sim", "a100-mig"});
  // GPU0 has seven 1g.10gb instances, GPU instance ids 7-13; the GPU itself has no FB series.
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_TOTAL", {Label("gpu", "0")}), 7);
  EXPECT_EQ(testing::SampleCount(
                out, "DCGM_FI_DEV_FB_USED",
                {Label("gpu", "0"), Label("GPU_I_PROFILE", "1g.10gb"), Label("GPU_I_ID", "9")}),
            1);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED",
                                 {Label("gpu", "1"), Label("GPU_I_PROFILE", "3g.40gb")}),
            12301);
  // GPU5 (MIG off): whole-GPU memory and utilization.
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED", {Label("gpu", "5")}), 30720);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_GPU_UTIL", {Label("gpu", "5")}), 87);
  EXPECT_EQ(
      testing::SampleValue(out, "gpunode_gpu_process_used_memory_bytes",
                           {Label("gpu", "1"), Label("GPU_I_ID", "2"), Label("pid", "41237")}),
      12288.0 * 1024 * 1024);
}

TEST(Exporter, ScaleProfileOf64Gpus) {
  std::string out = Once({"--sim", kFixtures + "/metrics/sim-64.yaml"});
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health"), 64);
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_process_used_memory_bytes"), 64);
}

// Every value the exporter derives from a real `nvidia-smi -q -x` capture equals the capture's;
// what the capture does not have is left out, never 0.
std::string Text(pugi::xml_node node) {
  std::string text = node.text().as_string();
  size_t begin = text.find_first_not_of(" \t\r\n");
  size_t end = text.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

// "36 C" -> 36, "66.92 W" -> 66.92; N/A, [Not Supported], missing -> NaN.
double Number(pugi::xml_node node) {
  std::string text = Text(node);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nan("");
  return std::stod(text);
}

double Sum(std::initializer_list<double> values) {
  double total = 0;
  for (double v : values) {
    if (std::isnan(v)) return std::nan("");
    total += v;
  }
  return total;
}

// ECC totals as the simulator documents its capture mapping: old schemas' single/double-bit
// totals, newer ones' SRAM + DRAM counters.
double Ecc(pugi::xml_node counters, bool corrected) {
  if (pugi::xml_node old = counters.child(corrected ? "single_bit" : "double_bit"))
    return Number(old.child("total"));
  double dram = Number(counters.child(corrected ? "dram_correctable" : "dram_uncorrectable"));
  if (corrected) return Sum({Number(counters.child("sram_correctable")), dram});
  double sram = Number(counters.child("sram_uncorrectable"));
  if (std::isnan(sram))
    sram = Sum({Number(counters.child("sram_uncorrectable_parity")),
                Number(counters.child("sram_uncorrectable_secded"))});
  return Sum({sram, dram});
}

double YesNo(pugi::xml_node node) {
  std::string text = Text(node);
  if (text == "Yes") return 1;
  if (text == "No") return 0;
  return std::nan("");
}

void ExpectValue(const std::string& out, const std::string& metric,
                 const std::vector<std::string>& labels, double expected,
                 const std::string& where) {
  double got = testing::SampleValue(out, metric, labels);
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(got)) << where << " " << metric << ": not in the capture, exported "
                                 << got;
  } else {
    EXPECT_NEAR(got, expected, 1e-6) << where << " " << metric;
  }
}

class Capture : public ::testing::TestWithParam<std::string> {};

TEST_P(Capture, ExportedValuesEqualTheCapture) {
  std::string path = kFixtures + "/nvidia-smi-xml/" + GetParam();
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(path.c_str()));
  pugi::xml_node log = doc.child("nvidia_smi_log");
  std::string out = Once({"--sim", path});
  std::string driver = Text(log.child("driver_version"));
  int index = 0;
  for (pugi::xml_node gpu : log.children("gpu")) {
    std::string where = GetParam() + " GPU " + std::to_string(index);
    std::vector<std::string> id = {Label("gpu", std::to_string(index))};
    ++index;
    EXPECT_EQ(testing::SampleValue(out, "gpunode_gpu_health",
                                   {id[0], Label("UUID", Text(gpu.child("uuid"))),
                                    Label("modelName", Text(gpu.child("product_name"))),
                                    Label("pci_bus_id", gpu.attribute("id").as_string())}),
              1)
        << where;
    if (!driver.empty()) {
      EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health",
                                     {id[0], Label("DCGM_FI_DRIVER_VERSION", driver)}),
                1);
    }
    ExpectValue(out, "DCGM_FI_DEV_GPU_TEMP", id, Number(gpu.child("temperature").child("gpu_temp")),
                where);
    ExpectValue(out, "DCGM_FI_DEV_MEMORY_TEMP", id,
                Number(gpu.child("temperature").child("memory_temp")), where);
    ExpectValue(out, "DCGM_FI_DEV_SM_CLOCK", id, Number(gpu.child("clocks").child("sm_clock")),
                where);
    ExpectValue(out, "DCGM_FI_DEV_MEM_CLOCK", id, Number(gpu.child("clocks").child("mem_clock")),
                where);
    pugi::xml_node power =
        gpu.child("power_readings") ? gpu.child("power_readings") : gpu.child("gpu_power_readings");
    double watts = Number(power.child("power_draw"));
    if (std::isnan(watts) && !gpu.child("power_readings"))
      watts = Number(power.child("average_power_draw"));
    ExpectValue(out, "DCGM_FI_DEV_POWER_USAGE", id, watts, where);
    pugi::xml_node util = gpu.child("utilization");
    double gpu_util = Number(util.child("gpu_util")), mem_util = Number(util.child("memory_util"));
    // nvmlDeviceGetUtilizationRates answers both or neither.
    if (std::isnan(gpu_util) || std::isnan(mem_util)) gpu_util = mem_util = std::nan("");
    ExpectValue(out, "DCGM_FI_DEV_GPU_UTIL", id, gpu_util, where);
    ExpectValue(out, "DCGM_FI_DEV_MEM_COPY_UTIL", id, mem_util, where);
    ExpectValue(out, "DCGM_FI_DEV_ENC_UTIL", id, Number(util.child("encoder_util")), where);
    ExpectValue(out, "DCGM_FI_DEV_DEC_UTIL", id, Number(util.child("decoder_util")), where);
    ExpectValue(out, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", id,
                Number(gpu.child("pci").child("replay_counter")), where);
    pugi::xml_node ecc = gpu.child("ecc_errors");
    ExpectValue(out, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", id, Ecc(ecc.child("volatile"), true), where);
    ExpectValue(out, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", id, Ecc(ecc.child("volatile"), false), where);
    ExpectValue(out, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", id, Ecc(ecc.child("aggregate"), true), where);
    ExpectValue(out, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", id, Ecc(ecc.child("aggregate"), false),
                where);
    pugi::xml_node retired = gpu.child("retired_pages");
    ExpectValue(out, "DCGM_FI_DEV_RETIRED_SBE", id,
                Number(retired.child("multiple_single_bit_retirement").child("retired_count")),
                where);
    ExpectValue(out, "DCGM_FI_DEV_RETIRED_DBE", id,
                Number(retired.child("double_bit_retirement").child("retired_count")), where);
    pugi::xml_node rows = gpu.child("remapped_rows");
    double corr = Number(rows.child("remapped_row_corr")),
           unc = Number(rows.child("remapped_row_unc")),
           pending = YesNo(rows.child("remapped_row_pending")),
           failure = YesNo(rows.child("remapped_row_failure"));
    if (std::isnan(corr) || std::isnan(unc) || std::isnan(pending) || std::isnan(failure))
      corr = unc = pending = failure = std::nan("");
    ExpectValue(out, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", id, corr, where);
    ExpectValue(out, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", id, unc, where);
    ExpectValue(out, "DCGM_FI_DEV_ROW_REMAP_PENDING", id, pending, where);
    ExpectValue(out, "DCGM_FI_DEV_ROW_REMAP_FAILURE", id, failure, where);

    bool mig = Text(gpu.child("mig_mode").child("current_mig")) == "Enabled";
    auto memory = [&](pugi::xml_node fb, std::vector<std::string> labels, const std::string& w) {
      ExpectValue(out, "DCGM_FI_DEV_FB_TOTAL", labels, Number(fb.child("total")), w);
      ExpectValue(out, "DCGM_FI_DEV_FB_USED", labels, Number(fb.child("used")), w);
      ExpectValue(out, "DCGM_FI_DEV_FB_FREE", labels, Number(fb.child("free")), w);
    };
    if (!mig) {
      memory(gpu.child("fb_memory_usage"), id, where);
      ExpectValue(out, "DCGM_FI_DEV_FB_RESERVED", id,
                  Number(gpu.child("fb_memory_usage").child("reserved")), where);
      continue;
    }
    int migs = 0;
    for (pugi::xml_node device : gpu.child("mig_devices").children("mig_device")) {
      ++migs;
      std::string gi = Text(device.child("gpu_instance_id"));
      memory(device.child("fb_memory_usage"), {id[0], Label("GPU_I_ID", gi)},
             where + " MIG GI " + gi);
    }
    EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_TOTAL", id), migs) << where;
  }
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health"), index);
}

INSTANTIATE_TEST_SUITE_P(Exporter, Capture,
                         ::testing::ValuesIn(testing::CaptureFiles(kFixtures + "/nvidia-smi-xml")),
                         testing::CaptureTestName);

// promtool's linter flags what dcgm-exporter compatibility requires (camelCase modelName,
// DCGM counters without _total); anything else, or a parse error, fails.
TEST(Exporter, PromtoolChecksTheScrape) {
  for (const std::string& spec :
       {std::string("a100-mig"), kFixtures + "/metrics/zombie-node.yaml"}) {
    std::string out = Once({"--sim", spec});
    testing::ProcessResult r = testing::RunProcess({PROMTOOL, "check", "metrics"}, {}, out);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.out << r.err;
    std::istringstream lines(r.out + r.err);
    std::string line;
    const std::regex allowed(
        R"(^(\S+ label names should be written in 'snake_case' not 'camelCase'|)"
        R"(DCGM_FI_\S+ counter metrics should have "_total" suffix|)"
        R"(DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter')$)");
    int lint = 0;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      ++lint;
      EXPECT_TRUE(std::regex_match(line, allowed)) << spec << ": " << line;
    }
    EXPECT_GT(lint, 0) << "promtool found nothing at all: did it read the scrape?";
  }
}

// ---- Bad input: one line naming the flag, exit 2, no output ----

TEST(Exporter, BadFlagsAreOneLineAndExit2) {
  int busy_port = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  busy_port = ntohs(addr.sin_port);
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  };
  for (const Case& c :
       std::vector<Case>{{{"--interval", "soon"}, "--interval"},
                         {{"--interval", "10ms"}, "--interval"},
                         {{"--interval", "2h"}, "--interval"},
                         {{"--listen", "9400"}, "--listen"},
                         {{"--listen", ":99999"}, "--listen"},
                         {{"--listen", "127.0.0.1:" + std::to_string(busy_port)}, "--listen"}}) {
    std::vector<std::string> args = {"--sim", "h200-1", "exporter", "--pod-resources-socket", ""};
    args.insert(args.end(), c.args.begin(), c.args.end());
    testing::ProcessResult r = Gpunode(args);
    EXPECT_EQ(r.exit_code, 2) << c.args[1] << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr(c.flag));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  close(fd);
}

// The exporter serves plain HTTP from the binary itself: the HTTPS module (libgpunode-http.so,
// cpp-httplib and OpenSSL) is neither needed nor loaded (docs/PERFORMANCE.md: 3.4 MiB of an idle
// exporter).
TEST(Exporter, ServesWithoutTheHttpsModule) {
  testing::TempDir dir("exporter-module");
  const fs::path binary = fs::path(build_paths::kBinary);
  fs::copy_file(binary, dir.path() + "/gpunode");
  fs::copy_file(binary.parent_path() / "libgpunode-sim.so", dir.path() + "/libgpunode-sim.so");
  const int port = testing::FreeLoopbackPort();
  testing::BackgroundProcess exporter(
      {dir.path() + "/gpunode", "--sim", "h200-1", "exporter", "--listen",
       "127.0.0.1:" + std::to_string(port), "--pod-resources-socket", ""},
      {"GPUNODE_HTTP_MODULE="});
  ASSERT_TRUE(testing::Eventually([&] { return testing::HttpGet(port, "/healthz").status == 200; }))
      << exporter.Stderr();
  EXPECT_THAT(testing::HttpGet(port, "/metrics").body, HasSubstr("DCGM_FI_DEV_GPU_TEMP"));
  std::ifstream maps("/proc/" + std::to_string(exporter.pid()) + "/maps");
  std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_THAT(mapped, HasSubstr("libgpunode-sim.so"));  // the maps were read
  EXPECT_THAT(mapped, Not(HasSubstr("libgpunode-http.so")));
  EXPECT_THAT(mapped, Not(HasSubstr("libcpp-httplib")));
}

// ---- Served ----

class Served {
 public:
  Served(const std::vector<std::string>& global, const std::vector<std::string>& exporter_args,
         const std::vector<std::string>& env = {})
      : port_(testing::FreeLoopbackPort()) {
    std::vector<std::string> argv = {build_paths::kBinary};
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), {"exporter", "--listen", "127.0.0.1:" + std::to_string(port_),
                             "--interval", "200ms", "--hostname", "node-7"});
    argv.insert(argv.end(), exporter_args.begin(), exporter_args.end());
    process_ = std::make_unique<testing::BackgroundProcess>(argv, env);
    ready_ = testing::Eventually([&] { return testing::HttpGet(port_, "/healthz").status == 200; });
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }
  std::string Metrics() { return testing::HttpGet(port_, "/metrics").body; }
  testing::HttpResult Get(const std::string& path) { return testing::HttpGet(port_, path); }
  testing::BackgroundProcess& process() { return *process_; }

 private:
  int port_;
  std::unique_ptr<testing::BackgroundProcess> process_;
  bool ready_ = false;
};

TEST(Exporter, ServesTheLatestSampleAndStopsOnSigterm) {
  Served served({"--log-level", "info", "--sim", "a10-pcie-4"}, {"--pod-resources-socket", ""});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  // What it serves, and how, is in its log once (written just after /healthz starts answering).
  EXPECT_TRUE(served.process().WaitForLog(
      "exporter: serving /metrics on 127.0.0.1:" + std::to_string(served.port()) +
          " for node-7, sampling every 200ms, pod attribution off\n",
      std::chrono::seconds(10)))
      << served.process().Stderr();
  testing::HttpResult metrics = served.Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(
      testing::SampleCount(metrics.body, "DCGM_FI_DEV_GPU_TEMP", {Label("Hostname", "node-7")}), 4);
  double first = testing::SampleValue(metrics.body, "gpunode_exporter_samples_total");
  // Sampling runs in the background: the count grows without anyone scraping.
  EXPECT_TRUE(testing::Eventually([&] {
    return testing::SampleValue(served.Metrics(), "gpunode_exporter_samples_total") >= first + 2;
  }));
  EXPECT_EQ(served.Get("/nothing-here").status, 404);
  EXPECT_EQ(served.process().Stop(SIGTERM), 0) << served.process().Stderr();
}

TEST(Exporter, CountsXidsAndKeepsALostGpusHealthSeries) {
  Served served({"--sim", kFixtures + "/metrics/xid-lost.yaml"}, {"--pod-resources-socket", ""});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  std::string gpu0 = Label("gpu", "0"), gpu1 = Label("gpu", "1");
  std::string out;
  // The sampler can see GPU1 lost before the XID watcher has taken its XID 79: await both.
  ASSERT_TRUE(testing::Eventually([&] {
    out = served.Metrics();
    return testing::SampleValue(out, "gpunode_gpu_health", {gpu1}) == 0 &&
           testing::SampleValue(out, "gpunode_xid_errors_total", {gpu0, Label("xid", "48")}) == 1 &&
           testing::SampleValue(out, "gpunode_xid_errors_total", {gpu1, Label("xid", "79")}) == 1;
  })) << out;
  EXPECT_EQ(testing::SampleValue(out, "gpunode_xid_errors_total", {gpu0, Label("xid", "43")}), 2);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_XID_ERRORS", {gpu0}), 48);
  // dcgm-exporter 4.x's labels: the XID and NVIDIA's text, after the identity labels.
  EXPECT_THAT(out, HasSubstr("DCGM_FI_DRIVER_VERSION=\"550.90.07\",err_code=\"48\","
                             "err_msg=\"Double Bit ECC Error\"} 48\n"));
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_XID_ERRORS"), 1) << "none for the lost GPU";
  EXPECT_EQ(testing::SampleValue(out, "gpunode_xid_errors_total", {gpu1, Label("xid", "79")}), 1);
  // GPU1 keeps the labels it had: the same series, now 0.
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_health",
                                 {gpu1, Label("UUID", "GPU-bbbbbbbb-0000-4000-8000-000000000001"),
                                  Label("modelName", "NVIDIA A10")}),
            1);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_GPU_TEMP", {gpu1}), 0);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_GPU_TEMP", {gpu0}), 35);
  EXPECT_EQ(testing::SampleValue(out, "gpunode_gpu_health", {gpu0}), 1);
  EXPECT_EQ(served.Get("/healthz").status, 200) << "one lost GPU does not make the exporter sick";
  // The fall is a warning in the log, once, however many samples see the GPU gone.
  ASSERT_TRUE(testing::Eventually([&] {
    return testing::SampleValue(served.Metrics(), "gpunode_exporter_samples_total") >= 4;
  }));
  std::string log = served.process().Stderr();
  const std::string fell = "GPU 1 (GPU-bbbbbbbb-0000-4000-8000-000000000001, 00000000:";
  size_t at = log.find(fell);
  EXPECT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find(fell, at + 1), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr("fell off the bus: it answers NVML no more"));
}

// A host tree with the fixture's /proc and kubelet checkpoint, and the kubelet double's socket.
class ZombieNode : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(kFixtures + "/metrics/host", root_.path(), fs::copy_options::recursive);
    kubelet_ = std::make_unique<testing::KubeletPodResourcesDouble>(
        root_.path() + "/var/lib/kubelet/pod-resources/kubelet.sock");
    kubelet_->SetPods({TrainPod(), InferPod(), NotebookPod()});
  }

  static testing::FakePod TrainPod() {
    return {"team-a", "train-0", {{"trainer", {{"nvidia.com/gpu", {kGpu0}}}}}};
  }
  static testing::FakePod InferPod() {
    return {"team-c", "infer-2", {{"server", {{"nvidia.com/gpu", {kGpu1 + "::0"}}}}}};
  }
  static testing::FakePod NotebookPod() {
    return {"team-b", "notebook-1", {{"jupyter", {{"nvidia.com/gpu", {kGpu1 + "::1"}}}}}};
  }

  std::vector<std::string> Global() {
    return {"--sim", kFixtures + "/metrics/zombie-node.yaml", "--host-root", root_.path()};
  }

  static inline const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
  static inline const std::string kGpu1 = "GPU-aaaaaaaa-0000-4000-8000-000000000001";
  testing::TempDir root_{"gpunode-zombie"};
  std::unique_ptr<testing::KubeletPodResourcesDouble> kubelet_;
};

TEST_F(ZombieNode, AttributesPodsFindsZombiesAndFollowsTheKubelet) {
  Served served(Global(), {});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  const std::string process = "gpunode_gpu_process_used_memory_bytes";
  std::string out;
  ASSERT_TRUE(testing::Eventually([&] {
    out = served.Metrics();
    return testing::SampleValue(out, "gpunode_pod_resources_up") == 1;
  })) << out;

  // Devices: one series per pod; the shared GPU once per sharing pod, told apart by vgpu, and
  // its memory once more for the whole GPU.
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_GPU_TEMP",
                                 {Label("gpu", "0"), Label("namespace", "team-a"),
                                  Label("pod", "train-0"), Label("container", "trainer")}),
            1);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED", {Label("gpu", "1")}), 3);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED",
                                 {Label("gpu", "1"), Label("pod", "notebook-1")}),
            1024);
  EXPECT_EQ(testing::SampleValue(out, "DCGM_FI_DEV_FB_USED",
                                 {Label("gpu", "1"), Label("pod", "infer-2")}),
            0)
      << "infer-2 has no process on the GPU";
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED",
                                 {Label("gpu", "1"), Label("pod", "infer-2"), Label("vgpu", "0")}),
            1);
  EXPECT_EQ(
      testing::SampleCount(out, "DCGM_FI_DEV_FB_USED",
                           {Label("gpu", "1"), Label("pod", "notebook-1"), Label("vgpu", "1")}),
      1);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED", {Label("gpu", "2")}), 1);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED", {Label("gpu", "2"), "pod="}), 0);

  // Processes: traced through /proc/PID/cgroup to the pod that holds their GPU, or zombies.
  EXPECT_EQ(testing::SampleValue(
                out, process,
                {Label("pid", "1001"), Label("pod", "train-0"), Label("container", "trainer")}),
            2048.0 * 1024 * 1024);
  EXPECT_EQ(
      testing::SampleCount(out, process,
                           {Label("pid", "1002"), Label("pod", "notebook-1"), Label("vgpu", "1")}),
      1);
  EXPECT_EQ(testing::SampleValue(out, process,
                                 {Label("gpu", "2"), Label("pid", "1003"), Label("orphan", "true"),
                                  Label("reason", "gpu_not_allocated"),
                                  Label("pod_uid", "0b5c1e3a-4444-4a2b-9c3d-dddddddddddd"),
                                  Label("container_id", std::string(64, '4'))}),
            4096.0 * 1024 * 1024);
  EXPECT_EQ(testing::SampleCount(
                out, process,
                {Label("gpu", "3"), Label("pid", "1004"), Label("orphan", "true"),
                 Label("reason", "not_in_pod"), Label("container_id", std::string(64, '5'))}),
            1);
  for (auto [gpu, zombies] : {std::pair{"0", 0}, {"1", 0}, {"2", 1}, {"3", 1}}) {
    EXPECT_EQ(testing::SampleValue(out, "gpunode_orphan_gpu_processes", {Label("gpu", gpu)}),
              zombies)
        << gpu;
  }

  // The notebook is deleted, its process stays on the GPU the kubelet now gives to infer-2 only.
  int lists_before = kubelet_->list_calls();
  kubelet_->SetPods({TrainPod(), InferPod()});
  ASSERT_TRUE(testing::Eventually([&] {
    out = served.Metrics();
    return testing::SampleValue(out, "gpunode_orphan_gpu_processes", {Label("gpu", "1")}) == 1;
  })) << out;
  EXPECT_EQ(testing::SampleCount(out, process,
                                 {Label("pid", "1002"), Label("orphan", "true"),
                                  Label("reason", "gpu_allocated_to_other_pod"),
                                  Label("pod_uid", "0b5c1e3a-2222-4a2b-9c3d-bbbbbbbbbbbb")}),
            1);
  EXPECT_EQ(testing::SampleCount(out, "DCGM_FI_DEV_FB_USED", {Label("gpu", "1")}), 2);

  // Scrapes never reach the kubelet: many scrapes, few List calls (one per refresh).
  int lists = kubelet_->list_calls();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 40; ++i) ASSERT_EQ(served.Get("/metrics").status, 200);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(kubelet_->list_calls() - lists, static_cast<int>(seconds / 0.2) + 2);
  EXPECT_GT(kubelet_->list_calls(), lists_before);
  EXPECT_EQ(served.process().Stop(SIGTERM), 0);
}

TEST_F(ZombieNode, AClaimsGpuIsAttributedToItsPodWithDcgmExportersDraLabels) {
  // GPU 2's process (pid 1003) belongs to a pod that holds the GPU through a ResourceClaim of
  // gpu.nvidia.com, which the device plugin's records know nothing of; a claim of another
  // driver names nothing of ours.
  testing::FakePod render = {"team-d",
                             "render-3",
                             {{"renderer",
                               {},
                               {{"render-gpu", "team-d", "gpu.nvidia.com", "node-a", "gpu-2"},
                                {"nic", "team-d", "dra.net", "node-a", "gpu-3"}}}}};
  kubelet_->SetPods({TrainPod(), InferPod(), NotebookPod(), render});
  for (bool dra_labels : {false, true}) {
    SCOPED_TRACE(dra_labels);
    std::vector<std::string> args = Global();
    for (const char* arg : {"exporter", "--once"}) args.push_back(arg);
    if (dra_labels) args.push_back("--kubernetes-enable-dra");
    testing::ProcessResult r = Gpunode(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> pod = {Label("gpu", "2"), Label("namespace", "team-d"),
                                    Label("pod", "render-3"), Label("container", "renderer")};
    std::vector<std::string> dra = pod;
    for (const auto& [name, value] : {std::pair{"dra_claim_name", "render-gpu"},
                                      {"dra_claim_namespace", "team-d"},
                                      {"dra_device_name", "gpu-2"},
                                      {"dra_driver_name", "gpu.nvidia.com"},
                                      {"dra_pool_name", "node-a"}}) {
      dra.push_back(Label(name, value));
    }
    EXPECT_EQ(testing::SampleCount(r.out, "DCGM_FI_DEV_GPU_TEMP", pod), 1) << r.out;
    EXPECT_EQ(testing::SampleCount(r.out, "DCGM_FI_DEV_GPU_TEMP", dra), dra_labels ? 1 : 0);
    EXPECT_EQ(testing::SampleCount(r.out, "DCGM_FI_DEV_GPU_TEMP", {Label("gpu", "3"), "pod="}), 0)
        << "another driver's claim";
    // Its process is the pod's, not a zombie.
    EXPECT_EQ(testing::SampleCount(r.out, "gpunode_gpu_process_used_memory_bytes",
                                   {Label("pid", "1003"), Label("pod", "render-3")}),
              1);
    EXPECT_EQ(testing::SampleValue(r.out, "gpunode_orphan_gpu_processes", {Label("gpu", "2")}), 0);
  }
}

TEST_F(ZombieNode, WithoutTheKubeletNobodyIsAccused) {
  kubelet_.reset();  // no socket: attribution unavailable
  Served served(Global(), {});
  ASSERT_TRUE(served.ready()) << served.process().Stderr();
  std::string out = served.Metrics();
  EXPECT_EQ(testing::SampleValue(out, "gpunode_pod_resources_up"), 0);
  EXPECT_EQ(testing::SampleCount(out, "gpunode_orphan_gpu_processes"), 0);
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_process_used_memory_bytes"), 4);
  EXPECT_EQ(testing::SampleCount(out, "gpunode_gpu_process_used_memory_bytes", {"orphan="}), 0);
  EXPECT_GT(testing::SampleValue(out, "gpunode_exporter_sample_errors_total",
                                 {Label("source", "pod_resources")}),
            0);
}

TEST_F(ZombieNode, OnceAttributesThroughTheKubeletToo) {
  testing::ProcessResult r = Gpunode({"--sim", kFixtures + "/metrics/zombie-node.yaml",
                                      "--host-root", root_.path(), "exporter", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::SampleValue(r.out, "gpunode_orphan_gpu_processes", {Label("gpu", "2")}), 1);
  EXPECT_EQ(testing::SampleCount(r.out, "DCGM_FI_DEV_GPU_TEMP", {Label("pod", "train-0")}), 1);
}

}  // namespace
}  // namespace gpunode
