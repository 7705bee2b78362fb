// testing::WithOwnDev: what a program makes in /dev stays in its own /dev, and the host's
// everyday nodes work inside it.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process.h"

namespace gpunode::testing {
namespace {

TEST(WithOwnDev, ANodeMadeInsideIsNotOnTheHost) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: without it no program can make a device node";
  const std::string node = "/dev/gpunode-own-dev-" + std::to_string(::getpid());
  ProcessResult r = RunProcess(WithOwnDev(
      {"/bin/sh", "-c",
       "mknod \"$0\" c 1 3 && test -c \"$0\" && echo inside >/dev/null && head -c 4 /dev/urandom "
       "| wc -c",
       node}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4\n");
  EXPECT_FALSE(std::filesystem::exists(node));
}

}  // namespace
}  // namespace gpunode::testing
