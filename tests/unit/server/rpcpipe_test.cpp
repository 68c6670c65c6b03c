// The named-pipe endpoint on IPC$ (server/rpcpipe): pipe names, DCE/RPC in message mode as
// READ/WRITE/FSCTL_PIPE_TRANSCEIVE/FSCTL_PIPE_PEEK see it, and the srvsvc view of the shares.
#include "server/rpcpipe/pipe_endpoint.h"

#include <gtest/gtest.h>

#include "protocol/dcerpc.h"
#include "protocol/srvsvc.h"
#include "server/rpcpipe/srvsvc_provider.h"
#include "server/server.h"

namespace daxsmbd::server::rpcpipe {
namespace {

using namespace protocol;
using namespace protocol::rpc;

ByteVector srvsvc_bind(uint32_t call_id = 1) {
    BindPdu b;
    b.header.ptype = PType::Bind;
    b.header.call_id = call_id;
    b.contexts.push_back({0, kSrvsvcSyntax, {kNdr20Syntax}});
    return b.serialize();
}

ByteVector call(uint32_t call_id, uint16_t opnum, const ByteVector& stub) {
    RequestPdu q;
    q.header.call_id = call_id;
    q.alloc_hint = uint32_t(stub.size());
    q.opnum = opnum;
    q.stub = Bytes(stub);
    return q.serialize();
}

Config config_named(std::string name) {
    Config c;
    c.global.netbios_name = std::move(name);
    c.global.server_string = "test server";
    return c;
}

TEST(PipeNames, OnlySrvsvcInAnySpelling) {
    EXPECT_TRUE(pipe_exists("srvsvc"));
    EXPECT_TRUE(pipe_exists("SRVSVC"));
    EXPECT_TRUE(pipe_exists("\\srvsvc"));
    EXPECT_TRUE(pipe_exists("\\PIPE\\srvsvc"));
    EXPECT_TRUE(pipe_exists("pipe\\SrvSvc"));
    EXPECT_FALSE(pipe_exists("lsarpc"));
    EXPECT_FALSE(pipe_exists("srvsvc2"));
    EXPECT_FALSE(pipe_exists(""));
    EXPECT_FALSE(pipe_exists("\\PIPE\\"));
    Server server(config_named("BOX"));
    EXPECT_EQ(make_pipe_endpoint(server, "winreg"), nullptr);
    auto ep = make_pipe_endpoint(server, "\\srvsvc");
    ASSERT_NE(ep, nullptr);
    EXPECT_EQ(ep->name(), "srvsvc");
}

TEST(PipeEndpoint, BindThenServerGetInfoByWriteAndRead) {
    Server server(config_named("FILESRV"));
    auto ep = make_pipe_endpoint(server, "srvsvc");
    ASSERT_NE(ep, nullptr);
    EXPECT_EQ(ep->pending(), 0u);
    ASSERT_TRUE(ep->write(srvsvc_bind()));
    const size_t ack_size = ep->pending();
    ASSERT_GT(ack_size, 0u);
    // Message mode: a short READ gets the first part, the message continues (BUFFER_OVERFLOW
    // for the READ handler), the next READ the rest.
    auto part1 = ep->read(10);
    EXPECT_EQ(part1.size(), 10u);
    EXPECT_TRUE(ep->message_continues());
    EXPECT_EQ(ep->pending(), ack_size - 10);
    auto part2 = ep->read(4096);
    EXPECT_FALSE(ep->message_continues());
    EXPECT_EQ(ep->pending(), 0u);
    part1.insert(part1.end(), part2.begin(), part2.end());
    auto ack = BindAckPdu::parse(part1);
    ASSERT_TRUE(ack.ok());
    ASSERT_EQ(ack->results.size(), 1u);
    EXPECT_EQ(ack->results[0].result, result::kAcceptance);
    EXPECT_EQ(ack->secondary_address, "\\PIPE\\srvsvc");

    NetrServerGetInfoRequest q;
    q.server_name = "\\\\FILESRV";
    q.level = 101;
    auto reply = ep->transceive(call(2, srvsvc_opnum::kNetrServerGetInfo, q.serialize()), 4280);
    ASSERT_TRUE(reply.ok());
    EXPECT_FALSE(ep->message_continues());
    auto rsp = ResponsePdu::parse(*reply);
    ASSERT_TRUE(rsp.ok());
    EXPECT_EQ(rsp->header.call_id, 2u);
    auto info = NetrServerGetInfoResponse::parse(rsp->stub);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->status, werror::kSuccess);
    ASSERT_TRUE(info->info);
    EXPECT_EQ(info->info->name, "FILESRV");
    EXPECT_EQ(info->info->comment, "test server");
    EXPECT_EQ(info->info->platform_id, kPlatformIdNt);
}

TEST(PipeEndpoint, TransceiveSmallerThanReplyAndPeek) {
    Server server(config_named("FILESRV"));
    auto ep = make_pipe_endpoint(server, "srvsvc");
    ASSERT_NE(ep, nullptr);
    ASSERT_TRUE(ep->write(srvsvc_bind()));
    auto ack = ep->peek(8);
    EXPECT_EQ(ack.messages, 1u);
    EXPECT_EQ(ack.bytes_available, ep->pending());
    EXPECT_EQ(ack.message_remaining, ep->pending());
    ASSERT_EQ(ack.data.size(), 8u);
    // Peeking consumes nothing; the first bytes are the bind_ack's common header.
    EXPECT_EQ(ack.data[2], std::byte(PType::BindAck));
    EXPECT_EQ(ep->peek(8).data, ack.data);
    (void)ep->read(ep->pending());

    NetrShareEnumRequest q;
    q.level = 1;
    auto first = ep->transceive(call(3, srvsvc_opnum::kNetrShareEnum, q.serialize()), 16);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->size(), 16u);
    // The rest of the reply is still the front message: IOCTL answers BUFFER_OVERFLOW.
    EXPECT_TRUE(ep->message_continues());
    auto rest = ep->read(65536);
    first->insert(first->end(), rest.begin(), rest.end());
    auto rsp = ResponsePdu::parse(*first);
    ASSERT_TRUE(rsp.ok());
    auto shares = NetrShareEnumResponse::parse(rsp->stub);
    ASSERT_TRUE(shares.ok());
    EXPECT_EQ(shares->status, werror::kSuccess);
    // This server was never started: no share is open yet, not even IPC$.
    EXPECT_EQ(shares->total_entries, 0u);
}

TEST(PipeEndpoint, GarbageBreaksThePipeButQueuedFaultIsReadable) {
    Server server(config_named("FILESRV"));
    auto ep = make_pipe_endpoint(server, "srvsvc");
    ASSERT_NE(ep, nullptr);
    // A request before any bind is a protocol error: a fault is queued and the pipe breaks.
    NetrShareEnumRequest q;
    auto st = ep->write(call(1, srvsvc_opnum::kNetrShareEnum, q.serialize()));
    ASSERT_GT(ep->pending(), 0u);
    auto fault = FaultPdu::parse(ep->read(ep->pending()));
    ASSERT_TRUE(fault.ok());
    EXPECT_EQ(fault->status, fault::kProtoError);
    (void)st;
    EXPECT_EQ(ep->write(srvsvc_bind()).status(), NtStatus::PipeBroken);
    EXPECT_EQ(ep->transceive(srvsvc_bind(), 100).status(), NtStatus::PipeBroken);
}

TEST(SrvsvcProvider, ShareTypesPathsAndBrowseable) {
    auto ipc = std::make_shared<Share>();
    ipc->config.name = "IPC$";
    ipc->config.comment = "IPC Service (x)";
    ipc->config.browseable = false;
    ipc->is_ipc = true;
    auto data = std::make_shared<Share>();
    data->config.name = "data";
    data->config.comment = "Data share";
    data->config.path = "/srv/data";
    auto hidden = std::make_shared<Share>();
    hidden->config.name = "secret";
    hidden->config.path = "/srv/secret";
    hidden->config.browseable = false;
    auto root = std::make_shared<Share>();
    root->config.name = "root";
    root->config.path = "/";

    auto list = enumerable_shares({data, hidden, ipc, root});
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0].name, "IPC$");
    EXPECT_EQ(list[0].type, 0x80000003u);  // STYPE_IPC | STYPE_SPECIAL (MS-SRVS 2.2.2.4)
    EXPECT_EQ(list[0].comment, "IPC Service (x)");
    EXPECT_EQ(list[0].path, "");
    EXPECT_EQ(list[1].name, "data");
    EXPECT_EQ(list[1].type, 0u);  // STYPE_DISKTREE
    EXPECT_EQ(list[1].comment, "Data share");
    EXPECT_EQ(list[1].path, "C:\\srv\\data");
    EXPECT_EQ(list[1].max_uses, kUnlimitedUses);
    EXPECT_EQ(list[2].name, "root");
    EXPECT_EQ(list[2].path, "C:\\");
}

}  // namespace
}  // namespace daxsmbd::server::rpcpipe
