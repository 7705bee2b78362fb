// doctor's kubelet.image-gc through the real binary: `gpunode --sim dgx-h100 --host-root DIR
// doctor --containerd-socket SOCK -o json` with the kubelet's command line and config files in
// DIR, the real containerd answering CRI ImageFsInfo and ListImages, and a tmpfs of a chosen size
// mounted where the image filesystem containerd names resolves under DIR, so that statvfs gives
// the capacity the test decides. Large images are imported with `ctr images import` from an OCI
// layout whose manifest names a layer the archive leaves out: containerd reports an image's size
// as the sum of its manifest's descriptors (the packed size), so a 40 GiB image costs a few
// hundred bytes here and its size is still containerd's own answer.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "build_paths.h"
#include "containerd/containerd_live.h"
#include "containerd_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "tmpfs_mount.h"

namespace gpunode {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr char kConfigPath[] = "/var/lib/kubelet/config.yaml";
constexpr char kId[] = "kubelet.image-gc";

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string Sha256(const fs::path& file) {
  testing::ProcessResult r = testing::RunProcess({GPUNODE_SHA256SUM, file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return "sha256:" + r.out.substr(0, 64);
}

// The architecture containerd's platform matcher expects of an image on this machine.
std::string OciArchitecture() {
#if defined(__aarch64__)
  return "arm64";
#else
  return "amd64";
#endif
}

class ImageGcContainerd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(GPUNODE_CONTAINERD).empty() || std::string(GPUNODE_CTR).empty()) {
      GTEST_SKIP() << "containerd and ctr are not installed";
    }
    if (::geteuid() != 0) GTEST_SKIP() << "containerd and tmpfs mounts need root";
    char tmpl[] = "/tmp/gpunode-imagegc-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    socket_ = (root_ / "run/containerd/containerd.sock").string();
    fs::create_directories(root_ / "run/containerd");
    Write(root_ / "etc/containerd/config.toml",
          testing::ContainerdTestConfig(root_ / "ctd", socket_));
    containerd_ = std::make_unique<testing::ContainerdProcess>(
        GPUNODE_CONTAINERD, root_ / "etc/containerd/config.toml", root_ / "containerd.log");
    ASSERT_TRUE(containerd_->AwaitCri(socket_, std::chrono::seconds(20))) << containerd_->Log();
    auto filesystems =
        containerd::QueryCriImageFilesystems(socket_, std::chrono::milliseconds(2000));
    ASSERT_TRUE(filesystems.ok()) << filesystems.status();
    image_fs_ = filesystems->front().mountpoint;
    Kubelet({"--config=" + std::string(kConfigPath)});
    Write(root_ / "var/lib/kubelet/config.yaml",
          "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
  }
  void TearDown() override {
    containerd_.reset();
    tmpfs_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }

  // /proc/4242/cmdline of a kubelet with `flags`.
  void Kubelet(const std::vector<std::string>& flags) {
    std::string cmdline = std::string("/usr/bin/kubelet") + '\0';
    for (const std::string& flag : flags) cmdline += flag + '\0';
    Write(root_ / "proc/4242/cmdline", cmdline);
  }

  // The image filesystem as the doctor sees it: containerd's path under the host root.
  void ImageFilesystem(uint64_t capacity) {
    tmpfs_ = std::make_unique<testing::TmpfsMount>(root_ / fs::path(image_fs_).relative_path(),
                                                   capacity);
    if (!tmpfs_->mounted()) GTEST_SKIP() << tmpfs_->error();
  }

  // Imports `name` with one layer of `layer_bytes` that the archive does not hold, and waits
  // until CRI lists it (containerd's CRI plugin learns of imports from events). Returns the
  // size containerd should report: manifest, config and layer.
  uint64_t ImportImage(const std::string& name, uint64_t layer_bytes) {
    fs::path dir = root_ / ("oci-" + std::to_string(imported_++));
    fs::path blobs = dir / "blobs/sha256";
    fs::create_directories(blobs);
    auto add_blob = [&](const std::string& text) {
      fs::path tmp = dir / "blob";
      Write(tmp, text);
      std::string digest = Sha256(tmp);
      fs::rename(tmp, blobs / digest.substr(7));
      return json{{"digest", digest}, {"size", text.size()}};
    };
    // The layer's digest only has to be unique: its bytes are never read.
    Write(dir / "layer-name", name);
    std::string layer_digest = Sha256(dir / "layer-name");
    fs::remove(dir / "layer-name");
    json config = {{"architecture", OciArchitecture()},
                   {"os", "linux"},
                   {"config", json::object()},
                   {"rootfs", {{"type", "layers"}, {"diff_ids", {layer_digest}}}}};
    json config_descriptor = add_blob(config.dump());
    config_descriptor["mediaType"] = "application/vnd.oci.image.config.v1+json";
    json manifest = {{"schemaVersion", 2},
                     {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                     {"config", config_descriptor},
                     {"layers",
                      {{{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
                        {"digest", layer_digest},
                        {"size", layer_bytes}}}}};
    std::string manifest_text = manifest.dump();
    json manifest_descriptor = add_blob(manifest_text);
    manifest_descriptor["mediaType"] = "application/vnd.oci.image.manifest.v1+json";
    manifest_descriptor["annotations"] = {{"io.containerd.image.name", name}};
    Write(dir / "index.json",
          json{{"schemaVersion", 2}, {"manifests", {manifest_descriptor}}}.dump());
    Write(dir / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    fs::path archive = dir.string() + ".tar";
    testing::ProcessResult tar =
        testing::RunProcess({GPUNODE_TAR, "-cf", archive.string(), "-C", dir.string(), "."});
    EXPECT_EQ(tar.exit_code, 0) << tar.err;
    testing::ProcessResult ctr =
        testing::RunProcess({GPUNODE_CTR, "-a", socket_, "-n", "k8s.io", "images", "import",
                             "--no-unpack", archive.string()});
    EXPECT_EQ(ctr.exit_code, 0) << ctr.out << ctr.err;
    EXPECT_TRUE(AwaitCriImage(name)) << containerd_->Log();
    return manifest_text.size() + config_descriptor["size"].get<uint64_t>() + layer_bytes;
  }

  bool AwaitCriImage(const std::string& name) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      auto images = containerd::QueryCriImages(socket_, std::chrono::milliseconds(2000));
      if (images.ok()) {
        for (const containerd::CriImage& image : *images) {
          for (const std::string& tag : image.tags) {
            if (tag == name) return true;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  json Finding() {
    last_ = testing::RunProcess({build_paths::kBinary, "--sim", "dgx-h100", "--host-root",
                                 root_.string(), "doctor", "--containerd-socket", socket_, "-o",
                                 "json"});
    json report = json::parse(last_.out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << last_.out << last_.err;
    if (report.is_discarded()) return json::object();
    for (const json& finding : report["findings"]) {
      if (finding["id"] == kId) return finding;
    }
    ADD_FAILURE() << "no finding " << kId << ": " << last_.out;
    return json::object();
  }

  static std::string Text(const json& finding, const char* key) {
    return finding.contains(key) ? finding[key].get<std::string>() : std::string();
  }

  fs::path root_;
  std::string socket_;
  std::string image_fs_;
  std::unique_ptr<testing::ContainerdProcess> containerd_;
  std::unique_ptr<testing::TmpfsMount> tmpfs_;
  testing::ProcessResult last_;
  int imported_ = 0;
};

TEST_F(ImageGcContainerd, CriNamesTheSnapshotterRootAndReportsPackedSizes) {
  EXPECT_THAT(image_fs_, HasSubstr((root_ / "ctd/root").string()));
  EXPECT_THAT(image_fs_, HasSubstr("io.containerd.snapshotter.v1.overlayfs"));
  auto empty = containerd::QueryCriImages(socket_, std::chrono::milliseconds(2000));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
  uint64_t size = ImportImage("gpunode.test/cuda:12.4", 3 * kGiB);
  auto images = containerd::QueryCriImages(socket_, std::chrono::milliseconds(2000));
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ(images->front().tags, std::vector<std::string>{"gpunode.test/cuda:12.4"});
  EXPECT_EQ(images->front().size_bytes, size);
  EXPECT_THAT(images->front().id, HasSubstr("sha256:"));
}

TEST_F(ImageGcContainerd, AnEmptyStoreOnAHealthyDiskIsOkWithTheDefaults) {
  ImageFilesystem(100 * kGiB);
  json finding = Finding();
  EXPECT_EQ(finding["status"], "ok") << finding.dump();
  EXPECT_EQ(Text(finding, "summary"), "image GC at 85%/80% of 100.0 GiB (now 0%): no images yet");
  std::string evidence = Text(finding, "evidence");
  EXPECT_THAT(evidence, HasSubstr("imageGCHighThresholdPercent 85 (default)"));
  EXPECT_THAT(evidence, HasSubstr("imageGCLowThresholdPercent 80 (default)"));
  EXPECT_THAT(evidence, HasSubstr("imageMaximumGCAge 0s = off (default)"));
  EXPECT_THAT(evidence, HasSubstr("serializeImagePulls true (default)"));
  EXPECT_THAT(evidence, HasSubstr("image filesystem " + image_fs_ + ": 100.0 GiB"));
  EXPECT_THAT(evidence, HasSubstr("no images"));
}

TEST_F(ImageGcContainerd, ThresholdsFromTheConfigFile) {
  ImageFilesystem(100 * kGiB);
  Write(root_ / "var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "imageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: 50\n"
        "imageMaximumGCAge: 168h\n");
  json finding = Finding();
  EXPECT_EQ(finding["status"], "ok") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"), HasSubstr("image GC at 70%/50%"));
  std::string evidence = Text(finding, "evidence");
  EXPECT_THAT(evidence, HasSubstr("imageGCHighThresholdPercent 70 (/var/lib/kubelet/config.yaml)"));
  EXPECT_THAT(evidence, HasSubstr("imageGCLowThresholdPercent 50 (/var/lib/kubelet/config.yaml)"));
  EXPECT_THAT(evidence, HasSubstr("imageMaximumGCAge 168h (/var/lib/kubelet/config.yaml)"));
}

TEST_F(ImageGcContainerd, FlagsWinOverDropInsWhichWinOverTheFile) {
  ImageFilesystem(100 * kGiB);
  // The --config file as JSON, a drop-in over it, and flags over both.
  Write(root_ / "etc/kubernetes/kubelet.json",
        R"({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 50,
            "serializeImagePulls": true})");
  Write(root_ / "etc/kubernetes/kubelet.conf.d/10-images.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "imageGCLowThresholdPercent: 40\nserializeImagePulls: false\n"
        "maxParallelImagePulls: 3\n");
  Write(root_ / "etc/kubernetes/kubelet.conf.d/README", "imageGCLowThresholdPercent: 99\n");
  Kubelet({"--config", "/etc/kubernetes/kubelet.json",
           "--config-dir=/etc/kubernetes/kubelet.conf.d", "--image-gc-high-threshold=90",
           "--image-gc-low-threshold", "60", "--image-gc-high-threshold", "88"});
  json finding = Finding();
  EXPECT_EQ(finding["status"], "ok") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"), HasSubstr("image GC at 88%/60%"));
  std::string evidence = Text(finding, "evidence");
  EXPECT_THAT(evidence,
              HasSubstr("imageGCHighThresholdPercent 88 (flag --image-gc-high-threshold)"));
  EXPECT_THAT(evidence, HasSubstr("imageGCLowThresholdPercent 60 (flag --image-gc-low-threshold)"));
  EXPECT_THAT(evidence, HasSubstr("serializeImagePulls false "
                                  "(/etc/kubernetes/kubelet.conf.d/10-images.conf)"));
  EXPECT_THAT(evidence, HasSubstr("maxParallelImagePulls 3"));
}

TEST_F(ImageGcContainerd, ADiskAboveTheHighThresholdIsAWarning) {
  ImageFilesystem(64 * kMiB);
  ASSERT_TRUE(tmpfs_->Fill("other-data", 58 * kMiB));  // 90.6%: usage 91% by the kubelet's count
  json finding = Finding();
  EXPECT_EQ(finding["status"], "warn") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"),
              HasSubstr("the image filesystem is at 91%, at or above the high threshold 85%"));
  EXPECT_THAT(Text(finding, "fix"), HasSubstr("free or grow the filesystem of " + image_fs_));
}

TEST_F(ImageGcContainerd, AnImageLargerThanTheRoomGcLeavesIsAWarning) {
  ImageFilesystem(100 * kGiB);
  ImportImage("gpunode.test/llm-training:1", 40 * kGiB);
  json finding = Finding();
  EXPECT_EQ(finding["status"], "warn") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"),
              HasSubstr("the largest image, gpunode.test/llm-training:1 (40.0 GiB), does not fit "
                        "in the 20.0 GiB that image GC leaves free (20% of 100.0 GiB)"));
  // 43% low: 57 GiB free after GC, 17 GiB once the image is in: 84% < 85%.
  EXPECT_THAT(Text(finding, "fix"), HasSubstr("set imageGCLowThresholdPercent to 43 or lower"));
  EXPECT_THAT(Text(finding, "evidence"),
              HasSubstr("largest images: gpunode.test/llm-training:1 40.0 GiB"));
}

TEST_F(ImageGcContainerd, AnImageWiderThanTheGcBandChurns) {
  ImageFilesystem(400 * kGiB);
  ImportImage("gpunode.test/small:1", 1 * kGiB);
  ImportImage("gpunode.test/vision:2", 30 * kGiB);
  json finding = Finding();
  EXPECT_EQ(finding["status"], "warn") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"),
              HasSubstr("pulling the largest image, gpunode.test/vision:2 (30.0 GiB), right after "
                        "image GC takes the disk from 80% back to the high threshold 85%"));
  EXPECT_THAT(Text(finding, "evidence"),
              HasSubstr("largest images: gpunode.test/vision:2 30.0 GiB, gpunode.test/small:1 "
                        "1.0 GiB"));
}

TEST_F(ImageGcContainerd, SerializedPullsOfALargeImageAreAWarningUntilTurnedOff) {
  ImageFilesystem(1024 * kGiB);
  ImportImage("gpunode.test/pytorch:24.05", 6 * kGiB);
  json finding = Finding();
  EXPECT_EQ(finding["status"], "warn") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"),
              HasSubstr("serializeImagePulls is on and the largest image is 6.0 GiB"));
  EXPECT_THAT(Text(finding, "fix"), HasSubstr("serializeImagePulls: false"));

  Write(root_ / "var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "serializeImagePulls: false\nmaxParallelImagePulls: 4\n");
  finding = Finding();
  EXPECT_EQ(finding["status"], "ok") << finding.dump();
  EXPECT_EQ(Text(finding, "summary"),
            "image GC at 85%/80% of 1.0 TiB (now 0%): room for the largest image "
            "(gpunode.test/pytorch:24.05, 6.0 GiB)");
}

TEST_F(ImageGcContainerd, ThresholdsTheKubeletRefusesAreAFailure) {
  ImageFilesystem(100 * kGiB);
  Write(root_ / "var/lib/kubelet/config.yaml", "imageGCLowThresholdPercent: 80\n");
  Kubelet({"--config=" + std::string(kConfigPath), "--image-gc-high-threshold=70"});
  json finding = Finding();
  EXPECT_EQ(finding["status"], "fail") << finding.dump();
  EXPECT_THAT(Text(finding, "summary"), HasSubstr("high 70%, low 80%"));
  EXPECT_EQ(last_.exit_code, 1);
}

TEST_F(ImageGcContainerd, ABrokenConfigIsAWarningNamingFileLineAndField) {
  ImageFilesystem(100 * kGiB);
  Write(root_ / "var/lib/kubelet/config.yaml",
        "kind: KubeletConfiguration\nimageGCHighThresholdPercent: eighty\n");
  json finding = Finding();
  EXPECT_EQ(finding["status"], "warn") << finding.dump();
  EXPECT_EQ(Text(finding, "evidence"),
            "/var/lib/kubelet/config.yaml:2: imageGCHighThresholdPercent: \"eighty\" is not an "
            "integer");
}

TEST_F(ImageGcContainerd, NoKubeletIsASkip) {
  fs::remove_all(root_ / "proc");
  json finding = Finding();
  EXPECT_EQ(finding["status"], "skip") << finding.dump();
  EXPECT_EQ(Text(finding, "summary"), "no kubelet process found");
}

TEST_F(ImageGcContainerd, ContainerdNotAnsweringBlocksTheCheck) {
  containerd_.reset();
  json finding = Finding();
  EXPECT_EQ(finding["status"], "skip") << finding.dump();
  EXPECT_EQ(Text(finding, "summary"), "blocked by runtime.containerd-version");
}

}  // namespace
}  // namespace gpunode
