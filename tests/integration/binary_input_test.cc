// A binary file given where a command expects a text config (a TOML containerd config, a YAML
// profile, an XML capture, a device plugin config, a kubeconfig): the real binary answers with one
// line that a terminal prints as it is, however the parser quoted the bytes it choked on.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

using ::testing::HasSubstr;

// One line: printable ASCII and well-formed UTF-8 without control characters (C0, DEL, C1),
// ending in its only newline. Returns what is wrong, or "".
std::string ProblemWithLine(const std::string& text) {
  if (text.empty() || text.back() != '\n') return "does not end in a newline";
  for (size_t i = 0; i + 1 < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      ++i;
      continue;
    }
    size_t length = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || c < 0xC2 || c > 0xF4 || i + length > text.size() - 1) {
      return "byte " + std::to_string(c) + " at " + std::to_string(i);
    }
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
        return "broken UTF-8 at " + std::to_string(i);
      }
    }
    if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      return "C1 control at " + std::to_string(i);
    }
    i += length;
  }
  return "";
}

// Contents that make the parsers stop on (and quote) bytes that are not text: an ELF header and
// every byte value; a bad escape followed by control bytes and bytes that are not UTF-8, in a TOML
// and in a YAML string (yaml-cpp quotes the byte after the backslash as it is); an XML root
// element whose name is not UTF-8.
std::vector<std::string> BinaryContents() {
  std::string elf = std::string(
      "\x7f"
      "ELF\x02\x01\x01\x00",
      8);
  for (int i = 0; i < 256; ++i) elf += static_cast<char>(255 - i);
  std::string escape = "a = \"\\\xd0\xb0\xd0\" \x01\x1b[31m\xff\xfe\n";
  std::string yaml = "gpus:\n  - name: \"\\\xd0\x1b[2J\xc2\x85\"\n";
  std::string xml = "<a\xd0\xff/>\n";
  return {elf, escape, yaml, xml};
}

testing::ProcessResult Gpunode(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_paths::kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

TEST(BinaryInput, EveryCommandAnswersWithOnePrintableLine) {
  testing::TempDir dir("gpunode-binary-input");
  int variant = 0;
  for (const std::string& contents : BinaryContents()) {
    ++variant;
    const std::string base = dir.path() + "/input" + std::to_string(variant);
    const std::string toml = base + ".toml";
    const std::string yaml = base + ".yaml";
    const std::string xml = base + ".xml";
    for (const std::string& path : {toml, yaml, xml}) {
      std::ofstream(path, std::ios::binary) << contents;
    }
    // Each command, and the file its message must name.
    const std::vector<std::pair<std::vector<std::string>, std::string>> commands = {
        {{"runtime", "configure", "--config", toml, "--dry-run"}, toml},
        {{"--sim", yaml, "inventory"}, yaml},
        {{"--sim", xml, "inventory"}, xml},
        {{"--sim", "h200-1", "device-plugin", "--check-config", yaml}, yaml},
        {{"cluster", "audit", "--kubeconfig", yaml}, yaml},
    };
    for (const auto& [args, file] : commands) {
      SCOPED_TRACE(::testing::PrintToString(args) + " on contents " + std::to_string(variant));
      testing::ProcessResult r = Gpunode(args);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_THAT(r.err, HasSubstr(file));
      EXPECT_EQ(ProblemWithLine(r.err), "") << r.err;
    }
  }
}

}  // namespace
}  // namespace gpunode
