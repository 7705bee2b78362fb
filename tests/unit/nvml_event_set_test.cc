// XID events and lost GPUs through the typed event API, driven by a simulator timeline. The
// test awaits each event through EventSet::Wait; nothing sleeps.
#include "gtest/gtest.h"
#include "nvml/event_set.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "sim_library.h"

namespace gpunode::nvml {
namespace {

using std::chrono::milliseconds;

TEST(EventSet, DeliversXidsThenReportsTheLostGpu) {
  std::unique_ptr<Library> library =
      testing::OpenSimulator(testing::Fixture("profiles/two-gpus-faults.yaml"));
  ASSERT_NE(library, nullptr);
  absl::StatusOr<Device> gpu0 = DeviceAt(*library, 0), gpu1 = DeviceAt(*library, 1);
  ASSERT_TRUE(gpu0.ok() && gpu1.ok());
  absl::StatusOr<std::unique_ptr<EventSet>> set = EventSet::Create(*library);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_TRUE((*set)->Register(*gpu0, nvmlEventTypeXidCriticalError).ok());
  ASSERT_TRUE((*set)->Register(*gpu1, nvmlEventTypeXidCriticalError).ok());

  absl::StatusOr<std::optional<Event>> first = (*set)->Wait(milliseconds(5000));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->device, gpu1->handle());
  EXPECT_EQ((*first)->type, nvmlEventTypeXidCriticalError);
  EXPECT_EQ((*first)->data, 48u);
  EXPECT_FALSE((*first)->gpu_instance_id.has_value());

  // Falling off the bus announces itself as Xid 79 on that GPU...
  absl::StatusOr<std::optional<Event>> fall = (*set)->Wait(milliseconds(5000));
  ASSERT_TRUE(fall.ok()) << fall.status();
  ASSERT_TRUE(fall->has_value());
  EXPECT_EQ((*fall)->device, gpu0->handle());
  EXPECT_EQ((*fall)->data, 79u);
  // ...after which its queries fail as lost while the other GPU keeps answering.
  absl::StatusOr<std::string> lost_uuid = gpu0->Uuid();
  EXPECT_TRUE(IsGpuLost(lost_uuid.status())) << lost_uuid.status();
  EXPECT_TRUE(gpu1->Uuid().ok());
}

TEST(EventSet, TimesOutWithoutEvents) {
  std::unique_ptr<Library> library = testing::OpenSimulator("h200-1");
  ASSERT_NE(library, nullptr);
  absl::StatusOr<Device> gpu = DeviceAt(*library, 0);
  ASSERT_TRUE(gpu.ok());
  absl::StatusOr<std::unique_ptr<EventSet>> set = EventSet::Create(*library);
  ASSERT_TRUE(set.ok());
  ASSERT_TRUE((*set)->Register(*gpu, nvmlEventTypeXidCriticalError).ok());
  absl::StatusOr<std::optional<Event>> event = (*set)->Wait(milliseconds(20));
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value());
}

}  // namespace
}  // namespace gpunode::nvml
