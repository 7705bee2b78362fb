#include "doctor/image_gc_fit.h"

#include <algorithm>

namespace gpunode::doctor {
namespace {

// The kubelet computes in int64; the byte counts of a real disk stay far below the overflow of
// capacity*100 in unsigned 64 bits (about 180 PB), which is all this needs.
bool FitsWithoutChurn(uint64_t capacity, int high, int low, uint64_t image) {
  uint64_t room = RoomAfterGc(capacity, low);
  return image <= room && UsagePercent(capacity, room - image) < high;
}

}  // namespace

int UsagePercent(uint64_t capacity_bytes, uint64_t available_bytes) {
  if (capacity_bytes == 0) return 100;
  uint64_t available = std::min(available_bytes, capacity_bytes);
  return 100 - static_cast<int>(available * 100 / capacity_bytes);
}

uint64_t RoomAfterGc(uint64_t capacity_bytes, int low_percent) {
  return capacity_bytes * static_cast<uint64_t>(100 - low_percent) / 100;
}

ImageGcFit AssessImageGc(const ImageGcInputs& in) {
  ImageGcFit fit;
  fit.usage_percent = UsagePercent(in.capacity_bytes, in.available_bytes);
  fit.room_after_gc_bytes = RoomAfterGc(in.capacity_bytes, in.low_percent);
  for (const ImageSize& image : in.images) {
    if (!fit.largest || image.bytes > fit.largest->bytes) fit.largest = image;
  }
  bool gc_off = in.high_percent >= 100;
  if (!gc_off && fit.usage_percent >= in.high_percent) {
    fit.problems.push_back(ImageGcProblem::kAboveHighThreshold);
  }
  if (fit.largest && !gc_off) {
    uint64_t largest = fit.largest->bytes;
    bool cure = false;
    if (largest > fit.room_after_gc_bytes) {
      fit.problems.push_back(ImageGcProblem::kLargestDoesNotFit);
      cure = true;
    } else if (UsagePercent(in.capacity_bytes, fit.room_after_gc_bytes - largest) >=
               in.high_percent) {
      fit.problems.push_back(ImageGcProblem::kChurn);
      cure = true;
    }
    for (int low = in.high_percent - 1; cure && low >= 0; --low) {
      if (FitsWithoutChurn(in.capacity_bytes, in.high_percent, low, largest)) {
        fit.suggested_low_percent = low;
        break;
      }
    }
  }
  if (gc_off) fit.problems.push_back(ImageGcProblem::kGcOff);
  if (in.serialize_image_pulls && fit.largest && fit.largest->bytes > kLargeImageBytes) {
    fit.problems.push_back(ImageGcProblem::kSerializedLargePull);
  }
  return fit;
}

}  // namespace gpunode::doctor
