// `gpunode inventory` as users run it: the real binary on every built-in profile, every real
// capture, and every kind of bad input.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "build_paths.h"
#include "captures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "pugixml.hpp"
#include "temp_dir.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using json = nlohmann::json;
namespace fs = std::filesystem;

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

json InventoryJson(const std::vector<std::string>& global_args) {
  std::vector<std::string> args = global_args;
  args.insert(args.end(), {"inventory", "-o", "json"});
  testing::ProcessResult r = Gpunode(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return json::parse(r.out);
}

std::vector<std::vector<std::string>> Matrix(const json& inventory) {
  std::vector<std::vector<std::string>> m;
  for (const json& row : inventory["topology"]) {
    m.emplace_back();
    for (const json& cell : row) m.back().push_back(cell.is_null() ? "?" : cell.get<std::string>());
  }
  return m;
}

TEST(Inventory, DgxH100IsEightH100sAllNv18) {
  json inv = InventoryJson({"--sim", "dgx-h100"});
  ASSERT_EQ(inv["gpus"].size(), 8u);
  std::set<std::string> uuids;
  for (size_t i = 0; i < 8; ++i) {
    const json& gpu = inv["gpus"][i];
    EXPECT_EQ(gpu["index"], i);
    EXPECT_EQ(gpu["name"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu["memory_total_mib"], 81559);
    EXPECT_EQ(gpu["numa_node"], i < 4 ? 0 : 1);
    EXPECT_EQ(gpu["mig_enabled"], false);
    uuids.insert(gpu["uuid"].get<std::string>());
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(inv["cuda_driver_version"], "12.4");
  auto m = Matrix(inv);
  for (size_t a = 0; a < 8; ++a)
    for (size_t b = 0; b < 8; ++b) EXPECT_EQ(m[a][b], a == b ? "X" : "NV18") << a << "," << b;
}

TEST(Inventory, Dgx1V100HasTheHybridCubeMesh) {
  const std::vector<std::vector<std::string>> expected = {
      {"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
      {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
      {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
      {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
      {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
      {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
      {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
      {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"},
  };
  json inv = InventoryJson({"--sim", "dgx1-v100"});
  ASSERT_EQ(inv["gpus"].size(), 8u);
  EXPECT_EQ(inv["gpus"][0]["name"], "Tesla V100-SXM2-16GB");
  EXPECT_EQ(Matrix(inv), expected);
}

TEST(Inventory, A10PcieIsPcieOnlyTwoPerSocket) {
  json inv = InventoryJson({"--sim", "a10-pcie-4"});
  ASSERT_EQ(inv["gpus"].size(), 4u);
  auto m = Matrix(inv);
  for (size_t a = 0; a < 4; ++a) {
    for (size_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      EXPECT_EQ(m[a][b].rfind("NV", 0), std::string::npos) << "no NVLink on A10s";
      bool same_socket = a / 2 == b / 2;
      EXPECT_EQ(m[a][b] == "SYS", !same_socket) << a << "," << b << " " << m[a][b];
    }
    EXPECT_EQ(inv["gpus"][a]["numa_node"], a / 2);
  }
}

TEST(Inventory, A100MigListsInstancesWithProfiles) {
  json inv = InventoryJson({"--sim", "a100-mig"});
  size_t mig_gpus = 0;
  std::set<std::string> profiles;
  for (const json& gpu : inv["gpus"]) {
    if (gpu["mig_enabled"] != true) continue;
    ++mig_gpus;
    EXPECT_FALSE(gpu["mig_devices"].empty());
    for (const json& mig : gpu["mig_devices"]) {
      EXPECT_THAT(mig["uuid"].get<std::string>(), StartsWith("MIG-"));
      EXPECT_TRUE(std::regex_match(mig["profile"].get<std::string>(),
                                   std::regex(R"(([0-9]c\.)?[0-9]g\.[0-9]+gb)")))
          << mig["profile"];
      profiles.insert(mig["profile"].get<std::string>());
      EXPECT_GT(mig["memory_mib"].get<int>(), 0);
    }
  }
  EXPECT_GE(mig_gpus, 1u);
  EXPECT_GE(profiles.size(), 2u) << "a mix of instance profiles";
  EXPECT_TRUE(profiles.contains("1g.10gb"));
}

TEST(Inventory, H200IsOneGpu) {
  json inv = InventoryJson({"--sim", "h200-1"});
  ASSERT_EQ(inv["gpus"].size(), 1u);
  EXPECT_EQ(inv["gpus"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(inv["gpus"][0]["memory_total_mib"], 143771);
  EXPECT_EQ(inv["topology"], json::parse(R"([["X"]])"));
}

TEST(Inventory, LostGpuStaysListedAndTheOthersReport) {
  testing::ProcessResult r =
      Gpunode({"--sim", std::string(build_paths::kFixturesDir) + "/profiles/one-gpu-lost.yaml",
               "inventory", "-o", "json"});
  // Printed whole, and exit 1: the command ran and found a failure.
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("GPU 0: nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST"));
  json inv = json::parse(r.out);
  ASSERT_EQ(inv["gpus"].size(), 2u);
  EXPECT_EQ(inv["gpus"][0]["lost"], true);
  EXPECT_TRUE(inv["gpus"][0]["uuid"].is_null());
  EXPECT_TRUE(inv["gpus"][0]["memory_total_mib"].is_null());
  EXPECT_EQ(inv["gpus"][1]["lost"], false);
  EXPECT_EQ(inv["gpus"][1]["memory_total_mib"], 23028);
  EXPECT_TRUE(inv["topology"][0][1].is_null());
  EXPECT_EQ(inv["topology"][1][1], "X");
}

TEST(Inventory, SimFromEnvironment) {
  testing::ProcessResult r = testing::RunProcess({build_paths::kBinary, "inventory", "-o", "json"},
                                                 {"GPUNODE_SIM=h200-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["gpus"].size(), 1u);
}

TEST(Inventory, TableShowsGpusAndLinks) {
  testing::ProcessResult r = Gpunode({"--sim", "dgx-h100", "inventory"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("8 GPUs"));
  EXPECT_THAT(r.out, HasSubstr("NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(r.out, HasSubstr("GPU7"));
  EXPECT_THAT(r.out, HasSubstr("NV18"));
  EXPECT_THAT(r.out, HasSubstr("SYS  = across NUMA nodes"));
}

// Columns stay at least two spaces apart whatever the widest name or memory is, so the table
// reads (and splits) as six columns on every row.
TEST(Inventory, TableColumnsStayApartOnEveryRow) {
  const std::regex gap("  +");
  for (const std::string profile : {"dgx-h100", "h200-1", "dgx1-v100", "a10-pcie-4"}) {
    testing::ProcessResult r = Gpunode({"--sim", profile, "inventory"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || !(line.rfind("GPU ", 0) == 0 || std::isdigit(line[0]))) continue;
      std::vector<std::string> cells(std::sregex_token_iterator(line.begin(), line.end(), gap, -1),
                                     {});
      EXPECT_EQ(cells.size(), 6u) << profile << ": " << line;
      ++rows;
    }
    EXPECT_GE(rows, 2) << profile << ":\n" << r.out;
  }
}

// ---- Real captures: each value in the JSON equals what the capture says. ----

std::string Text(pugi::xml_node node) {
  std::string text = node.text().as_string();
  size_t begin = text.find_first_not_of(" \t\r\n");
  size_t end = text.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

// "16384 MiB" -> 16384, "26.16 W" -> 26.16; "N/A" or missing -> null.
json Number(pugi::xml_node node) {
  std::string text = Text(node);
  if (text.empty() || text == "N/A" || !(std::isdigit(static_cast<unsigned char>(text[0]))))
    return nullptr;
  double value = std::stod(text);
  return value == static_cast<double>(static_cast<long long>(value))
             ? json(static_cast<long long>(value))
             : json(value);
}

class Capture : public ::testing::TestWithParam<std::string> {};

TEST_P(Capture, InventoryReportsTheCapturedValues) {
  std::string path = std::string(build_paths::kFixturesDir) + "/nvidia-smi-xml/" + GetParam();
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_file(path.c_str()));
  pugi::xml_node log = doc.child("nvidia_smi_log");
  json inv = InventoryJson({"--sim", path});

  std::string driver = Text(log.child("driver_version"));
  EXPECT_EQ(inv["driver_version"], driver.empty() ? json(nullptr) : json(driver));
  std::string cuda = Text(log.child("cuda_version"));
  EXPECT_EQ(inv["cuda_driver_version"], cuda.empty() ? json(nullptr) : json(cuda));

  size_t i = 0;
  for (pugi::xml_node gpu : log.children("gpu")) {
    ASSERT_LT(i, inv["gpus"].size());
    const json& g = inv["gpus"][i++];
    EXPECT_EQ(g["name"], Text(gpu.child("product_name")));
    EXPECT_EQ(g["uuid"], Text(gpu.child("uuid")));
    EXPECT_EQ(g["pci_bus_id"], std::string(gpu.attribute("id").as_string()));
    EXPECT_EQ(g["memory_total_mib"], Number(gpu.child("fb_memory_usage").child("total")));
    EXPECT_EQ(g["memory_used_mib"], Number(gpu.child("fb_memory_usage").child("used")));
    EXPECT_EQ(g["temperature_c"], Number(gpu.child("temperature").child("gpu_temp")));
    EXPECT_EQ(g["utilization_gpu_pct"], Number(gpu.child("utilization").child("gpu_util")));
    pugi::xml_node power = gpu.child("gpu_power_readings") ? gpu.child("gpu_power_readings")
                                                           : gpu.child("power_readings");
    // nvidia-smi's "Power Draw" is nvmlDeviceGetPowerUsage; the instant reading is another field.
    json expected_power = Number(power.child("power_draw"));
    if (expected_power.is_null()) {
      EXPECT_TRUE(g["power_w"].is_null()) << g["power_w"];
    } else {
      EXPECT_NEAR(g["power_w"].get<double>(), expected_power.get<double>(), 1e-9);
    }
    std::string mig_mode = Text(gpu.child("mig_mode").child("current_mig"));
    EXPECT_EQ(g["mig_enabled"], mig_mode == "Enabled"    ? json(true)
                                : mig_mode == "Disabled" ? json(false)
                                                         : json(nullptr));
    size_t migs = 0;
    for (pugi::xml_node mig : gpu.child("mig_devices").children("mig_device")) {
      ASSERT_LT(migs, g["mig_devices"].size());
      const json& m = g["mig_devices"][migs++];
      EXPECT_EQ(m["gi_id"], mig.child("gpu_instance_id").text().as_int());
      EXPECT_EQ(m["ci_id"], mig.child("compute_instance_id").text().as_int());
      EXPECT_EQ(m["memory_mib"], Number(mig.child("fb_memory_usage").child("total")));
    }
    EXPECT_EQ(g["mig_devices"].size(), migs);
  }
  EXPECT_EQ(inv["gpus"].size(), i);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Capture,
                         ::testing::ValuesIn(testing::CaptureFiles(
                             std::string(build_paths::kFixturesDir) + "/nvidia-smi-xml")),
                         testing::CaptureTestName);

// Newer nvidia-smi (its v12 DTD from R550, v13) prints the power draw as average_power_draw and
// instant_power_draw, and leaves the average N/A on a GPU that keeps none. A real capture with its
// power readings rewritten that way, and the inventory of it.
json InventoryWithSplitPowerReadings(const std::string& capture, const std::string& average,
                                     const std::string& instant) {
  pugi::xml_document doc;
  EXPECT_TRUE(doc.load_file(
      (std::string(build_paths::kFixturesDir) + "/nvidia-smi-xml/" + capture).c_str()));
  for (pugi::xml_node gpu : doc.child("nvidia_smi_log").children("gpu")) {
    gpu.remove_child("power_readings");
    gpu.remove_child("gpu_power_readings");
    pugi::xml_node power = gpu.append_child("gpu_power_readings");
    power.append_child("power_state").text() = "P0";
    power.append_child("average_power_draw").text() = average.c_str();
    power.append_child("instant_power_draw").text() = instant.c_str();
    power.append_child("current_power_limit").text() = "250.00 W";
  }
  testing::TempDir dir("gpunode-split-power");
  std::string path = dir.path() + "/" + capture;
  EXPECT_TRUE(doc.save_file(path.c_str()));
  return InventoryJson({"--sim", path});
}

// nvmlDeviceGetPowerUsage is the instantaneous power on GA100 and every architecture before
// Ampere, a one-second average on the others: only the former report the instant reading.
TEST(Inventory, SplitPowerReadingsGiveTheInstantPowerWhereNvmlReturnsIt) {
  struct Case {
    std::string capture;
    bool instantaneous;
  };
  for (const Case& c : {Case{"tesla-p100.xml", true}, Case{"rtx-2080-win.xml", true},
                        Case{"a100-sxm4-mig.xml", true}, Case{"rtx-3060.xml", false}}) {
    SCOPED_TRACE(c.capture);
    json inv = InventoryWithSplitPowerReadings(c.capture, "N/A", "31.42 W");
    ASSERT_EQ(inv["gpus"].size(), 1u);
    if (c.instantaneous) {
      ASSERT_TRUE(inv["gpus"][0]["power_w"].is_number()) << inv["gpus"][0]["power_w"];
      EXPECT_NEAR(inv["gpus"][0]["power_w"].get<double>(), 31.42, 1e-9);
    } else {
      EXPECT_TRUE(inv["gpus"][0]["power_w"].is_null()) << inv["gpus"][0]["power_w"];
    }
    // Where the capture has an average, that is the power usage, whatever the architecture.
    inv = InventoryWithSplitPowerReadings(c.capture, "28.50 W", "31.42 W");
    EXPECT_NEAR(inv["gpus"][0]["power_w"].get<double>(), 28.5, 1e-9);
  }
}

TEST(Inventory, CaptureWithA100MigNamesTheProfile) {
  json inv = InventoryJson(
      {"--sim", std::string(build_paths::kFixturesDir) + "/nvidia-smi-xml/a100-sxm4-mig.xml"});
  ASSERT_EQ(inv["gpus"][0]["mig_devices"].size(), 2u);
  EXPECT_EQ(inv["gpus"][0]["mig_devices"][0]["profile"], "3g.20gb");
}

// ---- Bad input: one line naming the file and the problem, exit 2, no crash. ----

fs::path WriteTemp(const std::string& name, const std::string& contents) {
  fs::path path = fs::path(::testing::TempDir()) / name;
  std::ofstream(path) << contents;
  return path;
}

void ExpectOneLineError(const testing::ProcessResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("gpunode: "));
  EXPECT_THAT(r.err, HasSubstr(must_contain));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(InventoryBadInput, UnknownProfileName) {
  ExpectOneLineError(Gpunode({"--sim", "dgx-h10", "inventory"}), "dgx-h10");
}

TEST(InventoryBadInput, MissingFile) {
  ExpectOneLineError(Gpunode({"--sim", "/nonexistent/profile.yaml", "inventory"}),
                     "/nonexistent/profile.yaml");
}

TEST(InventoryBadInput, MalformedYaml) {
  fs::path p = WriteTemp("malformed.yaml", "gpus: [\n  - name: x\n  memory: {\n");
  ExpectOneLineError(Gpunode({"--sim", p.string(), "inventory"}), p.string());
}

TEST(InventoryBadInput, MalformedXml) {
  fs::path p =
      WriteTemp("malformed.xml",
                "<?xml version=\"1.0\" ?>\n<nvidia_smi_log><gpu id=\"0\"><product_name>x</gpu>");
  ExpectOneLineError(Gpunode({"--sim", p.string(), "inventory"}), p.string());
}

TEST(InventoryBadInput, EmptyFile) {
  fs::path p = WriteTemp("empty.yaml", "");
  ExpectOneLineError(Gpunode({"--sim", p.string(), "inventory"}), p.string());
}

TEST(InventoryBadInput, TopologyOfTheWrongSize) {
  fs::path p = WriteTemp("topo-2.txt",
                         "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                         "GPU0\t X \tNV4\t0-15\t0\n"
                         "GPU1\tNV4\t X \t0-15\t0\n");
  ExpectOneLineError(Gpunode({"--sim", "dgx-h100", "--sim-topology", p.string(), "inventory"}),
                     p.string());
}

TEST(InventoryBadInput, UnknownOutputFormat) {
  testing::ProcessResult r = Gpunode({"--sim", "dgx-h100", "inventory", "-o", "yaml"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(InventoryNoDriver, OneClearLineAndFailure) {
  testing::TempDir root("gpunode-no-driver");
  testing::ProcessResult r = Gpunode({"--driver-root", root.path(), "inventory"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpunode: NVIDIA driver library libnvidia-ml.so.1 not found under " +
                       root.path() + ": is the driver installed?\n");
}

// A driver root or host root that is not there is a mistyped path: a usage error, before NVML.
TEST(InventoryBadInput, GlobalPathsThatAreNotThere) {
  testing::ProcessResult r = Gpunode({"--driver-root", "/nonexistent-root", "inventory"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpunode: --driver-root /nonexistent-root: no such directory; give the directory the "
            "host (or the driver) is mounted at\n");
  r = Gpunode({"--sim", "dgx-h100", "--host-root", "/nonexistent-host", "inventory"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("--host-root /nonexistent-host: no such directory"));
  r = Gpunode({"--nvml-library", "/nonexistent/libnvidia-ml.so.1", "inventory"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("--nvml-library /nonexistent/libnvidia-ml.so.1: no such "
                                          "file"));
}

// A libnvidia-ml.so.1 that is there but does not load (here: text, as a damaged or foreign-
// architecture file would be) is reported with the dynamic linker's reason, not as a missing
// driver.
TEST(InventoryNoDriver, ALibraryThatDoesNotLoadSaysWhy) {
  testing::TempDir root("gpunode-bad-driver-root");
  fs::create_directories(fs::path(root.path()) / "usr/lib64");
  std::string text;  // longer than an ELF header, so the linker reads one and rejects it
  for (int i = 0; i < 8; ++i) text += "this is not a shared library\n";
  const std::string library = root.Write("usr/lib64/libnvidia-ml.so.1", text);

  testing::ProcessResult r = Gpunode({"--driver-root", root.path(), "inventory"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("gpunode: NVIDIA driver library libnvidia-ml.so.1 found but cannot "
                                "be loaded: " +
                                library + ": "));
  EXPECT_THAT(r.err, HasSubstr("invalid ELF header"));
  EXPECT_THAT(r.err, Not(HasSubstr("is the driver installed")));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = Gpunode({"--nvml-library", library, "inventory"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("gpunode: cannot load NVML library " + library + ": "));
  EXPECT_THAT(r.err, HasSubstr("invalid ELF header"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace gpunode
