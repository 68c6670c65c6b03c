// Server::metrics_text (server/server.h): what GET /metrics answers. The registry's families
// (per command, per share), then what the server knows at the moment of the scrape: connections,
// sessions, opens, logon failures, limit hits, the DAX path's and io_uring engines' counters.
// Runs on the metrics endpoint's thread; it takes the tables' locks briefly, never a loop's.
#include <map>
#include <tuple>

#include "dax/flush.h"
#include "server/io/uring_engine.h"
#include "server/metrics/exposition.h"
#include "server/server.h"

namespace daxsmbd::server {

namespace {

const char* dialect_label(protocol::Dialect d) {
    switch (d) {
        case protocol::Dialect::Smb202:
            return "2.0.2";
        case protocol::Dialect::Smb210:
            return "2.1";
        case protocol::Dialect::Smb300:
            return "3.0";
        case protocol::Dialect::Smb302:
            return "3.0.2";
        case protocol::Dialect::Smb311:
            return "3.1.1";
        default:
            return "none";
    }
}

void write_connections(metrics::ExpositionWriter& w, Server& s) {
    w.family("daxsmbd_connections", "gauge", "Client connections open now (TCP and SMB Direct).");
    w.sample("daxsmbd_connections", "", s.connection_count());
    w.family("daxsmbd_connections_accepted_total", "counter", "Client connections accepted.");
    w.sample("daxsmbd_connections_accepted_total", "", s.connections_accepted());
    w.family("daxsmbd_connections_refused_total", "counter",
             "Client connections refused by 'max connections total' or 'max connections per "
             "address'.");
    w.sample("daxsmbd_connections_refused_total", "", s.connections_refused());
    w.family("daxsmbd_backpressure_pauses_total", "counter",
             "Times a connection's reader stopped at 'max bytes in flight per connection'.");
    w.sample("daxsmbd_backpressure_pauses_total", "",
             s.backpressure().pauses.load(std::memory_order_relaxed));
}

void write_sessions(metrics::ExpositionWriter& w, Server& s) {
    // (dialect, signing required, encrypted) -> sessions; authenticated sessions only.
    std::map<std::tuple<std::string, bool, bool>, uint64_t> by_kind;
    s.sessions.for_each([&](const Session& x) {
        if (x.state.load() != Session::State::Valid) return;
        ++by_kind[{dialect_label(x.dialect), x.signing_required, x.encrypt_data}];
    });
    w.family("daxsmbd_sessions", "gauge",
             "Authenticated SMB sessions, by dialect, whether signing is required and whether "
             "the session encrypts.");
    for (const auto& [k, n] : by_kind) {
        const auto& [dialect, signing, encryption] = k;
        w.sample("daxsmbd_sessions",
                 "dialect=\"" + dialect + "\",signing=\"" + (signing ? "required" : "optional") +
                     "\",encryption=\"" + (encryption ? "yes" : "no") + "\"",
                 n);
    }
    w.family("daxsmbd_opens", "gauge", "Open files and directories (durable ones included).");
    w.sample("daxsmbd_opens", "", s.opens.size());
    w.family("daxsmbd_logon_failures_total", "counter",
             "Failed SESSION_SETUP authentications (wrong password, unknown user, ...).");
    w.sample("daxsmbd_logon_failures_total", "", s.logon_throttle().failures_total());
    w.family("daxsmbd_logon_throttled_addresses", "gauge",
             "Client addresses whose logon answers are held back after failures.");
    w.sample("daxsmbd_logon_throttled_addresses", "", s.logon_throttle().tracked());
}

void counter(metrics::ExpositionWriter& w, const std::string& name, const char* help, uint64_t v) {
    w.family(name, "counter", help);
    w.sample(name, "", v);
}

void write_dax(metrics::ExpositionWriter& w, Server& s) {
    const dax::StatsSnapshot d = s.dax_maps.stats().snapshot();
    auto u = [](int64_t v) { return v < 0 ? uint64_t(0) : uint64_t(v); };
    counter(w, "daxsmbd_dax_reads_total", "READs served from a DAX mapping.", u(d.reads));
    counter(w, "daxsmbd_dax_read_bytes_total", "Bytes read from DAX mappings.", u(d.read_bytes));
    counter(w, "daxsmbd_dax_writes_total", "WRITEs copied into a DAX mapping.", u(d.writes));
    counter(w, "daxsmbd_dax_write_bytes_total", "Bytes written into DAX mappings.",
            u(d.write_bytes));
    counter(w, "daxsmbd_dax_persists_total",
            "Flush and fence runs of DAX mappings (write-through WRITE, FLUSH, CLOSE).",
            u(d.persists));
    counter(w, "daxsmbd_dax_fallbacks_total",
            "DAX requests the mapping could not serve (served by the block path).", u(d.fallbacks));
    counter(w, "daxsmbd_dax_media_errors_total",
            "Media errors (SIGBUS) inside DAX mappings, answered STATUS_UNEXPECTED_IO_ERROR.",
            u(d.media_errors));
    counter(w, "daxsmbd_dax_maps_total", "DAX chunk mappings made.", u(d.maps));
    counter(w, "daxsmbd_dax_unmaps_total", "DAX chunk mappings dropped.", u(d.unmaps));
    counter(w, "daxsmbd_dax_map_cache_hits_total",
            "Opens that found their file's DAX mapping in the map cache.", u(d.map_cache_hits));
    w.family("daxsmbd_share_dax_flush_info", "gauge",
             "1 for each share served through DAX, labelled with the flush instruction its "
             "writes are made durable with.");
    for (const auto& sh : s.shares())
        if (sh->dax)
            w.sample("daxsmbd_share_dax_flush_info",
                     "share=\"" + metrics::escape_label_value(sh->config.name) + "\",flush=\"" +
                         std::string(dax::to_string(sh->dax->flush)) + "\"",
                     1);
}

void write_io_uring(metrics::ExpositionWriter& w, Server& s) {
    uint64_t submits = 0, sqes = 0, fixed = 0, polled = 0, fallback = 0, inline_writes = 0,
             splices = 0;
    for (size_t i = 0; i < s.loop_count(); ++i) {
        const io::EngineStats& e = s.engine(i).stats();
        submits += e.submit_calls.load(std::memory_order_relaxed);
        sqes += e.sqes.load(std::memory_order_relaxed);
        fixed += e.fixed_buffer_ops.load(std::memory_order_relaxed);
        polled += e.polled_ops.load(std::memory_order_relaxed);
        fallback += e.fallback_ops.load(std::memory_order_relaxed);
        inline_writes += e.inline_writes.load(std::memory_order_relaxed);
        splices += e.splices.load(std::memory_order_relaxed);
    }
    counter(w, "daxsmbd_io_uring_submit_calls_total", "io_uring_submit calls that passed SQEs on.",
            submits);
    counter(w, "daxsmbd_io_uring_sqes_total", "io_uring SQEs submitted.", sqes);
    counter(w, "daxsmbd_io_uring_fixed_buffer_ops_total",
            "io_uring operations on registered (fixed) buffers.", fixed);
    counter(w, "daxsmbd_io_uring_polled_ops_total", "io_uring operations completed by polling.",
            polled);
    counter(w, "daxsmbd_io_uring_fallback_ops_total",
            "File operations run on the blocking pool instead of a ring.", fallback);
    counter(w, "daxsmbd_io_uring_inline_writes_total", "Small buffered writes done on the loop.",
            inline_writes);
    counter(w, "daxsmbd_io_uring_splices_total", "File-to-pipe splices (IORING_OP_SPLICE).",
            splices);
}

}  // namespace

std::string Server::metrics_text() {
    metrics::ExpositionWriter w;
    metrics::write_snapshot(w, metrics.snapshot());
    write_connections(w, *this);
    write_sessions(w, *this);
    write_dax(w, *this);
    write_io_uring(w, *this);
    return w.take();
}

}  // namespace daxsmbd::server
