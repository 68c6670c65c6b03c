// NEGOTIATE (MS-SMB2 3.3.5.3, 3.3.5.3.1, 3.3.5.4).
#include <algorithm>
#include <ctime>

#include "auth/crypto.h"
#include "auth/kdf.h"
#include "protocol/negotiate.h"
#include "protocol/smb1_negotiate.h"
#include "server/auth_glue.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/handlers/negotiate_smb1.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server {

using namespace protocol;

namespace {

uint64_t filetime_now() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 10000000ull + uint64_t(ts.tv_nsec) / 100 + 116444736000000000ull;
}

constexpr Dialect kServerDialects[] = {Dialect::Smb311, Dialect::Smb302, Dialect::Smb300,
                                       Dialect::Smb210, Dialect::Smb202};

// Signing algorithms in server preference order (3.1.1 SIGNING_CAPABILITIES, 3.3.5.4).
constexpr uint16_t kSigningPreference[] = {signing_algorithm::kAesGmac, signing_algorithm::kAesCmac,
                                           signing_algorithm::kHmacSha256};

// Fills the fields common to every negotiate response and records the connection state.
NegotiateResponse make_response(ConnectionState& conn, Dialect d) {
    auto& server = conn.server;
    const auto& g = server.config().global;
    NegotiateResponse r;
    r.security_mode = security_mode::kSigningEnabled;
    if (g.signing == SigningPolicy::Mandatory) r.security_mode |= security_mode::kSigningRequired;
    r.dialect_revision = uint16_t(d);
    r.server_guid = server.guid();
    // LARGE_MTU for 2.1+ on TCP (multi-credit, 3.3.5.3.1); MULTI_CHANNEL for 3.x when
    // "server multi channel support" is on (3.3.5.4); PERSISTENT_HANDLES for 3.x when a share
    // is continuously available; encryption by the caller.
    r.capabilities = 0;
    if (d != Dialect::Smb202 && d != Dialect::Wildcard) r.capabilities |= global_caps::kLargeMtu;
    // MS-SMB2 3.3.5.4: leasing from 2.1 on, directory leasing on 3.x.
    if (d != Dialect::Smb202 && d != Dialect::Wildcard && g.leases)
        r.capabilities |= global_caps::kLeasing;
    if (is_smb3(d) && g.leases && g.directory_leases)
        r.capabilities |= global_caps::kDirectoryLeasing;
    if (is_smb3(d) && g.multi_channel) r.capabilities |= global_caps::kMultiChannel;
    const auto& shares = server.config().shares;
    if (is_smb3(d) && std::any_of(shares.begin(), shares.end(),
                                  [](const ShareConfig& s) { return s.continuous_availability; }))
        r.capabilities |= global_caps::kPersistentHandles;
    uint32_t io = (d == Dialect::Smb202) ? 65536u : g.max_io_size;
    r.max_transact_size = io;
    r.max_read_size = io;
    r.max_write_size = io;
    r.system_time = filetime_now();
    r.server_start_time = 0;
    r.security_buffer = negotiate_security_blob(server);

    auto& st = conn.state;
    st.dialect = d;
    st.server_capabilities = r.capabilities;
    st.server_security_mode = r.security_mode;
    st.supports_multi_credit = (r.capabilities & global_caps::kLargeMtu) != 0;
    st.max_transact_size = r.max_transact_size;
    st.max_read_size = r.max_read_size;
    st.max_write_size = r.max_write_size;
    return r;
}

// MS-SMB2 3.3.5.4: the cipher of a 3.1.1 ENCRYPTION_CAPABILITIES context. The server's order
// ("server smb3 encryption algorithms") decides, as Samba does; 0 when nothing is common or
// encryption is off.
uint16_t choose_cipher(const GlobalConfig& g, const std::vector<uint16_t>& offered) {
    if (g.encrypt == EncryptPolicy::Off) return cipher::kNone;
    for (auto mine : g.encryption_algorithms)
        for (auto theirs : offered)
            if (mine == theirs) return mine;
    return cipher::kNone;
}

// MS-SMB2 3.3.5.4: 3.0/3.0.2 encrypt with AES-128-CCM when the client sets
// SMB2_GLOBAL_CAP_ENCRYPTION and the server supports it (encryption on and CCM allowed).
bool offer_smb30_encryption(const GlobalConfig& g, uint32_t client_caps) {
    if (g.encrypt == EncryptPolicy::Off || !(client_caps & global_caps::kEncryption)) return false;
    for (auto c : g.encryption_algorithms)
        if (c == cipher::kAes128Ccm) return true;
    return false;
}

}  // namespace

Result<ByteVector> handle_smb1_negotiate(ConnectionState& conn, Bytes smb1_msg) {
    if (conn.negotiated() || conn.state.dialect == Dialect::Wildcard)
        return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto req, Smb1NegotiateRequest::parse(smb1_msg));
    const auto& g = conn.server.config().global;
    Dialect d;
    if (req.lists_smb2_wildcard() && g.max_protocol >= Dialect::Smb210) {
        d = Dialect::Wildcard;  // the client follows with an SMB2 NEGOTIATE
    } else if (req.lists_smb2_002() && g.min_protocol <= Dialect::Smb202) {
        d = Dialect::Smb202;
    } else {
        conn.log.info("SMB1-only client refused (no SMB2 dialect offered)");
        return Error(NtStatus::NotSupported);
    }
    // The SMB1 negotiate counts as MessageId 0 (MS-SMB2 3.3.5.2.3).
    if (!conn.credits.consume(0, 1)) return Error(NtStatus::InvalidParameter);
    auto resp = make_response(conn, d);
    ByteVector out;
    ByteWriter w(out);
    Header h;
    h.command = Command::Negotiate;
    h.flags = flags::kServerToRedir;
    h.credits = conn.credits.grant(1, conn.server.config().global.max_credits);
    h.serialize(w);
    resp.serialize(w);
    return out;
}

namespace handlers {

asio::awaitable<NtStatus> negotiate(RequestContext& ctx) {
    auto& conn = ctx.conn;
    // A second NEGOTIATE on a negotiated connection: disconnect without reply (3.3.5.3.1).
    if (conn.negotiated()) {
        conn.log.info("second NEGOTIATE");
        ctx.suppress_response = true;
        ctx.disconnect_after = true;
        co_return NtStatus::InvalidParameter;
    }
    if (ctx.header.is_signed()) co_return NtStatus::InvalidParameter;
    auto req = NegotiateRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    if (req->dialects.empty()) co_return NtStatus::InvalidParameter;

    const auto& g = conn.server.config().global;
    Dialect chosen = Dialect::None;
    for (auto d : kServerDialects) {
        if (d < g.min_protocol || d > g.max_protocol) continue;
        bool offered = false;
        for (auto cd : req->dialects)
            offered |= (cd == uint16_t(d));
        if (offered) {
            chosen = d;
            break;
        }
    }
    if (chosen == Dialect::None) {
        conn.log.info("no common dialect");
        co_return NtStatus::NotSupported;
    }

    NegotiateContextList out_contexts;
    if (chosen == Dialect::Smb311) {
        // MS-SMB2 3.3.5.4.
        if (!validate_negotiate_contexts(req->contexts)) co_return NtStatus::InvalidParameter;
        auto* pre = find_negotiate_context<PreauthIntegrityCapabilities>(req->contexts);
        if (!pre) co_return NtStatus::InvalidParameter;
        bool sha512 = false;
        for (auto a : pre->hash_algorithms)
            sha512 |= (a == hash_algorithm::kSha512);
        if (!sha512) co_return NtStatus::NoPreauthIntegrityHashOverlap;
        PreauthIntegrityCapabilities pr;
        pr.hash_algorithms = {hash_algorithm::kSha512};
        pr.salt.resize(32);
        auth::random_bytes(pr.salt);  // MS-SMB2 3.3.5.4: fresh random salt
        out_contexts.push_back(pr);
        if (auto* enc = find_negotiate_context<EncryptionCapabilities>(req->contexts)) {
            // The response MUST carry an encryption context when the request did: the first
            // cipher of the server's preference list the client offers, or 0 = "no common
            // cipher" (also when encryption is off).
            EncryptionCapabilities ec;
            ec.ciphers = {choose_cipher(g, enc->ciphers)};
            out_contexts.push_back(ec);
            conn.state.cipher_id = ec.ciphers[0];
        }
        if (auto* sc = find_negotiate_context<SigningCapabilities>(req->contexts)) {
            uint16_t pick = signing_algorithm::kAesCmac;  // no common one -> AES-CMAC
            bool found = false;
            for (auto s : kSigningPreference) {
                for (auto c : sc->algorithms)
                    if (c == s) {
                        pick = s;
                        found = true;
                        break;
                    }
                if (found) break;
            }
            SigningCapabilities resp_sc;
            resp_sc.algorithms = {pick};
            out_contexts.push_back(resp_sc);
            conn.state.signing_algorithm_id = pick;
        }
        conn.state.preauth.emplace();
        conn.state.preauth->update(ctx.msg);
        ctx.on_response = [&conn](Bytes resp) {
            if (conn.state.preauth) conn.state.preauth->update(resp);
        };
    }

    auto resp = make_response(conn, chosen);
    resp.contexts = std::move(out_contexts);
    if ((chosen == Dialect::Smb300 || chosen == Dialect::Smb302) &&
        offer_smb30_encryption(g, req->capabilities)) {
        resp.capabilities |= global_caps::kEncryption;
        conn.state.cipher_id = cipher::kAes128Ccm;
    }
    // 3.1.1: a negotiated cipher means encryption capability (internal only, 3.3.5.4).
    if (conn.state.cipher_id != cipher::kNone)
        conn.state.server_capabilities |= global_caps::kEncryption;
    conn.state.client_guid = req->client_guid;
    conn.state.client_capabilities = req->capabilities;
    conn.state.client_security_mode = req->security_mode;
    conn.state.client_dialects = req->dialects;
    resp.serialize(ctx.body());
    conn.log.debug("negotiated dialect 0x", std::hex, uint16_t(chosen));
    co_return NtStatus::Success;
}

}  // namespace handlers
}  // namespace daxsmbd::server
