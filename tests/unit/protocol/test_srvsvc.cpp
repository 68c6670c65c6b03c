// srvsvc (protocol/srvsvc.h): NDR stubs of NetrShareEnum / NetrShareGetInfo /
// NetrServerGetInfo against hand-built bytes (MS-SRVS 3.1.4.8, 3.1.4.10, 3.1.4.17 with the NDR
// rules of C706 14), the dispatcher's behaviour, and an interoperability run against an
// independent client: impacket's DCE/RPC + srvs implementation driving a PipeSession through a
// fake transport (skipped when /usr/bin/python3 cannot import impacket).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "protocol/srvsvc.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::protocol::rpc;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

std::string to_hex(Bytes b) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (auto x : b) {
        s.push_back(digits[uint8_t(x) >> 4]);
        s.push_back(digits[uint8_t(x) & 15]);
    }
    return s;
}

const ShareInfo kIpc{"IPC$", stype::kIpc | stype::kSpecial, "IPC Service", "", 0, kUnlimitedUses, 0,
                     0};
const ShareInfo kData{"data", stype::kDiskTree, "", "C:\\srv\\data", 0, 10, 2, 0x30};

StaticSrvsvcProvider two_shares() {
    ServerInfo server;
    server.name = "DAXSMBD";
    server.comment = "daxsmbd test";
    return StaticSrvsvcProvider({kIpc, kData}, server);
}

// NetrShareEnum level 1 request as Windows and impacket send it, ServerName "\\srv".
const ByteVector kShareEnumLevel1Request =
    hex("00000200"                    // ServerName: unique pointer
        "06000000 00000000 06000000"  // max_count 6, offset 0, actual_count 6
        "5c005c00 73007200 76000000"  // L"\\srv" + NUL
        "01000000"                    // InfoStruct.Level = 1
        "01000000"                    // SHARE_ENUM_UNION discriminant
        "04000200"                    // Level1: pointer to SHARE_INFO_1_CONTAINER
        "00000000 00000000"           // *Level1: EntriesRead 0, Buffer null (deferred)
        "ffffffff"                    // PreferedMaximumLength = MAX_PREFERRED_LENGTH
        "08000200 00000000");         // ResumeHandle: pointer to 0

// The response for {IPC$, data}: every embedded pointer's referent after the construct that
// holds it (container after InfoStruct, array after container, strings after the array).
const ByteVector kShareEnumLevel1Response =
    hex("01000000 01000000 00000200"  // Level, discriminant, container pointer
        "02000000 04000200"           // EntriesRead 2, Buffer pointer
        "02000000"                    // array max_count
        "08000200 03000080 0c000200"  // [0] netname*, STYPE_IPC|STYPE_SPECIAL, remark*
        "10000200 00000000 14000200"  // [1] netname*, STYPE_DISKTREE, remark*
        "05000000 00000000 05000000 49005000 43002400 0000 0000"  // "IPC$" + pad
        "0c000000 00000000 0c000000"                              // "IPC Service"
        "49005000 43002000 53006500 72007600 69006300 65000000"
        "05000000 00000000 05000000 64006100 74006100 0000 0000"  // "data" + pad
        "01000000 00000000 01000000 0000 0000"                    // "" + pad
        "02000000"                                                // TotalEntries
        "18000200 00000000"  // ResumeHandle -> 0 (enumeration complete)
        "00000000");         // NERR_Success

// Reads the u32 at `offset` of a stub.
uint32_t u32_at(const ByteVector& v, size_t offset) {
    return load_le32(v.data() + offset);
}

}  // namespace

TEST(Srvsvc, InterfaceIdentifier) {
    EXPECT_EQ(uuid_to_string(kSrvsvcSyntax.uuid), "4b324fc8-1670-01d3-1278-5a47bf6ee188");
    EXPECT_EQ(kSrvsvcSyntax.version_major, 3);
    EXPECT_EQ(kSrvsvcSyntax.version_minor, 0);
    EXPECT_EQ(sv_type::kDefault, 0x9003u);
}

TEST(Srvsvc, ShareEnumRequestGoldenBytes) {
    NetrShareEnumRequest q;
    q.server_name = "\\\\srv";
    q.level = 1;
    q.resume_handle = 0;
    EXPECT_EQ(q.serialize(), kShareEnumLevel1Request);
    auto back = NetrShareEnumRequest::parse(kShareEnumLevel1Request);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->server_name, "\\\\srv");
    EXPECT_EQ(back->level, 1u);
    EXPECT_EQ(back->prefered_maximum_length, kMaxPreferredLength);
    EXPECT_EQ(back->resume_handle, 0u);
}

TEST(Srvsvc, ShareEnumRequestReferentIdsAreOpaque) {
    // Another client numbers its pointers differently and omits ServerName and ResumeHandle.
    auto stub = hex("00000000 02000000 02000000 deadbeef 00000000 00000000 00100000 00000000");
    auto q = NetrShareEnumRequest::parse(stub);
    ASSERT_TRUE(q.ok());
    EXPECT_FALSE(q->server_name);
    EXPECT_EQ(q->level, 2u);
    EXPECT_EQ(q->prefered_maximum_length, 0x1000u);
    EXPECT_FALSE(q->resume_handle);
}

TEST(Srvsvc, ShareEnumLevel1ResponseGoldenBytes) {
    auto p = two_shares();
    auto resp = srvsvc_dispatch(srvsvc_opnum::kNetrShareEnum, kShareEnumLevel1Request, p);
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(to_hex(*resp), to_hex(kShareEnumLevel1Response));

    auto decoded = NetrShareEnumResponse::parse(*resp);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded->level, 1u);
    EXPECT_TRUE(decoded->container_present);
    ASSERT_EQ(decoded->entries.size(), 2u);
    EXPECT_EQ(decoded->entries[0].name, "IPC$");
    EXPECT_EQ(decoded->entries[0].type, 0x80000003u);
    EXPECT_EQ(decoded->entries[0].comment, "IPC Service");
    EXPECT_EQ(decoded->entries[1].name, "data");
    EXPECT_EQ(decoded->entries[1].type, 0u);
    EXPECT_EQ(decoded->entries[1].comment, "");
    EXPECT_EQ(decoded->total_entries, 2u);
    EXPECT_EQ(decoded->resume_handle, 0u);
    EXPECT_EQ(decoded->status, werror::kSuccess);
}

TEST(Srvsvc, ShareEnumLevels0And2) {
    auto p = two_shares();
    NetrShareEnumRequest q;
    q.level = 0;
    auto r0 = srvsvc_dispatch(15, q.serialize(), p);
    ASSERT_TRUE(r0.ok());
    auto d0 = NetrShareEnumResponse::parse(*r0);
    ASSERT_TRUE(d0.ok());
    ASSERT_EQ(d0->entries.size(), 2u);
    EXPECT_EQ(d0->entries[1].name, "data");
    EXPECT_EQ(d0->entries[1].comment, "");  // not part of SHARE_INFO_0
    EXPECT_FALSE(d0->resume_handle);        // the client passed none
    // SHARE_INFO_0 is the netname pointer alone: array of 2 x 4 bytes after max_count.
    EXPECT_EQ(u32_at(*r0, 20), 2u);

    q.level = 2;
    auto r2 = srvsvc_dispatch(15, q.serialize(), p);
    ASSERT_TRUE(r2.ok());
    auto d2 = NetrShareEnumResponse::parse(*r2);
    ASSERT_TRUE(d2.ok());
    ASSERT_EQ(d2->entries.size(), 2u);
    ShareInfo expected = kData;
    expected.flags = 0;  // not part of SHARE_INFO_2
    EXPECT_EQ(d2->entries[1], expected);
    // SHARE_INFO_2 is 8 u32; the 8th, shi2_passwd, is a null pointer for both entries.
    size_t array = 24;  // level, tag, container ptr, EntriesRead, Buffer ptr, max_count
    EXPECT_EQ(u32_at(*r2, array + 7 * 4), 0u);
    EXPECT_EQ(u32_at(*r2, array + 15 * 4), 0u);
    EXPECT_EQ(u32_at(*r2, array + 4 * 4), kUnlimitedUses);  // IPC$ max_uses
}

TEST(Srvsvc, ShareEnumUnsupportedLevels) {
    auto p = two_shares();
    for (uint32_t level : {501u, 502u, 503u}) {
        // A union arm: discriminant + null container pointer.
        NetrShareEnumRequest q;
        q.level = level;
        q.resume_handle = 0;
        auto r = srvsvc_dispatch(15, q.serialize(), p);
        ASSERT_TRUE(r.ok());
        auto expected = ByteVector(8);
        store_le32(expected.data(), level);
        store_le32(expected.data() + 4, level);
        auto tail = hex("00000000 00000000 00000200 00000000 7c000000");
        expected.insert(expected.end(), tail.begin(), tail.end());
        EXPECT_EQ(*r, expected) << level;
    }
    // Not an arm of SHARE_ENUM_UNION: the discriminant alone (the empty default arm).
    NetrShareEnumRequest q;
    q.level = 7;
    auto r = srvsvc_dispatch(15, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, hex("07000000 07000000 00000000 00000000 7c000000"));
    auto d = NetrShareEnumResponse::parse(*r);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->status, werror::kInvalidLevel);
    EXPECT_FALSE(d->container_present);
}

TEST(Srvsvc, ShareEnumHonoursPreferedMaximumLengthAndResumes) {
    std::vector<ShareInfo> shares;
    for (int i = 0; i < 10; ++i)
        shares.push_back({"share" + std::to_string(i), 0, "c", "", 0});
    StaticSrvsvcProvider p(shares, ServerInfo{});
    std::vector<std::string> seen;
    std::optional<uint32_t> resume = 0;
    int rounds = 0;
    while (true) {
        NetrShareEnumRequest q;
        q.level = 1;
        q.prefered_maximum_length = 100;  // ~2 entries of ~46 bytes
        q.resume_handle = resume;
        auto r = srvsvc_dispatch(15, q.serialize(), p);
        ASSERT_TRUE(r.ok());
        auto d = NetrShareEnumResponse::parse(*r);
        ASSERT_TRUE(d.ok());
        ASSERT_FALSE(d->entries.empty());
        EXPECT_EQ(d->total_entries, 10u);
        for (auto& e : d->entries)
            seen.push_back(e.name);
        ++rounds;
        ASSERT_LT(rounds, 20);
        if (d->status == werror::kSuccess) {
            EXPECT_EQ(d->resume_handle, 0u);
            break;
        }
        ASSERT_EQ(d->status, werror::kMoreData);
        ASSERT_TRUE(d->resume_handle);
        EXPECT_NE(*d->resume_handle, 0u);
        resume = d->resume_handle;
    }
    EXPECT_GT(rounds, 1);
    ASSERT_EQ(seen.size(), 10u);
    for (int i = 0; i < 10; ++i)
        EXPECT_EQ(seen[i], "share" + std::to_string(i));
}

TEST(Srvsvc, ShareEnumWithNoShares) {
    StaticSrvsvcProvider p({}, ServerInfo{});
    NetrShareEnumRequest q;
    auto r = srvsvc_dispatch(15, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    // Container present, EntriesRead 0, null Buffer.
    EXPECT_EQ(*r, hex("01000000 01000000 00000200 00000000 00000000 00000000 00000000 00000000"));
}

TEST(Srvsvc, ShareGetInfoLevels) {
    auto p = two_shares();
    for (uint32_t level : {0u, 1u, 2u, 501u, 502u, 1005u}) {
        NetrShareGetInfoRequest q;
        q.net_name = "DATA";  // share names are case-insensitive
        q.level = level;
        auto r = srvsvc_dispatch(srvsvc_opnum::kNetrShareGetInfo, q.serialize(), p);
        ASSERT_TRUE(r.ok()) << level;
        auto d = NetrShareGetInfoResponse::parse(*r);
        ASSERT_TRUE(d.ok()) << level;
        EXPECT_EQ(d->level, level);
        EXPECT_EQ(d->status, werror::kSuccess);
        ASSERT_TRUE(d->info) << level;
        if (level == 1005) {
            EXPECT_EQ(d->info->flags, 0x30u);
            EXPECT_EQ(*r, hex("ed030000 00000200 30000000 00000000"));
            continue;
        }
        EXPECT_EQ(d->info->name, "data");
        if (level >= 1) {
            EXPECT_EQ(d->info->type, stype::kDiskTree);
        }
        if (level == 501) {
            EXPECT_EQ(d->info->flags, 0x30u);
        }
        if (level == 2 || level == 502) {
            EXPECT_EQ(d->info->path, "C:\\srv\\data");
            EXPECT_EQ(d->info->max_uses, 10u);
            EXPECT_EQ(d->info->current_uses, 2u);
        }
        if (level == 502) {
            // discriminant, pointer, then SHARE_INFO_502: ... passwd (0), reserved (0), SD (0)
            EXPECT_EQ(u32_at(*r, 8 + 7 * 4), 0u);
            EXPECT_EQ(u32_at(*r, 8 + 8 * 4), 0u);
            EXPECT_EQ(u32_at(*r, 8 + 9 * 4), 0u);
        }
    }
}

TEST(Srvsvc, ShareGetInfoGoldenLevel1) {
    auto p = two_shares();
    NetrShareGetInfoRequest q;
    q.net_name = "IPC$";
    q.level = 1;
    // ServerName null, NetName [ref] string (no referent id), Level.
    EXPECT_EQ(q.serialize(),
              hex("00000000 05000000 00000000 05000000 49005000 43002400 0000 0000 01000000"));
    auto r = srvsvc_dispatch(16, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(to_hex(*r), to_hex(hex("01000000 00000200"           // tag, pointer
                                     "04000200 03000080 08000200"  // SHARE_INFO_1
                                     "05000000 00000000 05000000 49005000 43002400 0000 0000"
                                     "0c000000 00000000 0c000000"
                                     "49005000 43002000 53006500 72007600 69006300 65000000"
                                     "00000000")));  // NERR_Success
}

TEST(Srvsvc, ShareGetInfoErrors) {
    auto p = two_shares();
    NetrShareGetInfoRequest q;
    q.net_name = "nosuch";
    q.level = 1;
    auto r = srvsvc_dispatch(16, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, hex("01000000 00000000 06090000"));  // null info, NERR_NetNameNotFound

    q.net_name = "data";
    q.level = 503;  // an arm of SHARE_INFO we do not produce
    r = srvsvc_dispatch(16, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, hex("f7010000 00000000 7c000000"));
    q.level = 3;  // not an arm at all
    r = srvsvc_dispatch(16, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, hex("03000000 7c000000"));
}

TEST(Srvsvc, ServerGetInfo) {
    auto p = two_shares();
    NetrServerGetInfoRequest q;
    q.level = 101;
    auto r = srvsvc_dispatch(srvsvc_opnum::kNetrServerGetInfo, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(to_hex(*r),
              to_hex(hex("65000000 00000200"  // tag 101, pointer
                         "f4010000 04000200 0a000000 00000000 03900000 08000200"
                         "08000000 00000000 08000000"  // "DAXSMBD"
                         "44004100 58005300 4d004200 44000000"
                         "0d000000 00000000 0d000000"  // "daxsmbd test"
                         "64006100 78007300 6d006200 64002000 74006500 73007400 0000"
                         "0000 00000000")));
    auto d = NetrServerGetInfoResponse::parse(*r);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->info);
    EXPECT_EQ(d->info->platform_id, 500u);
    EXPECT_EQ(d->info->name, "DAXSMBD");
    EXPECT_EQ(d->info->version_major, 10u);
    EXPECT_EQ(d->info->type, 0x9003u);
    EXPECT_EQ(d->info->comment, "daxsmbd test");

    q.level = 100;
    auto d100 = NetrServerGetInfoResponse::parse(*srvsvc_dispatch(21, q.serialize(), p));
    ASSERT_TRUE(d100.ok());
    EXPECT_EQ(d100->info->name, "DAXSMBD");
    EXPECT_EQ(d100->info->comment, "");

    q.level = 102;
    r = srvsvc_dispatch(21, q.serialize(), p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, hex("66000000 00000000 7c000000"));
}

TEST(Srvsvc, UnknownOpnumAndBadStubs) {
    auto p = two_shares();
    EXPECT_EQ(srvsvc_dispatch(36, {}, p).status(), NtStatus::NotImplemented);
    EXPECT_EQ(srvsvc_dispatch(0, {}, p).status(), NtStatus::NotImplemented);
    // Every truncation of a valid request fails to unmarshal.
    for (size_t n = 0; n < kShareEnumLevel1Request.size(); ++n)
        EXPECT_EQ(srvsvc_dispatch(15, Bytes(kShareEnumLevel1Request).first(n), p).status(),
                  NtStatus::InvalidParameter)
            << n;
    NetrShareGetInfoRequest g;
    g.net_name = "data";
    auto gs = g.serialize();
    for (size_t n = 0; n < gs.size(); ++n)
        EXPECT_EQ(srvsvc_dispatch(16, Bytes(gs).first(n), p).status(), NtStatus::InvalidParameter);
    // Level and union discriminant disagree.
    auto bad = kShareEnumLevel1Request;
    bad[32] = std::byte{2};
    EXPECT_EQ(srvsvc_dispatch(15, bad, p).status(), NtStatus::InvalidParameter);
    // Input container claiming entries but no buffer.
    bad = kShareEnumLevel1Request;
    bad[40] = std::byte{1};
    EXPECT_EQ(srvsvc_dispatch(15, bad, p).status(), NtStatus::InvalidParameter);
}

TEST(Srvsvc, ThroughAPipeSession) {
    auto provider = std::make_shared<StaticSrvsvcProvider>(two_shares());
    auto pipe = make_srvsvc_pipe(provider);
    BindPdu b;
    b.header.ptype = PType::Bind;
    b.contexts.push_back({0, kSrvsvcSyntax, {kNdr20Syntax}});
    ASSERT_TRUE(pipe.write(b.serialize()).ok());
    auto ack = BindAckPdu::parse(pipe.read(pipe.pending_size()));
    ASSERT_TRUE(ack.ok());
    EXPECT_EQ(ack->secondary_address, "\\PIPE\\srvsvc");
    EXPECT_EQ(ack->results.at(0).result, result::kAcceptance);

    RequestPdu q;
    q.header.call_id = 2;
    q.opnum = 15;
    q.alloc_hint = uint32_t(kShareEnumLevel1Request.size());
    q.stub = kShareEnumLevel1Request;
    ASSERT_TRUE(pipe.write(q.serialize()).ok());
    const auto resp_bytes = pipe.read(pipe.pending_size());  // resp->stub views into it
    auto resp = ResponsePdu::parse(resp_bytes);
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(ByteVector(resp->stub.begin(), resp->stub.end()), kShareEnumLevel1Response);

    q.header.call_id = 3;
    q.opnum = 31;  // NetprPathCanonicalize: not served
    ASSERT_TRUE(pipe.write(q.serialize()).ok());
    auto f = FaultPdu::parse(pipe.read(pipe.pending_size()));
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->status, fault::kOpRngError);
}

// ---- interoperability with impacket ----

namespace {

const char* kImpacketClient = R"PY(
import sys, binascii
from impacket.dcerpc.v5 import transport, srvs
from impacket.dcerpc.v5.rpcrt import DCERPC_v5, DCERPCException

class PipeTransport(transport.DCERPCTransport):
    """Hands every PDU to the C++ side and gets back whatever the PipeSession queued."""
    def __init__(self):
        transport.DCERPCTransport.__init__(self, 'daxsmbd', 445)
        self.buf = b''
    def connect(self):
        return 1
    def disconnect(self):
        return 1
    def send(self, data, forceWriteAndx=0, forceRecv=0):
        sys.stdout.write('W ' + binascii.hexlify(data).decode() + '\n')
        sys.stdout.flush()
        line = sys.stdin.readline().strip()
        if line and line != '-':
            self.buf += binascii.unhexlify(line)
    def recv(self, forceRecv=0, count=0):
        if not self.buf:
            raise Exception('server sent nothing')
        if count == 0 or count > len(self.buf):
            count = len(self.buf)
        data, self.buf = self.buf[:count], self.buf[count:]
        return data

def out(*a):
    sys.stdout.write(' '.join(str(x) for x in a) + '\n')

def s(v):
    if v is None or isinstance(v, bytes) or v == '':  # impacket gives b'' for a null pointer
        return '<null>'
    return v[:-1] if v.endswith('\x00') else v

def code(f):
    try:
        f()
        return 'ok'
    except DCERPCException as e:
        return '%d %s' % (e.get_error_code(), 'parsed' if e.get_packet() is not None else 'unparsed')

dce = DCERPC_v5(PipeTransport())
dce.connect()
dce.bind(srvs.MSRPC_UUID_SRVS)
out('BOUND')

r = srvs.hNetrShareEnum(dce, 1)
c = r['InfoStruct']['ShareInfo']['Level1']
out('ENUM1', r['TotalEntries'], c['EntriesRead'], r['ResumeHandle'], r['ErrorCode'])
for e in c['Buffer']:
    out('E1 %s|%d|%s' % (s(e['shi1_netname']), e['shi1_type'], s(e['shi1_remark'])))

r = srvs.hNetrShareEnum(dce, 0)
names = [s(e['shi0_netname']) for e in r['InfoStruct']['ShareInfo']['Level0']['Buffer']]
out('ENUM0', len(names), names[0], names[-1])

r = srvs.hNetrShareEnum(dce, 2)
e = r['InfoStruct']['ShareInfo']['Level2']['Buffer'][1]
out('ENUM2 %s|%d|%s|%d|%d|%d|%s|%s' % (s(e['shi2_netname']), e['shi2_type'], s(e['shi2_remark']),
    e['shi2_permissions'], e['shi2_max_uses'], e['shi2_current_uses'], s(e['shi2_path']),
    s(e['shi2_passwd'])))

out('ENUM502', code(lambda: srvs.hNetrShareEnum(dce, 502)))

names, resume, rounds = [], 0, 0
while True:
    try:
        r = srvs.hNetrShareEnum(dce, 1, resume, 2000)
        status = 0
    except DCERPCException as e:
        if e.get_error_code() != 234:
            raise
        r, status = e.get_packet(), 234
    names += [s(x['shi1_netname']) for x in r['InfoStruct']['ShareInfo']['Level1']['Buffer']]
    rounds += 1
    resume = r['ResumeHandle']
    if status == 0:
        break
out('MOREDATA', 'multi' if rounds > 1 else 'single', len(names), len(set(names)), names[-1])

r = srvs.hNetrShareGetInfo(dce, 'SHARE007\x00', 2)
i = r['InfoStruct']['ShareInfo2']
out('GET2 %s|%s|%s' % (s(i['shi2_netname']), s(i['shi2_remark']), s(i['shi2_path'])))
r = srvs.hNetrShareGetInfo(dce, 'donn\u00e9es\x00', 502)
i = r['InfoStruct']['ShareInfo502']
out('GET502 %s|%d|%s' % (s(i['shi502_netname']), i['shi502_reserved'],
    'nullsd' if i['shi502_security_descriptor'] in (None, b'', []) else 'sd'))
r = srvs.hNetrShareGetInfo(dce, 'share001\x00', 1005)
out('GET1005', r['InfoStruct']['ShareInfo1005']['shi1005_flags'])
out('GETMISSING', code(lambda: srvs.hNetrShareGetInfo(dce, 'nosuch\x00', 1)))

r = srvs.hNetrServerGetInfo(dce, 101)
i = r['InfoStruct']['ServerInfo101']
out('SRV101 %d|%s|%d.%d|0x%x|%s' % (i['sv101_platform_id'], s(i['sv101_name']),
    i['sv101_version_major'], i['sv101_version_minor'], i['sv101_type'], s(i['sv101_comment'])))
r = srvs.hNetrServerGetInfo(dce, 100)
out('SRV100 %d|%s' % (r['InfoStruct']['ServerInfo100']['sv100_platform_id'],
    s(r['InfoStruct']['ServerInfo100']['sv100_name'])))

try:
    dce.call(99, b'')
    dce.recv()
    out('OPNUM99 no fault')
except DCERPCException as e:
    out('OPNUM99', str(e))

# Requests cut into 16-byte fragments by the client: the server reassembles them.
dce.set_max_fragment_size(16)
r = srvs.hNetrShareGetInfo(dce, 'share123\x00', 1)
out('FRAGGET', s(r['InfoStruct']['ShareInfo1']['shi1_remark']))
out('DONE')
)PY";

bool impacket_available() {
    return std::system("/usr/bin/python3 -c 'import impacket.dcerpc.v5.srvs' >/dev/null 2>&1") == 0;
}

// Runs the script with its stdin/stdout connected to `pipe`: every "W <hex>" line is written to
// the session and answered with everything the session queued. Other lines are collected.
bool run_client(const std::string& script, PipeSession& pipe, std::vector<std::string>& lines) {
    char path[] = "/tmp/daxsmbd_srvsvc_XXXXXX.py";
    int fd = mkstemps(path, 3);
    if (fd < 0) return false;
    if (write(fd, script.data(), script.size()) != ssize_t(script.size())) return false;
    close(fd);
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) return false;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        execl("/usr/bin/python3", "python3", "-X", "utf8", path, static_cast<char*>(nullptr));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    // A client that dies early must fail the test, not kill it with SIGPIPE.
    auto previous = signal(SIGPIPE, SIG_IGN);
    FILE* in = fdopen(from_child[0], "r");
    FILE* out = fdopen(to_child[1], "w");
    char* line = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        std::string l(line, size_t(n));
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r'))
            l.pop_back();
        if (l.rfind("W ", 0) != 0) {
            lines.push_back(l);
            continue;
        }
        auto st = pipe.write(hex(l.substr(2)));
        std::string reply;
        while (st.ok() && pipe.pending_size() > 0)
            reply += to_hex(pipe.read(pipe.pending_size()));
        std::fprintf(out, "%s\n", reply.empty() ? "-" : reply.c_str());
        std::fflush(out);
    }
    free(line);
    fclose(in);
    fclose(out);
    int status = 0;
    waitpid(pid, &status, 0);
    signal(SIGPIPE, previous);
    unlink(path);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST(Srvsvc, InteroperatesWithImpacket) {
    if (!impacket_available()) GTEST_SKIP() << "/usr/bin/python3 has no impacket";
    std::vector<ShareInfo> shares{kIpc};
    // Enough shares that the level-1 answer spans several 4280-byte fragments.
    for (int i = 0; i < 300; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "share%03d", i);
        shares.push_back({name, stype::kDiskTree, "Share number " + std::to_string(i),
                          std::string("C:\\srv\\") + name, 0, kUnlimitedUses, 0,
                          uint32_t(i == 1 ? 0x0800 : 0)});
    }
    shares.push_back(
        {"donn\xC3\xA9"
         "es",
         stype::kDiskTree, "", "C:\\d", 0, 5, 1, 0});
    ServerInfo server;
    server.name = "DAXSMBD";
    server.comment = "daxsmbd file server";
    auto pipe = make_srvsvc_pipe(std::make_shared<StaticSrvsvcProvider>(shares, server));

    std::vector<std::string> lines;
    ASSERT_TRUE(run_client(kImpacketClient, pipe, lines)) << "client failed; output:\n"
                                                          << [&] {
                                                                 std::string all;
                                                                 for (auto& l : lines)
                                                                     all += l + "\n";
                                                                 return all;
                                                             }();
    auto has = [&](const std::string& l) {
        return std::find(lines.begin(), lines.end(), l) != lines.end();
    };
    EXPECT_TRUE(has("BOUND"));
    EXPECT_TRUE(has("ENUM1 302 302 0 0"));
    EXPECT_TRUE(has("E1 IPC$|2147483651|IPC Service"));
    EXPECT_TRUE(has("E1 share000|0|Share number 0"));
    EXPECT_TRUE(has("E1 share299|0|Share number 299"));
    EXPECT_TRUE(
        has("E1 donn\xC3\xA9"
            "es|0|"));
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.rfind("E1 ", 0) == 0; }),
              302);
    EXPECT_TRUE(
        has("ENUM0 302 IPC$ donn\xC3\xA9"
            "es"));
    EXPECT_TRUE(has("ENUM2 share000|0|Share number 0|0|4294967295|0|C:\\srv\\share000|<null>"));
    EXPECT_TRUE(has("ENUM502 124 parsed"));
    EXPECT_TRUE(
        has("MOREDATA multi 302 302 donn\xC3\xA9"
            "es"));
    EXPECT_TRUE(has("GET2 share007|Share number 7|C:\\srv\\share007"));
    EXPECT_TRUE(
        has("GET502 donn\xC3\xA9"
            "es|0|nullsd"));
    EXPECT_TRUE(has("GET1005 2048"));
    EXPECT_TRUE(has("GETMISSING 2310 parsed"));
    EXPECT_TRUE(has("SRV101 500|DAXSMBD|10.0|0x9003|daxsmbd file server"));
    EXPECT_TRUE(has("SRV100 500|DAXSMBD"));
    EXPECT_TRUE(has("OPNUM99 nca_s_op_rng_error"));
    EXPECT_TRUE(has("FRAGGET Share number 123"));
    EXPECT_TRUE(has("DONE"));
    EXPECT_FALSE(pipe.broken());
}
