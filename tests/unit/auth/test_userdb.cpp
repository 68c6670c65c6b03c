#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "auth/userdb.h"

namespace daxsmbd::auth {
namespace {

class UserDbTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-userdb-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/users";
    }
    void TearDown() override {
        std::string cmd = "rm -rf '" + dir_ + "'";
        ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
    void write(const std::string& text, mode_t mode) {
        {
            std::ofstream f(path_);
            f << text;
        }
        ASSERT_EQ(chmod(path_.c_str(), mode), 0);
    }
    std::string dir_, path_;
};

TEST_F(UserDbTest, MissingFileIsEmpty) {
    std::string err;
    auto db = UserDatabase::load(path_, &err);
    ASSERT_TRUE(db) << err;
    EXPECT_TRUE(db->names().empty());
    EXPECT_EQ(db->path(), path_);
}

TEST_F(UserDbTest, RoundTripWithMode0600) {
    std::string err;
    auto db = UserDatabase::load(path_, &err);
    ASSERT_TRUE(db);
    db->set({"Alice", nt_hash_of_password("Password"), 1000, 1000});
    db->set({"bob", nt_hash_of_password("x"), 1001, 100});
    ASSERT_TRUE(db->save(&err)) << err;
    struct stat st;
    ASSERT_EQ(stat(path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    std::ifstream f(path_);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    EXPECT_NE(all.find("Alice:1000:1000:a4f49c406510bdcab6824ee7c30fd852\n"), std::string::npos);

    auto again = UserDatabase::load(path_, &err);
    ASSERT_TRUE(again) << err;
    const UserRecord* a = again->find("ALICE");  // case-insensitive
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->name, "Alice");
    EXPECT_EQ(a->uid, 1000u);
    EXPECT_EQ(a->nt_hash, nt_hash_of_password("Password"));
    EXPECT_EQ(again->find("bob")->gid, 100u);
    EXPECT_EQ(again->names().size(), 2u);
    EXPECT_TRUE(again->remove("alice"));
    EXPECT_FALSE(again->remove("alice"));
    EXPECT_EQ(again->find("Alice"), nullptr);
    // No temp file is left behind.
    ASSERT_TRUE(again->save(&err)) << err;
    std::string ls = "test $(ls -A '" + dir_ + "' | wc -l) -eq 1";
    EXPECT_EQ(std::system(ls.c_str()), 0);
}

TEST_F(UserDbTest, RefusesGroupOrWorldReadableFile) {
    write("alice:1:1:a4f49c406510bdcab6824ee7c30fd852\n", 0644);
    std::string err;
    EXPECT_FALSE(UserDatabase::load(path_, &err));
    EXPECT_NE(err.find("0644"), std::string::npos) << err;
    ASSERT_EQ(chmod(path_.c_str(), 0640), 0);
    EXPECT_FALSE(UserDatabase::load(path_, &err));
    ASSERT_EQ(chmod(path_.c_str(), 0600), 0);
    EXPECT_TRUE(UserDatabase::load(path_, &err)) << err;
}

TEST_F(UserDbTest, CommentsAndBlankLinesSkipped) {
    write("# header\n\n  # indented comment\nalice:1:2:A4F49C406510BDCAB6824EE7C30FD852\r\n", 0600);
    std::string err;
    auto db = UserDatabase::load(path_, &err);
    ASSERT_TRUE(db) << err;
    ASSERT_NE(db->find("alice"), nullptr);
    EXPECT_EQ(db->find("alice")->nt_hash, nt_hash_of_password("Password"));
}

TEST_F(UserDbTest, MalformedLinesReportFileAndLine) {
    const char* bad[] = {
        "alice:1:1\n",                                         // too few fields
        "alice:1:1:a4f49c406510bdcab6824ee7c30fd852:extra\n",  // too many
        "alice:x:1:a4f49c406510bdcab6824ee7c30fd852\n",        // bad uid
        "alice:1:1:a4f49c406510bdcab6824ee7c30fd85\n",         // short hash
        "alice:1:1:z4f49c406510bdcab6824ee7c30fd852\n",        // not hex
        ":1:1:a4f49c406510bdcab6824ee7c30fd852\n",             // empty name
        "alice:99999999999:1:a4f49c406510bdcab6824ee7c30fd852\n",
    };
    for (const char* line : bad) {
        write(std::string("# ok\nbob:2:2:a4f49c406510bdcab6824ee7c30fd852\n") + line, 0600);
        std::string err;
        EXPECT_FALSE(UserDatabase::load(path_, &err)) << line;
        EXPECT_NE(err.find(path_ + ":3:"), std::string::npos) << err;
    }
    write("bob:2:2:a4f49c406510bdcab6824ee7c30fd852\nBOB:3:3:a4f49c406510bdcab6824ee7c30fd852\n",
          0600);
    std::string err;
    EXPECT_FALSE(UserDatabase::load(path_, &err));
    EXPECT_NE(err.find(":2: duplicate"), std::string::npos) << err;
}

// Kerberos-only users have uid/gid but no NT hash: stored as "-", read back as no hash (so the
// NTLM lookup finds nothing to verify against).
TEST_F(UserDbTest, UserWithoutPasswordRoundTrips) {
    std::string err;
    auto db = UserDatabase::load(path_, &err);
    ASSERT_TRUE(db);
    db->set({"krbonly", std::nullopt, 1005, 1006});
    ASSERT_TRUE(db->save(&err)) << err;
    std::ifstream f(path_);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    EXPECT_NE(all.find("krbonly:1005:1006:-\n"), std::string::npos) << all;
    auto again = UserDatabase::load(path_, &err);
    ASSERT_TRUE(again) << err;
    const UserRecord* k = again->find("krbonly");
    ASSERT_NE(k, nullptr);
    EXPECT_FALSE(k->nt_hash.has_value());
    EXPECT_EQ(k->uid, 1005u);
    EXPECT_EQ(k->gid, 1006u);
}

TEST_F(UserDbTest, HashFieldMustBeHexOrDash) {
    write("a:1:1:--\n", 0600);
    std::string err;
    EXPECT_FALSE(UserDatabase::load(path_, &err));
    EXPECT_NE(err.find(":1: NT hash must be 32 hex digits or '-'"), std::string::npos) << err;
}

}  // namespace
}  // namespace daxsmbd::auth
