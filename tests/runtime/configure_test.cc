// `gpunode runtime configure` and `revert` as operators run them, on a corpus of real and
// realistic containerd configs. containerd itself (`config dump`) judges the result: the nvidia
// handler appears with the inherited settings, nothing else changes, and revert gives back the
// exact original bytes.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"
#include "temp_dir.h"
#include "toml++/toml.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
namespace fs = std::filesystem;

constexpr char kBinary[] = "/usr/bin/nvidia-container-runtime";
const fs::path kFixtures = fs::path(build_paths::kFixturesDir) / "containerd";

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Every file under `dir` with its bytes: "nothing written" means this does not change.
std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[entry.path().string()] = entry.is_regular_file() ? Read(entry.path()) : "<dir>";
  }
  return files;
}

testing::ProcessResult Gpunode(std::vector<std::string> args) {
  args.insert(args.begin(), build_paths::kBinary);
  return testing::RunProcess(args);
}

std::string CriPlugin(int version) {
  return version == 1   ? "cri"
         : version == 2 ? "io.containerd.grpc.v1.cri"
                        : "io.containerd.cri.v1.runtime";
}

// What containerd makes of a config, as a table (its dump always uses version 2 names).
toml::table Dump(const fs::path& config) {
  testing::ProcessResult r =
      testing::RunProcess({GPUNODE_CONTAINERD, "--config", config.string(), "config", "dump"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  try {
    return toml::parse(r.out);
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << "containerd config dump is not TOML: " << e.description();
    return {};
  }
}

// containerd prints unset fields as "" 0 false [] {}: dropping them lets a runtime written out
// with only its set keys compare equal to the same runtime as containerd fills it in.
void DropZeroValues(toml::table& table) {
  for (auto it = table.begin(); it != table.end();) {
    bool zero = false;
    if (toml::table* sub = it->second.as_table()) {
      DropZeroValues(*sub);
      zero = sub->empty();
    } else if (toml::array* array = it->second.as_array()) {
      zero = array->empty();
    } else {
      zero = it->second.value_or(std::string("x")).empty() ||
             it->second.value_or(int64_t{1}) == 0 ||
             (it->second.is_boolean() && !it->second.value_or(true));
    }
    it = zero ? table.erase(it) : std::next(it);
  }
}

toml::table* Runtimes(toml::table& dump) {
  toml::node* node = dump["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"].node();
  return node == nullptr ? nullptr : node->as_table();
}

toml::table Normalized(toml::table dump) {
  dump.erase("imports");
  if (toml::table* runtimes = Runtimes(dump)) {
    runtimes->erase("nvidia");
    for (auto&& [name, runtime] : *runtimes) DropZeroValues(*runtime.as_table());
  }
  return dump;
}

std::string Show(const toml::table& table) {
  std::ostringstream out;
  out << table;
  return out.str();
}

// True if `after` is `before` with one stretch of bytes inserted and nothing else changed.
bool OneInsertion(const std::string& before, const std::string& after) {
  size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix])
    ++prefix;
  size_t suffix = 0;
  while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  return prefix + suffix == before.size();
}

std::vector<std::string> CommentLines(const std::string& text) {
  std::vector<std::string> comments;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at != std::string::npos && line[at] == '#') comments.push_back(line);
  }
  return comments;
}

struct Case {
  std::string fixture;  // "" = an empty file
  std::vector<std::string> companions;
  int version;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.fixture.empty() ? "(empty)" : c.fixture);
}

class Corpus : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty()) GTEST_SKIP() << "containerd is not installed";
    config_ = dir_ / "config.toml";
    original_ = GetParam().fixture.empty() ? "" : Read(kFixtures / GetParam().fixture);
    Write(config_, original_);
    for (const std::string& name : GetParam().companions)
      Write(dir_ / name, Read(kFixtures / name));
    before_ = Dump(config_);
  }

  // containerd's view after configure: nvidia added with the inherited runtime's settings and
  // BinaryName, everything else as before.
  void ExpectHandlerAddedAndNothingElse() {
    toml::table after = Dump(config_);
    EXPECT_TRUE(Normalized(before_) == Normalized(after))
        << "before:\n"
        << Show(Normalized(before_)) << "\nafter:\n"
        << Show(Normalized(after));
    toml::table* runtimes_before = Runtimes(before_);
    toml::table* runtimes_after = Runtimes(after);
    ASSERT_NE(runtimes_after, nullptr);
    ASSERT_TRUE(runtimes_after->contains("nvidia")) << Show(after);
    toml::table nvidia = *(*runtimes_after)["nvidia"].as_table();
    DropZeroValues(nvidia);
    // Every runtime in this corpus inherits from runc (kind's and others' default).
    toml::table expected;
    if (runtimes_before != nullptr && runtimes_before->contains("runc")) {
      expected = *(*runtimes_before)["runc"].as_table();
    }
    expected.insert_or_assign("runtime_type", "io.containerd.runc.v2");
    toml::table options =
        expected["options"].is_table() ? *expected["options"].as_table() : toml::table{};
    options.insert_or_assign("BinaryName", kBinary);
    expected.insert_or_assign("options", options);
    DropZeroValues(expected);
    EXPECT_TRUE(nvidia == expected) << "nvidia:\n"
                                    << Show(nvidia) << "\nexpected:\n"
                                    << Show(expected);
  }

  void ExpectRevertRestoresEverything(const std::map<std::string, std::string>& start) {
    testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Read(config_), original_);
    EXPECT_EQ(Snapshot(dir_), start) << r.out;
    r = Gpunode({"runtime", "revert", "--config", config_.string()});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, StartsWith("nothing to revert"));
  }

  testing::TempDir temp_{"gpunode-runtime"};
  const fs::path dir_ = temp_.path();
  fs::path config_;
  std::string original_;
  toml::table before_;
};

TEST_P(Corpus, DropInAddsTheHandlerAndRevertRestoresTheBytes) {
  const auto start = Snapshot(dir_);
  testing::ProcessResult r = Gpunode({"runtime", "configure", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path drop_in = dir_ / "conf.d" / "99-nvidia.toml";
  ASSERT_TRUE(fs::exists(drop_in));
  EXPECT_TRUE(OneInsertion(original_, Read(config_))) << Read(config_);
  EXPECT_THAT(Read(config_), HasSubstr(drop_in.string()));
  EXPECT_EQ(Read(config_.string() + ".gpunode.bak"), original_);
  ExpectHandlerAddedAndNothingElse();

  const auto configured = Snapshot(dir_);
  r = Gpunode({"runtime", "configure", "--config", config_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("nothing to change"));
  EXPECT_EQ(Snapshot(dir_), configured);

  ExpectRevertRestoresEverything(start);
}

TEST_P(Corpus, InPlaceAddsTheHandlerKeepingCommentsAndRevertRestoresTheBytes) {
  const auto start = Snapshot(dir_);
  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "conf.d"));
  std::string edited = Read(config_);
  std::vector<std::string> comments = CommentLines(original_);
  for (const std::string& comment : comments) EXPECT_THAT(edited, HasSubstr(comment));
  ExpectHandlerAddedAndNothingElse();

  const auto configured = Snapshot(dir_);
  r = Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Snapshot(dir_), configured);

  ExpectRevertRestoresEverything(start);
}

INSTANTIATE_TEST_SUITE_P(Configs, Corpus,
                         ::testing::Values(Case{"kind-base.toml", {}, 2},
                                           Case{"debian-bookworm.toml", {}, 2},
                                           Case{"v1-no-version.toml", {}, 1},
                                           Case{"v2-quoted-keys.toml", {}, 2},
                                           Case{"v2-imports.toml", {"v2-imports-gc.toml"}, 2},
                                           Case{"v2-minimal.toml", {}, 2},
                                           Case{"v2-nvidia-default.toml", {}, 2}, Case{"", {}, 2}));

class Configure : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty()) GTEST_SKIP() << "containerd is not installed";
    config_ = dir_ / "config.toml";
  }
  fs::path Use(const std::string& fixture) {
    Write(config_, Read(kFixtures / fixture));
    return config_;
  }
  toml::table ParseFile(const fs::path& path) { return toml::parse(Read(path)); }

  testing::TempDir temp_{"gpunode-runtime"};
  const fs::path dir_ = temp_.path();
  fs::path config_;
};

TEST_F(Configure, DryRunPrintsEachFileAndWritesNothing) {
  Use("kind-base.toml");
  const auto start = Snapshot(dir_);
  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("==> " + (dir_ / "conf.d/99-nvidia.toml").string() +
                               " (would create) <==\n"));
  // The changed file as a unified diff: the import line is what moves.
  EXPECT_THAT(r.out,
              HasSubstr("==> " + config_.string() + " (would change) <==\n--- " + config_.string() +
                        "\n+++ " + config_.string() + " (as gpunode would write it)\n@@ "));
  EXPECT_THAT(r.out, HasSubstr("\n+imports = "));
  EXPECT_THAT(r.out, Not(HasSubstr("\n+# explicitly use v2")));
  EXPECT_EQ(Snapshot(dir_), start);
  r = Gpunode({"runtime", "revert", "--config", config_.string(), "--dry-run"});
  EXPECT_THAT(r.out, StartsWith("nothing to revert"));
}

TEST_F(Configure, SetAsDefaultAndCdiGoWhereContainerdReadsThemAndBackWhenNoLongerAsked) {
  std::string original = Read(Use("kind-base.toml"));
  testing::ProcessResult r = Gpunode({"runtime", "configure", "--config", config_.string(),
                                      "--in-place", "--set-as-default", "--cdi"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  toml::table dump = Dump(config_);
  EXPECT_EQ(
      dump["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"].value_or(
          ""),
      std::string("nvidia"));
  // containerd 1.6 predates enable_cdi (1.7+), so its dump cannot show it: check the file.
  toml::table file = ParseFile(config_);
  EXPECT_EQ(file["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"].value_or(false), true);

  r = Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  file = ParseFile(config_);
  EXPECT_EQ(
      file["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"].value_or(
          ""),
      std::string("runc"));
  EXPECT_FALSE(file["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"]);
  EXPECT_TRUE(file["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]);

  r = Gpunode({"runtime", "revert", "--config", config_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Read(config_), original);
}

TEST_F(Configure, CdiIsSetInThePluginTableOfEachVersion) {
  for (const auto& [fixture, version] : std::vector<std::pair<std::string, int>>{
           {"v1-no-version.toml", 1}, {"kind-base.toml", 2}, {"v3.toml", 3}}) {
    SCOPED_TRACE(fixture);
    Use(fixture);
    testing::ProcessResult r =
        Gpunode({"runtime", "configure", "--config", config_.string(), "--cdi"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    toml::table drop_in = ParseFile(dir_ / "conf.d/99-nvidia.toml");
    EXPECT_EQ(drop_in["plugins"][CriPlugin(version)]["enable_cdi"].value_or(false), true)
        << drop_in;
    EXPECT_EQ(drop_in["version"].value_or(int64_t{1}), version);
    ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  }
}

// containerd 1.6 does not know version 3 (2.x does), so here the result is checked by parsing it.
TEST_F(Configure, Version3WritesTheRuntimePluginOnly) {
  std::string original = Read(Use("v3.toml"));
  testing::ProcessResult r = Gpunode({"runtime", "configure", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  toml::table drop_in = ParseFile(dir_ / "conf.d/99-nvidia.toml");
  EXPECT_EQ(drop_in["version"].value_or(0), 3);
  EXPECT_FALSE(drop_in["plugins"]["io.containerd.cri.v1.images"]);
  auto nvidia =
      drop_in["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["nvidia"];
  EXPECT_EQ(nvidia["runtime_type"].value_or(""), std::string("io.containerd.runc.v2"));
  EXPECT_EQ(nvidia["options"]["SystemdCgroup"].value_or(false), true);
  EXPECT_EQ(nvidia["options"]["BinaryName"].value_or(""), std::string(kBinary));
  EXPECT_TRUE(drop_in["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]);
  EXPECT_TRUE(OneInsertion(original, Read(config_)));
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);

  r = Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  toml::table file = ParseFile(config_);
  EXPECT_EQ(file["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["nvidia"]
                ["options"]["BinaryName"]
                    .value_or(""),
            std::string(kBinary));
  EXPECT_EQ(file["plugins"]["io.containerd.cri.v1.images"]["registry"]["config_path"].value_or(""),
            std::string("/etc/containerd/certs.d"));
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_EQ(Read(config_), original);
}

TEST_F(Configure, AGlobThatAlreadyCoversTheDropInLeavesTheMainFileAlone) {
  std::string original =
      "version = 2\nimports = [\"" + (dir_ / "conf.d").string() +
      "/*.toml\"]\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n";
  Write(config_, original);
  Write(dir_ / "conf.d/10-registry.toml",
        "version = 2\n[plugins.\"io.containerd.gc.v1.scheduler\"]\n"
        "  pause_threshold = 0.03\n");
  toml::table before = Dump(config_);
  testing::ProcessResult r = Gpunode({"runtime", "configure", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Read(config_), original);
  EXPECT_FALSE(fs::exists(config_.string() + ".gpunode.bak"));
  toml::table after = Dump(config_);
  EXPECT_TRUE(Runtimes(after)->contains("nvidia"));
  EXPECT_TRUE(Normalized(before) == Normalized(after));
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "conf.d/99-nvidia.toml"));
  EXPECT_TRUE(fs::exists(dir_ / "conf.d/10-registry.toml"));
}

TEST_F(Configure, AnImportReadAfterTheDropInThatSetsCriIsRefused) {
  Write(config_, "version = 2\nimports = [\"" + (dir_ / "conf.d").string() + "/*.toml\"]\n");
  Write(dir_ / "conf.d/zz-site.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"pause\"\n");
  const auto start = Snapshot(dir_);
  testing::ProcessResult r = Gpunode({"runtime", "configure", "--config", config_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("zz-site.toml: sets plugins.\"io.containerd.grpc.v1.cri\""));
  EXPECT_EQ(Snapshot(dir_), start);
}

TEST_F(Configure, AnExistingDropInIsBackedUpAndRestored) {
  Use("kind-base.toml");
  std::string foreign = "# written by another tool\nversion = 2\n";
  Write(dir_ / "conf.d/99-nvidia.toml", foreign);
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  EXPECT_EQ(Read(dir_ / "conf.d/99-nvidia.toml.gpunode.bak"), foreign);
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_EQ(Read(dir_ / "conf.d/99-nvidia.toml"), foreign);
  EXPECT_FALSE(fs::exists(dir_ / "conf.d/99-nvidia.toml.gpunode.bak"));
}

TEST_F(Configure, AMissingConfigIsCreatedAndRevertDeletesIt) {
  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  toml::table file = ParseFile(config_);
  EXPECT_EQ(file["version"].value_or(0), 2);
  EXPECT_TRUE(Runtimes(file)->contains("runc"));
  EXPECT_TRUE(Runtimes(file)->contains("nvidia"));
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_THAT(Snapshot(dir_), IsEmpty());
}

TEST_F(Configure, ASymlinkedConfigIsEditedThroughTheLink) {
  fs::path real = dir_ / "real" / "config.toml";
  Write(real, Read(kFixtures / "kind-base.toml"));
  fs::create_symlink(real, config_);
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"}).exit_code,
            0);
  EXPECT_TRUE(fs::is_symlink(config_));
  EXPECT_THAT(Read(real), HasSubstr("runtimes.nvidia]"));
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(config_));
  EXPECT_EQ(Read(real), Read(kFixtures / "kind-base.toml"));
}

TEST_F(Configure, FilesChangedAfterConfigureAreNeverOverwritten) {
  Use("kind-base.toml");
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"}).exit_code,
            0);
  Write(config_,
        Read(config_) + "\n[plugins.\"io.containerd.gc.v1.scheduler\"]\n  pause_threshold = 0.1\n");
  const auto edited = Snapshot(dir_);
  testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("changed since gpunode wrote it"));
  EXPECT_THAT(r.err, HasSubstr(".gpunode.bak"));
  r = Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place", "--cdi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Snapshot(dir_), edited);
}

TEST_F(Configure, RevertSetsAnEditedDropInAsideAndTakesOutItsImport) {
  const std::string original = Read(Use("kind-base.toml"));
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  const fs::path drop_in = dir_ / "conf.d/99-nvidia.toml";
  const std::string edited = Read(drop_in) + "# tuned by hand\n";
  Write(drop_in, edited);
  testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path aside = dir_ / "99-nvidia.toml.edited.gpunode.bak";
  EXPECT_THAT(r.out, HasSubstr("move " + drop_in.string() + " to " + aside.string()));
  EXPECT_EQ(Read(aside), edited);
  EXPECT_FALSE(fs::exists(drop_in));
  EXPECT_EQ(Read(config_), original);
  Dump(config_);  // containerd loads it
  EXPECT_THAT(Gpunode({"runtime", "revert", "--config", config_.string()}).out,
              StartsWith("nothing to revert"));

  // A second edited drop-in never replaces the first one set aside.
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  Write(drop_in, Read(drop_in) + "# again\n");
  ASSERT_EQ(Gpunode({"runtime", "revert", "--config", config_.string()}).exit_code, 0);
  EXPECT_EQ(Read(aside), edited);
  EXPECT_THAT(Read(aside.string() + ".1"), HasSubstr("# again"));
}

TEST_F(Configure, RevertAfterTheDropInWasDeletedRestoresTheConfig) {
  const std::string original = Read(Use("kind-base.toml"));
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  fs::remove(dir_ / "conf.d/99-nvidia.toml");
  testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Read(config_), original);
  Dump(config_);
}

// What an older revert advised for an edited drop-in: delete it and the record. The config kept
// importing the missing file, and containerd refused to load it.
TEST_F(Configure, RevertRepairsTheImportOfADropInDeletedWithItsRecord) {
  const std::string original = Read(Use("kind-base.toml"));
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  const fs::path drop_in = dir_ / "conf.d/99-nvidia.toml";
  Write(drop_in, Read(drop_in) + "# tuned by hand\n");
  fs::remove(drop_in);
  fs::remove(config_.string() + ".gpunode.json");
  const std::string dangling = Read(config_);
  testing::ProcessResult dump =
      testing::RunProcess({GPUNODE_CONTAINERD, "--config", config_.string(), "config", "dump"});
  ASSERT_NE(dump.exit_code, 0) << "containerd loads a config importing a missing file";
  EXPECT_THAT(dump.err, HasSubstr("99-nvidia.toml"));

  const auto before = Snapshot(dir_);
  testing::ProcessResult r =
      Gpunode({"runtime", "revert", "--config", config_.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("would remove the import of " + drop_in.string()));
  EXPECT_EQ(Snapshot(dir_), before);

  r = Gpunode({"runtime", "revert", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string backup = config_.string() + ".dangling-import.gpunode.bak";
  EXPECT_THAT(r.out, HasSubstr("remove the import of " + drop_in.string()));
  EXPECT_THAT(r.out, HasSubstr(backup));
  EXPECT_EQ(Read(config_), original);  // the imports line gpunode added is gone, nothing else
  EXPECT_EQ(Read(backup), dangling);
  Dump(config_);
  EXPECT_THAT(Gpunode({"runtime", "revert", "--config", config_.string()}).out,
              StartsWith("nothing to revert"));
}

TEST_F(Configure, ARepairTakesOutOnlyThePlainImportOfGpunodesDropIn) {
  Write(dir_ / "conf.d/10-gc.toml",
        "version = 2\n[plugins.\"io.containerd.gc.v1.scheduler\"]\n  pause_threshold = 0.03\n");
  const std::string gc = "\"" + (dir_ / "conf.d/10-gc.toml").string() + "\"";
  const std::string glob = "\"" + (dir_ / "conf.d").string() + "/*.toml\"";
  const std::string head = "version = 2\n# the site's imports\nimports = [";
  // Relative: against the config's directory.
  Write(config_, head + gc + ", " + glob + ", \"conf.d/99-nvidia.toml\"]\n[plugins]\n");
  testing::ProcessResult r = Gpunode({"runtime", "revert", "--config", config_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The array is written anew (as toml++ lays it out); every other byte stays.
  EXPECT_EQ(Read(config_), head + " " + gc + ", " + glob + " ]\n[plugins]\n");
  Dump(config_);

  // Another tool's missing import, or gpunode's under another --drop-in, is not gpunode's to drop.
  const std::string foreign =
      "version = 2\nimports = [\"" + (dir_ / "conf.d/50-x.toml").string() + "\"]\n";
  Write(config_, foreign);
  r = Gpunode({"runtime", "revert", "--config", config_.string()});
  EXPECT_THAT(r.out, StartsWith("nothing to revert"));
  EXPECT_EQ(Read(config_), foreign);
  r = Gpunode({"runtime", "revert", "--config", config_.string(), "--drop-in",
               (dir_ / "conf.d/50-x.toml").string()});
  EXPECT_THAT(r.out, HasSubstr("remove the import of"));
  EXPECT_EQ(Read(config_), "version = 2\n");
}

TEST_F(Configure, SwitchingModesNeedsARevertFirst) {
  Use("kind-base.toml");
  ASSERT_EQ(Gpunode({"runtime", "configure", "--config", config_.string()}).exit_code, 0);
  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--in-place"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("gpunode runtime revert"));
}

TEST_F(Configure, WarnsButGoesOnWhenTheRuntimeBinaryIsMissing) {
  Use("kind-base.toml");
  testing::ProcessResult r =
      Gpunode({"runtime", "configure", "--config", config_.string(), "--dry-run", "--binary",
               "/nonexistent/nvidia-container-runtime"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("warning: /nonexistent/nvidia-container-runtime does not exist"));
  r = Gpunode(
      {"runtime", "configure", "--config", config_.string(), "--dry-run", "--binary", "/bin/true"});
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("BinaryName = \"/bin/true\""));
}

struct BadInput {
  std::string name;
  std::vector<std::string> args;  // after `runtime configure --config <config>`
  std::string fixture;            // copied to the config path; "" = a directory there instead
  std::string expect;
};

void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.name; }

class Refuses : public Configure, public ::testing::WithParamInterface<BadInput> {};

TEST_P(Refuses, WithOneLineAndExitTwoWritingNothing) {
  const BadInput& bad = GetParam();
  if (bad.fixture.empty()) {
    fs::create_directories(config_);
  } else {
    Use(bad.fixture);
  }
  const auto start = Snapshot(dir_);
  std::vector<std::string> args = {"runtime", "configure", "--config", config_.string()};
  args.insert(args.end(), bad.args.begin(), bad.args.end());
  testing::ProcessResult r = Gpunode(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("gpunode: "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(bad.expect));
  EXPECT_EQ(Snapshot(dir_), start);
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, Refuses,
    ::testing::Values(
        BadInput{"Unreadable", {}, "", "config.toml: cannot read"},
        BadInput{"SyntaxError", {}, "bad-syntax.toml", "config.toml:3:"},
        BadInput{"StringVersion",
                 {},
                 "bad-version.toml",
                 "config.toml:2:11: version must be an integer"},
        BadInput{"K3s", {}, "k3s-generated.toml", "config.toml.tmpl"},
        BadInput{"Template", {}, "kubespray-template.toml.j2", "config.toml:4: template marker"},
        BadInput{"DropInAndInPlace",
                 {"--drop-in", "/tmp/x.toml", "--in-place"},
                 "kind-base.toml",
                 "--drop-in and --in-place exclude each other"},
        BadInput{"UnknownRuntime",
                 {"--runtime", "crio"},
                 "kind-base.toml",
                 "only containerd is supported"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

}  // namespace
}  // namespace gpunode
