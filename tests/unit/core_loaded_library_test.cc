#include <dlfcn.h>

#include <utility>

#include "build_paths.h"
#include "core/loaded_library.h"
#include "gmock/gmock.h"
#include "gpunode_sim.h"
#include "gtest/gtest.h"

namespace gpunode::core {
namespace {

using ::testing::HasSubstr;

TEST(LoadedLibraryTest, FindsASymbolOfALibraryOfTheSystem) {
  absl::StatusOr<LoadedLibrary> libm = LoadedLibrary::Open("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(libm.ok()) << libm.status();
  auto cosine = libm->Symbol<double (*)(double)>("cos");
  ASSERT_NE(cosine, nullptr);
  EXPECT_EQ(cosine(0.0), 1.0);
}

TEST(LoadedLibraryTest, FindsTheSimulatorsEntryPoint) {
  absl::StatusOr<LoadedLibrary> sim = LoadedLibrary::Open(build_paths::kSimLibrary, RTLD_NOW);
  ASSERT_TRUE(sim.ok()) << sim.status();
  EXPECT_NE(sim->Symbol<decltype(&gpunodeSimConfigure)>("gpunodeSimConfigure"), nullptr);
  EXPECT_EQ(sim->Address("gpunodeNoSuchFunction"), nullptr);
}

TEST(LoadedLibraryTest, AMissingFileIsAnErrorNamingIt) {
  const std::string path = "/nonexistent/libgpunode-missing.so";
  absl::StatusOr<LoadedLibrary> missing = LoadedLibrary::Open(path, RTLD_NOW);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
  EXPECT_THAT(missing.status().message(), HasSubstr("No such file or directory"));
}

TEST(LoadedLibraryTest, AFileThatIsNoLibraryIsAnErrorNamingIt) {
  absl::StatusOr<LoadedLibrary> text = LoadedLibrary::Open("/etc/hostname", RTLD_NOW);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("/etc/hostname"));
}

TEST(LoadedLibraryTest, AMovedFromLibraryFindsNothing) {
  absl::StatusOr<LoadedLibrary> libm = LoadedLibrary::Open("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(libm.ok()) << libm.status();
  LoadedLibrary owner = std::move(*libm);
  EXPECT_EQ(libm->Address("cos"), nullptr);
  EXPECT_NE(owner.Address("cos"), nullptr);
  LoadedLibrary empty;
  EXPECT_EQ(empty.Address("cos"), nullptr);
  owner = std::move(empty);
  EXPECT_EQ(owner.Address("cos"), nullptr);
}

}  // namespace
}  // namespace gpunode::core
