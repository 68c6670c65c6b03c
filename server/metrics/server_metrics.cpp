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
    w.family("daxsmbd_limit_hits_total", "counter",
             "Times an abuse limit refused or cut something, by its configuration key.");
    for (size_t i = 0; i < metrics::kLimits; ++i) {
        const auto l = metrics::Limit(i);
        w.sample("daxsmbd_limit_hits_total", std::string("limit=\"") + metrics::limit_key(l) + "\"",
                 s.limit_hits.count(l));
    }
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
    uint64_t channels = 0;
    for (const auto& x : s.sessions.all())
        if (x->state.load() == Session::State::Valid) channels += x->channel_count();
    w.family("daxsmbd_session_channels", "gauge",
             "Channels of the authenticated sessions: connections bound to them (multichannel "
             "makes it more than the sessions).");
    w.sample("daxsmbd_session_channels", "", channels);
    w.family("daxsmbd_opens", "gauge", "Open files and directories (durable ones included).");
    w.sample("daxsmbd_opens", "", s.opens.size());
    const auto locks = s.locks.totals();
    w.family("daxsmbd_byte_range_locks", "gauge", "Byte-range locks held (LOCK).");
    w.sample("daxsmbd_byte_range_locks", "", locks.locks);
    w.family("daxsmbd_lock_waiters", "gauge",
             "Blocking LOCK requests waiting for a conflicting lock to go.");
    w.sample("daxsmbd_lock_waiters", "", locks.waiters);
    w.family("daxsmbd_leases", "gauge", "Leases granted (file and directory, by lease key).");
    w.sample("daxsmbd_leases", "", s.files.lease_count());
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

namespace {

std::string device_label(const health::DeviceHealthMonitor::Device& d) {
    return "device=\"" + metrics::escape_label_value(d.device.name) + "\"";
}

const char* device_type(const health::BlockDevice& d) {
    return d.nvme ? "nvme" : d.pmem() ? "pmem" : "other";
}

// Persistent memory under DAX shares (server/health/pmem_health.h): bad blocks, the region's
// read-only state, and the health flags of the DIMMs behind it.
void write_pmem_health(metrics::ExpositionWriter& w,
                       const std::vector<health::DeviceHealthMonitor::Device>& devices) {
    w.family("daxsmbd_pmem_bad_ranges", "gauge",
             "Poisoned ranges the kernel lists in the pmem device's badblocks.");
    for (const auto& d : devices)
        if (d.pmem) w.sample("daxsmbd_pmem_bad_ranges", device_label(d), d.pmem->badblocks.ranges);
    w.family("daxsmbd_pmem_bad_sectors", "gauge",
             "512-byte sectors in the pmem device's badblocks (reads fail, DAX maps raise "
             "SIGBUS).");
    for (const auto& d : devices)
        if (d.pmem)
            w.sample("daxsmbd_pmem_bad_sectors", device_label(d), d.pmem->badblocks.sectors);
    w.family("daxsmbd_pmem_region_read_only", "gauge",
             "1 when the libnvdimm region under the pmem device is read-only.");
    for (const auto& d : devices)
        if (d.pmem)
            w.sample(
                "daxsmbd_pmem_region_read_only",
                device_label(d) + ",region=\"" + metrics::escape_label_value(d.pmem->region) + "\"",
                d.pmem->read_only ? 1 : 0);
    // Each family's samples follow its TYPE line: one pass over the DIMMs per family.
    auto each_dimm = [&devices](auto&& fn) {
        for (const auto& d : devices)
            if (d.pmem)
                for (const auto& n : d.pmem->dimms)
                    fn(device_label(d) + ",dimm=\"" + metrics::escape_label_value(n.name) + "\"",
                       n);
    };
    w.family("daxsmbd_nvdimm_info", "gauge",
             "The DIMMs behind each pmem device (id = vendor-serial; failed=yes when a "
             "failure flag is set).");
    each_dimm([&w](const std::string& dimm, const health::Nvdimm& n) {
        w.sample("daxsmbd_nvdimm_info",
                 dimm + ",id=\"" + metrics::escape_label_value(n.id) + "\",failed=\"" +
                     (n.failures.empty() ? "no" : "yes") + "\"",
                 1);
    });
    w.family("daxsmbd_nvdimm_flag", "gauge",
             "1 for every health flag the kernel reports on a DIMM (nfit/flags or papr/flags).");
    each_dimm([&w](const std::string& dimm, const health::Nvdimm& n) {
        for (const auto& f : n.flags)
            w.sample("daxsmbd_nvdimm_flag",
                     dimm + ",flag=\"" + metrics::escape_label_value(f) + "\"", 1);
    });
    w.family("daxsmbd_nvdimm_dirty_shutdowns_total", "counter",
             "Unsafe shutdowns a DIMM counted (nfit/dirty_shutdown, where its family has it).");
    each_dimm([&w](const std::string& dimm, const health::Nvdimm& n) {
        if (n.dirty_shutdowns)
            w.sample("daxsmbd_nvdimm_dirty_shutdowns_total", dimm, *n.dirty_shutdowns);
    });
    w.family("daxsmbd_pmem_health_read_failures_total", "counter",
             "Reads of a pmem device's health from sysfs that failed.");
    for (const auto& d : devices)
        if (d.device.pmem())
            w.sample("daxsmbd_pmem_health_read_failures_total", device_label(d), d.read_failures);
}

}  // namespace

// The shares' block devices and, for NVMe, their SMART / Health log (server/health), as last
// read by the monitor's thread: a scrape never waits for a device.
void write_device_health(metrics::ExpositionWriter& w, Server& s) {
    const auto devices = s.device_health.snapshot();
    w.family("daxsmbd_share_device_info", "gauge",
             "The block device under each share (1 per share and device; type=nvme: its "
             "SMART / Health log is read, type=pmem: its persistent memory health).");
    for (const auto& d : devices)
        for (const auto& share : d.shares)
            w.sample("daxsmbd_share_device_info",
                     "share=\"" + metrics::escape_label_value(share) + "\",device=\"" +
                         metrics::escape_label_value(d.device.name) + "\",type=\"" +
                         device_type(d.device) + "\"",
                     1);
    struct Field {
        const char* name;
        const char* type;
        const char* help;
        uint64_t (*get)(const health::SmartLog&);
    };
    static const Field kFields[] = {
        {"daxsmbd_nvme_critical_warning", "gauge",
         "NVMe Critical Warning bits (0 spare, 1 temperature, 2 reliability, 3 read-only, 4 "
         "volatile backup, 5 PMR read-only); 0 is healthy.",
         [](const health::SmartLog& l) -> uint64_t { return l.critical_warning; }},
        {"daxsmbd_nvme_temperature_kelvin", "gauge", "NVMe Composite Temperature (kelvin).",
         [](const health::SmartLog& l) -> uint64_t { return l.temperature_kelvin; }},
        {"daxsmbd_nvme_available_spare_percent", "gauge", "NVMe Available Spare (percent).",
         [](const health::SmartLog& l) -> uint64_t { return l.available_spare; }},
        {"daxsmbd_nvme_available_spare_threshold_percent", "gauge",
         "NVMe Available Spare Threshold (percent; 0 when the device has none).",
         [](const health::SmartLog& l) -> uint64_t { return l.available_spare_threshold; }},
        {"daxsmbd_nvme_percentage_used", "gauge",
         "NVMe Percentage Used of the device's life estimate (may exceed 100).",
         [](const health::SmartLog& l) -> uint64_t { return l.percentage_used; }},
        {"daxsmbd_nvme_data_units_read_total", "counter",
         "NVMe Data Units Read (thousands of 512-byte units).",
         [](const health::SmartLog& l) { return l.data_units_read; }},
        {"daxsmbd_nvme_data_units_written_total", "counter",
         "NVMe Data Units Written (thousands of 512-byte units).",
         [](const health::SmartLog& l) { return l.data_units_written; }},
        {"daxsmbd_nvme_host_read_commands_total", "counter", "NVMe Host Read Commands.",
         [](const health::SmartLog& l) { return l.host_read_commands; }},
        {"daxsmbd_nvme_host_write_commands_total", "counter", "NVMe Host Write Commands.",
         [](const health::SmartLog& l) { return l.host_write_commands; }},
        {"daxsmbd_nvme_media_errors_total", "counter", "NVMe Media and Data Integrity Errors.",
         [](const health::SmartLog& l) { return l.media_errors; }},
        {"daxsmbd_nvme_unsafe_shutdowns_total", "counter", "NVMe Unsafe Shutdowns.",
         [](const health::SmartLog& l) { return l.unsafe_shutdowns; }},
        {"daxsmbd_nvme_error_log_entries_total", "counter",
         "NVMe Number of Error Information Log Entries.",
         [](const health::SmartLog& l) { return l.error_log_entries; }},
        {"daxsmbd_nvme_power_on_hours_total", "counter", "NVMe Power On Hours.",
         [](const health::SmartLog& l) { return l.power_on_hours; }},
    };
    for (const auto& f : kFields) {
        w.family(f.name, f.type, f.help);
        for (const auto& d : devices)
            if (d.smart) w.sample(f.name, device_label(d), f.get(*d.smart));
    }
    w.family("daxsmbd_nvme_health_read_failures_total", "counter",
             "Reads of an NVMe device's SMART / Health log that failed.");
    for (const auto& d : devices)
        if (d.device.nvme)
            w.sample("daxsmbd_nvme_health_read_failures_total", device_label(d), d.read_failures);
    write_pmem_health(w, devices);
}

std::string Server::metrics_text() {
    metrics::ExpositionWriter w;
    metrics::write_snapshot(w, metrics.snapshot());
    write_connections(w, *this);
    write_sessions(w, *this);
    write_dax(w, *this);
    write_io_uring(w, *this);
    write_device_health(w, *this);
    return w.take();
}

}  // namespace daxsmbd::server
