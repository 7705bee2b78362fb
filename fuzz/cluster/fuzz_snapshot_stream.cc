// Reads arbitrary bytes as a streamed snapshot file, with a read buffer of 1 to 256 bytes chosen
// by the first byte, so that items straddle every refill. The splitter may not crash or read out
// of bounds; and where the bytes are valid JSON, the streamed read must agree with reading the
// whole document: both fail, or both keep the same objects.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/snapshot_reader.h"
#include "simdjson.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode;
  if (size == 0) return 0;
  const size_t buffer = size_t{1} + data[0];
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  int fd = ::memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return 0;
  }
  kube::ReadOptions options;
  options.keep_pod_details = [](const kube::PodView&) { return true; };
  absl::StatusOr<kube::ClusterSnapshot> streamed =
      kube::ReadSnapshotStream(fd, "fuzz", options, buffer);
  ::close(fd);

  simdjson::dom::parser validator;
  simdjson::padded_string padded(text);
  if (validator.parse(padded).error() != simdjson::SUCCESS) return 0;
  absl::StatusOr<kube::ClusterSnapshot> whole = kube::ReadSnapshotText(text, "fuzz", options);
  if (streamed.ok() != whole.ok()) std::abort();
  if (whole.ok() &&
      (streamed->nodes.size() != whole->nodes.size() ||
       streamed->pods.size() != whole->pods.size() || streamed->pdbs.size() != whole->pdbs.size() ||
       streamed->jobs.size() != whole->jobs.size() ||
       streamed->image_pulls.size() != whole->image_pulls.size() ||
       streamed->has_pdbs != whole->has_pdbs)) {
    std::abort();
  }
  return 0;
}
