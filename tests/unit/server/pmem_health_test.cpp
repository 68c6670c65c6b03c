// Tests of the persistent memory health reader (server/health/pmem_health.h): the sysfs
// attribute decoders, and the region, DIMMs and bad blocks of a pmem device found in a sysfs
// tree made here with the layout of Linux 6.1 (what the VM's emulated NVDIMM shows).
#include "server/health/pmem_health.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/health/nvme_health.h"

namespace daxsmbd::server::health {
namespace {

namespace fs = std::filesystem;

TEST(PmemBadBlocks, EmptyIsNone) {
    auto bb = parse_badblocks("");
    ASSERT_TRUE(bb);
    EXPECT_EQ(bb->ranges, 0u);
    EXPECT_EQ(bb->sectors, 0u);
}

TEST(PmemBadBlocks, RangesAndSectorsAreCounted) {
    auto bb = parse_badblocks("4194240 8\n4194300 64\n");
    ASSERT_TRUE(bb);
    EXPECT_EQ(bb->ranges, 2u);
    EXPECT_EQ(bb->sectors, 72u);
}

TEST(PmemBadBlocks, MalformedLinesAreRefused) {
    EXPECT_FALSE(parse_badblocks("12\n"));
    EXPECT_FALSE(parse_badblocks("12 x\n"));
    EXPECT_FALSE(parse_badblocks("-1 8\n"));
    EXPECT_FALSE(parse_badblocks("1 2 3\n"));
}

TEST(PmemBadBlocks, SectorsSaturate) {
    auto bb = parse_badblocks("0 18446744073709551615\n9 5\n");
    ASSERT_TRUE(bb);
    EXPECT_EQ(bb->sectors, UINT64_MAX);
}

TEST(NvdimmFlags, WordsAndFailuresPerFamily) {
    const auto words = parse_flag_words("save_fail not_armed smart_notify \n");
    EXPECT_EQ(words, (std::vector<std::string>{"save_fail", "not_armed", "smart_notify"}));
    // NFIT: smart_notify only says health events are enabled.
    EXPECT_EQ(failure_flags("nfit", words), (std::vector<std::string>{"save_fail", "not_armed"}));
    // PAPR: smart_notify is a health event; encrypted is a state.
    EXPECT_EQ(failure_flags("papr", parse_flag_words("smart_notify encrypted\n")),
              (std::vector<std::string>{"smart_notify"}));
    EXPECT_TRUE(parse_flag_words("\n").empty());
}

TEST(PmemHealthDescribe, NamesEveryProblem) {
    PmemHealth h;
    h.region = "region0";
    EXPECT_FALSE(h.needs_attention());
    EXPECT_EQ(h.describe(), "healthy");
    h.badblocks = BadBlocks{1, 8};
    h.read_only = true;
    h.dimms.push_back(Nvdimm{"nmem0", "8680-56341200", "nfit", {"flush_fail"}, {"flush_fail"}, {}});
    EXPECT_TRUE(h.needs_attention());
    EXPECT_EQ(h.describe(), "1 bad range (8 sectors), region0 read-only, nmem0: flush_fail");
}

// /sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0/{region0/pfn0.0/block/pmem0,nmem0}
class FakeNdSysfs : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-ndsysfs.XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        root_ = tmpl;
        bus_ = fs::path(root_) / "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0";
        region_ = bus_ / "region0";
        disk_ = region_ / "pfn0.0/block/pmem0";
        fs::create_directories(disk_);
        put(disk_ / "uevent", "MAJOR=259\nMINOR=0\nDEVNAME=pmem0\nDEVTYPE=disk\n");
        put(disk_ / "badblocks", "");
        put(region_ / "read_only", "0\n");
        put(region_ / "mappings", "1\n");
        put(region_ / "mapping0", "nmem0,0,2147483648,0\n");
        fs::create_directories(bus_ / "nmem0/nfit");
        put(bus_ / "nmem0/nfit/flags", "\n");
        put(bus_ / "nmem0/nfit/id", "8680-56341200\n");
    }
    void TearDown() override { fs::remove_all(root_); }
    static void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

    std::string root_;
    fs::path bus_, region_, disk_;
};

TEST_F(FakeNdSysfs, RegionIsFoundAboveTheBlockDevice) {
    EXPECT_EQ(nd_region_of(disk_.string()), region_.string());
    EXPECT_EQ(nd_region_of((bus_ / "nmem0").string()), "");
    EXPECT_EQ(nd_region_of("/sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1"), "");
}

TEST_F(FakeNdSysfs, BlockDeviceOfAPathOnPmemIsPmem) {
    struct stat st {};
    ASSERT_EQ(::stat(root_.c_str(), &st), 0);
    fs::create_directories(fs::path(root_) / "dev/block");
    fs::create_symlink(
        disk_, fs::path(root_) / "dev/block" /
                   (std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev))));
    std::string why;
    auto dev = block_device_of(root_, &why, root_);
    ASSERT_TRUE(dev) << why;
    EXPECT_EQ(dev->name, "pmem0");
    EXPECT_TRUE(dev->pmem());
    EXPECT_FALSE(dev->nvme);
    EXPECT_EQ(fs::path(dev->nd_region), region_);
}

TEST_F(FakeNdSysfs, HealthyDeviceReadsHealthy) {
    std::string why;
    auto h = read_pmem_health(disk_.string(), region_.string(), &why);
    ASSERT_TRUE(h) << why;
    EXPECT_EQ(h->region, "region0");
    EXPECT_FALSE(h->read_only);
    EXPECT_EQ(h->badblocks.ranges, 0u);
    ASSERT_EQ(h->dimms.size(), 1u);
    EXPECT_EQ(h->dimms[0].name, "nmem0");
    EXPECT_EQ(h->dimms[0].id, "8680-56341200");
    EXPECT_EQ(h->dimms[0].source, "nfit");
    EXPECT_TRUE(h->dimms[0].flags.empty());
    EXPECT_FALSE(h->dimms[0].dirty_shutdowns);
    EXPECT_FALSE(h->needs_attention());
}

TEST_F(FakeNdSysfs, BadBlocksFlagsAndDirtyShutdownsAreRead) {
    put(disk_ / "badblocks", "4194240 8\n");
    put(region_ / "read_only", "1\n");
    put(bus_ / "nmem0/nfit/flags", "save_fail smart_notify \n");
    put(bus_ / "nmem0/nfit/dirty_shutdown", "3\n");
    std::string why;
    auto h = read_pmem_health(disk_.string(), region_.string(), &why);
    ASSERT_TRUE(h) << why;
    EXPECT_EQ(h->badblocks, (BadBlocks{1, 8}));
    EXPECT_TRUE(h->read_only);
    ASSERT_EQ(h->dimms.size(), 1u);
    EXPECT_EQ(h->dimms[0].failures, (std::vector<std::string>{"save_fail"}));
    EXPECT_EQ(h->dimms[0].dirty_shutdowns, 3u);
    EXPECT_EQ(h->describe(), "1 bad range (8 sectors), region0 read-only, nmem0: save_fail");
}

TEST_F(FakeNdSysfs, PaprDimmFlagsAreRead) {
    fs::remove_all(bus_ / "nmem0/nfit");
    fs::create_directories(bus_ / "nmem0/papr");
    put(bus_ / "nmem0/papr/flags", "smart_notify\n");
    std::string why;
    auto h = read_pmem_health(disk_.string(), region_.string(), &why);
    ASSERT_TRUE(h) << why;
    ASSERT_EQ(h->dimms.size(), 1u);
    EXPECT_EQ(h->dimms[0].source, "papr");
    EXPECT_EQ(h->dimms[0].failures, (std::vector<std::string>{"smart_notify"}));
}

TEST_F(FakeNdSysfs, UnreadableOrGarbledBadBlocksIsAFailure) {
    std::string why;
    put(disk_ / "badblocks", "garbage\n");
    EXPECT_FALSE(read_pmem_health(disk_.string(), region_.string(), &why));
    EXPECT_NE(why.find("does not decode"), std::string::npos) << why;
    fs::remove(disk_ / "badblocks");
    EXPECT_FALSE(read_pmem_health(disk_.string(), region_.string(), &why));
    EXPECT_NE(why.find("cannot be read"), std::string::npos) << why;
}

}  // namespace
}  // namespace daxsmbd::server::health
