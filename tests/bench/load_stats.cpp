#include "tests/bench/load_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace daxsmbd::bench {

// ---- histogram ---------------------------------------------------------------------------------

int LatencyHistogram::bucket_of(uint64_t ns) {
    if (ns < uint64_t(kSub)) return int(ns);
    int msb = 63 - __builtin_clzll(ns);
    int shift = msb - kSubBits;
    return (shift + 1) * kSub + int((ns >> shift) - kSub);
}

double LatencyHistogram::bucket_mid(int idx) {
    if (idx < kSub) return idx;
    int shift = idx / kSub - 1;
    uint64_t lo = (uint64_t(idx % kSub) + kSub) << shift;
    uint64_t width = uint64_t(1) << shift;
    return double(lo) + double(width - 1) / 2.0;
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i)
        counts_[i] += o.counts_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
}

void LatencyHistogram::clear() {
    *this = LatencyHistogram{};
}

double LatencyHistogram::percentile_ns(double q) const {
    if (!count_) return 0;
    // The smallest bucket whose cumulative count reaches ceil(q * count).
    uint64_t rank = uint64_t(std::ceil(std::clamp(q, 0.0, 1.0) * double(count_)));
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
        seen += counts_[i];
        if (seen >= rank) return std::min(bucket_mid(i), double(max_));
    }
    return double(max_);
}

// ---- sizes -------------------------------------------------------------------------------------

std::optional<uint64_t> parse_size(std::string_view s) {
    if (s.empty()) return std::nullopt;
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || v < 0) return std::nullopt;
    std::string_view unit(p, size_t(s.data() + s.size() - p));
    double mul = 1;
    if (unit.empty()) {
        mul = 1;
    } else if (unit == "k" || unit == "K" || unit == "KiB") {
        mul = 1024.0;
    } else if (unit == "m" || unit == "M" || unit == "MiB") {
        mul = 1024.0 * 1024;
    } else if (unit == "g" || unit == "G" || unit == "GiB") {
        mul = 1024.0 * 1024 * 1024;
    } else {
        return std::nullopt;
    }
    return uint64_t(v * mul);
}

// ---- /proc -------------------------------------------------------------------------------------

namespace {

std::optional<std::string> slurp(const std::string& path) {
    std::ifstream f(path);
    if (!f) return std::nullopt;
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

uint64_t count_dir_entries(const std::string& path) {
    DIR* d = ::opendir(path.c_str());
    if (!d) return 0;
    uint64_t n = 0;
    while (dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    return n;
}

double ticks_to_seconds(uint64_t ticks) {
    static const long hz = ::sysconf(_SC_CLK_TCK);
    return double(ticks) / double(hz > 0 ? hz : 100);
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
    auto close = line.rfind(')');
    if (close == std::string_view::npos || close + 2 > line.size()) return std::nullopt;
    std::istringstream in{std::string(line.substr(close + 2))};
    // proc(5): after comm come state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17)
    // ... num_threads(20); here field 3 is index 0.
    std::vector<std::string> f;
    std::string w;
    while (f.size() < 18 && in >> w)
        f.push_back(w);
    if (f.size() < 18) return std::nullopt;
    auto num = [](const std::string& s) -> std::optional<uint64_t> {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
        return uint64_t(std::max<int64_t>(v, 0));
    };
    ProcStat st;
    auto ppid = num(f[1]), ut = num(f[11]), stt = num(f[12]), cut = num(f[13]), cst = num(f[14]),
         thr = num(f[17]);
    if (!ppid || !ut || !stt || !cut || !cst || !thr) return std::nullopt;
    st.ppid = pid_t(*ppid);
    st.utime = *ut;
    st.stime = *stt;
    st.cutime = *cut;
    st.cstime = *cst;
    st.threads = *thr;
    return st;
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
    auto s = slurp("/proc/" + std::to_string(pid) + "/stat");
    if (!s) return std::nullopt;
    return parse_proc_stat(*s);
}

std::optional<uint64_t> proc_kib_field(std::string_view text, std::string_view key) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        if (line.size() > key.size() && line.substr(0, key.size()) == key &&
            line[key.size()] == ':') {
            std::string_view v = line.substr(key.size() + 1);
            while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
                v.remove_prefix(1);
            uint64_t n = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc()) return std::nullopt;
            return n;
        }
        pos = end + 1;
    }
    return std::nullopt;
}

std::vector<pid_t> ServerProcs::processes() const {
    std::vector<pid_t> out;
    for (pid_t r : roots_)
        if (::kill(r, 0) == 0 || errno == EPERM) out.push_back(r);
    if (!tree_) return out;
    // Parent links of every process, then a walk down from the roots.
    std::multimap<pid_t, pid_t> children;
    if (DIR* d = ::opendir("/proc")) {
        while (dirent* e = ::readdir(d)) {
            pid_t pid = 0;
            auto [p, ec] = std::from_chars(e->d_name, e->d_name + std::strlen(e->d_name), pid);
            if (ec != std::errc() || *p) continue;
            if (auto st = read_proc_stat(pid)) children.emplace(st->ppid, pid);
        }
        ::closedir(d);
    }
    std::set<pid_t> seen(out.begin(), out.end());
    for (size_t i = 0; i < out.size(); ++i) {
        auto [b, e] = children.equal_range(out[i]);
        for (auto it = b; it != e; ++it)
            if (seen.insert(it->second).second) out.push_back(it->second);
    }
    return out;
}

double ServerProcs::cpu_seconds() const {
    uint64_t ticks = 0;
    for (pid_t p : processes())
        if (auto st = read_proc_stat(p)) ticks += st->utime + st->stime + st->cutime + st->cstime;
    return ticks_to_seconds(ticks);
}

ServerSample ServerProcs::sample() const {
    ServerSample s;
    uint64_t ticks = 0;
    for (pid_t p : processes()) {
        std::string dir = "/proc/" + std::to_string(p);
        auto st = read_proc_stat(p);
        if (!st) continue;
        ++s.processes;
        ticks += st->utime + st->stime + st->cutime + st->cstime;
        s.threads += st->threads;
        if (auto status = slurp(dir + "/status"))
            s.rss_kib += proc_kib_field(*status, "VmRSS").value_or(0);
        if (auto rollup = slurp(dir + "/smaps_rollup"))
            s.pss_kib += proc_kib_field(*rollup, "Pss").value_or(0);
        s.fds += count_dir_entries(dir + "/fd");
    }
    s.cpu_seconds = ticks_to_seconds(ticks);
    return s;
}

}  // namespace daxsmbd::bench
