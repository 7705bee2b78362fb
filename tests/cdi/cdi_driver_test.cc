// `gpunode cdi generate` and `gpunode cdi validate`, run as a user runs them, on a driver root
// laid out from NVIDIA's real driver user space as Debian packages it (component non-free,
// driver 535) by tests/cdi/driver_root.sh: the .debs that scripts/install-deps.sh fetches into the
// cache below, extracted with dpkg-deb, given the links Debian's nvidia-alternative makes, and
// indexed by the real ldconfig. The simulator stands in for the GPUs (NVML), reporting the
// packages' version.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What the packages hold, from their own file lists (dpkg-deb -c), for the driver `version`.
struct PackagedFiles {
  std::set<std::string> libraries;  // "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535..."
  std::set<std::string> programs;   // executables in /usr/bin and /usr/sbin
  std::set<std::string> firmware;   // /lib/firmware/nvidia/<version>/gsp*.bin
  std::set<std::string> alternatives;  // programs outside bin/ that nvidia-alternative links
};

// `contents` is what driver_root.sh wrote beside the root: `dpkg-deb -c` of every package.
PackagedFiles ListPackages(const std::string& contents, const std::string& version) {
  PackagedFiles files;
  // "-rwxr-xr-x root/root 12345 2024-01-01 00:00 ./usr/bin/nvidia-smi"
  std::regex line(R"(^(\S+)\s+\S+\s+\d+\s+\S+\s+\S+\s+\.(/\S+)$)");
  std::istringstream list(contents);
  for (std::string text; std::getline(list, text);) {
    std::smatch m;
    if (!std::regex_match(text, m, line) || m[1].str()[0] != '-') continue;
    std::string path = m[2], mode = m[1];
    std::string name = fs::path(path).filename();
    bool executable = mode[3] == 'x';
    if (name.starts_with("lib") && name.ends_with(".so." + version)) files.libraries.insert(path);
    std::string dir = fs::path(path).parent_path();
    if (executable && (dir == "/usr/bin" || dir == "/usr/sbin")) files.programs.insert(path);
    if (executable && dir == "/usr/lib/nvidia/current") files.alternatives.insert(path);
    if (dir == "/lib/firmware/nvidia/" + version && name.starts_with("gsp") &&
        name.ends_with(".bin")) {
      files.firmware.insert(path);
    }
  }
  return files;
}

// The driver root, laid out once for all the tests (extracting the packages takes seconds).
struct DriverLayout {
  testing::TempDir dir{"gpunode-cdi"};
  std::string version, root, profile;
  PackagedFiles files;
};

// Empty on success, else why the layout could not be made.
std::string LayOut(DriverLayout& d) {
  d.root = d.dir.path() + "/driver";
  testing::ProcessResult laid = testing::RunProcess(
      {"/bin/bash", std::string(build_paths::kSourceDir) + "/tests/cdi/driver_root.sh", d.root});
  if (laid.exit_code != 0) return "tests/cdi/driver_root.sh: " + laid.err;
  d.version = laid.out.substr(0, laid.out.find('\n'));
  std::string contents = Slurp(d.root + ".contents");
  if (contents.empty()) return "tests/cdi/driver_root.sh wrote no " + d.root + ".contents";
  d.files = ListPackages(contents, d.version);
  // The simulator's a100-mig node, reporting the packages' driver version.
  std::string profile = Slurp(std::string(build_paths::kSourceDir) + "/sim/profiles/a100-mig.yaml");
  profile = std::regex_replace(profile, std::regex(R"(\ndriver_version: "[0-9.]+")"),
                               "\ndriver_version: \"" + d.version + "\"");
  d.profile = d.dir.Write("a100-mig-" + d.version + ".yaml", profile);
  return "";
}

class CdiDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    layout_ = new DriverLayout;
    error_ = new std::string(LayOut(*layout_));
  }
  static void TearDownTestSuite() {
    delete layout_;
    delete error_;
  }
  void SetUp() override {
    ASSERT_TRUE(error_->empty()) << *error_;
    version_ = layout_->version;
    root_ = layout_->root;
    profile_ = layout_->profile;
    files_ = layout_->files;
  }

  testing::ProcessResult Generate(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {build_paths::kBinary,
                                     "--sim",
                                     profile_,
                                     "--driver-root",
                                     root_,
                                     "--host-root",
                                     root_,
                                     "cdi",
                                     "generate",
                                     "--dev-root",
                                     "/"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv);
  }

  static DriverLayout* layout_;
  static std::string* error_;
  testing::TempDir dir_{"gpunode-cdi-out"};
  std::string version_, root_, profile_;
  PackagedFiles files_;
};

DriverLayout* CdiDriverTest::layout_ = nullptr;
std::string* CdiDriverTest::error_ = nullptr;

TEST_F(CdiDriverTest, TheSpecMountsExactlyTheDriversFiles) {
  ASSERT_EQ(version_.substr(0, 4), "535.");
  testing::ProcessResult r =
      Generate({"--format", "json", "--hook-path", "/usr/bin/nvidia-cdi-hook"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json spec = json::parse(r.out);

  std::map<std::string, std::string> expected;  // container path -> host path
  for (const std::string& lib : files_.libraries) expected[lib] = root_ + lib;
  for (const std::string& program : files_.programs) {
    if (fs::path(program).filename().string().starts_with("nvidia-")) {
      expected[program] = root_ + program;
    }
  }
  for (const std::string& program : files_.alternatives)  // the link's target, in the root
    expected["/usr/bin/" + fs::path(program).filename().string()] = root_ + program;
  for (const std::string& file : files_.firmware) expected[file] = root_ + file;
  expected["/var/run/nvidia-persistenced/socket"] = root_ + "/run/nvidia-persistenced/socket";
  expected["/tmp/nvidia-mps"] = root_ + "/tmp/nvidia-mps";
  // What a CUDA container needs, whatever else the packages hold.
  for (const std::string& needed :
       {"/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so." + version_,
        "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so." + version_,
        "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ptxjitcompiler.so." + version_,
        std::string("/usr/bin/nvidia-smi"), std::string("/usr/bin/nvidia-cuda-mps-control")}) {
    EXPECT_TRUE(expected.contains(needed)) << needed << " is not in the packages";
  }
  ASSERT_GE(files_.firmware.size(), 1u);

  // The "void" device list: an NVIDIA runtime hook reading devices from mounts finds none.
  expected["/var/run/nvidia-container-devices/void"] = "/dev/null";

  std::map<std::string, std::string> mounted;
  const std::set<std::string> ipc = {"/var/run/nvidia-persistenced/socket", "/tmp/nvidia-mps"};
  for (const json& m : spec["containerEdits"]["mounts"]) {
    const std::string path = m["containerPath"];
    mounted[path] = m["hostPath"];
    EXPECT_TRUE(fs::exists(m["hostPath"].get<std::string>())) << m;
    std::vector<std::string> options = m["options"];
    if (ipc.contains(path)) {  // writable: a runtime in the container may bind it on
      EXPECT_EQ(options,
                (std::vector<std::string>{"nosuid", "nodev", "rbind", "rprivate", "noexec"}));
    } else if (path.starts_with("/var/run/nvidia-container-devices/")) {
      EXPECT_EQ(options, (std::vector<std::string>{"ro", "nosuid", "nodev", "bind"}));
    } else {
      EXPECT_EQ(options, (std::vector<std::string>{"ro", "nosuid", "nodev", "rbind", "rprivate"}))
          << path;
    }
  }
  EXPECT_EQ(mounted, expected);

  std::set<std::string> nodes;
  for (const json& n : spec["containerEdits"]["deviceNodes"]) nodes.insert(n["path"]);
  EXPECT_EQ(nodes, (std::set<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm",
                                          "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}));
  EXPECT_EQ(spec["containerEdits"]["env"], json::array({"NVIDIA_VISIBLE_DEVICES=void"}));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "nvidia.com/gpu");

  // The hooks: the links programs load the libraries by, then ldconfig over every library
  // directory. The SONAME links are those the packages make beside each library (the SONAMEs
  // read from the libraries themselves), libcuda.so the one no runtime package makes, and
  // libnvidia-ml.so the one libnvidia-ml1 ships.
  ASSERT_EQ(spec["containerEdits"]["hooks"].size(), 2u);
  json links = spec["containerEdits"]["hooks"][0];
  EXPECT_EQ(links["path"], "/usr/bin/nvidia-cdi-hook");
  EXPECT_EQ(links["hookName"], "createContainer");
  ASSERT_GE(links["args"].size(), 2u);
  EXPECT_EQ(links["args"][0], "nvidia-cdi-hook");
  EXPECT_EQ(links["args"][1], "create-symlinks");
  std::set<std::string> hook_links;
  for (size_t i = 2; i + 1 < links["args"].size(); i += 2) {
    EXPECT_EQ(links["args"][i], "--link");
    hook_links.insert(links["args"][i + 1].get<std::string>());
  }
  const std::string current = "/usr/lib/x86_64-linux-gnu/nvidia/current/";
  std::set<std::string> expected_links = {"libcuda.so.1::" + current + "libcuda.so",
                                          "libnvidia-ml.so.1::" + current + "libnvidia-ml.so"};
  for (const auto& [name, soname] : std::map<std::string, std::string>{
           {"libcuda", "libcuda.so.1"},
           {"libnvidia-allocator", "libnvidia-allocator.so.1"},
           {"libnvidia-cfg", "libnvidia-cfg.so.1"},
           {"libnvidia-ml", "libnvidia-ml.so.1"},
           {"libnvidia-nvvm", "libnvidia-nvvm.so.4"},
           {"libnvidia-opencl", "libnvidia-opencl.so.1"},
           {"libnvidia-ptxjitcompiler", "libnvidia-ptxjitcompiler.so.1"}}) {
    expected_links.insert(name + ".so." + version_ + "::" + current + soname);
  }
  EXPECT_EQ(hook_links, expected_links);
  std::set<std::string> folders;
  for (const std::string& lib : files_.libraries) folders.insert(fs::path(lib).parent_path());
  json ldcache = spec["containerEdits"]["hooks"][1];
  std::set<std::string> hook_folders;
  ASSERT_GE(ldcache["args"].size(), 2u);
  EXPECT_EQ(ldcache["args"][1], "update-ldcache");
  for (size_t i = 2; i + 1 < ldcache["args"].size(); i += 2) {
    EXPECT_EQ(ldcache["args"][i], "--folder");
    hook_folders.insert(ldcache["args"][i + 1].get<std::string>());
  }
  EXPECT_EQ(hook_folders, folders);

  // Devices: 8 GPUs by index and UUID, 18 MIG devices by "<gpu>:<mig>" and UUID, and "all".
  std::map<std::string, json> devices;
  for (const json& d : spec["devices"]) devices[d["name"]] = d;
  EXPECT_EQ(devices.size(), 8u * 2 + 18u * 2 + 1);
  EXPECT_EQ(devices["0"]["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/nvidia0", "hostPath": "/dev/nvidia0"}])"));
  ASSERT_EQ(devices["0:0"]["containerEdits"]["deviceNodes"].size(), 3u);  // GPU, gi, ci caps
  EXPECT_THAT(devices["0:0"]["containerEdits"]["deviceNodes"][1]["path"].get<std::string>(),
              ::testing::StartsWith("/dev/nvidia-caps/nvidia-cap"));
}

TEST_F(CdiDriverTest, WrittenSpecsValidateInBothFormats) {
  for (const char* name : {"nvidia.yaml", "nvidia.json"}) {
    std::string out = dir_.path() + "/var/run/cdi/" + name;  // the directory does not exist yet
    testing::ProcessResult r = Generate({"--output", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string text = Slurp(out);
    if (std::string(name).ends_with(".json")) {
      EXPECT_EQ(json::parse(text)["cdiVersion"], "0.5.0");
    } else {
      EXPECT_THAT(text, HasSubstr("cdiVersion: \"0.5.0\""));
      EXPECT_THAT(text, HasSubstr("- name: \"0\""));
    }
    testing::ProcessResult valid =
        testing::RunProcess({build_paths::kBinary, "cdi", "validate", out});
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
    EXPECT_THAT(valid.out, HasSubstr("a valid CDI 0.5.0 spec of nvidia.com/gpu with 53 devices"));
  }
}

// The output is the user's path: one that cannot be written is exit 2, naming it, as in labels.
TEST_F(CdiDriverTest, AnOutputThatCannotBeWrittenIsAnInputError) {
  std::string file = dir_.Write("not-a-directory", "x");
  testing::ProcessResult r = Generate({"--output", file + "/nvidia.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(file + "/nvidia.yaml"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(Slurp(file), "x");
}

TEST_F(CdiDriverTest, WithoutTheHookTheSpecSaysSoAndHasNoHooks) {
  testing::ProcessResult r =
      Generate({"--format", "json", "--hook-path", "/opt/none/nvidia-cdi-hook"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out)["containerEdits"].contains("hooks"));
  EXPECT_THAT(r.err, HasSubstr("/opt/none/nvidia-cdi-hook is not installed"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(CdiDriverTest, NoDriverIsOneLineAndExitOne) {
  std::string empty = dir_.path() + "/empty";
  fs::create_directories(empty);
  testing::ProcessResult r = testing::RunProcess(
      {build_paths::kBinary, "--sim", profile_, "--driver-root", empty, "cdi", "generate"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no driver: libcuda.so." + version_));
  EXPECT_THAT(r.err, HasSubstr(empty + "/etc/ld.so.cache"));
  EXPECT_TRUE(r.out.empty());
}

// -o is the format, as in every other command; the spec file is --output. A path given to -o
// (how -o was once used here) is refused with the flag to use, and nothing is written.
TEST_F(CdiDriverTest, DashOIsTheFormatAndAPathGivenToItNamesOutput) {
  testing::ProcessResult json = Generate({"-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json::parse(json.out)["kind"], "nvidia.com/gpu");
  std::string path = dir_.path() + "/cdi/nvidia.yaml";
  testing::ProcessResult r = Generate({"-o", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "gpunode: -o/--format \"" + path +
                       "\" is a file name, not a format (yaml or json); write the spec with "
                       "--output " +
                       path + "\n");
  EXPECT_FALSE(fs::exists(path));
}

// --kind is checked by the spec's rules before anything is read, so a bad one is a usage error
// whatever the node.
TEST_F(CdiDriverTest, ABadKindIsRefusedByTheSpecsRules) {
  for (const auto& [kind, problem] : std::vector<std::pair<std::string, std::string>>{
           {"nvidia", "must be \"<vendor>/<class>\""},
           {"nvidia.com/gpu-", "the class \"gpu-\" must end with a letter or digit"},
           {"a/b/c", "must be \"<vendor>/<class>\""}}) {
    testing::ProcessResult r =
        testing::RunProcess({build_paths::kBinary, "--sim", profile_, "--driver-root", root_, "cdi",
                             "generate", "--kind", kind});
    EXPECT_EQ(r.exit_code, 2) << kind;
    EXPECT_THAT(r.err, HasSubstr("gpunode: --kind " + kind + ": " + problem)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << kind;
  }
  testing::ProcessResult ok = Generate({"--kind", "example.com/accelerator"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("kind: \"example.com/accelerator\"\n"));
}

// Without --sim, gpunode loads the packages' own libnvidia-ml.so.1; on a host without NVIDIA's
// kernel module it cannot initialise, and that is the one line.
TEST_F(CdiDriverTest, TheRealNvmlWithoutItsKernelModuleIsOneLine) {
  if (fs::exists("/proc/driver/nvidia/version")) {
    GTEST_SKIP() << "NVIDIA's kernel module is loaded on this host";
  }
  testing::ProcessResult r = testing::RunProcess(
      testing::WithOwnDev({build_paths::kBinary, "--driver-root", root_, "cdi", "generate"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("NVML_ERROR_DRIVER_NOT_LOADED"));
  EXPECT_TRUE(r.out.empty());
}

// Without the driver's MIG capabilities a MIG device's entry has only its GPU's device node, and
// a container given it fails at start: generation warns in one line naming the devices, and
// validate flags each such entry (exit 1), where the schema alone calls the spec valid.
TEST_F(CdiDriverTest, AMigDeviceWithoutItsCapabilitiesIsWarnedAndFailsValidation) {
  const std::string minors = root_ + "/proc/driver/nvidia-caps/mig-minors";
  fs::rename(minors, minors + ".away");
  std::string out = dir_.path() + "/nvidia.json";
  testing::ProcessResult r = Generate({"--output", out});
  fs::rename(minors + ".away", minors);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("MIG device(s) 0:0, 0:1"));
  EXPECT_THAT(r.err, HasSubstr("a container given one fails at start"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  testing::ProcessResult valid =
      testing::RunProcess({build_paths::kBinary, "cdi", "validate", out});
  EXPECT_EQ(valid.exit_code, 1) << valid.out;
  EXPECT_THAT(valid.err, HasSubstr("MIG device \"0:0\" has no /dev/nvidia-caps/ device node"));
  json spec = json::parse(Slurp(out));
  size_t migs = 0;
  for (const json& device : spec["devices"]) {
    std::string name = device["name"];
    migs += name.starts_with("MIG-") || name.find(':') != std::string::npos;
  }
  EXPECT_EQ(migs, 36u);  // 18 MIG devices, by "<gpu>:<mig>" and by UUID
  EXPECT_EQ(std::count(valid.err.begin(), valid.err.end(), '\n'), 36) << valid.err;

  // With the capabilities, the same generation is quiet about MIG and validates.
  r = Generate({"--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("MIG device")));
  EXPECT_EQ(testing::RunProcess({build_paths::kBinary, "cdi", "validate", out}).exit_code, 0);
}

// Firmware for the running kernel comes first (/lib/firmware/updates/<release>), the release read
// from the host root's /proc/sys/kernel/osrelease, not from the machine running gpunode.
TEST_F(CdiDriverTest, FirmwareOfTheHostsKernelReleaseComesFirst) {
  ASSERT_FALSE(files_.firmware.empty());
  const std::string release = "6.1.0-gpunode-test";
  const std::string osrelease = root_ + "/proc/sys/kernel/osrelease";
  fs::create_directories(fs::path(osrelease).parent_path());
  std::ofstream(osrelease) << release << "\n";
  const std::string packaged = *files_.firmware.begin();  // /lib/firmware/nvidia/<version>/gsp...
  const std::string updated = "/lib/firmware/updates/" + release + "/nvidia/" + version_ + "/" +
                              fs::path(packaged).filename().string();
  fs::create_directories(fs::path(root_ + updated).parent_path());
  fs::copy_file(root_ + packaged, root_ + updated);
  testing::ProcessResult r = Generate({"--format", "json"});
  fs::remove_all(root_ + "/lib/firmware/updates");
  fs::remove_all(root_ + "/proc/sys");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json spec = json::parse(r.out);
  std::map<std::string, std::string> mounted;
  for (const json& m : spec["containerEdits"]["mounts"])
    mounted[m["containerPath"]] = m["hostPath"];
  EXPECT_EQ(mounted[updated], root_ + updated);
  EXPECT_FALSE(mounted.contains(packaged));
}

TEST_F(CdiDriverTest, ValidateNamesFileAndPathAndExitCodes) {
  std::string bad = dir_.Write("bad.yaml", R"(cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
  - name: gpu 0
    containerEdits:
      mounts:
        - hostPath: lib/libcuda.so
          containerPath: /usr/lib/libcuda.so
)");
  testing::ProcessResult r = testing::RunProcess({build_paths::kBinary, "cdi", "validate", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(bad + ": $.devices[0].name: device name \"gpu 0\""));
  EXPECT_THAT(r.err, HasSubstr(bad + ": $.devices[0].containerEdits.mounts[0].hostPath: must be an "
                                     "absolute path"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;

  std::string broken = dir_.Write("broken.json", "{\"cdiVersion\": ");
  r = testing::RunProcess({build_paths::kBinary, "cdi", "validate", broken});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(broken));
  r = testing::RunProcess({build_paths::kBinary, "cdi", "validate", dir_.path() + "/absent.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("absent.yaml"));
}

}  // namespace
}  // namespace gpunode
