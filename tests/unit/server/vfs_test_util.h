// Shared fixture of the server/vfs tests: every test gets its own temporary directory holding
// "share" (opened as the ShareRoot) and "outside" (a sibling the share must never reach), and
// removes it afterwards.
#pragma once

#include <fcntl.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "server/vfs/share_root.h"

namespace daxsmbd::server::vfs::testing {

// A base directory whose file system stores user xattrs: /tmp if it does, else /var/tmp.
inline std::string xattr_capable_tmp_base() {
    for (const char* base : {"/tmp", "/var/tmp"}) {
        std::string probe = std::string(base) + "/daxsmbd-vfs-probe-XXXXXX";
        int fd = ::mkstemp(probe.data());
        if (fd < 0) continue;
        bool ok = ::fsetxattr(fd, "user.daxsmbd.probe", "1", 1, 0) == 0;
        ::close(fd);
        ::unlink(probe.c_str());
        if (ok) return base;
    }
    return "/tmp";
}

inline void remove_tree(const std::string& path) {
    ::nftw(
        path.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 64,
        FTW_DEPTH | FTW_PHYS);
}

class VfsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = xattr_capable_tmp_base() + "/daxsmbd-vfs-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        base_ = tmpl;
        share_ = base_ + "/share";
        outside_ = base_ + "/outside";
        ASSERT_EQ(::mkdir(share_.c_str(), 0755), 0);
        ASSERT_EQ(::mkdir(outside_.c_str(), 0755), 0);
        write_file(outside_ + "/secret", "outside data");
    }
    void TearDown() override {
        if (!base_.empty()) remove_tree(base_);
    }

    ShareRoot open_share(bool case_sensitive = false) {
        auto r = ShareRoot::open(share_, ShareOptions{case_sensitive, {}});
        EXPECT_TRUE(r.ok()) << status_name(r.status());
        return std::move(r).value();
    }

    // Paths relative to the share directory.
    std::string in_share(const std::string& rel) const { return share_ + "/" + rel; }
    void write_file(const std::string& abs_path, const std::string& content) {
        int fd = ::open(abs_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0) << abs_path;
        ASSERT_EQ(::write(fd, content.data(), content.size()), ssize_t(content.size()));
        ::close(fd);
    }
    void share_file(const std::string& rel, const std::string& content = "x") {
        write_file(in_share(rel), content);
    }
    void share_dir(const std::string& rel) { ASSERT_EQ(::mkdir(in_share(rel).c_str(), 0755), 0); }
    void share_symlink(const std::string& rel, const std::string& target) {
        ASSERT_EQ(::symlink(target.c_str(), in_share(rel).c_str()), 0);
    }
    static std::string read_all(int fd) {
        std::string out;
        char buf[256];
        ssize_t n;
        while ((n = ::read(fd, buf, sizeof buf)) > 0)
            out.append(buf, size_t(n));
        return out;
    }
    static bool exists(const std::string& abs_path) {
        struct stat st;
        return ::lstat(abs_path.c_str(), &st) == 0;
    }
    static uint64_t inode_of(const std::string& abs_path) {
        struct stat st {};
        EXPECT_EQ(::stat(abs_path.c_str(), &st), 0) << abs_path;
        return st.st_ino;
    }

    std::string base_, share_, outside_;
};

}  // namespace daxsmbd::server::vfs::testing
