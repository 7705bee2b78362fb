// The XID catalog: dcgm-exporter 4.x's err_msg texts, and the classes the device plugin's health
// decisions read from the same rows.
#include <set>

#include "gpu/xid_catalog.h"
#include "gtest/gtest.h"

namespace gpunode::gpu {
namespace {

TEST(XidCatalog, TextsAsDcgmExporterWritesThem) {
  EXPECT_EQ(XidErrorMessage(0), "No Error");
  EXPECT_EQ(XidErrorMessage(13), "Graphics Engine Exception");
  EXPECT_EQ(XidErrorMessage(48), "Double Bit ECC Error");
  EXPECT_EQ(XidErrorMessage(79), "GPU has fallen off the bus");
  EXPECT_EQ(XidErrorMessage(119), "GSP RPC Timeout");
  EXPECT_EQ(XidErrorMessage(172), "Uncorrectable SRAM Error");
  // Past the catalog, as dcgm-exporter: a driver newer than the table.
  EXPECT_EQ(XidErrorMessage(173), "Unknown Error");
  EXPECT_EQ(XidErrorMessage(uint64_t{1} << 40), "Unknown Error");
  EXPECT_EQ(FindXid(173), nullptr);
}

TEST(XidCatalog, EveryListedXidHasItsOwnRowAndText) {
  for (uint64_t xid = 0; xid <= 172; ++xid) {
    const XidEntry* entry = FindXid(xid);
    ASSERT_NE(entry, nullptr) << xid;
    EXPECT_EQ(entry->xid, xid);
    EXPECT_FALSE(entry->description.empty()) << xid;
  }
}

TEST(XidCatalog, CausesAndRecoveries) {
  std::set<uint64_t> application;
  std::set<uint64_t> memory;
  for (uint64_t xid = 0; FindXid(xid) != nullptr; ++xid) {
    if (FindXid(xid)->cause == XidCause::kApplication) application.insert(xid);
    if (FindXid(xid)->recovery == XidRecovery::kMemory) memory.insert(xid);
  }
  EXPECT_EQ(application, (std::set<uint64_t>{13, 31, 43, 45, 68, 109}));
  EXPECT_EQ(memory, (std::set<uint64_t>{48, 63, 64, 92, 94, 95}));
  EXPECT_EQ(FindXid(79)->recovery, XidRecovery::kGpuLost);
  EXPECT_EQ(FindXid(74)->recovery, XidRecovery::kNvLink);
  EXPECT_EQ(FindXid(119)->recovery, XidRecovery::kResponds);
  EXPECT_EQ(FindXid(119)->cause, XidCause::kGpu);
}

}  // namespace
}  // namespace gpunode::gpu
