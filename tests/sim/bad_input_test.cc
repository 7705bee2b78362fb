// Every kind of bad input gives exactly one line that names the file (or profile) and the
// problem, through gpunodeSimConfigure, and leaves the previous configuration in place.
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sim_library.h"

namespace gpunode::sim::testing {
namespace {

class BadInputTest : public SimTest {
 protected:
  // Configures `spec` expecting failure; checks the message is one line holding every `part`.
  void expect_error(const std::string& spec, const std::vector<std::string>& parts,
                    const std::string& topology = "") {
    std::string error = configure(spec, topology);
    ASSERT_FALSE(error.empty()) << spec << " was accepted";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    for (const std::string& part : parts)
      EXPECT_NE(error.find(part), std::string::npos) << "missing \"" << part << "\" in: " << error;
  }
  std::string profile(const std::string& name, const std::string& text) {
    return write_file(name, text);
  }
};

// A valid two-GPU profile to break one line at a time.
const std::string kGood = R"(name: two
driver_version: "550.54.15"
cuda_driver_version: "12.4"
gpus:
  - name: NVIDIA H100 80GB HBM3
    bus_id: 0000:1B:00.0
    memory_mib: 81559
  - name: NVIDIA H100 80GB HBM3
    bus_id: 0000:43:00.0
    memory_mib: 81559
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos)
    ADD_FAILURE() << "no " << from;
  else
    text.replace(at, from.size(), to);
  return text;
}

TEST_F(BadInputTest, GoodProfileLoads) { EXPECT_EQ(configure(profile("good.yaml", kGood)), ""); }

TEST_F(BadInputTest, UnknownProfileName) {
  expect_error("dgx-h10", {"unknown built-in profile \"dgx-h10\"; known: a10-pcie-4, a100-mig, "
                           "dgx-h100, dgx1-v100, h200-1"});
}

TEST_F(BadInputTest, EmptySpec) { expect_error("", {"no simulator spec given", "dgx-h100"}); }

TEST_F(BadInputTest, MissingFile) {
  expect_error("/nonexistent/profile.yaml", {"/nonexistent/profile.yaml: no such file"});
  expect_error("missing.xml", {"missing.xml: no such file"});
}

TEST_F(BadInputTest, DirectoryGivenAsFile) {
  std::string dir = std::filesystem::path(write_file("x", "")).parent_path().string();
  expect_error(dir + "/", {dir, "is a directory"});
}

TEST_F(BadInputTest, DeviceGivenAsFile) {
  expect_error("/dev/null", {"/dev/null: is not a regular file"});
}

TEST_F(BadInputTest, EmptyFile) {
  expect_error(profile("empty.yaml", ""), {"empty.yaml: is empty"});
  expect_error(profile("blank.xml", "  \n\n"), {"blank.xml: is empty"});
  expect_error(profile("comments.yaml", "# nothing here\n"),
               {"comments.yaml: holds no YAML document"});
}

TEST_F(BadInputTest, MalformedYaml) {
  expect_error(profile("broken.yaml", "gpus:\n  - name: [unclosed\n    bus_id: 1\n"),
               {"broken.yaml:", "malformed YAML"});
  expect_error(profile("scalar.yaml", "just text\n"), {"scalar.yaml:1:", "a profile is a map"});
}

TEST_F(BadInputTest, WrongTypeInAField) {
  std::string path = profile(
      "profile.yaml", replace(kGood, "memory_mib: 81559\n  - name", "memory_mib: abc\n  - name"));
  expect_error(path, {"profile.yaml:7: gpus[0].memory_mib: \"abc\" is not an integer; give MiB as "
                      "a whole number"});
  expect_error(profile("list.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                            "memory_mib: [1, 2]\n  - name")),
               {"list.yaml:7: gpus[0].memory_mib: is a list, not an integer"});
  expect_error(profile("neg.yaml",
                       replace(kGood, "memory_mib: 81559\n  - name", "memory_mib: -5\n  - name")),
               {"neg.yaml:7: gpus[0].memory_mib: \"-5\" is negative"});
  expect_error(profile("huge.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                            "memory_mib: 99999999999999999999999\n  - name")),
               {"huge.yaml:7: gpus[0].memory_mib:", "not an integer"});
  expect_error(profile("big.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                           "memory_mib: 9999999999999\n  - name")),
               {"big.yaml:7: gpus[0].memory_mib: \"9999999999999\" is too large"});
  expect_error(profile("bus.yaml", replace(kGood, "0000:43:00.0", "zz:43")),
               {"bus.yaml:9: gpus[1].bus_id: \"zz:43\" is not a PCI bus id"});
  expect_error(profile("cuda.yaml", replace(kGood, "\"12.4\"", "twelve")),
               {"cuda.yaml:3: cuda_driver_version: \"twelve\" is not a CUDA version"});
  expect_error(profile("gpus.yaml", "gpus: {name: x}\n"),
               {"gpus.yaml:1: gpus: is a map; expected a list of GPUs"});
}

TEST_F(BadInputTest, VirtualizationProblems) {
  expect_error(profile("mode.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                            "memory_mib: 81559\n    virtualization_mode: vm\n"
                                            "  - name")),
               {"mode.yaml:8: gpus[0].virtualization_mode: \"vm\" is not a virtualization mode; "
                "write none, passthrough, vgpu"});
  expect_error(profile("licence.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                               "memory_mib: 81559\n    vgpu_license: licensed\n"
                                               "  - name")),
               {"licence.yaml:8: gpus[0].vgpu_license: is only for a vGPU guest; add "
                "virtualization_mode: vgpu"});
  expect_error(profile("state.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                             "memory_mib: 81559\n    virtualization_mode: vgpu\n"
                                             "    vgpu_license: maybe\n  - name")),
               {"state.yaml:9: gpus[0].vgpu_license: \"maybe\" is not a licence state; write "
                "licensed or unlicensed"});
}

TEST_F(BadInputTest, UnknownField) {
  expect_error(profile("typo.yaml", replace(kGood, "memory_mib: 81559\n  - name",
                                            "memroy_mib: 81559\n  - name")),
               {"typo.yaml:7: gpus[0]: unknown field \"memroy_mib\" (did you mean memory_mib?); "
                "known fields: name, "});
  expect_error(profile("top.yaml", "gpu: []\n" + kGood),
               {"top.yaml:1: unknown field \"gpu\" (did you mean gpus?)"});
  // Nothing near: no guess.
  expect_error(profile("far.yaml", "frobnicate: 1\n" + kGood),
               {"far.yaml:1: unknown field \"frobnicate\"; known fields: "});
}

TEST_F(BadInputTest, MissingRequiredFields) {
  expect_error(profile("nobus.yaml", replace(kGood, "    bus_id: 0000:43:00.0\n", "")),
               {"nobus.yaml:8: gpus[1]: missing field \"bus_id\""});
  expect_error(profile("nogpus.yaml", "name: x\n"), {"nogpus.yaml:1: missing field \"gpus\""});
  expect_error(profile("dup.yaml", replace(kGood, "0000:43:00.0", "0000:1B:00.0")),
               {"dup.yaml:9: gpus[1].bus_id: bus id 00000000:1B:00.0 is also gpus[0]'s"});
}

TEST_F(BadInputTest, MalformedXml) {
  expect_error(
      profile("cut.xml",
              "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n  <gpu id=\"0\">\n    <uuid>GPU-1</uu"),
      {"cut.xml:4: malformed XML"});
  expect_error(profile("other.xml", "<html><body/></html>"),
               {"other.xml: the root element is <html>, not <nvidia_smi_log>"});
  expect_error(
      profile("nogpu.xml", "<nvidia_smi_log><driver_version>1</driver_version></nvidia_smi_log>"),
      {"nogpu.xml: has no <gpu> elements"});
  // Content decides, whatever the name says.
  expect_error(profile("capture.yaml", "<nvidia_smi_log>"), {"capture.yaml:1: malformed XML"});
}

TEST_F(BadInputTest, TopologySizeMismatch) {
  std::string topology = write_file("topo.txt",
                                    "\tGPU0\tGPU1\tGPU2\tGPU3\n"
                                    "GPU0\t X \tNV1\tSYS\tSYS\n"
                                    "GPU1\tNV1\t X \tSYS\tSYS\n"
                                    "GPU2\tSYS\tSYS\t X \tNV1\n"
                                    "GPU3\tSYS\tSYS\tNV1\t X \n");
  expect_error("dgx-h100", {topology + ": the matrix has 4 GPUs but the node has 8"}, topology);
}

TEST_F(BadInputTest, BadTopologyLabel) {
  std::string topology = write_file("topo.txt",
                                    "\tGPU0\tGPU1\n"
                                    "GPU0\t X \tNVX\n"
                                    "GPU1\tNVX\t X \n");
  expect_error("h200-1",
               {topology + ":2: row GPU0, column GPU1: unknown label \"NVX\"; use X, NV<n>, PIX, "
                           "PXB, PHB, NODE or SYS"},
               topology);
}

TEST_F(BadInputTest, AsymmetricTopology) {
  std::string topology = write_file("topo.txt",
                                    "\tGPU0\tGPU1\n"
                                    "GPU0\t X \tNV2\n"
                                    "GPU1\tNV1\t X \n");
  expect_error("h200-1",
               {topology + ":3: row GPU1, column GPU0 is NV1 but row GPU0, column GPU1 is NV2"},
               topology);
}

TEST_F(BadInputTest, TopologyFileProblems) {
  expect_error("h200-1", {"/nonexistent/topo.txt: no such file"}, "/nonexistent/topo.txt");
  std::string none = write_file("none.txt", "nothing to see\n");
  expect_error("h200-1", {none + ": no matrix found"}, none);
  std::string missing_row = write_file("rows.txt", "\tGPU0\tGPU1\nGPU0\t X \tSYS\n");
  expect_error("h200-1", {missing_row + ":1: the header lists 2 GPUs but there is no row GPU1"},
               missing_row);
  std::string self = write_file("self.txt", "\tGPU0\tGPU1\nGPU0\tSYS\tSYS\nGPU1\tSYS\t X \n");
  expect_error("h200-1", {self + ":2: row GPU0, column GPU0: \"SYS\" on the diagonal"}, self);
}

TEST_F(BadInputTest, TopologyInsideAProfile) {
  std::string text =
      kGood + "topology:\n  matrix: |\n    \tGPU0\tGPU1\n    GPU0\t X \tQPI\n    GPU1\tQPI\t X \n";
  expect_error(profile("inline.yaml", text),
               {"inline.yaml:14: row GPU0, column GPU1: unknown label \"QPI\""});
  std::string three = kGood +
                      "topology:\n  matrix: |\n    GPU0 GPU1 GPU2\n    GPU0 X SYS SYS\n    GPU1 "
                      "SYS X SYS\n    GPU2 SYS SYS X\n";
  expect_error(profile("three.yaml", three),
               {"three.yaml:12: topology.matrix: the matrix has 3 GPUs but the node has 2"});
}

TEST_F(BadInputTest, TimelineProblems) {
  auto with_timeline = [&](const std::string& name, const std::string& events) {
    return profile(name, kGood + "timeline:\n" + events);
  };
  expect_error(with_timeline("at.yaml", "  - {at: soon, gpu: 0, event: xid, xid: 48}\n"),
               {"at.yaml:12: timeline[0].at: \"soon\" is not a duration"});
  expect_error(with_timeline("kind.yaml", "  - {at: 1s, gpu: 0, event: explode}\n"),
               {"kind.yaml:12: timeline[0].event: \"explode\" is not an event; use one of xid, "
                "fall_off_bus"});
  expect_error(with_timeline("gpu.yaml", "  - {at: 1s, gpu: 5, event: fall_off_bus}\n"),
               {"gpu.yaml:12: timeline[0]: gpu 5 does not exist; the node has 2 GPUs"});
  expect_error(with_timeline("exit.yaml", "  - {at: 1s, gpu: 0, event: process_exit, pid: 7}\n"),
               {"exit.yaml:12: timeline[0]: pid 7 is not running on GPU 0 then"});
  expect_error(with_timeline("field.yaml", "  - {at: 1s, gpu: 0, event: recover, xid: 3}\n"),
               {"field.yaml:12: timeline[0].xid: does not apply to event recover"});
  expect_error(with_timeline("recover.yaml", "  - {at: 1s, gpu: 0, event: recover}\n"),
               {"recover.yaml:12: timeline[0]: GPU 0 cannot recover"});
  expect_error(with_timeline("ecc.yaml", "  - {at: 1s, gpu: 0, event: ecc, corrected: 1}\n"),
               {"ecc.yaml:12: timeline[0]: GPU 0 does not have ECC enabled"});
  expect_error(with_timeline("remap.yaml", "  - {at: 1s, gpu: 0, event: remap, pending: true}\n"),
               {"remap.yaml:12: timeline[0]: GPU 0 has no row remapper; give it remapped_rows"});
  expect_error(
      with_timeline("remap-empty.yaml", "  - {at: 1s, gpu: 0, event: remap}\n"),
      {"remap-empty.yaml:12: timeline[0]: give pending, failure, corrected or uncorrected"});
}

TEST_F(BadInputTest, MigProblems) {
  std::string base = R"(gpus:
  - name: NVIDIA A100-SXM4-80GB
    bus_id: 0000:07:00.0
    memory_mib: 81920
    mig:
      mode: enabled
      devices:
)";
  expect_error(profile("size.yaml", base + "        - {profile: 1g.10gb, gpu_instance_id: 7, "
                                           "compute_instance_id: 0, memory_mib: 30000}\n"),
               {"size.yaml:8: gpus[0].mig.devices[0]: memory_mib 30000 of a 81920 MiB GPU makes "
                "NVIDIA's naming rule call "
                "this instance 1g.30gb, not 1g.10gb"});
  expect_error(
      profile("name.yaml",
              base + "        - {profile: big, gpu_instance_id: 7, compute_instance_id: 0}\n"),
      {"name.yaml:8: gpus[0].mig.devices[0].profile: \"big\" is not a MIG profile name"});
  expect_error(
      profile("slices.yaml",
              base + "        - {profile: 4g.40gb, gpu_instance_id: 1, compute_instance_id: 0}\n"
                     "        - {profile: 4g.40gb, gpu_instance_id: 2, compute_instance_id: 0}\n"),
      {"slices.yaml:8: gpus[0].mig.devices: the GPU instances take 8 slices but the GPU has 7"});
}

TEST_F(BadInputTest, ClockScaleEnvironment) {
  ::setenv("GPUNODE_SIM_CLOCK_SCALE", "fast", 1);
  std::string error = configure("h200-1");
  ::unsetenv("GPUNODE_SIM_CLOCK_SCALE");
  EXPECT_NE(error.find("GPUNODE_SIM_CLOCK_SCALE: \"fast\" is not a clock scale"), std::string::npos)
      << error;
}

TEST_F(BadInputTest, FailedConfigureKeepsThePreviousNode) {
  ASSERT_EQ(configure("h200-1"), "");
  EXPECT_NE(configure("dgx-h10"), "");
  ASSERT_EQ(api().init(), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(api().device_get_count(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
}

TEST_F(BadInputTest, ShortErrorBufferIsTruncatedNotOverrun) {
  char error[16];
  std::memset(error, 'x', sizeof error);
  EXPECT_NE(api().configure("dgx-h10", nullptr, error, 8), 0);
  EXPECT_EQ(std::string(error), "unknown");
  EXPECT_EQ(error[8], 'x');
  EXPECT_NE(api().configure("dgx-h10", nullptr, nullptr, 0), 0);
}

}  // namespace
}  // namespace gpunode::sim::testing
