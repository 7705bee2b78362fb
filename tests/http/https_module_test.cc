// HTTPS is served by the module libgpunode-http.so next to the binary (cpp-httplib and OpenSSL),
// loaded only by a server with TLS: the webhook. Without the module, or with a file that is not
// it, the webhook stops with one line naming the file and what to install, before any of the
// file's code runs on the binary's structs.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"
#include "temp_dir.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(HttpsModule, AMissingOrForeignModuleIsOneLine) {
  testing::TempDir dir("https-module");
  fs::copy_file(build_paths::kBinary, dir.path() + "/gpunode");
  // The module's own checks of the files come after loading it: these need not exist.
  const std::vector<std::string> argv = {
      dir.path() + "/gpunode", "webhook",  "--tls-cert", dir.path() + "/tls.crt", "--tls-key",
      dir.path() + "/tls.key", "--listen", "127.0.0.1:0"};
  // In the background, so that a webhook that found a module anyway fails the test, not hangs it.
  auto run = [&](const std::string& module) {
    testing::BackgroundProcess process(argv, {"GPUNODE_HTTP_MODULE=" + module});
    std::optional<int> code = process.Wait(std::chrono::milliseconds(10000));
    return testing::ProcessResult{code.value_or(-1), process.Stdout(), process.Stderr()};
  };
  // The webhook exits 2 for whatever keeps it from starting (docs/WEBHOOK.md).
  testing::ProcessResult missing = run("");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(missing.err, "gpunode: the HTTP server module " + dir.path() +
                             "/libgpunode-http.so is missing; install the libgpunode-http.so "
                             "built with this binary next to it (servers with TLS, the "
                             "webhook's, load it from there)\n");

  // Not an HTTP module at all; one exporting the factory but no identity (older than the check);
  // one of another build. Each is refused in one line before its factory is called.
  const std::string not_http =
      (fs::path(build_paths::kBinary).parent_path() / "libgpunode-sim.so").string();
  for (const auto& [foreign, why] : std::vector<std::pair<std::string, std::string>>{
           {not_http, "(no gpunode_http_module_identity_v1;"},
           {build_paths::kForeignHttpModuleWithoutIdentity, "(no gpunode_http_module_identity_v1;"},
           {build_paths::kForeignHttpModule, "(interface v1 000000000000, sizes "}}) {
    testing::ProcessResult wrong = run(foreign);
    EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
    EXPECT_THAT(wrong.err, StartsWith("gpunode: the HTTP server module " + foreign +
                                      " is from another gpunode build " + why));
    EXPECT_THAT(wrong.err, HasSubstr("install the libgpunode-http.so built with this binary"));
    EXPECT_THAT(wrong.err, Not(HasSubstr("factory was called")));
    EXPECT_EQ(std::count(wrong.err.begin(), wrong.err.end(), '\n'), 1) << wrong.err;
  }
}

}  // namespace
}  // namespace gpunode
