// Helpers the in-process end-to-end tests share: status assertions on client replies, a
// server-side copy, and (from tests/support/test_data.h) a deterministic data pattern and
// reading a file of the share straight from disk.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/error.h"
#include "protocol/ioctl.h"
#include "protocol/status.h"
#include "tests/client/smb2_client.h"
#include "tests/support/test_data.h"

namespace daxsmbd::client {

inline std::string describe(NtStatus s, bool from_server) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", unsigned(s));
    return std::string(from_server ? "server status " : "local error ") +
           std::string(status_name(s)) + " (" + hex + ")";
}
// Any reply type (RawReply, Reply<T>, OwnedReply).
template <class R>
std::string describe(const R& r) {
    return describe(r.status, r.from_server);
}

// The reply carries `want` from the server (the reply expression is evaluated once).
template <class R>
::testing::AssertionResult has_status(const R& r, NtStatus want) {
    if (r.from_server && r.status == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << describe(r) << ", want " << status_name(want);
}
#define EXPECT_STATUS(r, want) EXPECT_TRUE(::daxsmbd::client::has_status((r), (want)))
#define ASSERT_STATUS(r, want) ASSERT_TRUE(::daxsmbd::client::has_status((r), (want)))

// Test data (tests/support/test_data.h).
using test_support::file_contents;
using test_support::pattern;

// A server-side copy (MS-SMB2 3.3.5.15.6): FSCTL_SRV_REQUEST_RESUME_KEY on `source`, then
// FSCTL_SRV_COPYCHUNK_WRITE of `chunks` on `dest`. The status of the copy and its
// SRV_COPYCHUNK_RESPONSE.
struct CopychunkReply {
    NtStatus status = NtStatus::InternalError;
    bool from_server = false;
    protocol::SrvCopychunkResponse body;
};
inline CopychunkReply copychunk(Smb2Client& c, const protocol::FileId& source,
                                const protocol::FileId& dest,
                                const std::vector<protocol::SrvCopychunk>& chunks) {
    CopychunkReply out;
    protocol::IoctlRequest rk;
    rk.ctl_code = protocol::fsctl::kSrvRequestResumeKey;
    rk.file_id = source;
    rk.max_output_response = protocol::SrvRequestResumeKeyResponse::kSize;
    auto key_reply = c.ioctl(rk);
    if (!key_reply.ok()) {
        out.status = key_reply.status;
        out.from_server = key_reply.from_server;
        return out;
    }
    auto key = protocol::SrvRequestResumeKeyResponse::decode(key_reply.body.output);
    if (!key) return out;
    protocol::SrvCopychunkCopy copy;
    copy.source_key = key->resume_key;
    copy.chunks = chunks;
    protocol::ByteVector input;
    protocol::ByteWriter w(input);
    copy.encode(w);
    protocol::IoctlRequest cc;
    cc.ctl_code = protocol::fsctl::kSrvCopychunkWrite;
    cc.file_id = dest;
    cc.input = input;
    cc.max_output_response = protocol::SrvCopychunkResponse::kSize;
    auto reply = c.ioctl(cc);
    out.status = reply.status;
    out.from_server = reply.from_server;
    if (reply.from_server) {
        if (auto r = protocol::SrvCopychunkResponse::decode(reply.body.output)) out.body = *r;
    }
    return out;
}

// The address of a Share Redirect context's MOVE_DST_IPADDR (MS-SMB2 2.2.2.2.2.1) as text.
inline std::string redirect_ip_text(const protocol::MoveDstIpAddr& a) {
    char text[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(a.type == protocol::MoveDstIpAddr::kTypeV4 ? AF_INET : AF_INET6, a.address.data(),
                text, sizeof text);
    return text;
}

}  // namespace daxsmbd::client
