// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): a handful of small
// valid inputs per target, built with the codecs' own encoders in the layout each target reads
// (see the comment at the top of each tests/fuzz/fuzz_*.cpp). The same files on every run, but
// for what the protocols make random (NTLM timestamps and client challenges, encryption nonces).
// The corpora are checked in; run this after a codec change to refresh them:
//   build/fuzz-seed-corpus tests/fuzz/corpus
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "auth/encryption.h"
#include "auth/ntlm.h"
#include "auth/spnego.h"
#include "auth/userdb.h"
#include "protocol/change_notify.h"
#include "protocol/close.h"
#include "protocol/compound.h"
#include "protocol/create.h"
#include "protocol/dcerpc.h"
#include "protocol/dir_info.h"
#include "protocol/echo.h"
#include "protocol/error.h"
#include "protocol/file_info.h"
#include "protocol/flush.h"
#include "protocol/fs_info.h"
#include "protocol/header.h"
#include "protocol/ioctl.h"
#include "protocol/lock.h"
#include "protocol/logoff.h"
#include "protocol/negotiate.h"
#include "protocol/notify_info.h"
#include "protocol/query_directory.h"
#include "protocol/query_info.h"
#include "protocol/read.h"
#include "protocol/security_descriptor.h"
#include "protocol/session_setup.h"
#include "protocol/set_info.h"
#include "protocol/smb1_negotiate.h"
#include "protocol/srvsvc.h"
#include "protocol/transform.h"
#include "protocol/tree_connect.h"
#include "protocol/tree_disconnect.h"
#include "protocol/write.h"
#include "smbdirect/smbd_codec.h"

namespace {

using namespace daxsmbd;
using namespace daxsmbd::protocol;
namespace fs = std::filesystem;

fs::path g_out;
int g_written = 0;

void seed(const std::string& target, const std::string& name, Bytes data) {
    fs::create_directories(g_out / target);
    std::ofstream f(g_out / target / name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    ++g_written;
}
void seed(const std::string& target, const std::string& name, std::string_view text) {
    seed(target, name, as_bytes(text));
}

ByteVector bytes_of(std::string_view s) {
    Bytes b = as_bytes(s);
    return ByteVector(b.begin(), b.end());
}

// The fuzz targets that read "an SMB2 body behind a 64-byte header" get the body only.
template <class T>
ByteVector body_of(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return ByteVector(out.begin() + kHeaderSize, out.end());
}

// A whole SMB2 message: header of `command` (a response when `response`), then the body.
template <class T>
ByteVector message_of(Command command, const T& x, bool response = false) {
    Header h;
    h.command = command;
    h.credits = 1;
    h.message_id = 1;
    if (response) h.flags |= flags::kServerToRedir;
    ByteVector out;
    ByteWriter w(out);
    h.serialize(w);
    x.serialize(w);
    return out;
}

ByteVector prefixed(uint8_t first, Bytes rest) {
    ByteVector out(1 + rest.size());
    out[0] = std::byte{first};
    std::copy(rest.begin(), rest.end(), out.begin() + 1);
    return out;
}

constexpr FileId kFile{0x11, 0x22};

NegotiateRequest negotiate_request() {
    NegotiateRequest r;
    r.security_mode = security_mode::kSigningEnabled;
    r.capabilities = 0x7f;
    r.client_guid = Guid{std::byte{1}, std::byte{2}, std::byte{3}};
    r.dialects = {0x0202, 0x0210, 0x0300, 0x0302, 0x0311};
    PreauthIntegrityCapabilities p;
    p.hash_algorithms = {1};
    p.salt = ByteVector(32, std::byte{0x5a});
    EncryptionCapabilities e;
    e.ciphers = {2, 1, 4, 3};
    r.contexts = {p, e};
    return r;
}

void negotiate_seeds() {
    seed("fuzz_negotiate", "request_311", message_of(Command::Negotiate, negotiate_request()));
    NegotiateRequest old;
    old.dialects = {0x0202, 0x0210};
    seed("fuzz_negotiate", "request_21", message_of(Command::Negotiate, old));
    NegotiateResponse rsp;
    rsp.dialect_revision = 0x0311;
    rsp.max_transact_size = rsp.max_read_size = rsp.max_write_size = 8 << 20;
    rsp.security_buffer = auth::encode_neg_token_init2({auth::oid::ntlmssp()});
    PreauthIntegrityCapabilities p;
    p.hash_algorithms = {1};
    p.salt = ByteVector(32, std::byte{0x33});
    rsp.contexts = {p};
    seed("fuzz_negotiate", "response_311", message_of(Command::Negotiate, rsp, true));
}

void session_seeds() {
    auth::NtlmClient client(auth::NtlmCredentials::with_password("alice", "pw", "DOM", "WS"));
    const ByteVector ntlm_negotiate = client.negotiate();
    const ByteVector init =
        auth::encode_neg_token_init({auth::oid::ntlmssp()}, ntlm_negotiate, Bytes{});
    SessionSetupRequest req;
    req.security_mode = security_mode::kSigningEnabled;
    req.security_buffer = init;
    seed("fuzz_session_setup", "request", message_of(Command::SessionSetup, req));
    SessionSetupResponse rsp;
    auth::NegTokenResp resp;
    resp.neg_state = auth::NegState::AcceptCompleted;
    rsp.security_buffer = auth::encode_neg_token_resp(resp);
    seed("fuzz_session_setup", "response", message_of(Command::SessionSetup, rsp, true));
    seed("fuzz_session_setup", "echo", message_of(Command::Echo, EchoRequest{}));
    seed("fuzz_session_setup", "logoff", message_of(Command::Logoff, LogoffRequest{}));

    // NTLM: the first byte picks NEGOTIATE (0), AUTHENTICATE (1) or CHALLENGE (2).
    const auth::NtHash h = auth::nt_hash_of_password("pw");
    auth::NtlmServer server({"SRV", "DOM", "srv.example", "example"},
                            [h](std::string_view) -> std::optional<auth::NtHash> { return h; });
    server.set_fixed_challenge({std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}});
    auto challenge = server.challenge(ntlm_negotiate);
    seed("fuzz_ntlm", "negotiate", prefixed(0, ntlm_negotiate));
    if (challenge) {
        seed("fuzz_ntlm", "challenge", prefixed(2, *challenge));
        if (auto authenticate = client.authenticate(*challenge))
            seed("fuzz_ntlm", "authenticate", prefixed(1, *authenticate));
    }

    // SPNEGO: NegTokenInit with the NTLM NEGOTIATE, a NegTokenResp, the server's NegTokenInit2.
    seed("fuzz_spnego", "neg_token_init", init);
    seed("fuzz_spnego", "neg_token_init2",
         auth::encode_neg_token_init2({auth::oid::krb5(), auth::oid::ntlmssp()}));
    auth::NegTokenResp incomplete;
    incomplete.neg_state = auth::NegState::AcceptIncomplete;
    incomplete.supported_mech = auth::oid::ntlmssp();
    if (challenge) incomplete.response_token = Bytes(*challenge);
    seed("fuzz_spnego", "neg_token_resp", auth::encode_neg_token_resp(incomplete));
}

void tree_connect_seeds() {
    TreeConnectRequest req;
    req.path = "\\\\server\\share";
    ByteVector out;
    {
        Header h;
        h.command = Command::TreeConnect;
        ByteWriter w(out);
        h.serialize(w);
        (void)req.serialize(w);
    }
    seed("fuzz_tree_connect", "request", out);
    TreeConnectResponse rsp;
    rsp.maximal_access = 0x1f01ff;
    seed("fuzz_tree_connect", "response", message_of(Command::TreeConnect, rsp, true));
}

void create_seeds() {
    CreateRequest req;
    req.desired_access = 0x0012019f;
    req.share_access = 7;
    req.create_disposition = create_disposition::kOpenIf;
    req.name = "dir\\file.txt";
    req.contexts.add(MaximalAccessRequest{});
    DurableHandleRequestV2 durable;
    durable.create_guid = Guid{std::byte{9}};
    req.contexts.add(durable);
    seed("fuzz_create", "request", body_of(req));
    CreateRequest root;
    seed("fuzz_create", "request_root", body_of(root));
    CreateResponse rsp;
    rsp.file_id = kFile;
    rsp.end_of_file = 5;
    rsp.file_attributes = 0x20;
    seed("fuzz_create", "response", body_of(rsp));
    ByteVector list;
    ByteWriter w(list);
    req.contexts.serialize(w);
    seed("fuzz_create", "context_list", list);
}

void ioctl_seeds() {
    ValidateNegotiateInfoRequest vn;
    vn.dialects = {0x0202, 0x0210, 0x0300};
    ByteVector vn_input;
    ByteWriter vw(vn_input);
    vn.encode(vw);
    IoctlRequest req;
    req.ctl_code = fsctl::kValidateNegotiateInfo;
    req.file_id = kPlaceholderFileId;
    req.input = vn_input;
    req.max_output_response = 24;
    seed("fuzz_ioctl", "validate_negotiate", body_of(req));
    IoctlRequest key;
    key.ctl_code = fsctl::kSrvRequestResumeKey;
    key.file_id = kFile;
    key.max_output_response = 32;
    seed("fuzz_ioctl", "request_resume_key", body_of(key));
    SrvCopychunkCopy copy;
    copy.chunks = {SrvCopychunk{0, 4096, 4096}};
    ByteVector copy_input;
    ByteWriter cw(copy_input);
    copy.encode(cw);
    IoctlRequest cc;
    cc.ctl_code = fsctl::kSrvCopychunkWrite;
    cc.file_id = kFile;
    cc.input = copy_input;
    cc.max_output_response = 12;
    seed("fuzz_ioctl", "copychunk", body_of(cc));
    SrvCopychunkResponse cr;
    cr.chunks_written = 1;
    ByteVector cr_out;
    ByteWriter crw(cr_out);
    cr.encode(crw);
    IoctlResponse rsp;
    rsp.ctl_code = fsctl::kSrvCopychunkWrite;
    rsp.file_id = kFile;
    rsp.output = cr_out;
    seed("fuzz_ioctl", "copychunk_response", body_of(rsp));
}

void lock_seeds() {
    LockRequest req;
    req.file_id = kFile;
    req.locks = {LockElement{0, 100, lock_flags::kExclusiveLock | lock_flags::kFailImmediately}};
    seed("fuzz_lock", "lock", body_of(req));
    LockRequest unlock;
    unlock.file_id = kFile;
    unlock.set_lock_sequence(1, 2);
    unlock.locks = {LockElement{0, 100, lock_flags::kUnlock},
                    LockElement{200, 5, lock_flags::kUnlock}};
    seed("fuzz_lock", "unlock_two", body_of(unlock));
    CloseRequest close;
    close.flags = 1;
    close.file_id = kFile;
    seed("fuzz_lock", "close", body_of(close));
    CloseResponse closed;
    closed.flags = 1;
    closed.end_of_file = 5;
    seed("fuzz_lock", "close_response", body_of(closed));
    FlushRequest flush;
    flush.file_id = kFile;
    seed("fuzz_lock", "flush", body_of(flush));
}

void read_write_seeds() {
    ReadRequest read;
    read.length = 65536;
    read.offset = 4096;
    read.file_id = kFile;
    seed("fuzz_read_write", "read", body_of(read));
    const ByteVector data = bytes_of("hello, world");
    ReadResponse got;
    got.data_length = uint32_t(data.size());
    got.data = data;
    seed("fuzz_read_write", "read_response", body_of(got));
    WriteRequest write;
    write.offset = 10;
    write.file_id = kFile;
    write.data = data;
    seed("fuzz_read_write", "write", body_of(write));
    WriteResponse wrote;
    wrote.count = uint32_t(data.size());
    seed("fuzz_read_write", "write_response", body_of(wrote));
}

ByteVector encoded(const auto& x) {
    ByteVector out;
    ByteWriter w(out);
    x.encode(w);
    return out;
}

void info_seeds() {
    namespace fic = file_info_class;
    FileBasicInfo basic;
    basic.creation_time = 132000000000000000;
    basic.last_write_time = 132000000000000001;
    basic.file_attributes = 0x20;
    const ByteVector basic_bytes = encoded(basic);
    SetInfoRequest set;
    set.info_type = info_type::kFile;
    set.file_info_class = fic::kFileBasicInformation;
    set.buffer = basic_bytes;
    set.file_id = kFile;
    seed("fuzz_set_info", "set_basic", body_of(set));
    FileRenameInfo rename;
    rename.replace_if_exists = true;
    rename.file_name = "new name.txt";
    const ByteVector rename_bytes = encoded(rename);
    SetInfoRequest set_rename = set;
    set_rename.file_info_class = fic::kFileRenameInformation;
    set_rename.buffer = rename_bytes;
    seed("fuzz_set_info", "set_rename", body_of(set_rename));
    QueryInfoRequest query;
    query.info_type = info_type::kFile;
    query.file_info_class = fic::kFileAllInformation;
    query.output_buffer_length = 4096;
    query.file_id = kFile;
    seed("fuzz_set_info", "query_all", body_of(query));
    QueryInfoRequest query_sd = query;
    query_sd.info_type = info_type::kSecurity;
    query_sd.file_info_class = 0;
    query_sd.additional_information = 7;
    seed("fuzz_set_info", "query_security", body_of(query_sd));

    // Raw structures (fuzz_file_info decodes the input as every class).
    seed("fuzz_file_info", "basic", basic_bytes);
    seed("fuzz_file_info", "rename", rename_bytes);
    FileStandardInfo standard;
    standard.allocation_size = 4096;
    standard.end_of_file = 5;
    seed("fuzz_file_info", "standard", encoded(standard));
    FileFsSizeInfo size;
    size.total_allocation_units = 1000;
    size.available_allocation_units = 10;
    size.sectors_per_allocation_unit = 8;
    size.bytes_per_sector = 512;
    seed("fuzz_file_info", "fs_size", encoded(size));
    FileFsVolumeInfo volume;
    volume.volume_serial_number = 0x1234;
    volume.volume_label = "share";
    seed("fuzz_file_info", "fs_volume", encoded(volume));
    FileFullEaInfo eas;
    eas.entries = {{0, "COLOUR", bytes_of("red")}, {0, "SHAPE", bytes_of("round")}};
    ByteVector ea_bytes;
    ByteWriter ew(ea_bytes);
    eas.encode(ew);
    seed("fuzz_file_info", "full_ea", ea_bytes);
}

void directory_seeds() {
    namespace fic = file_info_class;
    // The first byte is the directory information class.
    QueryDirectoryRequest req;
    req.file_information_class = fic::kFileIdBothDirectoryInformation;
    req.file_id = kFile;
    req.pattern = "*";
    req.output_buffer_length = 65536;
    seed("fuzz_query_directory", "request",
         prefixed(fic::kFileIdBothDirectoryInformation, body_of(req)));
    DirectoryInfoWriter entries(fic::kFileIdBothDirectoryInformation, 65536);
    DirEntry dot;
    dot.name = ".";
    dot.file_attributes = 0x10;
    DirEntry file;
    file.name = "a.txt";
    file.end_of_file = 5;
    file.file_attributes = 0x20;
    file.file_id = 12;
    entries.append(dot);
    entries.append(file);
    seed("fuzz_query_directory", "entries",
         prefixed(fic::kFileIdBothDirectoryInformation, entries.bytes()));
    DirectoryInfoWriter names(fic::kFileNamesInformation, 65536);
    names.append(file);
    seed("fuzz_query_directory", "names", prefixed(fic::kFileNamesInformation, names.bytes()));
    ChangeNotifyRequest notify;
    notify.output_buffer_length = 4096;
    notify.file_id = kFile;
    notify.completion_filter = 0x17;
    seed("fuzz_query_directory", "change_notify", prefixed(0, body_of(notify)));
    std::vector<FileNotifyInformation> changes{{1, "new.txt"}, {3, "changed.txt"}};
    ByteVector list;
    ByteWriter w(list);
    encode_notify_information(w, changes);
    seed("fuzz_query_directory", "notify_information", prefixed(0, list));
}

void compound_seeds() {
    // CREATE + CLOSE related, the shape clients send most.
    ByteVector out;
    CompoundWriter cw(out);
    Header h;
    h.command = Command::Echo;
    h.message_id = 1;
    (void)cw.begin_element();
    h.serialize(cw.writer());
    EchoRequest{}.serialize(cw.writer());
    Header h2 = h;
    h2.command = Command::TreeDisconnect;
    h2.message_id = 2;
    h2.flags |= flags::kRelatedOperations;
    (void)cw.begin_element();
    h2.serialize(cw.writer());
    TreeDisconnectRequest{}.serialize(cw.writer());
    cw.finish(false);
    seed("fuzz_compound", "echo_tree_disconnect", out);
    seed("fuzz_compound", "negotiate", message_of(Command::Negotiate, negotiate_request()));
    seed("fuzz_compound", "logoff", message_of(Command::Logoff, LogoffRequest{}));
}

void error_seeds() {
    ErrorResponse plain = make_error_response(ByteVector{}, false);
    seed("fuzz_error", "empty", message_of(Command::Create, plain, true));
    ErrorResponse small = make_error_response(ByteVector(4, std::byte{0x10}), true);
    seed("fuzz_error", "buffer_too_small_311", message_of(Command::QueryInfo, small, true));
    ErrorContext ctx;
    ctx.data = bytes_of("context data");
    ErrorResponse with_ctx = make_error_response(std::vector<ErrorContext>{ctx});
    seed("fuzz_error", "context", message_of(Command::Create, with_ctx, true));
}

void security_descriptor_seeds() {
    const Sid owner = *Sid::from_string("S-1-22-1-1000");
    const Sid group = *Sid::from_string("S-1-22-2-1000");
    const Sid everyone = *Sid::from_string("S-1-1-0");
    SecurityDescriptor sd;
    sd.control |= sd_control::kDaclPresent;
    sd.owner = owner;
    sd.group = group;
    Acl dacl;
    dacl.aces = {Ace::allowed(owner, 0x1f01ff), Ace::allowed(everyone, 0x1200a9),
                 Ace::denied(group, 0x2)};
    sd.dacl = dacl;
    if (auto b = sd.serialize()) seed("fuzz_security_descriptor", "owner_group_dacl", *b);
    SecurityDescriptor owner_only;
    owner_only.owner = owner;
    if (auto b = owner_only.serialize()) seed("fuzz_security_descriptor", "owner_only", *b);
}

void rpc_seeds() {
    using namespace protocol::rpc;
    BindPdu bind;
    bind.header.ptype = PType::Bind;
    bind.header.call_id = 1;
    bind.contexts = {ContextElement{0, kSrvsvcSyntax, {kNdr20Syntax}}};
    seed("fuzz_dcerpc", "bind", bind.serialize());
    NetrShareEnumRequest enum_shares;
    enum_shares.server_name = "\\\\server";
    const ByteVector enum_stub = enum_shares.serialize();
    RequestPdu request;
    request.header.ptype = PType::Request;
    request.header.call_id = 2;
    request.opnum = srvsvc_opnum::kNetrShareEnum;
    request.stub = enum_stub;
    request.alloc_hint = uint32_t(enum_stub.size());
    seed("fuzz_dcerpc", "request_share_enum", request.serialize());

    seed("fuzz_srvsvc", "share_enum", enum_stub);
    NetrShareGetInfoRequest get_info;
    get_info.server_name = "\\\\server";
    get_info.net_name = "share";
    seed("fuzz_srvsvc", "share_get_info", get_info.serialize());
    NetrServerGetInfoRequest server_info;
    server_info.server_name = "\\\\server";
    seed("fuzz_srvsvc", "server_get_info", server_info.serialize());
}

void transform_seeds() {
    // Sealed with the key fuzz_transform opens with (32 bytes of 0x5a), so the AEAD check
    // passes for the matching cipher.
    const ByteVector key(32, std::byte{0x5a});
    for (uint16_t cipher : {uint16_t(1), uint16_t(2)}) {
        Bytes k = Bytes(key).first(16);
        auto enc = auth::SessionEncryption::create(cipher, k, k);
        if (!enc) continue;
        ByteVector plain = message_of(Command::Echo, EchoRequest{});
        std::array<std::byte, TransformHeader::kSize> header{};
        MutableBytes fragment(plain);
        if (!enc->seal(0x1234, std::span<const MutableBytes>(&fragment, 1), header)) continue;
        ByteVector msg(header.begin(), header.end());
        msg.insert(msg.end(), plain.begin(), plain.end());
        seed("fuzz_transform", cipher == 1 ? "echo_aes128_ccm" : "echo_aes128_gcm", msg);
    }
}

void smb1_seeds() {
    Smb1NegotiateRequest req;
    req.dialects = {"NT LM 0.12", "SMB 2.002", "SMB 2.???"};
    ByteVector out;
    ByteWriter w(out);
    req.serialize(w);
    seed("fuzz_smb1_negotiate", "smb2_wildcard", out);
}

void smbdirect_seeds() {
    smbdirect::NegotiateRequest req;
    req.credits_requested = 255;
    req.preferred_send_size = 1364;
    req.max_receive_size = 8192;
    req.max_fragmented_size = 1048576;
    ByteVector out;
    req.serialize(out);
    seed("fuzz_smbd", "negotiate_request", out);
    smbdirect::DataTransferHeader h;
    h.credits_requested = 10;
    h.credits_granted = 10;
    ByteVector data;
    const ByteVector payload = message_of(Command::Echo, EchoRequest{});
    smbdirect::write_data_transfer(data, h, payload);
    seed("fuzz_smbd", "data_transfer", data);
}

void kerberos_user_map_seeds() {
    seed("fuzz_kerberos_user_map", "entries",
         std::string_view("# comment\n"
                          "root = admin/ops@EXAMPLE.COM\n"
                          "carol = carol@PARTNER.ORG, c.smith@PARTNER.ORG\n"));
    seed("fuzz_kerberos_user_map", "one", std::string_view("a = x@R\n"));
}

// SMART / Health log pages (server/health/nvme_health.h): a healthy device as qemu's emulated
// controller answers (323 K, no spare threshold) and a worn one with warning bits set.
void nvme_smart_log_seeds() {
    ByteVector page(512);
    page[1] = std::byte(323 & 0xFF);
    page[2] = std::byte(323 >> 8);
    seed("fuzz_nvme_smart_log", "healthy", page);
    page[0] = std::byte(0x05);  // spare below threshold, reliability degraded
    page[3] = std::byte(3);
    page[4] = std::byte(10);
    page[5] = std::byte(101);
    for (size_t off : {32, 48, 64, 80, 160})
        page[off] = std::byte(0x42);
    page[63] = std::byte(1);  // a 128-bit counter past 64 bits
    seed("fuzz_nvme_smart_log", "worn", page);
}

// sysfs attributes of persistent memory (server/health/pmem_health.h): a badblocks list of
// two ranges, an NFIT DIMM's flags, a PowerPC one's.
void pmem_health_seeds() {
    seed("fuzz_pmem_health", "badblocks", std::string_view("4194240 8\n4194300 64\n"));
    seed("fuzz_pmem_health", "nfit_flags", std::string_view("save_fail not_armed smart_notify \n"));
    seed("fuzz_pmem_health", "papr_flags", std::string_view("flush_fail smart_notify encrypted\n"));
}

// etcd's v3 JSON gateway as daxsmbd's cluster sees it (etcd 3.4, snake_case, int64 as
// strings, streaming replies wrapped in "result"), a watch stream of two messages as one read
// returns it, an endpoint URL and an owner record.
void etcd_seeds() {
    const std::string t = "fuzz_etcd_codec";
    seed(t, "range",
         std::string_view(R"({"header":{"cluster_id":"1","member_id":"2","revision":"7",)"
                          R"("raft_term":"2"},"kvs":[{"key":"L2RheHNtYmQvbm9kZXMvYQ==",)"
                          R"("create_revision":"5","mod_revision":"6","version":"2",)"
                          R"("value":"eyJub2RlIjoiYSJ9","lease":"7587862"}],"count":"1"})"));
    seed(t, "txn_failed",
         std::string_view(R"({"header":{"revision":"9"},"responses":[{"response_range":)"
                          R"({"header":{"revision":"9"},"kvs":[{"key":"YQ==","value":"Yg==",)"
                          R"("create_revision":"5","mod_revision":"5","version":"1",)"
                          R"("lease":"42"}],"count":"1"}}]})"));
    seed(t, "txn_succeeded",
         std::string_view(R"({"header":{"revision":"10"},"succeeded":true,"responses":)"
                          R"([{"response_put":{"header":{"revision":"10"}}}]})"));
    seed(t, "lease_grant",
         std::string_view(R"({"header":{"revision":"3"},"ID":"7587862","TTL":"3"})"));
    seed(t, "lease_keepalive",
         std::string_view(R"({"result":{"header":{"revision":"3"},"ID":"7587862","TTL":"3"}})"
                          "\n"));
    seed(t, "watch_stream",
         std::string_view(R"({"result":{"header":{"revision":"4"},"created":true}})"
                          "\n"
                          R"({"result":{"header":{"revision":"9"},"events":[{"type":"DELETE",)"
                          R"("kv":{"key":"YQ==","mod_revision":"9"},"prev_kv":{"key":"YQ==",)"
                          R"("value":"Yg==","create_revision":"5"}}]}})"
                          "\n"));
    seed(t, "watch_compacted",
         std::string_view(R"({"result":{"header":{"revision":"20"},"canceled":true,)"
                          R"("compact_revision":"15"}})"));
    seed(t, "error",
         std::string_view(R"({"error":"etcdserver: requested lease not found",)"
                          R"("code":5,"message":"etcdserver: requested lease not found"})"));
    seed(t, "endpoint", std::string_view("http://[::1]:2379"));
    seed(t, "owner_record",
         std::string_view(R"({"node":"node1","addresses":["10.0.0.11:445","[fd00::11]:445"]})"));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
        return 2;
    }
    g_out = argv[1];
    negotiate_seeds();
    session_seeds();
    tree_connect_seeds();
    create_seeds();
    ioctl_seeds();
    lock_seeds();
    read_write_seeds();
    info_seeds();
    directory_seeds();
    compound_seeds();
    error_seeds();
    security_descriptor_seeds();
    rpc_seeds();
    transform_seeds();
    smb1_seeds();
    smbdirect_seeds();
    kerberos_user_map_seeds();
    nvme_smart_log_seeds();
    pmem_health_seeds();
    etcd_seeds();
    std::printf("%d seeds written to %s\n", g_written, argv[1]);
    return 0;
}
