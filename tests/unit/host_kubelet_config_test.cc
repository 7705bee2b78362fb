// The kubelet's image settings: flags as its flag parser reads them, KubeletConfiguration files
// in YAML and JSON, drop-ins, and the order in which they override each other.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host/kubelet_config.h"
#include "host/kubelet_process.h"

namespace gpunode::host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A host root of its own for each test.
class KubeletImageSettingsRead : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(::testing::TempDir()) / "kubelet-config-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }

  fs::path root_;
};

TEST(KubeletConfigFile, AParserMessageQuotingBinaryBytesStaysOnePrintableLine) {
  KubeletImageSettings settings;
  absl::Status status = ApplyKubeletConfigFile("a: \"\\\xd0\x1b[2J\xff\"\n", "/k.yaml", settings);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("/k.yaml:1: not YAML or JSON: "));
  for (char c : status.message()) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7F)
        << "byte " << int(static_cast<unsigned char>(c)) << " in " << status.message();
  }
}

TEST(KubeletFlags, BothFormsAndTheLastOneWins) {
  std::vector<std::string> args = {"kubelet", "--config=/a.yaml", "--v",
                                   "2",       "--config",         "/b.yaml"};
  EXPECT_EQ(FlagValue(args, "--config"), "/b.yaml");
  EXPECT_EQ(FlagValue(args, "--v"), "2");
  EXPECT_FALSE(FlagValue(args, "--config-dir"));
  EXPECT_FALSE(FlagValue({"kubelet", "--configuration=x"}, "--config"));
}

TEST(KubeletFlags, ABooleanTakesItsValueOnlyAfterAnEqualsSign) {
  EXPECT_EQ(FlagValue({"kubelet", "--serialize-image-pulls", "false"}, "--serialize-image-pulls",
                      FlagKind::kBoolean),
            "true");
  EXPECT_EQ(FlagValue({"kubelet", "--serialize-image-pulls=false"}, "--serialize-image-pulls",
                      FlagKind::kBoolean),
            "false");
}

TEST(KubeletConfigFile, YamlAndJsonSetTheFieldsTheyHold) {
  KubeletImageSettings settings;
  ASSERT_TRUE(ApplyKubeletConfigFile("kind: KubeletConfiguration\nimageGCHighThresholdPercent: 90\n"
                                     "imageMinimumGCAge: 5m\nserializeImagePulls: false\n",
                                     "/etc/kubelet.yaml", settings)
                  .ok());
  ASSERT_TRUE(ApplyKubeletConfigFile(R"({"imageGCLowThresholdPercent": 60,
                                         "maxParallelImagePulls": 5})",
                                     "/etc/kubelet.conf.d/10.conf", settings)
                  .ok());
  EXPECT_EQ(settings.gc_high_threshold_percent.value, 90);
  EXPECT_EQ(settings.gc_high_threshold_percent.source, SettingSource::kConfigFile);
  EXPECT_EQ(settings.gc_high_threshold_percent.origin, "/etc/kubelet.yaml");
  EXPECT_EQ(settings.gc_low_threshold_percent.value, 60);
  EXPECT_EQ(settings.gc_low_threshold_percent.origin, "/etc/kubelet.conf.d/10.conf");
  EXPECT_EQ(settings.minimum_gc_age.value, "5m");
  EXPECT_EQ(settings.maximum_gc_age.value, "0s");
  EXPECT_EQ(settings.maximum_gc_age.source, SettingSource::kDefault);
  EXPECT_FALSE(settings.serialize_image_pulls.value);
  EXPECT_EQ(settings.max_parallel_image_pulls.value, 5);
  EXPECT_THAT(settings.files, ElementsAre("/etc/kubelet.yaml", "/etc/kubelet.conf.d/10.conf"));
}

TEST(KubeletConfigFile, AnEmptyFileChangesNothing) {
  KubeletImageSettings settings;
  ASSERT_TRUE(ApplyKubeletConfigFile("", "/etc/kubelet.yaml", settings).ok());
  EXPECT_EQ(settings.gc_high_threshold_percent.value, 85);
  EXPECT_EQ(settings.gc_low_threshold_percent.value, 80);
  EXPECT_TRUE(settings.serialize_image_pulls.value);
}

TEST(KubeletConfigFile, BadInputNamesFileLineAndField) {
  KubeletImageSettings settings;
  absl::Status status =
      ApplyKubeletConfigFile("kind: KubeletConfiguration\nimageGCLowThresholdPercent: [1]\n",
                             "/etc/kubelet.yaml", settings);
  EXPECT_EQ(status.message(),
            "/etc/kubelet.yaml:2: imageGCLowThresholdPercent: not a single value");
  status = ApplyKubeletConfigFile("serializeImagePulls: maybe\n", "/k.yaml", settings);
  EXPECT_EQ(status.message(), "/k.yaml:1: serializeImagePulls: \"maybe\" is not true or false");
  status = ApplyKubeletConfigFile("imageMaximumGCAge: a week\n", "/k.yaml", settings);
  EXPECT_EQ(status.message(),
            "/k.yaml:1: imageMaximumGCAge: \"a week\" is not a duration (e.g. "
            "2m, 168h)");
  status = ApplyKubeletConfigFile("- a list\n", "/k.yaml", settings);
  EXPECT_THAT(status.message(), HasSubstr("not a KubeletConfiguration"));
  status = ApplyKubeletConfigFile("{unclosed: [\n", "/k.yaml", settings);
  EXPECT_THAT(status.message(), HasSubstr("/k.yaml:"));
  EXPECT_THAT(status.message(), HasSubstr("not YAML or JSON"));
  EXPECT_TRUE(absl::IsInvalidArgument(status));
}

TEST(KubeletFlagsOverride, EveryImageFlag) {
  KubeletImageSettings settings;
  ASSERT_TRUE(
      ApplyKubeletFlags({"kubelet", "--image-gc-high-threshold=95", "--image-gc-low-threshold",
                         "70", "--minimum-image-ttl-duration=1h", "--serialize-image-pulls=false"},
                        settings)
          .ok());
  EXPECT_EQ(settings.gc_high_threshold_percent.value, 95);
  EXPECT_EQ(DescribeSource(settings.gc_high_threshold_percent.source,
                           settings.gc_high_threshold_percent.origin),
            "flag --image-gc-high-threshold");
  EXPECT_EQ(settings.gc_low_threshold_percent.value, 70);
  EXPECT_EQ(settings.minimum_gc_age.value, "1h");
  EXPECT_FALSE(settings.serialize_image_pulls.value);
  EXPECT_EQ(ApplyKubeletFlags({"kubelet", "--image-gc-low-threshold=high"}, settings).message(),
            "kubelet command line: --image-gc-low-threshold: \"high\" is not an integer");
  EXPECT_FALSE(ApplyKubeletFlags({"kubelet", "--serialize-image-pulls=nope"}, settings).ok());
}

TEST_F(KubeletImageSettingsRead, FileThenDropInsThenFlags) {
  core::HostRoot host(root_.string());
  Write("etc/kubelet.yaml", "imageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: 50\n");
  Write("etc/kubelet.conf.d/20-b.conf", "imageGCLowThresholdPercent: 40\n");
  Write("etc/kubelet.conf.d/10-a.conf", "imageGCLowThresholdPercent: 30\n");
  Write("etc/kubelet.conf.d/30-c.yaml", "imageGCLowThresholdPercent: 10\n");
  absl::StatusOr<KubeletImageSettings> settings =
      ReadKubeletImageSettings(host, {"kubelet", "--config=/etc/kubelet.yaml", "--config-dir",
                                      "/etc/kubelet.conf.d", "--image-gc-high-threshold=75"});
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->gc_high_threshold_percent.value, 75);
  EXPECT_EQ(settings->gc_low_threshold_percent.value, 40);  // 20-b.conf after 10-a.conf
  EXPECT_EQ(settings->gc_low_threshold_percent.origin, "/etc/kubelet.conf.d/20-b.conf");
  EXPECT_THAT(settings->files, ElementsAre("/etc/kubelet.yaml", "/etc/kubelet.conf.d/10-a.conf",
                                           "/etc/kubelet.conf.d/20-b.conf"));
}

TEST_F(KubeletImageSettingsRead, WithoutConfigTheDefaultsAndAMissingFileIsNamed) {
  core::HostRoot host(root_.string());
  absl::StatusOr<KubeletImageSettings> settings = ReadKubeletImageSettings(host, {"kubelet"});
  ASSERT_TRUE(settings.ok());
  EXPECT_TRUE(settings->files.empty());
  EXPECT_EQ(settings->gc_high_threshold_percent.source, SettingSource::kDefault);
  settings = ReadKubeletImageSettings(host, {"kubelet", "--config=/var/lib/kubelet/config.yaml"});
  EXPECT_TRUE(absl::IsNotFound(settings.status()));
  EXPECT_THAT(settings.status().message(),
              HasSubstr("the kubelet's config /var/lib/kubelet/config.yaml"));
}

}  // namespace
}  // namespace gpunode::host
