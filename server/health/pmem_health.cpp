#include "server/health/pmem_health.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace daxsmbd::server::health {

namespace fs = std::filesystem;

namespace {

bool parse_u64(std::string_view s, uint64_t& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split_words(std::string_view text) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
            ++i;
        size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])))
            ++j;
        if (j > i) out.push_back(text.substr(i, j - i));
        i = j;
    }
    return out;
}

// The whole attribute; nullopt when it cannot be opened or read (sysfs answers ENXIO for
// attributes a device does not support).
std::optional<std::string> read_attribute(const fs::path& p) {
    std::ifstream in(p);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return ss.str();
}

bool is_numbered(const std::string& name, std::string_view prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
    return std::all_of(name.begin() + long(prefix.size()), name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

Nvdimm read_dimm(const fs::path& dir) {
    Nvdimm d;
    d.name = dir.filename().string();
    if (auto id = read_attribute(dir / "nfit/id")) {
        auto w = split_words(*id);
        if (!w.empty()) d.id = std::string(w[0]);
    }
    for (const char* source : {"nfit", "papr"}) {
        auto text = read_attribute(dir / source / "flags");
        if (!text) continue;
        d.source = source;
        d.flags = parse_flag_words(*text);
        d.failures = failure_flags(source, d.flags);
        break;
    }
    uint64_t n = 0;
    if (auto text = read_attribute(dir / "nfit/dirty_shutdown")) {
        auto w = split_words(*text);
        if (w.size() == 1 && parse_u64(w[0], n)) d.dirty_shutdowns = n;
    }
    return d;
}

}  // namespace

std::optional<BadBlocks> parse_badblocks(std::string_view text) {
    BadBlocks out;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        auto w = split_words(line);
        if (w.empty()) continue;
        uint64_t sector = 0, count = 0;
        if (w.size() != 2 || !parse_u64(w[0], sector) || !parse_u64(w[1], count))
            return std::nullopt;
        ++out.ranges;
        out.sectors = count > UINT64_MAX - out.sectors ? UINT64_MAX : out.sectors + count;
    }
    return out;
}

std::vector<std::string> parse_flag_words(std::string_view text) {
    std::vector<std::string> out;
    for (auto w : split_words(text))
        out.emplace_back(w);
    return out;
}

std::vector<std::string> failure_flags(std::string_view source,
                                       const std::vector<std::string>& flags) {
    // nfit: smart_event = the DIMM signalled a health event (HEALTH_OBSERVED); smart_notify =
    // it can (HEALTH_ENABLED). papr: smart_notify = the hypervisor reports a health event.
    // encrypted, scrubbed and locked describe state, not a fault.
    static constexpr std::string_view kNfit[] = {"save_fail", "restore_fail", "flush_fail",
                                                 "not_armed", "smart_event",  "map_fail"};
    static constexpr std::string_view kPapr[] = {"save_fail", "restore_fail", "flush_fail",
                                                 "not_armed", "smart_notify"};
    std::vector<std::string> out;
    for (const auto& f : flags) {
        const bool bad = source == "papr"
                             ? std::find(std::begin(kPapr), std::end(kPapr), f) != std::end(kPapr)
                             : std::find(std::begin(kNfit), std::end(kNfit), f) != std::end(kNfit);
        if (bad) out.push_back(f);
    }
    return out;
}

bool PmemHealth::needs_attention() const {
    if (badblocks.ranges > 0 || read_only) return true;
    return std::any_of(dimms.begin(), dimms.end(),
                       [](const Nvdimm& d) { return !d.failures.empty(); });
}

std::string PmemHealth::describe() const {
    std::string out;
    auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
    if (badblocks.ranges > 0)
        add(std::to_string(badblocks.ranges) + " bad range" + (badblocks.ranges == 1 ? "" : "s") +
            " (" + std::to_string(badblocks.sectors) + " sectors)");
    if (read_only) add(region + " read-only");
    for (const auto& d : dimms) {
        if (d.failures.empty()) continue;
        std::string f;
        for (const auto& w : d.failures)
            f += (f.empty() ? "" : " ") + w;
        add(d.name + ": " + f);
    }
    return out.empty() ? "healthy" : out;
}

std::string nd_region_of(const std::string& device_dir) {
    // .../ndbus0/region0/pfn0.0/block/pmem0 (fsdax with a pfn superblock), or
    // .../ndbus0/region0/namespace0.0/block/pmem0 (raw), .../btt0.0/block/pmem0s (sector mode).
    for (fs::path p = device_dir; !p.empty() && p.has_filename(); p = p.parent_path())
        if (is_numbered(p.filename().string(), "region") &&
            is_numbered(p.parent_path().filename().string(), "ndbus"))
            return p.string();
    return {};
}

std::optional<PmemHealth> read_pmem_health(const std::string& device_dir,
                                           const std::string& region_dir, std::string* why) {
    PmemHealth h;
    const fs::path region(region_dir);
    h.region = region.filename().string();
    auto bb_text = read_attribute(fs::path(device_dir) / "badblocks");
    if (!bb_text) {
        *why = device_dir + "/badblocks: cannot be read";
        return std::nullopt;
    }
    auto bb = parse_badblocks(*bb_text);
    if (!bb) {
        *why = device_dir + "/badblocks: does not decode";
        return std::nullopt;
    }
    h.badblocks = *bb;
    if (auto ro = read_attribute(region / "read_only"))
        h.read_only = !ro->empty() && (*ro)[0] == '1';
    uint64_t mappings = 0;
    if (auto text = read_attribute(region / "mappings")) {
        auto w = split_words(*text);
        if (w.size() != 1 || !parse_u64(w[0], mappings)) mappings = 0;
    }
    for (uint64_t i = 0; i < mappings && i < 256; ++i) {
        auto text = read_attribute(region / ("mapping" + std::to_string(i)));
        if (!text) continue;
        // "nmem0,0,2147483648,0": the DIMM's name is the first field.
        const std::string name = text->substr(0, text->find(','));
        if (!is_numbered(name, "nmem")) continue;
        h.dimms.push_back(read_dimm(region.parent_path() / name));
    }
    return h;
}

}  // namespace daxsmbd::server::health
