// The arithmetic of kubelet.image-gc at the sizes of real GPU nodes (terabyte disks, tens of GB
// of images), which the binary tests cannot put on a disk.
#include "doctor/image_gc_fit.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpunode::doctor {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kGiB = uint64_t{1} << 30;

ImageGcInputs Node(uint64_t capacity, uint64_t available, std::vector<ImageSize> images) {
  return {.capacity_bytes = capacity,
          .available_bytes = available,
          .high_percent = 85,
          .low_percent = 80,
          .serialize_image_pulls = false,
          .images = std::move(images)};
}

TEST(ImageGcFit, UsageIsTheKubeletsIntegerPercentage) {
  EXPECT_EQ(UsagePercent(1000, 150), 85);
  EXPECT_EQ(UsagePercent(1000, 151), 85);  // 15.1% available rounds down: still 85% used
  EXPECT_EQ(UsagePercent(1000, 160), 84);
  EXPECT_EQ(UsagePercent(1000, 0), 100);
  EXPECT_EQ(UsagePercent(1000, 5000), 0);  // available beyond capacity is clamped
  EXPECT_EQ(RoomAfterGc(1000, 80), 200u);
  EXPECT_EQ(RoomAfterGc(999, 80), 199u);
}

TEST(ImageGcFit, ALargeDiskWithRoomIsFine) {
  ImageGcFit fit = AssessImageGc(Node(1788 * kGiB, 1100 * kGiB,
                                      {{"nvcr.io/nvidia/pytorch:24.05-py3", 9 * kGiB},
                                       {"nvcr.io/nvidia/tritonserver:24.05-py3", 14 * kGiB}}));
  EXPECT_THAT(fit.problems, IsEmpty());
  EXPECT_EQ(fit.usage_percent, 39);
  ASSERT_TRUE(fit.largest);
  EXPECT_EQ(fit.largest->name, "nvcr.io/nvidia/tritonserver:24.05-py3");
  EXPECT_FALSE(fit.suggested_low_percent);
}

TEST(ImageGcFit, AboveTheHighThreshold) {
  ImageGcFit fit = AssessImageGc(Node(1000 * kGiB, 150 * kGiB, {}));
  EXPECT_THAT(fit.problems, ElementsAre(ImageGcProblem::kAboveHighThreshold));
  fit = AssessImageGc(Node(1000 * kGiB, 160 * kGiB, {}));
  EXPECT_THAT(fit.problems, IsEmpty());
}

TEST(ImageGcFit, AnImageLargerThanTheRoomAfterGc) {
  ImageGcFit fit = AssessImageGc(Node(200 * kGiB, 150 * kGiB, {{"big", 41 * kGiB}}));
  EXPECT_EQ(fit.room_after_gc_bytes, 40 * kGiB);
  EXPECT_THAT(fit.problems, ElementsAre(ImageGcProblem::kLargestDoesNotFit));
  // 63%: 74 GiB free after GC, 33 GiB (16.5%) once the image is in, usage 84%; at 64% it
  // would be 31 GiB (15.5%), usage 85%: churn.
  EXPECT_EQ(fit.suggested_low_percent, 63);
}

TEST(ImageGcFit, AnImageWiderThanTheBandChurns) {
  ImageGcFit fit = AssessImageGc(Node(200 * kGiB, 150 * kGiB, {{"vision", 30 * kGiB}}));
  EXPECT_THAT(fit.problems, ElementsAre(ImageGcProblem::kChurn));
  // 69%: 62 GiB after GC, 32 GiB (16%) after the pull; at 70% it would be 30 GiB, 15%: 85%.
  EXPECT_EQ(fit.suggested_low_percent, 69);
  fit = AssessImageGc(Node(2000 * kGiB, 1500 * kGiB, {{"vision", 30 * kGiB}}));
  EXPECT_THAT(fit.problems, IsEmpty());
}

TEST(ImageGcFit, NoThresholdHelpsAnImageAsLargeAsTheDisk) {
  ImageGcFit fit = AssessImageGc(Node(100 * kGiB, 90 * kGiB, {{"huge", 100 * kGiB}}));
  EXPECT_THAT(fit.problems, ElementsAre(ImageGcProblem::kLargestDoesNotFit));
  EXPECT_FALSE(fit.suggested_low_percent);
}

TEST(ImageGcFit, HighAt100IsGcOffAndNothingElseAboutGc) {
  ImageGcInputs inputs = Node(100 * kGiB, 1 * kGiB, {{"huge", 100 * kGiB}});
  inputs.high_percent = 100;
  EXPECT_THAT(AssessImageGc(inputs).problems, ElementsAre(ImageGcProblem::kGcOff));
}

TEST(ImageGcFit, SerializedPullsMatterOnlyForImagesOver5GiB) {
  ImageGcInputs inputs = Node(2000 * kGiB, 1500 * kGiB, {{"five", kLargeImageBytes}});
  inputs.serialize_image_pulls = true;
  EXPECT_THAT(AssessImageGc(inputs).problems, IsEmpty());
  inputs.images.push_back({"more", kLargeImageBytes + 1});
  EXPECT_THAT(AssessImageGc(inputs).problems, ElementsAre(ImageGcProblem::kSerializedLargePull));
  inputs.serialize_image_pulls = false;
  EXPECT_THAT(AssessImageGc(inputs).problems, IsEmpty());
}

TEST(ImageGcFit, ProblemsComeMostPressingFirst) {
  ImageGcInputs inputs = Node(100 * kGiB, 5 * kGiB, {{"huge", 60 * kGiB}});
  inputs.serialize_image_pulls = true;
  EXPECT_THAT(AssessImageGc(inputs).problems,
              ElementsAre(ImageGcProblem::kAboveHighThreshold, ImageGcProblem::kLargestDoesNotFit,
                          ImageGcProblem::kSerializedLargePull));
}

}  // namespace
}  // namespace gpunode::doctor
