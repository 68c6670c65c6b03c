// The Prometheus text exposition format, version 0.0.4: "# HELP" and "# TYPE" lines per family,
// then its samples; a histogram as cumulative _bucket{le="..."} lines ending with le="+Inf",
// then _sum and _count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/metrics/registry.h"

namespace daxsmbd::server::metrics {

inline constexpr std::string_view kExpositionContentType = "text/plain; version=0.0.4";

// Nanoseconds as decimal seconds without exponent or trailing zeros ("0.00005", "1", "2.5").
std::string format_seconds(uint64_t ns);
// A label value with \, " and newline escaped.
std::string escape_label_value(std::string_view v);

class ExpositionWriter {
  public:
    // Starts a family; `type` is counter, gauge or histogram.
    void family(std::string_view name, std::string_view type, std::string_view help);
    // `labels` is the inside of the braces (`command="READ"`), empty for none.
    void sample(std::string_view name, std::string_view labels, uint64_t value);
    // The lines of one histogram series, in seconds.
    void histogram(std::string_view name, std::string_view labels, const HistogramSnapshot& h);
    const std::string& text() const { return out_; }
    std::string take() { return std::move(out_); }

  private:
    void line_start(std::string_view name, std::string_view suffix, std::string_view labels,
                    std::string_view extra_label);
    std::string out_;
};

// The families of a registry snapshot: per SMB2 command requests, failures by status and the
// latency histogram; per share I/O bytes and latency by direction and data path.
void write_snapshot(ExpositionWriter& w, const Snapshot& s);

}  // namespace daxsmbd::server::metrics
