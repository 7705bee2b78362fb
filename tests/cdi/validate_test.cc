// The CDI schema check and the version rules, and the spec's YAML/JSON forms.
#include "cdi/validate.h"

#include <string>

#include "cdi/spec.h"
#include "cdi/spec_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpunode::cdi {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The CDI repository's own example (schema/testdata/good/spec-example.json), reduced.
Spec Good() {
  return Spec::parse(R"({
    "cdiVersion": "0.5.0",
    "kind": "vendor.com/device",
    "devices": [
      {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/card0", "hostPath": "/dev/card0",
        "type": "c", "major": 25, "minor": 25, "fileMode": 384, "permissions": "rw", "uid": 0, "gid": 0}]}},
      {"name": "all", "containerEdits": {"env": ["A=B"]}}
    ],
    "containerEdits": {
      "env": ["FOO=VALID_SPEC", "BAR=BARVALUE1"],
      "mounts": [{"hostPath": "/bin/vendorBin", "containerPath": "/bin/vendorBin",
                  "options": ["ro", "nosuid", "nodev", "bind"]}],
      "hooks": [{"hookName": "createContainer", "path": "/bin/vendor-hook", "args": ["vendor-hook"],
                 "env": ["X=1"], "timeout": 5}]
    }
  })");
}

std::vector<std::string> Paths(const Spec& spec) {
  std::vector<std::string> paths;
  for (const SpecProblem& p : ValidateSpec(spec)) paths.push_back(p.json_path);
  return paths;
}

TEST(CdiValidateTest, TheExampleIsValid) { EXPECT_THAT(ValidateSpec(Good()), IsEmpty()); }

TEST(CdiValidateTest, RequiredAndUnknownTopLevelFields) {
  Spec spec = Good();
  spec.erase("kind");
  spec["devicez"] = Spec::array();
  EXPECT_THAT(Paths(spec), ElementsAre("$.kind", "$.devicez"));
  EXPECT_THAT(Paths(Spec::array()), ElementsAre("$"));
}

TEST(CdiValidateTest, KindIsVendorSlashClass) {
  for (const char* kind : {"nvidia.com", "nvidia.com/gpu/x", "1vendor.com/gpu", "vendor-/gpu",
                           "vendor.com/g pu", "vendor.com/"}) {
    Spec spec = Good();
    spec["kind"] = kind;
    EXPECT_THAT(Paths(spec), ElementsAre("$.kind")) << kind;
  }
  Spec dotted = Good();
  dotted["kind"] = "vendor.com/gpu.shared";
  EXPECT_THAT(ValidateSpec(dotted)[0].message, HasSubstr("features of 0.6.0"));
  dotted["cdiVersion"] = "0.6.0";
  EXPECT_THAT(ValidateSpec(dotted), IsEmpty());
}

TEST(CdiValidateTest, DeviceNamesAndEdits) {
  Spec spec = Good();
  spec["devices"][0]["name"] = "gpu/0";
  spec["devices"][1]["name"] = "gpu/0";
  spec["devices"][1]["containerEdits"] = Spec::object();
  spec["devices"][1]["extra"] = 1;
  EXPECT_THAT(Paths(spec),
              ElementsAre("$.devices[0].name", "$.devices[1].extra", "$.devices[1].name",
                          "$.devices[1].name", "$.devices[1].containerEdits"));
}

TEST(CdiValidateTest, PathsHooksEnvAndNumbers) {
  Spec spec = Good();
  spec["containerEdits"]["env"][1] = "=nothing";
  spec["containerEdits"]["mounts"][0]["hostPath"] = "bin/vendorBin";
  spec["containerEdits"]["mounts"][0].erase("containerPath");
  spec["containerEdits"]["hooks"][0]["hookName"] = "preStart";
  spec["containerEdits"]["hooks"][0]["timeout"] = -1;
  spec["devices"][0]["containerEdits"]["deviceNodes"][0]["type"] = "x";
  spec["devices"][0]["containerEdits"]["deviceNodes"][0]["permissions"] = "rwx";
  spec["devices"][0]["containerEdits"]["deviceNodes"][0]["uid"] = "0";
  std::vector<SpecProblem> problems = ValidateSpec(spec);
  EXPECT_THAT(Paths(spec),
              ElementsAre("$.containerEdits.env[1]", "$.containerEdits.mounts[0].containerPath",
                          "$.containerEdits.mounts[0].hostPath",
                          "$.containerEdits.hooks[0].hookName", "$.containerEdits.hooks[0].timeout",
                          "$.devices[0].containerEdits.deviceNodes[0].type",
                          "$.devices[0].containerEdits.deviceNodes[0].permissions",
                          "$.devices[0].containerEdits.deviceNodes[0].uid"));
  EXPECT_THAT(problems[2].message, HasSubstr("absolute path, got \"bin/vendorBin\""));
}

TEST(CdiValidateTest, VersionRules) {
  Spec spec = Good();
  spec["cdiVersion"] = "0.4.0";  // a device named "0" and a hostPath need 0.5.0
  EXPECT_THAT(ValidateSpec(spec)[0].message, HasSubstr("set it to 0.5.0"));
  spec["cdiVersion"] = "1.0.0";
  EXPECT_THAT(ValidateSpec(spec)[0].message, HasSubstr("unknown version"));
  Spec minimal = Spec::parse(R"({"cdiVersion": "0.3.0", "kind": "a.b/c",
      "devices": [{"name": "dev", "containerEdits": {"env": ["A=1"]}}]})");
  EXPECT_EQ(MinimumCdiVersion(minimal), "0.3.0");
  minimal["containerEdits"]["mounts"] = Spec::parse(R"([{"hostPath": "/a", "containerPath": "/a",
      "type": "bind"}])");
  EXPECT_EQ(MinimumCdiVersion(minimal), "0.4.0");
  minimal["devices"][0]["annotations"] = {{"a", "b"}};
  EXPECT_EQ(MinimumCdiVersion(minimal), "0.6.0");
  minimal["containerEdits"]["additionalGids"] = {5};
  EXPECT_EQ(MinimumCdiVersion(minimal), "0.7.0");
}

TEST(CdiValidateTest, BytesThatAreNotUtf8AreReportedNotThrown) {
  absl::StatusOr<Spec> spec = ParseSpecText(
      "cdiVersion: \"0.3.0\"\nkind: a.b/c\ndevices:\n  - name: d\n    containerEdits:\n"
      "      mounts: [{hostPath: \"lib\xff\", containerPath: /x}]\n",
      "latin1.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<SpecProblem> problems = ValidateSpec(*spec);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].message, HasSubstr("absolute path, got \"lib\xEF\xBF\xBD\""));
  EXPECT_THAT(RenderSpec(*spec, SpecFormat::kJson), HasSubstr("lib\xEF\xBF\xBD"));
}

TEST(CdiSpecFileTest, YamlRoundTripKeepsNamesAsStrings) {
  Spec spec = Good();
  spec["containerEdits"]["x-unknown"] = {{"", 1}, {"true", "null"}, {"a b", "~"}};
  std::string yaml = RenderSpec(spec, SpecFormat::kYaml);
  EXPECT_THAT(yaml, HasSubstr("name: \"0\""));
  absl::StatusOr<Spec> back = ParseSpecText(yaml, "spec.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, spec);
  absl::StatusOr<Spec> json = ParseSpecText(RenderSpec(spec, SpecFormat::kJson), "spec.json");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, spec);
  EXPECT_THAT(ParseSpecText("a: [1, 2", "bad.yaml").status().message(), HasSubstr("bad.yaml:"));
  EXPECT_EQ(FormatOfFileName("/var/run/cdi/nvidia.JSON"), SpecFormat::kJson);
  EXPECT_EQ(FormatOfFileName("/etc/cdi/nvidia.yml"), SpecFormat::kYaml);
  EXPECT_EQ(FormatOfFileName("-"), std::nullopt);
}

// MIG devices are recognised by name ("<gpu>:<mig>", "MIG-<uuid>") and need an access
// capability among their device nodes; other names are not MIG devices.
TEST(CdiValidateTest, AMigDeviceWithoutAccessCapabilitiesIsUnusable) {
  Spec spec = Spec::parse(R"({
    "cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
    "devices": [
      {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
      {"name": "0:1", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
      {"name": "MIG-1f2e", "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia0"}, {"path": "/dev/nvidia-caps/nvidia-cap21"},
        {"path": "/dev/nvidia-caps/nvidia-cap22"}]}},
      {"name": "MIG-9a8b", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1"}]}},
      {"name": "gpu:a", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia1"}]}}
    ]})");
  ASSERT_THAT(ValidateSpec(spec), IsEmpty());
  std::vector<SpecProblem> problems = UnusableDevices(spec);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].json_path, "$.devices[1]");
  EXPECT_THAT(problems[0].message, HasSubstr("MIG device \"0:1\" has no /dev/nvidia-caps/"));
  EXPECT_EQ(problems[1].json_path, "$.devices[3]");
}

}  // namespace
}  // namespace gpunode::cdi
