#include "server/control/control_socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace daxsmbd::server::control {
namespace {

TEST(ControlSocket, OnlyRootAndTheDaemonsOwnUidMayUseIt) {
    EXPECT_TRUE(peer_allowed(0, 0));
    EXPECT_TRUE(peer_allowed(0, 998));      // root, the daemon running as a service account
    EXPECT_TRUE(peer_allowed(998, 998));    // the service account itself
    EXPECT_FALSE(peer_allowed(1000, 0));    // any user, daemon as root
    EXPECT_FALSE(peer_allowed(1000, 998));  // any other user
}

TEST(ControlSocket, RequestWordsAreSplitOnBlanks) {
    EXPECT_EQ(split_request("status"), (std::vector<std::string>{"status"}));
    EXPECT_EQ(split_request("  close-session \t 0x1d  "),
              (std::vector<std::string>{"close-session", "0x1d"}));
    EXPECT_TRUE(split_request(" \t ").empty());
}

TEST(ControlSocket, AnswersNameTheResultOrWhatWasWrong) {
    std::vector<std::string> seen;
    std::vector<Command> commands = {
        {"echo", 1, 2, "echo WORD [WORD]",
         [&](const std::vector<std::string>& a) {
             seen = a;
             return Reply{true, a[0] + "\n"};
         }},
        {"fail", 0, 0, "fail",
         [](const std::vector<std::string>&) {
             return Reply{false, "it failed"};
         }},
    };
    EXPECT_EQ(answer_request(commands, "echo hi"), "ok\nhi\n");
    EXPECT_EQ(seen, (std::vector<std::string>{"hi"}));
    EXPECT_EQ(answer_request(commands, "fail"), "error: it failed\n");
    EXPECT_EQ(answer_request(commands, "echo"), "error: usage: echo WORD [WORD]\n");
    EXPECT_EQ(answer_request(commands, "echo a b c"), "error: usage: echo WORD [WORD]\n");
    EXPECT_EQ(answer_request(commands, "nope"),
              "error: unknown command 'nope' (known: echo, fail)\n");
    EXPECT_EQ(answer_request(commands, ""), "error: empty request\n");
}

TEST(ControlSocket, StartRefusesAPathThatIsNotASocket) {
    char dir[] = "/tmp/daxsmbd-ctl-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string file = std::string(dir) + "/plain";
    FILE* f = fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
    std::string error;
    EXPECT_FALSE(ControlSocket::start(file, {}, &error));
    EXPECT_NE(error.find("is not a socket"), std::string::npos) << error;
    EXPECT_FALSE(ControlSocket::start(std::string(dir) + "/" + std::string(200, 'x'), {}, &error));
    EXPECT_NE(error.find("must be 1 to 107 bytes"), std::string::npos) << error;
    auto r = send_request(std::string(dir) + "/none", "status");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.text.find("cannot reach daxsmbd"), std::string::npos) << r.text;
    unlink(file.c_str());
    rmdir(dir);
}

}  // namespace
}  // namespace daxsmbd::server::control
