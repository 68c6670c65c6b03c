// smbload: the third-party load client of tests/bench/compare.sh. The same I/O patterns as
// daxsmbd-load (4 KiB random and 1 MiB sequential reads and writes over one file, N connections
// with one request in flight each), but every request goes through Samba's libsmbclient, the
// library behind smbclient, gvfs and KIO: a comparison of daxsmbd with Samba then does not rest
// on our own client alone, and libsmbclient's own cost per request shows in its latencies.
//
// libsmbclient is synchronous and its contexts are not meant to be shared between threads, so
// each connection is a process of its own (fork): --workers N is N TCP connections, sessions,
// tree connects and opens, each with exactly one request in flight (fio's numjobs=N, iodepth=1).
// The workers count into a shared anonymous mapping; the parent prints one JSON line:
//   {"tool":"smbload", "lib":..., "op":..., "ops":..., "errors":..., "iops":..., "mib_s":...,
//    "lat_us":{"mean","min","p50","p90","p99","p999","max"}, "client_cpu_s":...}
// Latency is the wall time of one smbc read or write call (with its lseek), CLOCK_MONOTONIC.
//
//   smbload --host 127.0.0.1 --port 4450 --share data --user alice --password pw
//           --file bench.dat --size 256m --prepare never --op randread --bs 4k --workers 8
//           --duration 10 --ramp 1
#include <fcntl.h>
#include <getopt.h>
#include <libsmbclient.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/load_stats.h"

namespace {

using daxsmbd::bench::LatencyHistogram;

enum class Op { RandRead, RandWrite, SeqRead, SeqWrite };
constexpr const char* kOpNames[] = {"randread", "randwrite", "seqread", "seqwrite"};

struct Options {
    std::string host = "127.0.0.1", share = "data", user = "alice", password = "pw";
    std::string domain = "WORKGROUP", file = "smbload.dat", prepare = "auto";
    std::string max_proto = "SMB3";
    int port = 445;
    Op op = Op::RandRead;
    uint64_t bs = 4096, size = 256ull << 20;
    int workers = 1;
    double duration = 10, ramp = 1;
    int debug = 0;
    uint64_t seed = 0;
};
Options o;

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "smbload: %s\n", msg.c_str());
    std::exit(2);
}

uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// xorshift64: cheap, and each worker's sequence is reproducible from --seed.
uint64_t next_random(uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

void usage() {
    std::fputs(
        "usage: smbload [options]\n"
        "  --host HOST        server address (127.0.0.1)\n"
        "  --port PORT        TCP port (445)\n"
        "  --share NAME       share (data)\n"
        "  --user U --password P --domain D   credentials (alice, pw, WORKGROUP)\n"
        "  --file PATH        file in the share (smbload.dat)\n"
        "  --size SIZE        file size, e.g. 256m (256m)\n"
        "  --prepare MODE     auto: write the file when it is smaller than --size; always; never\n"
        "  --op OP            randread | randwrite | seqread | seqwrite (randread)\n"
        "  --bs SIZE          block size, e.g. 4k, 1m (4k)\n"
        "  --workers N        connections (processes), one request in flight each (1)\n"
        "  --duration SEC     measured seconds (10)\n"
        "  --ramp SEC         unmeasured warm-up seconds before (1)\n"
        "  --max-proto P      client max protocol (SMB3)\n"
        "  --seed N           random seed (default: from the clock)\n"
        "  --debug N          libsmbclient debug level (0)\n",
        stderr);
    std::exit(2);
}

uint64_t size_arg(const char* s) {
    auto v = daxsmbd::bench::parse_size(s);
    if (!v) die(std::string("bad size '") + s + "'");
    return *v;
}

void parse_args(int argc, char** argv) {
    enum { kHost = 1, kPort, kShare, kUser, kPassword, kDomain, kFile, kSize, kPrepare, kOp, kBs,
           kWorkers, kDuration, kRamp, kMaxProto, kSeed, kDebug, kHelp };
    static const option longopts[] = {
        {"host", 1, nullptr, kHost},         {"port", 1, nullptr, kPort},
        {"share", 1, nullptr, kShare},       {"user", 1, nullptr, kUser},
        {"password", 1, nullptr, kPassword}, {"domain", 1, nullptr, kDomain},
        {"file", 1, nullptr, kFile},         {"size", 1, nullptr, kSize},
        {"prepare", 1, nullptr, kPrepare},   {"op", 1, nullptr, kOp},
        {"bs", 1, nullptr, kBs},             {"workers", 1, nullptr, kWorkers},
        {"duration", 1, nullptr, kDuration}, {"ramp", 1, nullptr, kRamp},
        {"max-proto", 1, nullptr, kMaxProto}, {"seed", 1, nullptr, kSeed},
        {"debug", 1, nullptr, kDebug},       {"help", 0, nullptr, kHelp},
        {nullptr, 0, nullptr, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
        switch (c) {
            case kHost: o.host = optarg; break;
            case kPort: o.port = std::atoi(optarg); break;
            case kShare: o.share = optarg; break;
            case kUser: o.user = optarg; break;
            case kPassword: o.password = optarg; break;
            case kDomain: o.domain = optarg; break;
            case kFile: o.file = optarg; break;
            case kSize: o.size = size_arg(optarg); break;
            case kPrepare: o.prepare = optarg; break;
            case kOp: {
                bool found = false;
                for (int i = 0; i < 4; ++i) {
                    if (std::strcmp(optarg, kOpNames[i]) == 0) {
                        o.op = Op(i);
                        found = true;
                    }
                }
                if (!found) die(std::string("unknown op '") + optarg + "'");
                break;
            }
            case kBs: o.bs = size_arg(optarg); break;
            case kWorkers: o.workers = std::atoi(optarg); break;
            case kDuration: o.duration = std::atof(optarg); break;
            case kRamp: o.ramp = std::atof(optarg); break;
            case kMaxProto: o.max_proto = optarg; break;
            case kSeed: o.seed = std::strtoull(optarg, nullptr, 0); break;
            case kDebug: o.debug = std::atoi(optarg); break;
            default: usage();
        }
    }
    if (optind != argc) usage();
    if (o.bs == 0 || o.size < o.bs) die("need 0 < --bs <= --size");
    if (o.workers < 1 || o.workers > 1024) die("--workers must be 1..1024");
    if (o.duration <= 0 || o.ramp < 0) die("--duration must be > 0 and --ramp >= 0");
    if (o.prepare != "auto" && o.prepare != "always" && o.prepare != "never")
        die("--prepare must be auto, always or never");
    if (o.seed == 0) o.seed = now_ns() ^ uint64_t(getpid());
}

// ---------------------------------------------------------------- libsmbclient
// libsmbclient reads a client smb.conf; ours keeps /etc/samba/smb.conf (whatever it holds on
// this machine) out of the measurement, and turns Kerberos off: the servers use NTLM here.
std::string g_client_conf;

void write_client_conf() {
    char path[] = "/tmp/smbload-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) die(std::string("mkstemp: ") + std::strerror(errno));
    std::string text =
        "[global]\n  client use kerberos = off\n  client signing = if_required\n"
        "  client smb encrypt = if_required\n";
    if (write(fd, text.data(), text.size()) != ssize_t(text.size())) die("cannot write the client config");
    close(fd);
    g_client_conf = path;
}

void auth_fn(SMBCCTX*, const char*, const char*, char* wg, int wglen, char* un, int unlen, char* pw,
             int pwlen) {
    std::snprintf(wg, size_t(wglen), "%s", o.domain.c_str());
    std::snprintf(un, size_t(unlen), "%s", o.user.c_str());
    std::snprintf(pw, size_t(pwlen), "%s", o.password.c_str());
}

SMBCCTX* new_context() {
    SMBCCTX* ctx = smbc_new_context();
    if (!ctx) die(std::string("smbc_new_context: ") + std::strerror(errno));
    smbc_setDebug(ctx, o.debug);
    smbc_setOptionDebugToStderr(ctx, 1);
    smbc_setFunctionAuthDataWithContext(ctx, auth_fn);
    smbc_setOptionUseKerberos(ctx, 0);
    smbc_setOptionFallbackAfterKerberos(ctx, 1);
    smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
    smbc_setPort(ctx, uint16_t(o.port));
    smbc_setTimeout(ctx, 60000);
    smbc_setUser(ctx, o.user.c_str());
    smbc_setWorkgroup(ctx, o.domain.c_str());
    if (!smbc_init_context(ctx)) die(std::string("smbc_init_context: ") + std::strerror(errno));
    // The configuration is process-wide but can only be loaded through an initialised context;
    // it is read before the first connection.
    if (smbc_setConfiguration(ctx, g_client_conf.c_str()) != 0)
        std::fprintf(stderr, "smbload: warning: cannot load %s\n", g_client_conf.c_str());
    if (!smbc_setOptionProtocols(ctx, "SMB2_02", o.max_proto.c_str()))
        die("smbc_setOptionProtocols failed");
    return ctx;
}

std::string file_url() {
    std::string path = o.file;
    while (!path.empty() && (path[0] == '/' || path[0] == '\\')) path.erase(0, 1);
    bool v6 = o.host.find(':') != std::string::npos && o.host[0] != '[';
    return "smb://" + (v6 ? "[" + o.host + "]" : o.host) + "/" + o.share + "/" + path;
}

void fill(unsigned char* buf, size_t n, uint64_t& s) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = next_random(s);
        std::memcpy(buf + i, &v, 8);
    }
    for (; i < n; ++i) buf[i] = static_cast<unsigned char>(i);
}

// Writes the test file when --prepare asks for it, so that every block read exists. In a child
// process: the workers must not inherit any libsmbclient state.
bool prepare_file() {
    SMBCCTX* ctx = new_context();
    const std::string url = file_url();
    bool need = o.prepare == "always";
    struct stat st{};
    if (o.prepare == "auto")
        need = smbc_getFunctionStat(ctx)(ctx, url.c_str(), &st) != 0 || uint64_t(st.st_size) < o.size;
    if (need) {
        std::fprintf(stderr, "smbload: writing %s (%llu bytes)\n", url.c_str(), (unsigned long long)o.size);
        SMBCFILE* f = smbc_getFunctionOpen(ctx)(ctx, url.c_str(), O_RDWR | O_CREAT, 0644);
        if (!f) {
            std::fprintf(stderr, "smbload: open %s: %s\n", url.c_str(), std::strerror(errno));
            return false;
        }
        std::vector<unsigned char> buf(1 << 20);
        uint64_t s = o.seed | 1;
        for (uint64_t off = 0; off < o.size; off += buf.size()) {
            size_t n = size_t(std::min<uint64_t>(buf.size(), o.size - off));
            fill(buf.data(), n, s);
            if (smbc_getFunctionLseek(ctx)(ctx, f, off_t(off), SEEK_SET) < 0 ||
                smbc_getFunctionWrite(ctx)(ctx, f, buf.data(), n) != ssize_t(n)) {
                std::fprintf(stderr, "smbload: write at %llu: %s\n", (unsigned long long)off,
                             std::strerror(errno));
                return false;
            }
        }
        smbc_getFunctionClose(ctx)(ctx, f);
    }
    smbc_free_context(ctx, 1);
    return true;
}

// ---------------------------------------------------------------- workers
// One slot per worker in the shared mapping. The state and the start signal are atomics (lock
// free, so they work across processes); the counters are only read after the worker exited.
struct Slot {
    std::atomic<int> state{0};  // 1 connected and opened, -1 failed
    uint64_t bytes = 0, errors = 0, short_io = 0;
    char error[160] = {};
    LatencyHistogram hist;
};
struct Board {
    std::atomic<int> go{0};  // 1 start, 2 abort
    uint64_t start_ns = 0;   // measuring starts (after the ramp)
    uint64_t end_ns = 0;
};

[[noreturn]] void worker(Board* board, Slot* slot, int id) {
    SMBCCTX* ctx = new_context();
    const std::string url = file_url();
    const bool writes = o.op == Op::RandWrite || o.op == Op::SeqWrite;
    SMBCFILE* f = smbc_getFunctionOpen(ctx)(ctx, url.c_str(), writes ? O_RDWR : O_RDONLY, 0);
    if (!f) {
        std::snprintf(slot->error, sizeof slot->error, "open %s: %s", url.c_str(), std::strerror(errno));
        slot->state = -1;
        _exit(1);
    }
    auto rd = smbc_getFunctionRead(ctx);
    auto wr = smbc_getFunctionWrite(ctx);
    auto seek = smbc_getFunctionLseek(ctx);
    void* mem = nullptr;
    if (posix_memalign(&mem, 4096, o.bs) != 0) _exit(1);
    auto* buf = static_cast<unsigned char*>(mem);
    uint64_t rs = (o.seed << 20) ^ (0x9E3779B97F4A7C15ull * uint64_t(id + 1));
    if (rs == 0) rs = 1;
    fill(buf, o.bs, rs);

    // Sequential streams: each worker walks its own slice of the file, wrapping at its end.
    const uint64_t blocks = o.size / o.bs;
    const uint64_t slice = std::max<uint64_t>(1, blocks / uint64_t(o.workers));
    const uint64_t first = uint64_t(id) * slice % blocks;
    uint64_t pos = 0;

    // One unmeasured request, so the first measured one finds the connection warm.
    seek(ctx, f, 0, SEEK_SET);
    if (writes) (void)wr(ctx, f, buf, o.bs); else (void)rd(ctx, f, buf, o.bs);
    slot->state = 1;
    while (board->go == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (board->go != 1) _exit(0);

    for (;;) {
        uint64_t blk;
        if (o.op == Op::RandRead || o.op == Op::RandWrite) {
            blk = next_random(rs) % blocks;
        } else {
            blk = (first + pos) % blocks;
            pos = (pos + 1) % slice;
        }
        const uint64_t t0 = now_ns();
        if (t0 >= board->end_ns) break;
        ssize_t n = -1;
        if (seek(ctx, f, off_t(blk * o.bs), SEEK_SET) >= 0)
            n = writes ? wr(ctx, f, buf, o.bs) : rd(ctx, f, buf, o.bs);
        const uint64_t t1 = now_ns();
        if (t0 < board->start_ns) continue;  // the ramp
        if (n < 0) {
            if (slot->errors++ == 0)
                std::snprintf(slot->error, sizeof slot->error, "%s at %llu: %s", writes ? "write" : "read",
                              (unsigned long long)(blk * o.bs), std::strerror(errno));
            if (slot->errors > 100) break;
            continue;
        }
        if (uint64_t(n) != o.bs) ++slot->short_io;
        slot->bytes += uint64_t(n);
        slot->hist.add(t1 - t0);
    }
    smbc_getFunctionClose(ctx)(ctx, f);
    smbc_free_context(ctx, 1);
    _exit(0);
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
    parse_args(argc, argv);
    write_client_conf();
    signal(SIGPIPE, SIG_IGN);

    pid_t prep = fork();
    if (prep == 0) _exit(prepare_file() ? 0 : 1);
    int st = 0;
    waitpid(prep, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        unlink(g_client_conf.c_str());
        die("preparing the file failed");
    }

    const size_t bytes = sizeof(Board) + size_t(o.workers) * sizeof(Slot);
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) die(std::string("mmap: ") + std::strerror(errno));
    auto* board = new (mem) Board;
    auto* slots = reinterpret_cast<Slot*>(static_cast<char*>(mem) + sizeof(Board));
    for (int i = 0; i < o.workers; ++i) new (&slots[i]) Slot;

    std::vector<pid_t> pids;
    for (int i = 0; i < o.workers; ++i) {
        pid_t p = fork();
        if (p < 0) die(std::string("fork: ") + std::strerror(errno));
        if (p == 0) worker(board, &slots[i], i);
        pids.push_back(p);
    }
    // Start together once every worker is connected (or give up on the ones that failed).
    const uint64_t deadline = now_ns() + 120'000'000'000ull;
    int failed = 0;
    for (;;) {
        int ready = 0;
        failed = 0;
        for (int i = 0; i < o.workers; ++i) {
            ready += slots[i].state == 1;
            failed += slots[i].state == -1;
        }
        if (ready + failed == o.workers || now_ns() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (failed) {
        for (int i = 0; i < o.workers; ++i) {
            if (slots[i].state == -1) {
                std::fprintf(stderr, "smbload: worker %d: %s\n", i, slots[i].error);
                break;
            }
        }
        board->go = 2;
        for (pid_t p : pids) waitpid(p, nullptr, 0);
        unlink(g_client_conf.c_str());
        die(std::to_string(failed) + " worker(s) could not connect or open the file");
    }
    board->start_ns = now_ns() + uint64_t(o.ramp * 1e9);
    board->end_ns = board->start_ns + uint64_t(o.duration * 1e9);
    board->go = 1;
    for (pid_t p : pids) waitpid(p, nullptr, 0);
    unlink(g_client_conf.c_str());

    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    const double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    LatencyHistogram all;
    uint64_t total_bytes = 0, errors = 0, short_io = 0;
    std::string first_error;
    for (int i = 0; i < o.workers; ++i) {
        all.merge(slots[i].hist);
        total_bytes += slots[i].bytes;
        errors += slots[i].errors;
        short_io += slots[i].short_io;
        if (first_error.empty() && slots[i].error[0]) first_error = slots[i].error;
    }
    // Rates over the nominal window: a request counts when it started inside it.
    const uint64_t ops = all.count();
    const double iops = double(ops) / o.duration;
    const double mib_s = double(total_bytes) / o.duration / (1024.0 * 1024.0);
    std::printf(
        "{\"tool\":\"smbload\",\"lib\":%s,\"host\":%s,\"port\":%d,\"share\":%s,\"file\":%s,"
        "\"op\":\"%s\",\"bs\":%llu,\"file_size\":%llu,\"workers\":%d,\"duration_s\":%.3f,"
        "\"ramp_s\":%.3f,\"ops\":%llu,\"errors\":%llu,\"short_io\":%llu,\"iops\":%.1f,"
        "\"mib_s\":%.2f,\"lat_us\":{\"mean\":%.1f,\"min\":%.1f,\"p50\":%.1f,\"p90\":%.1f,"
        "\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f},\"client_cpu_s\":%.2f",
        json_string(std::string("libsmbclient ") + smbc_version()).c_str(), json_string(o.host).c_str(),
        o.port, json_string(o.share).c_str(), json_string(o.file).c_str(), kOpNames[int(o.op)],
        (unsigned long long)o.bs, (unsigned long long)o.size, o.workers, o.duration, o.ramp,
        (unsigned long long)ops, (unsigned long long)errors, (unsigned long long)short_io, iops, mib_s,
        all.mean_ns() / 1e3, double(all.min_ns()) / 1e3, all.percentile_ns(0.50) / 1e3,
        all.percentile_ns(0.90) / 1e3, all.percentile_ns(0.99) / 1e3, all.percentile_ns(0.999) / 1e3,
        double(all.max_ns()) / 1e3, cpu);
    if (!first_error.empty()) std::printf(",\"first_error\":%s", json_string(first_error).c_str());
    std::printf("}\n");
    std::fflush(stdout);
    return errors || ops == 0 ? 1 : 0;
}
