// End-to-end persistent handles (MS-SMB2 3.3.5.9.10, 3.3.5.9.12) on a continuously available
// share through daxsmbd's own client: the share and the server say so, a DH2Q asking for
// persistence gets it without any oplock, and the handle survives a restart of the server: a
// new server on the same share brings it back from the journal, disconnected, keeps its share
// access against other clients, and gives it to the reconnect of its owner with the data
// intact. Shares without the property never grant persistence.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/create_contexts.h"
#include "protocol/negotiate.h"
#include "protocol/tree_connect.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
using namespace std::chrono_literals;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite;

Guid guid(uint8_t b) {
    Guid g{};
    g.fill(std::byte{b});
    return g;
}

// A share directory that outlives the servers of one test.
struct ShareDir {
    std::string path;
    ShareDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "ca-share.XXXXXX").string();
        EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
        path = tmpl;
        ::chmod(path.c_str(), 0777);
    }
    ~ShareDir() { std::filesystem::remove_all(path); }
};

std::unique_ptr<TestServer> ca_server(const std::string& path, bool ca = true) {
    TestServer::Options o;
    o.configure = [path, ca](server::Config& c) {
        server::ShareConfig s = c.shares.at(0);
        s.name = "ca";
        s.path = path;
        s.continuous_availability = ca;
        c.shares.push_back(s);
    };
    return std::make_unique<TestServer>(o);
}

struct Login {
    std::unique_ptr<Smb2Client> client;
    uint32_t global_caps = 0;
    uint32_t share_caps = 0;
    Guid server_guid{};
};

Login login(TestServer& server, uint8_t client_guid, const char* share = "ca") {
    ClientOptions o;
    o.client_guid = guid(client_guid);
    Login l;
    l.client = std::make_unique<Smb2Client>(o);
    EXPECT_TRUE(l.client->connect("127.0.0.1", server.port()));
    auto n = l.client->negotiate();
    EXPECT_TRUE(n.ok());
    l.global_caps = n.body.capabilities;
    l.server_guid = n.body.server_guid;
    EXPECT_TRUE(l.client->session_setup("alice", "pw").ok());
    auto t = l.client->tree_connect(share);
    EXPECT_TRUE(t.ok()) << status_name(t.status);
    l.share_caps = t.body.capabilities;
    return l;
}

CreateRequest persistent_create(const std::string& name, uint8_t create_guid,
                                uint32_t timeout_ms = 0) {
    CreateRequest r;
    r.name = name;
    r.requested_oplock_level = oplock_level::kNone;  // persistence needs no oplock
    r.desired_access = kRw;
    r.share_access = share_access::kRead;
    r.create_disposition = create_disposition::kOpenIf;
    DurableHandleRequestV2 d;
    d.create_guid = guid(create_guid);
    d.flags = durable_flags::kPersistent;
    d.timeout = timeout_ms;
    r.contexts.add(d);
    return r;
}

CreateRequest reconnect(const std::string& name, FileId fid, uint8_t create_guid) {
    CreateRequest r;
    r.name = name;
    r.desired_access = kRw;
    r.share_access = share_access::kRead;
    DurableHandleReconnectV2 d;
    d.file_id = fid;
    d.create_guid = guid(create_guid);
    d.flags = durable_flags::kPersistent;
    r.contexts.add(d);
    return r;
}

std::optional<DurableHandleResponseV2> durable_of(const CreateResponse& r) {
    const CreateContext* c = r.contexts.find(Bytes(create_context_name::kDurableHandleRequestV2));
    if (!c) return std::nullopt;
    auto d = DurableHandleResponseV2::decode(c->data);
    return d ? std::optional(*d) : std::nullopt;
}

TEST(E2ePersistent, HandleSurvivesAServerRestartAndIsReconnected) {
    ShareDir dir;
    FileId fid;
    Guid server_guid{};
    const std::string text = "written before the restart";
    {
        auto srv = ca_server(dir.path);
        ASSERT_TRUE(srv->ok()) << srv->error();
        auto a = login(*srv, 7);
        EXPECT_TRUE(a.global_caps & global_caps::kPersistentHandles);
        EXPECT_TRUE(a.share_caps & share_caps::kContinuousAvailability);
        server_guid = a.server_guid;
        auto c = a.client->create(persistent_create("keep.dat", 0x51));
        ASSERT_TRUE(c.ok()) << status_name(c.status);
        auto d = durable_of(c.body);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->flags, durable_flags::kPersistent);
        fid = c.body.file_id;
        ASSERT_TRUE(a.client->write(fid, 0, as_bytes(text)).ok());
        ASSERT_TRUE(a.client->flush(fid).ok());
        // The journal is no file a client can see or open.
        auto j = a.client->open(".daxsmbd", am::kFileReadAttributes, create_disposition::kOpen);
        EXPECT_EQ(j.status, NtStatus::AccessDenied);
        // The server stops with the handle open (its teardown must not forget it).
    }
    auto srv = ca_server(dir.path);
    ASSERT_TRUE(srv->ok()) << srv->error();
    EXPECT_EQ(srv->server().opens.disconnected_count(), 1u);

    // Meanwhile the restored handle keeps its share access: writers are refused.
    auto b = login(*srv, 8);
    auto w = b.client->open("keep.dat", kRw, create_disposition::kOpen);
    EXPECT_EQ(w.status, NtStatus::SharingViolation);
    // Another client cannot take the handle (ClientGuid and CreateGuid are checked).
    auto stolen = b.client->create(reconnect("keep.dat", fid, 0x52));
    EXPECT_EQ(stolen.status, NtStatus::ObjectNameNotFound);

    auto a = login(*srv, 7);
    // The same server to the client: its GUID survived the restart.
    EXPECT_EQ(a.server_guid, server_guid);
    auto re = a.client->create(reconnect("keep.dat", fid, 0x51));
    ASSERT_TRUE(re.ok()) << status_name(re.status);
    EXPECT_EQ(re.body.file_id.persistent, fid.persistent);
    EXPECT_EQ(srv->server().opens.disconnected_count(), 0u);
    auto r = a.client->read(re.body.file_id, 0, 64);
    ASSERT_TRUE(r.ok()) << status_name(r.status);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.body.data.data()), r.body.data.size()),
              text);
    ASSERT_TRUE(a.client->close(re.body.file_id).ok());

    // Closed: a third server finds nothing to restore, and the file opens for writing again.
    srv.reset();
    auto srv3 = ca_server(dir.path);
    ASSERT_TRUE(srv3->ok()) << srv3->error();
    EXPECT_EQ(srv3->server().opens.disconnected_count(), 0u);
    auto c = login(*srv3, 9);
    EXPECT_TRUE(c.client->open("keep.dat", kRw, create_disposition::kOpen).ok());
}

LockRequest lock_request(FileId fid, uint64_t offset, uint64_t length, uint32_t flags) {
    LockRequest r;
    r.file_id = fid;
    r.locks = {LockElement{offset, length, flags}};
    return r;
}

// The byte-range locks of a persistent handle are journaled with it: after a restart they
// still exclude others, belong to the reconnected handle, and an unlock is journaled too.
TEST(E2ePersistent, ByteRangeLocksSurviveARestartWithTheirHandle) {
    ShareDir dir;
    FileId fid;
    const std::string text = "0123456789abcdef";
    const uint32_t exclusive = lock_flags::kExclusiveLock | lock_flags::kFailImmediately;
    {
        auto srv = ca_server(dir.path);
        ASSERT_TRUE(srv->ok()) << srv->error();
        auto a = login(*srv, 7);
        auto c = a.client->create(persistent_create("locked.dat", 0x61));
        ASSERT_TRUE(c.ok()) << status_name(c.status);
        fid = c.body.file_id;
        ASSERT_TRUE(a.client->write(fid, 0, as_bytes(text)).ok());
        ASSERT_TRUE(a.client->lock(lock_request(fid, 0, 8, exclusive)).ok());
    }
    {
        auto srv = ca_server(dir.path);
        ASSERT_TRUE(srv->ok()) << srv->error();
        auto b = login(*srv, 8);
        auto r = b.client->open("locked.dat", am::kFileReadData, create_disposition::kOpen);
        ASSERT_TRUE(r.ok()) << status_name(r.status);
        EXPECT_EQ(b.client->read(r.body.file_id, 0, 4).status, NtStatus::FileLockConflict);
        EXPECT_TRUE(b.client->read(r.body.file_id, 8, 4).ok());

        auto a = login(*srv, 7);
        auto re = a.client->create(reconnect("locked.dat", fid, 0x61));
        ASSERT_TRUE(re.ok()) << status_name(re.status);
        fid = re.body.file_id;
        // The lock is the reconnected handle's own: it reads through it and can release it.
        EXPECT_TRUE(a.client->read(fid, 0, 4).ok());
        EXPECT_EQ(b.client->read(r.body.file_id, 0, 4).status, NtStatus::FileLockConflict);
        ASSERT_TRUE(a.client->lock(lock_request(fid, 0, 8, lock_flags::kUnlock)).ok());
        EXPECT_TRUE(b.client->read(r.body.file_id, 0, 4).ok());
        ASSERT_TRUE(a.client->lock(lock_request(fid, 8, 8, exclusive)).ok());
    }
    // The unlock and the new lock were journaled: after another restart only [8, 16) is held.
    auto srv = ca_server(dir.path);
    ASSERT_TRUE(srv->ok()) << srv->error();
    auto b = login(*srv, 8);
    auto r = b.client->open("locked.dat", am::kFileReadData, create_disposition::kOpen);
    ASSERT_TRUE(r.ok()) << status_name(r.status);
    EXPECT_TRUE(b.client->read(r.body.file_id, 0, 4).ok());
    EXPECT_EQ(b.client->read(r.body.file_id, 8, 4).status, NtStatus::FileLockConflict);
}

TEST(E2ePersistent, RestoredHandleExpiresAfterItsTimeout) {
    ShareDir dir;
    {
        auto srv = ca_server(dir.path);
        ASSERT_TRUE(srv->ok()) << srv->error();
        auto a = login(*srv, 7);
        ASSERT_TRUE(a.client->create(persistent_create("expire.dat", 0x61, 300)).ok());
    }
    auto srv = ca_server(dir.path);
    ASSERT_TRUE(srv->ok()) << srv->error();
    EXPECT_EQ(srv->server().opens.disconnected_count(), 1u);
    for (int i = 0; i < 200 && srv->server().opens.size() > 0; ++i)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(srv->server().opens.size(), 0u);
    EXPECT_EQ(srv->server().files.file_count(), 0u);
}

TEST(E2ePersistent, ShareWithoutContinuousAvailabilityNeverGrantsPersistence) {
    ShareDir dir;
    auto srv = ca_server(dir.path, false);
    ASSERT_TRUE(srv->ok()) << srv->error();
    auto a = login(*srv, 7);
    EXPECT_FALSE(a.global_caps & global_caps::kPersistentHandles);
    EXPECT_FALSE(a.share_caps & share_caps::kContinuousAvailability);
    auto c = a.client->create(persistent_create("plain.dat", 0x71));
    ASSERT_TRUE(c.ok());
    // No batch oplock or lease either: not even durable.
    EXPECT_FALSE(durable_of(c.body));
}

// A durable (not persistent) request on the plain share "data": a RWH lease makes it durable.
CreateRequest durable_create(const std::string& name, uint8_t key, uint32_t timeout_ms) {
    CreateRequest r;
    r.name = name;
    r.requested_oplock_level = oplock_level::kLease;
    r.desired_access = kRw;
    r.share_access = share_access::kAll;
    r.create_disposition = create_disposition::kOpenIf;
    LeaseContext l;
    l.version = 2;
    l.lease_key = guid(key);
    l.lease_state =
        lease_state::kReadCaching | lease_state::kWriteCaching | lease_state::kHandleCaching;
    r.contexts.add(l);
    DurableHandleRequestV2 d;
    d.create_guid = guid(uint8_t(key + 1));
    d.timeout = timeout_ms;
    r.contexts.add(d);
    return r;
}

TEST(E2eDurableLimits, DurableHandlesPerClientAreBoundedAndAFloodExpiresOnTime) {
    TestServer::Options o;
    o.configure = [](server::Config& c) { c.global.max_durable_per_client = 40; };
    TestServer srv(o);
    ASSERT_TRUE(srv.ok()) << srv.error();
    auto& opens = srv.server().opens;
    auto a = login(srv, 7, "data");
    size_t durable = 0;
    for (int i = 0; i < 60; ++i) {
        auto c =
            a.client->create(durable_create("flood-" + std::to_string(i), uint8_t(2 * i), 300));
        ASSERT_TRUE(c.ok()) << status_name(c.status);
        durable += durable_of(c.body).has_value();
    }
    // Past the limit the opens work, without durability.
    EXPECT_EQ(durable, 40u);
    EXPECT_EQ(opens.durable_count(guid(7)), 40u);
    // Another client has a budget of its own.
    auto b = login(srv, 8, "data");
    auto cb = b.client->create(durable_create("other", 0xF0, 300));
    ASSERT_TRUE(cb.ok());
    EXPECT_TRUE(durable_of(cb.body));
    EXPECT_TRUE(b.client->close(cb.body.file_id).ok());
    EXPECT_EQ(opens.durable_count(guid(8)), 0u);

    a.client->disconnect();  // lost, not logged off: the 40 durable ones stay, disconnected
    for (int i = 0; i < 100 && opens.disconnected_count() < 40; ++i)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(opens.disconnected_count(), 40u);
    // ... until their 300 ms are over; then nothing is left of them.
    for (int i = 0; i < 300 && opens.size() > 0; ++i)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(opens.size(), 0u);
    EXPECT_EQ(opens.durable_count(guid(7)), 0u);
    EXPECT_EQ(srv.server().files.file_count(), 0u);
    EXPECT_EQ(srv.server().files.lease_count(), 0u);
}

}  // namespace
}  // namespace daxsmbd::client
