// badinput: sends malformed and out-of-protocol SMB2 input to a server, each case on a fresh
// connection, and checks that every one is answered the way MS-SMB2 asks (an error status, or a
// dropped connection), never with a hang; then checks that a normal session still works.
//
//   badinput HOST PORT USER PASSWORD SHARE
//   badinput --host HOST --port PORT --user USER --password PASSWORD --share SHARE
//            [--timeout-ms N] [--allow-wait-on-oversize]
//
// Prints one line per case, "PASS|FAIL case: what happened", and exits 0 iff every case passed
// (tests/interop/badinput_test.sh runs it while smbclient keeps a session busy).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "auth/crypto.h"
#include "tests/client/smb2_client.h"

using namespace daxsmbd;
using namespace daxsmbd::client;
using namespace daxsmbd::protocol;
using namespace std::chrono_literals;

namespace {

struct Target {
    std::string host;
    uint16_t port = 0;
    std::string user;
    std::string password;
    std::string share;
    std::chrono::milliseconds timeout{5000};
    // Samba waits for the bytes of an oversized frame instead of dropping the connection; with
    // this flag that is accepted as long as the server keeps serving new connections.
    bool allow_wait_on_oversize = false;
};

struct Outcome {
    bool pass = false;
    std::string what;
};

Outcome pass(std::string w) {
    return {true, std::move(w)};
}
Outcome fail(std::string w) {
    return {false, std::move(w)};
}

std::string name_of(NtStatus s) {
    return std::string(status_name(s));
}

std::string describe(const RawReply& r) {
    if (!r.from_server) return "local error " + name_of(r.status);
    return "status " + name_of(r.status);
}

ClientOptions client_options(const Target& t) {
    ClientOptions o;
    o.timeout = t.timeout;
    // Enough credits for an 8 MiB READ (129 credits) in the MaxReadSize case.
    o.credit_target = 512;
    return o;
}

// Connects; with `negotiate` also negotiates the default dialect list.
std::string open_connection(Smb2Client& c, const Target& t, bool negotiate) {
    if (auto st = c.connect(t.host, t.port); !st) return "connect failed: " + name_of(st.status());
    if (!negotiate) return {};
    auto n = c.negotiate();
    if (!n.ok()) return "negotiate failed: " + describe(n);
    return {};
}

std::string login(Smb2Client& c, const Target& t) {
    if (auto e = open_connection(c, t, true); !e.empty()) return e;
    auto s = c.session_setup(t.user, t.password);
    if (!s.ok()) return "session setup failed: " + describe(s);
    auto tc = c.tree_connect(t.share);
    if (!tc.ok()) return "tree connect failed: " + describe(tc);
    return {};
}

// The server must drop the connection (optionally: or answer with `alt`, an error status).
Outcome expect_closed(Smb2Client& c, const Target& t, std::optional<NtStatus> alt = {}) {
    switch (c.wait_closed(t.timeout)) {
        case Smb2Client::PeerState::Closed:
            return pass("connection closed by the server");
        case Smb2Client::PeerState::Timeout:
            return fail("no disconnect and no answer within " + std::to_string(t.timeout.count()) +
                        " ms");
        case Smb2Client::PeerState::Data:
            break;
    }
    auto frame = c.receive_raw(t.timeout);
    if (!frame) return fail("unreadable answer: " + name_of(frame.status()));
    auto h = Header::parse(*frame);
    if (!h) return fail("answer with a malformed SMB2 header");
    NtStatus s = NtStatus(h->status);
    if (alt && s == *alt) return pass("answered " + name_of(s));
    return fail("expected a disconnect, got " + name_of(s));
}

// The reply must carry `want`; the connection must stay usable (checked with ECHO).
Outcome expect_status(Smb2Client& c, const RawReply& r, NtStatus want, bool check_alive = true) {
    if (!r.from_server) return fail("expected " + name_of(want) + ", got " + describe(r));
    if (r.status != want) return fail("expected " + name_of(want) + ", got " + name_of(r.status));
    if (check_alive) {
        auto e = c.echo();
        if (!e.ok()) return fail("answered " + name_of(want) + " but then ECHO got " + describe(e));
        return pass("answered " + name_of(want) + ", connection still usable");
    }
    return pass("answered " + name_of(want));
}

// A fresh connection must still negotiate (the server survived what came before).
Outcome still_serving(const Target& t, const std::string& before) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty())
        return fail(before + "; afterwards a new connection failed: " + e);
    return pass(before + "; a new connection negotiates");
}

// ---- the cases ---------------------------------------------------------------------------------

Outcome truncated_frame_header(const Target& t) {
    {
        Smb2Client c(client_options(t));
        if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
        const uint8_t two[] = {0x00, 0x00};
        if (!c.send_raw(as_bytes(two, sizeof two))) return fail("send failed");
    }  // closed here, mid-header
    return still_serving(t, "sent 2 of 4 header bytes and closed");
}

Outcome truncated_frame_body(const Target& t) {
    {
        Smb2Client c(client_options(t));
        if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
        const uint8_t part[] = {0x00, 0x00, 0x01, 0x00, 0xFE, 'S', 'M', 'B', 64, 0};
        if (!c.send_raw(as_bytes(part, sizeof part))) return fail("send failed");
    }
    return still_serving(t, "announced 256 bytes, sent 6 and closed");
}

// An oversized announcement must be refused with a disconnect (daxsmbd's message size limit),
// not answered by buffering up to the announced length.
Outcome oversized_frame(const Target& t, const uint8_t (&hdr)[4], bool negotiate) {
    {
        Smb2Client c(client_options(t));
        if (auto e = open_connection(c, t, negotiate); !e.empty()) return fail(e);
        if (!c.send_raw(as_bytes(hdr, sizeof hdr))) return fail("send failed");
        if (!t.allow_wait_on_oversize) return expect_closed(c, t);
        auto st = c.wait_closed(t.timeout);
        if (st == Smb2Client::PeerState::Closed) return pass("connection closed by the server");
        if (st == Smb2Client::PeerState::Data) return expect_closed(c, t);
    }
    return still_serving(t, "the server waits for the announced bytes (--allow-wait-on-oversize)");
}

Outcome frame_above_16mib(const Target& t) {
    // Read as a 32-bit length this is 16 MiB + 1; Direct TCP (MS-SMB2 2.1) has only 24 length
    // bits and a zero first byte, so the frame is invalid either way.
    const uint8_t hdr[] = {0x01, 0x00, 0x00, 0x01};
    return oversized_frame(t, hdr, false);
}

Outcome frame_above_max_message(const Target& t) {
    // 16 MiB - 1, the largest 24-bit length: above MaxTransactSize/MaxRead/MaxWrite + headers.
    const uint8_t hdr[] = {0x00, 0xFF, 0xFF, 0xFF};
    return oversized_frame(t, hdr, true);
}

Outcome garbage_with_valid_length(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
    ByteVector junk(200);
    auth::random_bytes(junk);
    junk[0] = std::byte{0x42};  // not FE/FF/FD/FC 'SMB'
    if (!c.send_frame(junk)) return fail("send failed");
    return expect_closed(c, t);
}

Outcome bad_header_structure_size(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
    NegotiateRequest req;
    req.dialects = {dialect::k202, dialect::k210};
    auto msg = c.build(Command::Negotiate, req);
    store_le16(msg.data() + 4, 63);  // MS-SMB2 2.2.1: StructureSize MUST be 64
    if (!c.send_frame(msg)) return fail("send failed");
    return expect_closed(c, t, NtStatus::InvalidParameter);
}

Outcome negotiate_zero_dialects(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
    NegotiateRequest req;  // DialectCount 0 (MS-SMB2 3.3.5.3.1: STATUS_INVALID_PARAMETER)
    auto r = c.call(Command::Negotiate, req);
    return expect_status(c, r, NtStatus::InvalidParameter, false);
}

Outcome negotiate_context_offset_out_of_bounds(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, false); !e.empty()) return fail(e);
    NegotiateRequest req;
    req.dialects = {dialect::k300, dialect::k311};
    PreauthIntegrityCapabilities pre;
    pre.hash_algorithms = {hash_algorithm::kSha512};
    pre.salt.assign(32, std::byte{7});
    req.contexts.push_back(pre);
    uint64_t mid = 0;
    auto msg = c.build(Command::Negotiate, req, {}, &mid);
    store_le32(msg.data() + kHeaderSize + 28, 0x00FFFFF8);  // NegotiateContextOffset
    if (!c.send_frame(msg)) return fail("send failed");
    auto r = c.wait_reply(mid);
    if (!r.from_server && r.status == local_status::kDisconnected)
        return pass("connection closed by the server");
    return expect_status(c, r, NtStatus::InvalidParameter, false);
}

// Two ECHO requests in one frame with a broken NextCommand in the first.
Outcome bad_next_command(const Target& t, uint32_t next, const char* what) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty()) return fail(e);
    auto first = c.build(Command::Echo, EchoRequest{});
    auto second = c.build(Command::Echo, EchoRequest{});
    ByteVector frame = first;
    frame.resize(next < 72 ? next : 72, std::byte{0});  // pad (or not) up to the second header
    frame.insert(frame.end(), second.begin(), second.end());
    store_le32(frame.data() + kNextCommandOffset, next);
    if (!c.send_frame(frame)) return fail("send failed");
    auto o = expect_closed(c, t, NtStatus::InvalidParameter);
    o.what = std::string(what) + ": " + o.what;
    return o;
}

Outcome message_id_outside_window(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty()) return fail(e);
    CallOptions co;
    co.message_id = c.next_message_id() + c.credits() + 1000;
    auto msg = c.build(Command::Echo, EchoRequest{}, co);
    if (!c.send_frame(msg)) return fail("send failed");
    // MS-SMB2 3.3.5.2.3: a MessageId outside the window SHOULD drop the connection.
    return expect_closed(c, t);
}

Outcome session_setup_garbage_blob(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty()) return fail(e);
    ByteVector junk(64);
    auth::random_bytes(junk);
    junk[0] = std::byte{0x13};  // neither a GSS [APPLICATION 0] token nor NTLMSSP
    SessionSetupRequest req;
    req.security_mode = security_mode::kSigningEnabled;
    req.security_buffer = junk;
    CallOptions co;
    co.session_id = 0;
    auto r = c.call(Command::SessionSetup, req, co);
    if (!r.from_server) return fail("expected an error status, got " + describe(r));
    if (!is_error(r.status) || r.status == NtStatus::MoreProcessingRequired)
        return fail("garbage security blob accepted: " + name_of(r.status));
    c.set_session_id(0);
    auto s = c.session_setup(t.user, t.password);
    if (!s.ok())
        return fail("answered " + name_of(r.status) + ", then a real login failed: " + describe(s));
    return pass("answered " + name_of(r.status) + "; a real login on the same connection works");
}

// After login + tree connect + create: a WRITE whose data range lies outside the message.
Outcome write_outside_message(const Target& t, bool patch_offset) {
    Smb2Client c(client_options(t));
    if (auto e = login(c, t); !e.empty()) return fail(e);
    auto cr = c.open(
        "badinput-write.bin",
        access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete,
        create_disposition::kOverwriteIf, create_options::kDeleteOnClose);
    if (!cr.ok()) return fail("create failed: " + describe(cr));
    ByteVector data(100, std::byte{0x5A});
    WriteRequest w;
    w.file_id = cr.body.file_id;
    w.data = data;
    uint64_t mid = 0;
    CallOptions co;
    co.sign = false;  // signed below, after the patch
    auto msg = c.build(Command::Write, w, co, &mid);
    if (patch_offset)
        store_le16(msg.data() + kHeaderSize + 2, 0xFFF0);  // DataOffset past the end
    else
        store_le32(msg.data() + kHeaderSize + 4, 1000);  // Length past the end
    if (c.signing_required()) (void)c.sign_message(msg);
    if (!c.send_frame(msg)) return fail("send failed");
    auto r = c.wait_reply(mid);
    auto o = expect_status(c, r, NtStatus::InvalidParameter);
    (void)c.close(cr.body.file_id);
    return o;
}

Outcome read_above_max_read_size(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = login(c, t); !e.empty()) return fail(e);
    auto cr = c.open(
        "badinput-read.bin",
        access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete,
        create_disposition::kOverwriteIf, create_options::kDeleteOnClose);
    if (!cr.ok()) return fail("create failed: " + describe(cr));
    uint32_t len = c.max_read_size() + 1;
    if (c.multi_credit() && c.credits() < (len - 1) / 65536 + 1)
        return fail("server granted only " + std::to_string(c.credits()) + " credits");
    auto r = c.read(cr.body.file_id, 0, len);
    auto o = expect_status(c, r, NtStatus::InvalidParameter);
    (void)c.close(cr.body.file_id);
    return o;
}

Outcome wrong_password_then_right(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty()) return fail(e);
    auto bad = c.session_setup(t.user, t.password + "-wrong");
    if (!bad.from_server || bad.status != NtStatus::LogonFailure)
        return fail("wrong password: expected STATUS_LOGON_FAILURE, got " + describe(bad));
    auto good = c.session_setup(t.user, t.password);
    if (!good.ok()) return fail("LOGON_FAILURE, then the right password got " + describe(good));
    auto tc = c.tree_connect(t.share);
    if (!tc.ok()) return fail("login retried fine but tree connect got " + describe(tc));
    return pass("LOGON_FAILURE, then the right password logs in on the same connection");
}

Outcome second_negotiate(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = open_connection(c, t, true); !e.empty()) return fail(e);
    NegotiateRequest req;
    req.dialects = {dialect::k202, dialect::k210, dialect::k300};
    auto msg = c.build(Command::Negotiate, req);
    if (!c.send_frame(msg)) return fail("send failed");
    // MS-SMB2 3.3.5.3.1: a NEGOTIATE on a negotiated connection: disconnect, no reply.
    return expect_closed(c, t);
}

Outcome normal_session(const Target& t) {
    Smb2Client c(client_options(t));
    if (auto e = login(c, t); !e.empty()) return fail(e);
    auto cr = c.open(
        "badinput-final.bin",
        access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete,
        create_disposition::kOverwriteIf, create_options::kDeleteOnClose);
    if (!cr.ok()) return fail("create: " + describe(cr));
    ByteVector data(300000);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = std::byte(i * 7 + 3);
    uint32_t chunk = std::min<uint32_t>(65536, c.max_write_size());
    for (size_t off = 0; off < data.size(); off += chunk) {
        size_t n = std::min<size_t>(chunk, data.size() - off);
        auto w = c.write(cr.body.file_id, off, Bytes(data).subspan(off, n));
        if (!w.ok() || w.body.count != n)
            return fail("write at " + std::to_string(off) + ": " + describe(w));
    }
    ByteVector back;
    while (back.size() < data.size()) {
        auto r = c.read(cr.body.file_id, back.size(), chunk);
        if (!r.ok()) return fail("read at " + std::to_string(back.size()) + ": " + describe(r));
        if (r.body.data.empty()) break;
        back.insert(back.end(), r.body.data.begin(), r.body.data.end());
    }
    auto cl = c.close(cr.body.file_id);
    if (!cl.ok()) return fail("close: " + describe(cl));
    if (back != data)
        return fail("read back " + std::to_string(back.size()) + " bytes that differ");
    return pass("login, tree connect, create, write/read back 300000 bytes, close");
}

bool parse_args(int argc, char** argv, Target& t) {
    std::vector<std::string> pos;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string v;
        if (a == "--host") {
            if (!value(t.host)) return false;
        } else if (a == "--port") {
            if (!value(v)) return false;
            t.port = uint16_t(std::atoi(v.c_str()));
        } else if (a == "--user") {
            if (!value(t.user)) return false;
        } else if (a == "--password") {
            if (!value(t.password)) return false;
        } else if (a == "--share") {
            if (!value(t.share)) return false;
        } else if (a == "--allow-wait-on-oversize") {
            t.allow_wait_on_oversize = true;
        } else if (a == "--timeout-ms") {
            if (!value(v)) return false;
            t.timeout = std::chrono::milliseconds(std::atoi(v.c_str()));
        } else if (a.starts_with("--")) {
            return false;
        } else {
            pos.push_back(a);
        }
    }
    if (pos.size() == 5) {
        t.host = pos[0];
        t.port = uint16_t(std::atoi(pos[1].c_str()));
        t.user = pos[2];
        t.password = pos[3];
        t.share = pos[4];
    } else if (!pos.empty()) {
        return false;
    }
    return !t.host.empty() && t.port != 0 && !t.user.empty() && !t.share.empty() &&
           t.timeout.count() > 0;
}

}  // namespace

int main(int argc, char** argv) {
    Target t;
    if (!parse_args(argc, argv, t)) {
        std::fprintf(stderr,
                     "usage: %s HOST PORT USER PASSWORD SHARE\n"
                     "       %s --host HOST --port PORT --user USER --password PASSWORD "
                     "--share SHARE [--timeout-ms N] [--allow-wait-on-oversize]\n",
                     argv[0], argv[0]);
        return 2;
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const std::vector<std::pair<const char*, std::function<Outcome()>>> cases = {
        {"truncated frame header", [&] { return truncated_frame_header(t); }},
        {"truncated frame body", [&] { return truncated_frame_body(t); }},
        {"frame length above 16 MiB", [&] { return frame_above_16mib(t); }},
        {"frame length above the maximum message size", [&] { return frame_above_max_message(t); }},
        {"garbage with a valid length", [&] { return garbage_with_valid_length(t); }},
        {"header StructureSize 63", [&] { return bad_header_structure_size(t); }},
        {"NEGOTIATE with DialectCount 0", [&] { return negotiate_zero_dialects(t); }},
        {"NEGOTIATE context offset out of bounds",
         [&] { return negotiate_context_offset_out_of_bounds(t); }},
        {"compound NextCommand outside the frame",
         [&] { return bad_next_command(t, 0x10000, "NextCommand 0x10000"); }},
        {"compound NextCommand misaligned",
         [&] { return bad_next_command(t, 68, "NextCommand 68"); }},
        {"MessageId outside the credit window", [&] { return message_id_outside_window(t); }},
        {"SESSION_SETUP with a garbage security blob",
         [&] { return session_setup_garbage_blob(t); }},
        {"WRITE with Length past the message", [&] { return write_outside_message(t, false); }},
        {"WRITE with DataOffset past the message", [&] { return write_outside_message(t, true); }},
        {"READ above MaxReadSize", [&] { return read_above_max_read_size(t); }},
        {"wrong password, then the right one", [&] { return wrong_password_then_right(t); }},
        {"second NEGOTIATE", [&] { return second_negotiate(t); }},
        {"normal session afterwards", [&] { return normal_session(t); }},
    };
    int failed = 0;
    for (auto& [name, fn] : cases) {
        Outcome o = fn();
        if (!o.pass) ++failed;
        std::printf("%s %s: %s\n", o.pass ? "PASS" : "FAIL", name, o.what.c_str());
    }
    std::printf("%zu cases, %d failed\n", cases.size(), failed);
    return failed ? 1 : 0;
}
