// Tests of the device health module (server/health/nvme_health.h, device_health.h): the SMART /
// Health log page decoded from bytes laid out as the NVMe base specification has them, the
// block device of a path found through a sysfs tree made here, and the monitor's grouping.
#include "server/health/nvme_health.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "server/health/device_health.h"

namespace daxsmbd::server::health {
namespace {

namespace fs = std::filesystem;

void put_le(std::array<std::byte, kSmartLogSize>& p, size_t off, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i)
        p[off + i] = std::byte((v >> (8 * i)) & 0xFF);
}

TEST(SmartLog, DecodesEveryFieldAtItsOffset) {
    std::array<std::byte, kSmartLogSize> p{};
    p[0] = std::byte(critical_warning::kSpareBelowThreshold | critical_warning::kReadOnly);
    put_le(p, 1, 323, 2);  // 50 degrees Celsius
    p[3] = std::byte(4);
    p[4] = std::byte(10);
    p[5] = std::byte(117);  // past the life estimate
    put_le(p, 32, 1111, 8);
    put_le(p, 48, 2222, 8);
    put_le(p, 64, 3333, 8);
    put_le(p, 80, 4444, 8);
    put_le(p, 96, 55, 8);
    put_le(p, 112, 66, 8);
    put_le(p, 128, 77, 8);
    put_le(p, 144, 88, 8);
    put_le(p, 160, 99, 8);
    put_le(p, 176, 12, 8);
    auto s = parse_smart_log(p);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->critical_warning, 0x09);
    EXPECT_EQ(s->temperature_kelvin, 323);
    EXPECT_EQ(s->available_spare, 4);
    EXPECT_EQ(s->available_spare_threshold, 10);
    EXPECT_EQ(s->percentage_used, 117);
    EXPECT_EQ(s->data_units_read, 1111u);
    EXPECT_EQ(s->data_units_written, 2222u);
    EXPECT_EQ(s->host_read_commands, 3333u);
    EXPECT_EQ(s->host_write_commands, 4444u);
    EXPECT_EQ(s->controller_busy_minutes, 55u);
    EXPECT_EQ(s->power_cycles, 66u);
    EXPECT_EQ(s->power_on_hours, 77u);
    EXPECT_EQ(s->unsafe_shutdowns, 88u);
    EXPECT_EQ(s->media_errors, 99u);
    EXPECT_EQ(s->error_log_entries, 12u);
    EXPECT_TRUE(s->needs_attention());
    EXPECT_EQ(describe_critical_warning(s->critical_warning),
              "spare below threshold, media read-only");
}

TEST(SmartLog, HugeCountersSaturateAndShortPagesAreRefused) {
    std::array<std::byte, kSmartLogSize> p{};
    put_le(p, 48, 1, 8);
    put_le(p, 56, 1, 8);  // 2^64 + 1: more than 64 bits hold
    auto s = parse_smart_log(p);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->data_units_written, UINT64_MAX);
    EXPECT_FALSE(s->needs_attention());  // threshold 0: the device reports none
    EXPECT_FALSE(parse_smart_log(std::span(p).first(511)));
}

TEST(SmartLog, SpareBelowThresholdNeedsAttentionWithoutTheBit) {
    SmartLog s;
    s.available_spare = 9;
    s.available_spare_threshold = 10;
    EXPECT_TRUE(s.needs_attention());
    s.available_spare = 10;
    EXPECT_FALSE(s.needs_attention());
    EXPECT_EQ(describe_critical_warning(0), "none");
    EXPECT_EQ(describe_critical_warning(0x80), "bit 7");
}

// A sysfs tree in which this test directory's device is an NVMe namespace partition.
class FakeSysfs : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-sysfs.XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        root_ = tmpl;
        struct stat st {};
        ASSERT_EQ(::stat(root_.c_str(), &st), 0);
        devno_ = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    }
    void TearDown() override { fs::remove_all(root_); }

    // /sys/devices/.../PARENT/CTRL/NS[/PART] and /sys/dev/block/MAJ:MIN -> the last of them.
    void make_device(const std::string& parent, const std::string& part) {
        const fs::path ns =
            fs::path(root_) / "devices/pci0000:00/0000:00:04.0" / parent / "nvme0n1";
        fs::create_directories(ns);
        std::ofstream(ns / "uevent") << "MAJOR=259\nMINOR=0\nDEVNAME=nvme0n1\nDEVTYPE=disk\n";
        fs::path target = ns;
        if (!part.empty()) {
            target = ns / part;
            fs::create_directories(target);
            std::ofstream(target / "partition") << "1\n";
        }
        fs::create_directories(fs::path(root_) / "dev/block");
        fs::create_symlink(target, fs::path(root_) / "dev/block" / devno_);
    }

    std::string root_;
    std::string devno_;
};

TEST_F(FakeSysfs, PartitionOfAnNvmeNamespaceIsItsWholeDisk) {
    make_device("nvme/nvme0", "nvme0n1p1");
    std::string why;
    auto dev = block_device_of(root_, &why, root_);
    ASSERT_TRUE(dev) << why;
    EXPECT_EQ(dev->name, "nvme0n1");
    EXPECT_EQ(dev->partition, "nvme0n1p1");
    EXPECT_EQ(dev->node, "/dev/nvme0n1");
    EXPECT_TRUE(dev->nvme);
}

TEST_F(FakeSysfs, OtherDevicesAreNotNvme) {
    make_device("virtio0/block", "");
    std::string why;
    auto dev = block_device_of(root_, &why, root_);
    ASSERT_TRUE(dev) << why;
    EXPECT_EQ(dev->name, "nvme0n1");  // the name alone does not make it NVMe
    EXPECT_FALSE(dev->nvme);
}

TEST_F(FakeSysfs, NoDeviceEntryIsAnError) {
    std::string why;
    EXPECT_FALSE(block_device_of(root_, &why, root_));
    EXPECT_NE(why.find("no block device"), std::string::npos) << why;
    EXPECT_FALSE(block_device_of(root_ + "/missing", &why, root_));
}

TEST(DeviceHealthMonitor, SharesOnOneDeviceAreGroupedAndNonNvmeIsNotRead) {
    DeviceHealthMonitor m;
    char tmpl[] = "/tmp/daxsmbd-health.XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    const std::string dir = tmpl;
    m.set_shares({{"a", dir}, {"b", dir}, {"gone", dir + "/missing"}});
    m.poll_once();
    auto devices = m.snapshot();
    fs::remove_all(dir);
    // /tmp is on this machine's disk, or on tmpfs, which has no block device.
    if (devices.empty()) GTEST_SKIP() << "/tmp has no block device here";
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].shares, (std::vector<std::string>{"a", "b"}));
    if (!devices[0].device.nvme) {
        EXPECT_FALSE(devices[0].smart);
        EXPECT_EQ(devices[0].read_failures, 0u);
    }
}

}  // namespace
}  // namespace daxsmbd::server::health
