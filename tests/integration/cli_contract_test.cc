// The contract every command keeps with its user, run on the real binary: `--version`, an
// unknown command answered with the nearest one, and every command's parse errors as one
// "gpunode:" line that names the command's --help, with exit code 2.
#include <fstream>
#include <iterator>
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

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

// Every command a user can run, as typed after `gpunode`.
const std::vector<std::vector<std::string>>& Commands() {
  static const std::vector<std::vector<std::string>> kCommands = {{"inventory"},
                                                                  {"device-plugin"},
                                                                  {"cdi", "generate"},
                                                                  {"cdi", "validate"},
                                                                  {"exporter"},
                                                                  {"labels"},
                                                                  {"cluster", "audit"},
                                                                  {"cluster", "why-pending"},
                                                                  {"cluster", "drain"},
                                                                  {"cluster", "prepull"},
                                                                  {"cluster", "restore"},
                                                                  {"cluster", "verify"},
                                                                  {"webhook"},
                                                                  {"runtime", "configure"},
                                                                  {"runtime", "revert"},
                                                                  {"runtime", "status"},
                                                                  {"doctor"},
                                                                  {"mig", "profiles"},
                                                                  {"mig", "apply"},
                                                                  {"mig", "assert"},
                                                                  {"mps-control-daemon"},
                                                                  {"version"}};
  return kCommands;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

// One line on stderr, with the prefix every error of gpunode has.
void ExpectOneErrorLine(const testing::ProcessResult& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
  EXPECT_THAT(r.err, StartsWith("gpunode: ")) << what;
  ASSERT_FALSE(r.err.empty()) << what;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": not one line: " << r.err;
}

TEST(CliContract, VersionNamesTheReleaseTheCommitAndTheBuild) {
  testing::ProcessResult flag = Gpunode({"--version"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_THAT(flag.out, StartsWith(std::string("gpunode ") + GPUNODE_VERSION + "\n"));
  EXPECT_THAT(flag.out, HasSubstr(std::string("flavour  ") + GPUNODE_BUILD_FLAVOUR + "\n"));
  EXPECT_THAT(flag.out, HasSubstr("libnvidia-ml.so.1"));
  // Global options may come first, as with any command.
  EXPECT_EQ(Gpunode({"--sim", "dgx-h100", "--version"}).out, flag.out);
  EXPECT_EQ(Gpunode({"version"}).out, flag.out);

  testing::ProcessResult json = Gpunode({"version", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json v = nlohmann::json::parse(json.out);
  EXPECT_EQ(v["version"], GPUNODE_VERSION);
  EXPECT_EQ(v["flavour"], GPUNODE_BUILD_FLAVOUR);
  EXPECT_THAT(v["commit"].get<std::string>(), MatchesRegex("[0-9a-f]{40}|unknown"));
  EXPECT_EQ(v["nvml"]["library"], "libnvidia-ml.so.1");
  EXPECT_TRUE(v["cuda"].is_string());
}

TEST(CliContract, AnUnknownCommandSuggestsTheNearest) {
  testing::ProcessResult r = Gpunode({"inventroy"});
  ExpectOneErrorLine(r, "inventroy");
  EXPECT_EQ(r.err,
            "gpunode: unknown command inventroy; did you mean inventory? (see gpunode --help)\n");
  // After a global option and its value.
  r = Gpunode({"--log-level", "info", "doctr"});
  ExpectOneErrorLine(r, "doctr");
  EXPECT_THAT(r.err, HasSubstr("unknown command doctr; did you mean doctor?"));
  // A command's own commands.
  r = Gpunode({"cluster", "audt"});
  ExpectOneErrorLine(r, "cluster audt");
  EXPECT_THAT(r.err, HasSubstr("unknown command audt; did you mean audit? (see gpunode cluster "
                               "--help)"));
  // Nothing near: no guess.
  r = Gpunode({"frobnicate"});
  ExpectOneErrorLine(r, "frobnicate");
  EXPECT_EQ(r.err, "gpunode: unknown command frobnicate (see gpunode --help)\n");
  // No command at all: the list of them.
  r = Gpunode({});
  ExpectOneErrorLine(r, "no command");
  EXPECT_THAT(r.err, HasSubstr("a command is required: inventory, device-plugin,"));
  r = Gpunode({"cdi"});
  ExpectOneErrorLine(r, "cdi");
  EXPECT_THAT(r.err, HasSubstr("a command is required: generate, validate (see gpunode cdi "
                               "--help)"));
}

// A command line is parsed with only the command it names (a start then skips building every
// other command's flags); one whose option value happens to be a command's name must still mean
// what the whole tree reads: here --sim's value "labels", then the inventory command.
TEST(CliContract, AnOptionValueNamedLikeACommandIsJustAValue) {
  testing::ProcessResult r = Gpunode({"--sim", "labels", "inventory"});
  ExpectOneErrorLine(r, "labels");
  EXPECT_THAT(r.err, HasSubstr("unknown built-in profile \"labels\""));
  r = Gpunode({"--log-level", "warn", "--sim", "dgx-h100", "inventory", "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"gpus\""));
}

TEST(CliContract, UnexpectedArgumentsAreListedAsTyped) {
  testing::ProcessResult r = Gpunode({"inventory", "--format", "yaml"});
  ExpectOneErrorLine(r, "inventory --format yaml");
  EXPECT_EQ(r.err,
            "gpunode: unexpected argument(s): --format yaml (see gpunode inventory --help)\n");
}

// --kubelet-dir is the device plugin's device-plugins directory; doctor's flag for the kubelet's
// root has its own name, and the other command's flag is refused with the one to use.
TEST(CliContract, AFlagNameMeansOneDirectory) {
  testing::ProcessResult r = Gpunode({"--sim", "dgx-h100", "doctor", "--kubelet-dir", "/x"});
  ExpectOneErrorLine(r, "doctor --kubelet-dir");
  EXPECT_EQ(r.err,
            "gpunode: --kubelet-dir is the device plugin's device-plugins directory; doctor takes "
            "the kubelet's root (its --root-dir, default /var/lib/kubelet) as "
            "--kubelet-root-dir\n");
  EXPECT_THAT(Gpunode({"doctor", "--help"}).out, HasSubstr("--kubelet-root-dir"));
  EXPECT_THAT(Gpunode({"doctor", "--help"}).out, ::testing::Not(HasSubstr("--kubelet-dir")));
}

// Bad input, command by command: a file that is missing, a directory where a file goes, a file
// that cannot be read, an output that cannot be written, a bad number, a bad duration. Each is
// one "gpunode:" line naming what was given, exit 2, before anything runs.
TEST(CliContract, BadInputIsOneLineNamingItAndExitTwo) {
  testing::TempDir dir("gpunode-contract");
  const std::string missing = dir.path() + "/missing.yaml";
  const std::string directory = dir.path();
  // Exists and opens, but read(2) fails (EIO) even for root, who can read any mode.
  const std::string unreadable = "/proc/self/mem";
  const std::string file = dir.Write("plain", "x");
  const std::string unwritable = file + "/out";  // under a regular file
  const std::string containerd = dir.Write("config.toml", "version = 2\n");
  struct Case {
    std::vector<std::string> args;
    std::string named;  // what the line must name
  };
  const std::vector<Case> cases = {
      // A missing file.
      {{"--sim", "dgx-h100", "device-plugin", "--config-file", missing}, missing},
      {{"--sim", "dgx-h100", "labels", "--oneshot", "-o", "-", "--config-file", missing}, missing},
      {{"--sim", "dgx-h100", "mps-control-daemon", "--config-file", missing}, missing},
      {{"--sim", "a100-mig", "mig", "apply", "-f", missing, "-c", "all-1g.10gb"}, missing},
      {{"--sim", "a100-mig", "mig", "assert", "-f", missing, "-c", "all-1g.10gb"}, missing},
      {{"cdi", "validate", missing}, missing},
      {{"cluster", "audit", "-f", missing}, missing},
      {{"cluster", "why-pending", "p", "-f", missing}, missing},
      {{"cluster", "restore", "n", "--dry-run", "-f", missing}, missing},
      {{"cluster", "audit", "--kubeconfig", missing}, missing},
      {{"webhook", "--tls-cert", missing, "--tls-key", missing}, missing},
      {{"--host-root", missing, "doctor"}, missing},
      {{"--sim", "dgx-h100", "--driver-root", missing, "cdi", "generate"}, missing},
      {{"--nvml-library", missing, "inventory"}, missing},
      // A directory where a file goes.
      {{"cdi", "validate", directory}, directory},
      {{"cluster", "audit", "-f", directory}, directory + ": is a directory"},
      {{"cluster", "audit", "--kubeconfig", directory}, directory},
      {{"--sim", "a100-mig", "mig", "apply", "-f", directory, "-c", "x"}, directory},
      {{"webhook", "--tls-cert", directory, "--tls-key", directory}, directory},
      {{"runtime", "configure", "--dry-run", "--config", directory}, directory},
      {{"--sim", "dgx-h100", "device-plugin", "--config-file", directory}, directory},
      // A file that cannot be read.
      {{"cluster", "audit", "-f", unreadable}, unreadable},
      {{"cdi", "validate", unreadable}, unreadable},
      {{"cluster", "audit", "--kubeconfig", unreadable}, unreadable},
      {{"--sim", "dgx-h100", "device-plugin", "--config-file", unreadable}, unreadable},
      {{"--sim", "dgx-h100", "labels", "--oneshot", "-o", "-", "--config-file", unreadable},
       unreadable},
      {{"--sim", "dgx-h100", "mps-control-daemon", "--config-file", unreadable}, unreadable},
      // An output that cannot be written.
      {{"--sim", "dgx-h100", "labels", "--oneshot", "--output", unwritable}, unwritable},
      {{"runtime", "configure", "--config", containerd, "--drop-in", unwritable}, unwritable},
      // A bad number.
      {{"--sim", "dgx-h100", "device-plugin", "--health-flap-limit", "abc"}, "\"abc\""},
      {{"--sim", "dgx-h100", "exporter", "--listen", ":abc"}, "\":abc\""},
      {{"runtime", "status", "--timeout-ms", "abc"}, "--timeout-ms"},
      {{"webhook", "--tls-cert", file, "--tls-key", file, "--max-gpus-per-node", "abc"},
       "--max-gpus-per-node"},
      {{"cluster", "audit", "-f", "-", "--idle-util", "abc"}, "--idle-util"},
      // A bad duration.
      {{"--sim", "dgx-h100", "device-plugin", "--health-recovery-period", "5x"}, "\"5x\""},
      {{"--sim", "dgx-h100", "exporter", "--interval", "5x"}, "--interval \"5x\""},
      {{"--sim", "dgx-h100", "labels", "--interval", "5x", "--output", file}, "--interval \"5x\""},
      {{"cluster", "audit", "--request-timeout", "5x"}, "--request-timeout \"5x\""},
      {{"cluster", "drain", "n", "--evict-after", "5x"}, "--evict-after \"5x\""},
      {{"cluster", "verify", "n", "--timeout", "5x"}, "--timeout \"5x\""},
      {{"cluster", "restore", "n", "--verify", "--poll-interval", "5x"}, "--poll-interval \"5x\""},
      {{"cluster", "prepull", "--apply", "--timeout", "5x"}, "--timeout \"5x\""},
  };
  for (const Case& c : cases) {
    const std::string what = Joined(c.args);
    testing::ProcessResult r = Gpunode(c.args);
    ExpectOneErrorLine(r, what);
    EXPECT_THAT(r.err, HasSubstr(c.named)) << what;
    EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
  }
  std::ifstream kept(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "x");  // nothing written
}

TEST(CliContract, RangeErrorsAreInTheFlagsOwnUnits) {
  testing::ProcessResult r =
      Gpunode({"webhook", "--tls-cert", "c", "--tls-key", "k", "--max-gpus-per-node", "0"});
  ExpectOneErrorLine(r, "--max-gpus-per-node 0");
  EXPECT_THAT(r.err, HasSubstr("--max-gpus-per-node: Value 0 not in range 1 to 1000000"));
  // A negative timeout is refused, not taken as "no wait".
  r = Gpunode({"runtime", "status", "--timeout-ms", "-5"});
  ExpectOneErrorLine(r, "--timeout-ms -5");
  EXPECT_THAT(r.err, HasSubstr("--timeout-ms: Value -5 not in range 1 to 600000"));
  r = Gpunode({"cluster", "drain", "gpu-a", "--evict-after", "-5m"});
  ExpectOneErrorLine(r, "--evict-after -5m");
  EXPECT_THAT(r.err, HasSubstr("--evict-after -5m: out of range; give a duration of 0 or more"));
}

TEST(CliContract, SimulatorFlagsAreRefusedWhereNoCommandReadsTheGpus) {
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"cluster", "audit", "-f", "-"},
                                             {"runtime", "status"},
                                             {"cdi", "validate", "spec.yaml"},
                                             {"version"}}) {
    std::vector<std::string> args = {"--sim", "dgx-h100"};
    args.insert(args.end(), command.begin(), command.end());
    testing::ProcessResult r = Gpunode(args);
    ExpectOneErrorLine(r, Joined(command));
    EXPECT_THAT(r.err, HasSubstr("--sim: gpunode " + Joined({command[0]}))) << Joined(command);
    EXPECT_THAT(r.err, HasSubstr("leave --sim and --sim-topology out"));
  }
}

TEST(CliContract, RevertListsOnlyTheFlagsItUses) {
  testing::ProcessResult r = Gpunode({"runtime", "revert", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--config"));
  EXPECT_THAT(r.out, HasSubstr("--dry-run"));
  for (const char* configure_only : {"--binary", "--set-as-default", "--cdi"}) {
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr(configure_only))) << configure_only;
  }
  EXPECT_THAT(Gpunode({"runtime", "configure", "--help"}).out, HasSubstr("--set-as-default"));
}

TEST(CliContract, EveryCommandAnswersHelpAndRefusesAnUnknownFlagInOneLine) {
  for (const std::vector<std::string>& command : Commands()) {
    std::string name = Joined(command);
    std::vector<std::string> help = command;
    help.push_back("--help");
    testing::ProcessResult h = Gpunode(help);
    EXPECT_EQ(h.exit_code, 0) << name << ": " << h.err;
    EXPECT_THAT(h.out, HasSubstr("Usage: gpunode " + name)) << name;
    EXPECT_EQ(h.err, "") << name;

    std::vector<std::string> bad = command;
    bad.push_back("--no-such-flag");
    testing::ProcessResult r = Gpunode(bad);
    ExpectOneErrorLine(r, name);
    // A command with a required argument names the missing one first, as CLI11 checks it first.
    if (r.err.find(" is required") == std::string::npos) {
      EXPECT_THAT(r.err, HasSubstr("unexpected argument(s): --no-such-flag")) << name;
    }
    EXPECT_THAT(r.err, HasSubstr("(see gpunode " + name + " --help)")) << name;
  }
}

}  // namespace
}  // namespace gpunode
