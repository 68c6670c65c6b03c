#include "server/metrics/exposition.h"

namespace daxsmbd::server::metrics {

std::string format_seconds(uint64_t ns) {
    std::string s = std::to_string(ns / 1'000'000'000);
    uint64_t frac = ns % 1'000'000'000;
    if (frac == 0) return s;
    char digits[10] = {};
    for (int i = 8; i >= 0; --i, frac /= 10)
        digits[i] = char('0' + frac % 10);
    int len = 9;
    while (digits[len - 1] == '0')
        --len;
    s += '.';
    s.append(digits, size_t(len));
    return s;
}

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void ExpositionWriter::family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
}

void ExpositionWriter::line_start(std::string_view name, std::string_view suffix,
                                  std::string_view labels, std::string_view extra_label) {
    out_ += name;
    out_ += suffix;
    if (!labels.empty() || !extra_label.empty()) {
        out_ += '{';
        out_ += labels;
        if (!labels.empty() && !extra_label.empty()) out_ += ',';
        out_ += extra_label;
        out_ += '}';
    }
    out_ += ' ';
}

void ExpositionWriter::sample(std::string_view name, std::string_view labels, uint64_t value) {
    line_start(name, "", labels, "");
    out_ += std::to_string(value);
    out_ += '\n';
}

void ExpositionWriter::histogram(std::string_view name, std::string_view labels,
                                 const HistogramSnapshot& h) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBuckets; ++i) {
        cumulative += h.buckets[i];
        const std::string le = i < kLatencyBoundsNs.size()
                                   ? "le=\"" + format_seconds(kLatencyBoundsNs[i]) + "\""
                                   : std::string("le=\"+Inf\"");
        line_start(name, "_bucket", labels, le);
        out_ += std::to_string(cumulative);
        out_ += '\n';
    }
    line_start(name, "_sum", labels, "");
    out_ += format_seconds(h.sum_ns);
    out_ += '\n';
    line_start(name, "_count", labels, "");
    out_ += std::to_string(cumulative);
    out_ += '\n';
}

namespace {

// The commands a client sends that get a response (CANCEL never does).
bool answered_command(size_t c) {
    return c < protocol::kCommandCount && protocol::Command(c) != protocol::Command::Cancel &&
           protocol::Command(c) != protocol::Command::ServerToClientNotification;
}

std::string command_label(size_t c) {
    return std::string("command=\"") + protocol::command_name(protocol::Command(c)) + "\"";
}

void write_requests(ExpositionWriter& w, const Snapshot& s) {
    w.family("daxsmbd_smb2_requests_total", "counter",
             "SMB2 requests answered, by command (final responses; interim ones not counted).");
    for (size_t c = 0; c < protocol::kCommandCount; ++c)
        if (answered_command(c))
            w.sample("daxsmbd_smb2_requests_total", command_label(c), s.requests[c].count());
    w.family("daxsmbd_smb2_request_errors_total", "counter",
             "SMB2 requests answered with a status other than STATUS_SUCCESS (errors, warnings "
             "and the MORE_PROCESSING_REQUIRED of multi-leg SESSION_SETUPs), by command and "
             "NTSTATUS.");
    for (const auto& f : s.failures) {
        const std::string labels = command_label(f.command) + ",status=\"" +
                                   escape_label_value(status_name(NtStatus(f.status))) + "\"";
        w.sample("daxsmbd_smb2_request_errors_total", labels, f.count);
    }
    w.family("daxsmbd_smb2_request_errors_untracked_total", "counter",
             "SMB2 requests not answered STATUS_SUCCESS whose (command, status) pair found no "
             "free slot in the per-loop table.");
    w.sample("daxsmbd_smb2_request_errors_untracked_total", "", s.failures_untracked);
    w.family("daxsmbd_smb2_request_duration_seconds", "histogram",
             "Time from a request's admission to its handler's completion, by command.");
    for (size_t c = 0; c < protocol::kCommandCount; ++c)
        if (answered_command(c))
            w.histogram("daxsmbd_smb2_request_duration_seconds", command_label(c), s.requests[c]);
}

void write_share_io(ExpositionWriter& w, const Snapshot& s) {
    static constexpr const char* kOps[kIoDirections] = {"read", "write"};
    auto each = [&](auto&& fn) {
        for (const auto& sh : s.shares)
            for (size_t d = 0; d < kIoDirections; ++d)
                for (size_t p = 0; p < kIoPaths; ++p) {
                    const std::string labels = "share=\"" + escape_label_value(sh.name) +
                                               "\",op=\"" + kOps[d] + "\",path=\"" +
                                               io_path_name(IoPath(p)) + "\"";
                    fn(sh, d, p, labels);
                }
    };
    w.family("daxsmbd_share_io_bytes_total", "counter",
             "Bytes read and written by SMB2 READ and WRITE, by share, direction and data path.");
    each([&](const Snapshot::Share& sh, size_t d, size_t p, const std::string& labels) {
        w.sample("daxsmbd_share_io_bytes_total", labels, sh.bytes[d][p]);
    });
    w.family("daxsmbd_share_io_duration_seconds", "histogram",
             "Latency of successful SMB2 READs and WRITEs, by share, direction and data path.");
    each([&](const Snapshot::Share& sh, size_t d, size_t p, const std::string& labels) {
        w.histogram("daxsmbd_share_io_duration_seconds", labels, sh.latency[d][p]);
    });
}

}  // namespace

void write_snapshot(ExpositionWriter& w, const Snapshot& s) {
    write_requests(w, s);
    write_share_io(w, s);
}

}  // namespace daxsmbd::server::metrics
