// daxsmbd-load: SMB2/3 I/O load generator on our own client library (tests/client/), for
// side-by-side measurements of daxsmbd and Samba (tests/bench/compare.sh, scale.sh).
//
// I/O mode: --conns connections, each with its own session, tree connect and open of one test
// file, each driven by one thread that keeps --qd requests in flight (pipelined: requests go out
// as credits allow, completions are taken in arrival order). Random offsets are uniform and
// block-aligned over the file; sequential streams give each connection its own slice of the
// file. After --ramp seconds the completions of --duration seconds are counted: IOPS, MiB/s,
// latency (send to response, client side) mean/p50/p99/p99.9/max, and, with --server-pid, the
// server's CPU time (utime+stime from /proc/<pid>/stat) per GiB and per 1000 I/Os.
//
// Scale mode (--scale N): a probe connection measures 4 KiB QD1 random reads on the idle server,
// then N more connections are set up (negotiate, session, tree connect, open) and held idle
// while the probe measures again; reported with the server's RSS/PSS, descriptors and threads
// before and after, i.e. the cost of one idle connection.
//
// Output: human-readable lines, then one JSON object on a line of its own (starting with '{').
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "protocol/access_mask.h"
#include "tests/bench/load_stats.h"
#include "tests/client/smb2_client.h"

namespace daxsmbd::bench {
namespace {

using client::ClientOptions;
using client::NegotiateOptions;
using client::Smb2Client;
using namespace protocol;
using Clock = std::chrono::steady_clock;

enum class Pattern { Random, Sequential };

struct Options {
    std::string host = "127.0.0.1";
    uint16_t port = 445;
    std::string share = "data";
    std::string user = "alice";
    std::string password = "pw";
    std::string domain;
    std::string file = "daxsmbd-load.dat";
    Pattern pattern = Pattern::Random;
    int read_percent = 100;  // randread 100, randwrite 0, randrw --rwmix
    uint64_t bs = 4096;
    uint64_t size = 256ull << 20;
    int qd = 1;
    int conns = 1;
    int threads = 0;  // 0: one per connection
    double duration = 10;
    double ramp = 1;
    bool write_through = false;
    bool sign = false;
    uint16_t max_dialect = dialect::k311;
    uint16_t min_dialect = dialect::k210;
    std::string prepare = "auto";  // auto | always | never | only
    std::vector<pid_t> server_pids;
    bool server_tree = false;
    int scale = 0;
    int setup_threads = 4;
    int conns_per_source = 0;  // scale mode: idle connections per 127.0.1.x source address
    std::string label;
    uint64_t seed = 0;
    bool quiet = false;
};

[[noreturn]] void usage(int rc) {
    std::fprintf(rc ? stderr : stdout, R"(usage: daxsmbd-load [options]
connection:
  --host HOST            server address (127.0.0.1)
  --port PORT            TCP port (445)
  --share NAME           share (data)
  --user U --password P [--domain D]   NTLMv2 credentials (alice / pw)
  --dialect D            highest dialect offered: 2.1, 3.0, 3.0.2, 3.1.1 (3.1.1)
  --min-dialect D        lowest dialect offered (2.1)
  --sign                 sign every request (the server then signs every response)
load:
  --op OP                randread | randwrite | randrw | seqread | seqwrite | seqrw (randread)
  --rwmix PCT            percentage of reads for randrw/seqrw (70)
  --bs SIZE              block size: 4k, 64k, 1m ... (4k)
  --size SIZE            file size (256m)
  --file PATH            test file inside the share (daxsmbd-load.dat)
  --qd N                 requests in flight per connection (1)
  --conns N              connections (1)
  --threads N            client threads; connections are spread over them and each thread
                         polls its connections (default: one thread per connection)
  --duration SEC         measured seconds (10)
  --ramp SEC             seconds run before measuring (1)
  --write-through        SMB2_WRITEFLAG_WRITE_THROUGH on every WRITE
  --prepare MODE         auto: write the file through SMB when it is smaller than --size;
                         always; never; only (write it, then exit) (auto)
server figures:
  --server-pid PID       the server process (repeatable): CPU from /proc/PID/stat
  --server-tree          count PID's live descendants too (Samba: one smbd per connection)
scale mode:
  --scale N              hold N idle connections (tree connect + open each) while a probe
                         connection measures 4k QD1 random reads; reports server memory,
                         descriptors and threads, before and after
  --setup-threads N      threads opening the idle connections (4)
  --conns-per-source N   idle connection i connects from 127.0.1.(1 + i / N), so that a
                         server's per-address connection limit is not what is measured
                         (loopback servers only; 0: no binding)
other:
  --label TEXT           copied into the JSON line
  --seed N               random seed (time based)
  --quiet                only the JSON line
)");
    std::exit(rc);
}

uint16_t parse_dialect(const std::string& s) {
    if (s == "2.0.2" || s == "2.02") return dialect::k202;
    if (s == "2.1" || s == "2.10") return dialect::k210;
    if (s == "3.0" || s == "3.00") return dialect::k300;
    if (s == "3.0.2" || s == "3.02") return dialect::k302;
    if (s == "3.1.1" || s == "3.11") return dialect::k311;
    std::fprintf(stderr, "daxsmbd-load: unknown dialect '%s'\n", s.c_str());
    std::exit(2);
}

Options parse_args(int argc, char** argv) {
    Options o;
    std::string op = "randread";
    int rwmix = 70;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "daxsmbd-load: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto size = [&]() {
            std::string v = val();
            auto n = parse_size(v);
            if (!n || *n == 0) {
                std::fprintf(stderr, "daxsmbd-load: bad size '%s' for %s\n", v.c_str(), a.c_str());
                std::exit(2);
            }
            return *n;
        };
        auto integer = [&](long lo, long hi) {
            std::string v = val();
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n < lo || n > hi) {
                std::fprintf(stderr, "daxsmbd-load: %s wants a number in [%ld, %ld], not '%s'\n",
                             a.c_str(), lo, hi, v.c_str());
                std::exit(2);
            }
            return n;
        };
        auto seconds = [&]() {
            std::string v = val();
            char* end = nullptr;
            double d = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || d < 0) {
                std::fprintf(stderr, "daxsmbd-load: bad seconds '%s' for %s\n", v.c_str(),
                             a.c_str());
                std::exit(2);
            }
            return d;
        };
        if (a == "--host") {
            o.host = val();
        } else if (a == "--port") {
            o.port = uint16_t(integer(1, 65535));
        } else if (a == "--share") {
            o.share = val();
        } else if (a == "--user") {
            o.user = val();
        } else if (a == "--password") {
            o.password = val();
        } else if (a == "--domain") {
            o.domain = val();
        } else if (a == "--dialect") {
            o.max_dialect = parse_dialect(val());
        } else if (a == "--min-dialect") {
            o.min_dialect = parse_dialect(val());
        } else if (a == "--sign") {
            o.sign = true;
        } else if (a == "--op") {
            op = val();
        } else if (a == "--rwmix") {
            rwmix = int(integer(0, 100));
        } else if (a == "--bs") {
            o.bs = size();
        } else if (a == "--size") {
            o.size = size();
        } else if (a == "--file") {
            o.file = val();
        } else if (a == "--qd") {
            o.qd = int(integer(1, 1024));
        } else if (a == "--conns") {
            o.conns = int(integer(1, 4096));
        } else if (a == "--threads") {
            o.threads = int(integer(1, 4096));
        } else if (a == "--duration") {
            o.duration = seconds();
        } else if (a == "--ramp") {
            o.ramp = seconds();
        } else if (a == "--write-through") {
            o.write_through = true;
        } else if (a == "--prepare") {
            o.prepare = val();
            if (o.prepare != "auto" && o.prepare != "always" && o.prepare != "never" &&
                o.prepare != "only")
                usage(2);
        } else if (a == "--server-pid") {
            o.server_pids.push_back(pid_t(integer(1, 1 << 30)));
        } else if (a == "--server-tree") {
            o.server_tree = true;
        } else if (a == "--scale") {
            o.scale = int(integer(0, 1000000));
        } else if (a == "--conns-per-source") {
            o.conns_per_source = int(integer(0, 1000000));
        } else if (a == "--setup-threads") {
            o.setup_threads = int(integer(1, 64));
        } else if (a == "--label") {
            o.label = val();
        } else if (a == "--seed") {
            o.seed = uint64_t(integer(0, 1L << 62));
        } else if (a == "--quiet") {
            o.quiet = true;
        } else if (a == "-h" || a == "--help") {
            usage(0);
        } else {
            std::fprintf(stderr, "daxsmbd-load: unknown option %s\n", a.c_str());
            usage(2);
        }
    }
    if (op == "randread" || op == "randwrite" || op == "randrw") {
        o.pattern = Pattern::Random;
    } else if (op == "seqread" || op == "seqwrite" || op == "seqrw") {
        o.pattern = Pattern::Sequential;
    } else {
        std::fprintf(stderr, "daxsmbd-load: unknown --op %s\n", op.c_str());
        std::exit(2);
    }
    o.read_percent = op.ends_with("read") ? 100 : op.ends_with("write") ? 0 : rwmix;
    if (o.bs > o.size) {
        std::fprintf(stderr, "daxsmbd-load: --bs is larger than --size\n");
        std::exit(2);
    }
    if (o.min_dialect > o.max_dialect) {
        std::fprintf(stderr, "daxsmbd-load: --min-dialect is above --dialect\n");
        std::exit(2);
    }
    if (o.seed == 0) o.seed = uint64_t(Clock::now().time_since_epoch().count());
    return o;
}

std::string op_name(const Options& o) {
    std::string p = o.pattern == Pattern::Random ? "rand" : "seq";
    if (o.read_percent == 100) return p + "read";
    if (o.read_percent == 0) return p + "write";
    return p + "rw" + std::to_string(o.read_percent);
}

std::string dialect_text(Dialect d) {
    switch (d) {
        case Dialect::Smb202:
            return "2.0.2";
        case Dialect::Smb210:
            return "2.1";
        case Dialect::Smb300:
            return "3.0";
        case Dialect::Smb302:
            return "3.0.2";
        case Dialect::Smb311:
            return "3.1.1";
        default:
            return "none";
    }
}

// Credits for `inflight` requests of `bs` bytes each (MS-SMB2 3.1.5.2: one per started 64 KiB),
// plus a margin for the occasional other request.
uint16_t credits_for(uint64_t bs, int inflight) {
    uint64_t charge = (bs + 65535) / 65536;
    return uint16_t(std::min<uint64_t>(charge * uint64_t(inflight) + 16, 8000));
}

struct Conn {
    std::unique_ptr<Smb2Client> c;
    FileId fid;
    int64_t end_of_file = 0;
};

// Connect, negotiate, authenticate, tree connect and open `file`; a message on failure.
Result<Conn> open_connection(const Options& o, uint32_t access, uint32_t disposition,
                             uint16_t credit_target, std::string* why,
                             const std::string& source = {}) {
    ClientOptions co;
    co.source_address = source;
    co.credit_target = credit_target;
    co.force_sign = o.sign;
    co.timeout = std::chrono::milliseconds(60000);
    Conn conn;
    conn.c = std::make_unique<Smb2Client>(co);
    auto& c = *conn.c;
    if (auto st = c.connect(o.host, o.port); !st) {
        *why = "connect: " + std::string(status_name(st.status()));
        return Error(st.status());
    }
    NegotiateOptions no;
    no.dialects.clear();
    for (uint16_t d : {dialect::k202, dialect::k210, dialect::k300, dialect::k302, dialect::k311})
        if (d >= o.min_dialect && d <= o.max_dialect) no.dialects.push_back(d);
    no.signing_required = o.sign;
    auto n = c.negotiate(no);
    if (!n.ok()) {
        *why = "negotiate: " + std::string(status_name(n.status));
        return Error(n.status);
    }
    auto s = c.session_setup(o.user, o.password, o.domain);
    if (!s.ok()) {
        *why = "session setup: " + std::string(status_name(s.status));
        return Error(s.status);
    }
    auto t = c.tree_connect(o.share);
    if (!t.ok()) {
        *why = "tree connect \\\\" + o.host + "\\" + o.share + ": " +
               std::string(status_name(t.status));
        return Error(t.status);
    }
    auto f = c.open(o.file, access, disposition);
    if (!f.ok()) {
        *why = "open " + o.file + ": " + std::string(status_name(f.status));
        return Error(f.status);
    }
    conn.fid = f.body.file_id;
    conn.end_of_file = f.body.end_of_file;
    return conn;
}

constexpr uint32_t kReadWrite =
    access_mask::kFileReadData | access_mask::kFileWriteData | access_mask::kFileReadAttributes;
constexpr uint32_t kReadOnly = access_mask::kFileReadData | access_mask::kFileReadAttributes;

void fill_random(std::vector<std::byte>& buf, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
        uint64_t v = rng();
        std::memcpy(buf.data() + i, &v, 8);
    }
}

// Writes the test file through SMB (1 MiB writes, 4 in flight) unless it is big enough.
bool prepare_file(const Options& o) {
    std::string why;
    auto conn =
        open_connection(o, kReadWrite, create_disposition::kOpenIf, credits_for(1 << 20, 4), &why);
    if (!conn) {
        std::fprintf(stderr, "daxsmbd-load: prepare: %s\n", why.c_str());
        return false;
    }
    auto& c = *conn->c;
    bool need =
        o.prepare == "always" || o.prepare == "only" || uint64_t(conn->end_of_file) < o.size;
    if (need) {
        uint64_t chunk = std::min<uint64_t>({1 << 20, o.size, c.max_write_size()});
        std::vector<std::byte> buf(chunk);
        fill_random(buf, o.seed ^ 0x5eed);
        uint64_t off = 0;
        int inflight = 0;
        bool ok = true;
        while (ok && (off < o.size || inflight)) {
            if (off < o.size && inflight < 4) {
                WriteRequest w;
                w.file_id = conn->fid;
                w.offset = off;
                w.data = Bytes(buf.data(), std::min<uint64_t>(chunk, o.size - off));
                client::CallOptions co;
                co.payload = w.data.size();
                auto mid = c.send(Command::Write, w, co);
                if (!mid) {
                    std::fprintf(stderr, "daxsmbd-load: prepare: write: %s\n",
                                 std::string(status_name(mid.status())).c_str());
                    return false;
                }
                off += w.data.size();
                ++inflight;
                continue;
            }
            auto r = c.wait_any();
            --inflight;
            if (!r.ok()) {
                std::fprintf(stderr, "daxsmbd-load: prepare: write: %s\n",
                             std::string(status_name(r.status)).c_str());
                ok = false;
            }
        }
        if (!ok) return false;
        c.flush(conn->fid);
        if (!o.quiet)
            std::printf("prepared %s: %" PRIu64 " MiB written through SMB\n", o.file.c_str(),
                        o.size >> 20);
    }
    c.close(conn->fid);
    return true;
}

// ---- the I/O run
// ---------------------------------------------------------------------------------

enum Phase : int { kRamp = 0, kMeasure = 1, kStop = 2 };

struct WorkerResult {
    LatencyHistogram lat;
    uint64_t ops = 0;
    uint64_t reads = 0;
    uint64_t writes = 0;
    uint64_t bytes = 0;
    uint64_t errors = 0;
    uint64_t short_io = 0;
    std::string error;  // first error, for the report
    NtStatus first_status = NtStatus::Success;
};

struct Slot {
    uint64_t mid = UINT64_MAX;
    Clock::time_point t0;
    bool write = false;
};

class Worker {
  public:
    Worker(const Options& o, int index, std::atomic<int>& phase)
        : o_(o), index_(index), phase_(phase), rng_(o.seed + uint64_t(index) * 0x9E3779B97F4A7C15) {
        blocks_ = o.size / o.bs;
        // Sequential: each connection streams its own slice (MS-SMB2 leaves ordering to the
        // client; this is what smbload does too).
        uint64_t per = std::max<uint64_t>(blocks_ / uint64_t(o.conns), 1);
        slice_first_ = std::min<uint64_t>(per * uint64_t(index), blocks_ - 1);
        slice_blocks_ = std::min<uint64_t>(per, blocks_ - slice_first_);
        next_block_ = slice_first_;
        slots_.resize(size_t(o.qd));
        if (o.read_percent < 100) {
            wbuf_.resize(o.bs);
            fill_random(wbuf_, o.seed + uint64_t(index));
        }
    }

    // Connects (before the clock starts).
    bool connect() {
        std::string why;
        auto conn = open_connection(o_, o_.read_percent < 100 ? kReadWrite : kReadOnly,
                                    create_disposition::kOpen, credits_for(o_.bs, o_.qd), &why);
        if (!conn) {
            res_.error = "connection " + std::to_string(index_) + ": " + why;
            res_.first_status = conn.status();
            return false;
        }
        conn_ = std::move(*conn);
        if (o_.bs >
            (o_.read_percent < 100 ? conn_.c->max_write_size() : conn_.c->max_read_size())) {
            res_.error = "block size above the server's MaxRead/MaxWriteSize";
            return false;
        }
        return true;
    }

    // One connection, one thread: block in the client until the next response.
    void run() {
        start();
        for (;;) {
            fill();
            if (finished()) return;
            if (inflight_ == 0) {
                fail("no credits", client::local_status::kNoCredits);
                return;
            }
            complete();
        }
    }

    // Event-loop use (--threads below --conns): start(), then fill() and, when the socket is
    // readable, complete() until finished().
    void start() {
        charge_ = uint16_t(conn_.c->multi_credit() ? (o_.bs + 65535) / 65536 : 1);
        rd_.file_id = conn_.fid;
        rd_.length = uint32_t(o_.bs);
        wr_.file_id = conn_.fid;
        wr_.data = Bytes(wbuf_.data(), wbuf_.size());
        wr_.flags = o_.write_through ? write_flags::kWriteThrough : 0;
        co_.payload = o_.bs;
    }

    // Keeps the queue full while running, as far as the credits allow.
    void fill() {
        auto& c = *conn_.c;
        while (!done_ && phase_.load(std::memory_order_relaxed) != kStop && inflight_ < o_.qd &&
               c.credits() >= charge_) {
            Slot* s = free_slot();
            bool write =
                o_.read_percent == 0 || (o_.read_percent < 100 && pct_(rng_) >= o_.read_percent);
            uint64_t off = next_offset();
            s->t0 = Clock::now();
            s->write = write;
            Result<uint64_t> mid = Error(NtStatus::Unsuccessful);
            if (write) {
                wr_.offset = off;
                mid = c.send(Command::Write, wr_, co_);
            } else {
                rd_.offset = off;
                mid = c.send(Command::Read, rd_, co_);
            }
            if (!mid) {
                fail("send", mid.status());
                return;
            }
            s->mid = *mid;
            ++inflight_;
        }
    }

    // Takes one response (blocking until it is complete).
    void complete() {
        auto r = conn_.c->wait_any();
        auto t1 = Clock::now();
        if (!r.from_server) {
            fail("receive", r.status);
            return;
        }
        Slot* s = slot_of(r.header.message_id);
        if (!s) {
            fail("response to an unknown MessageId", client::local_status::kBadResponse);
            return;
        }
        --inflight_;
        bool measuring = phase_.load(std::memory_order_relaxed) == kMeasure;
        if (r.status != NtStatus::Success) {
            if (measuring) {
                ++res_.errors;
                if (res_.first_status == NtStatus::Success) {
                    res_.first_status = r.status;
                    res_.error = std::string(s->write ? "WRITE: " : "READ: ") +
                                 std::string(status_name(r.status));
                }
            }
        } else if (measuring) {
            uint64_t n = o_.bs;
            if (!s->write) {
                auto body = ReadResponse::parse(r.msg);
                n = body ? body->data.size() : 0;
            } else {
                auto body = WriteResponse::parse(r.msg);
                n = body ? body->count : 0;
            }
            if (n != o_.bs) ++res_.short_io;
            ++res_.ops;
            ++(s->write ? res_.writes : res_.reads);
            res_.bytes += n;
            res_.lat.add(
                uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - s->t0).count()));
        }
        s->mid = UINT64_MAX;
    }

    bool finished() const {
        return done_ || (inflight_ == 0 && phase_.load(std::memory_order_relaxed) == kStop);
    }
    int inflight() const { return inflight_; }
    int fd() const { return conn_.c->native_handle(); }
    void fail(const char* what, NtStatus st) {
        done_ = true;
        ++res_.errors;
        if (res_.error.empty())
            res_.error = std::string(what) + ": " + std::string(status_name(st));
        if (res_.first_status == NtStatus::Success) res_.first_status = st;
    }

    void close() {
        if (conn_.c && conn_.c->connected()) conn_.c->close(conn_.fid);
    }

    const WorkerResult& result() const { return res_; }
    Smb2Client* client() { return conn_.c.get(); }

  private:
    Slot* free_slot() {
        for (auto& s : slots_)
            if (s.mid == UINT64_MAX) return &s;
        return nullptr;  // unreachable: inflight < qd
    }
    Slot* slot_of(uint64_t mid) {
        for (auto& s : slots_)
            if (s.mid == mid) return &s;
        return nullptr;
    }
    uint64_t next_offset() {
        if (o_.pattern == Pattern::Random) {
            std::uniform_int_distribution<uint64_t> d(0, blocks_ - 1);
            return d(rng_) * o_.bs;
        }
        uint64_t b = next_block_++;
        if (next_block_ >= slice_first_ + slice_blocks_) next_block_ = slice_first_;
        return b * o_.bs;
    }
    const Options& o_;
    int index_;
    std::atomic<int>& phase_;
    std::mt19937_64 rng_;
    uint64_t blocks_ = 0, slice_first_ = 0, slice_blocks_ = 0, next_block_ = 0;
    std::vector<Slot> slots_;
    std::vector<std::byte> wbuf_;
    Conn conn_;
    WorkerResult res_;
    int inflight_ = 0;
    bool done_ = false;
    uint16_t charge_ = 1;
    ReadRequest rd_;
    WriteRequest wr_;
    client::CallOptions co_;
    std::uniform_int_distribution<int> pct_{0, 99};
};

// Several connections on one thread: poll() their sockets and serve whichever answered.
void run_event_loop(const std::vector<Worker*>& ws) {
    for (auto* w : ws) {
        w->start();
        w->fill();
    }
    std::vector<pollfd> pfds;
    std::vector<Worker*> polled;
    pfds.reserve(ws.size());
    polled.reserve(ws.size());
    for (;;) {
        pfds.clear();
        polled.clear();
        for (auto* w : ws) {
            if (w->finished()) continue;
            if (w->inflight() == 0) {
                w->fill();
                if (w->finished()) continue;
                if (w->inflight() == 0) {
                    w->fail("no credits", client::local_status::kNoCredits);
                    continue;
                }
            }
            pfds.push_back(pollfd{w->fd(), POLLIN, 0});
            polled.push_back(w);
        }
        if (pfds.empty()) return;
        int n = ::poll(pfds.data(), pfds.size(), 1000);
        if (n <= 0) continue;  // EINTR, or a slow server: look again
        for (size_t i = 0; i < pfds.size(); ++i) {
            if (!pfds[i].revents) continue;
            polled[i]->complete();
            polled[i]->fill();
        }
    }
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (uint8_t(ch) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", ch);
            out += b;
        } else {
            out += ch;
        }
    }
    return out;
}

struct RunFigures {
    double seconds = 0;
    uint64_t ops = 0, reads = 0, writes = 0, bytes = 0, errors = 0, short_io = 0;
    LatencyHistogram lat;
    double server_cpu_s = -1;  // -1: not measured
    double client_cpu_s = 0;   // this process (all threads) in the measured window
    std::string error;
    std::string dialect;
    bool connected = false;
};

// CPU time of this process, all threads (to show the client is not the bottleneck).
double own_cpu_seconds() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto s = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
    return s(ru.ru_utime) + s(ru.ru_stime);
}

// Runs o.conns workers: connect all, ramp, measure, stop. `server` may be empty.
RunFigures run_io(const Options& o, const ServerProcs& server) {
    RunFigures f;
    std::atomic<int> phase{kRamp};
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < o.conns; ++i)
        workers.push_back(std::make_unique<Worker>(o, i, phase));
    // Connect in parallel: thousands of sequential NTLM handshakes would take a while.
    {
        std::vector<std::thread> ts;
        std::atomic<int> next{0};
        int n = std::min(o.conns, o.setup_threads);
        std::vector<char> ok(size_t(o.conns), 0);
        for (int t = 0; t < n; ++t)
            ts.emplace_back([&] {
                for (int i = next++; i < o.conns; i = next++)
                    ok[size_t(i)] = workers[size_t(i)]->connect();
            });
        for (auto& t : ts)
            t.join();
        for (int i = 0; i < o.conns; ++i)
            if (!ok[size_t(i)]) {
                f.error = workers[size_t(i)]->result().error;
                f.errors = 1;
                return f;
            }
    }
    f.connected = true;
    f.dialect = dialect_text(workers[0]->client()->dialect());
    std::vector<std::thread> threads;
    int nthreads = o.threads > 0 ? std::min(o.threads, o.conns) : o.conns;
    if (nthreads == o.conns) {
        for (auto& w : workers)
            threads.emplace_back([&w] { w->run(); });
    } else {
        for (int t = 0; t < nthreads; ++t) {
            std::vector<Worker*> group;
            for (int i = t; i < o.conns; i += nthreads)
                group.push_back(workers[size_t(i)].get());
            threads.emplace_back([group = std::move(group)] { run_event_loop(group); });
        }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.ramp));
    double cpu0 = server.empty() ? 0 : server.cpu_seconds();
    double self0 = own_cpu_seconds();
    auto t0 = Clock::now();
    phase = kMeasure;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
    phase = kStop;
    auto t1 = Clock::now();
    double cpu1 = server.empty() ? 0 : server.cpu_seconds();
    f.client_cpu_s = own_cpu_seconds() - self0;
    for (auto& t : threads)
        t.join();
    for (auto& w : workers)
        w->close();
    f.seconds = std::chrono::duration<double>(t1 - t0).count();
    if (!server.empty()) f.server_cpu_s = cpu1 - cpu0;
    for (auto& w : workers) {
        const auto& r = w->result();
        f.ops += r.ops;
        f.reads += r.reads;
        f.writes += r.writes;
        f.bytes += r.bytes;
        f.errors += r.errors;
        f.short_io += r.short_io;
        f.lat.merge(r.lat);
        if (f.error.empty() && !r.error.empty()) f.error = r.error;
    }
    return f;
}

double iops_of(const RunFigures& f) {
    return f.seconds > 0 ? double(f.ops) / f.seconds : 0;
}
double mibs_of(const RunFigures& f) {
    return f.seconds > 0 ? double(f.bytes) / f.seconds / (1 << 20) : 0;
}

void print_human(const Options& o, const RunFigures& f, const char* title) {
    if (o.quiet) return;
    std::printf("%s\n", title);
    std::printf("  IOPS %.0f   MiB/s %.1f   I/Os %" PRIu64 " (%" PRIu64 " reads, %" PRIu64
                " writes) in %.2f s   errors %" PRIu64 "   short %" PRIu64 "\n",
                iops_of(f), mibs_of(f), f.ops, f.reads, f.writes, f.seconds, f.errors, f.short_io);
    std::printf("  latency us: mean %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
                f.lat.mean_ns() / 1e3, f.lat.percentile_ns(0.5) / 1e3,
                f.lat.percentile_ns(0.99) / 1e3, f.lat.percentile_ns(0.999) / 1e3,
                double(f.lat.max_ns()) / 1e3);
    if (f.server_cpu_s >= 0) {
        double gib = double(f.bytes) / double(1ull << 30);
        std::printf(
            "  server CPU: %.2f s in %.2f s (%.2f cores)   %.2f s per GiB   %.1f ms per 1000 "
            "I/Os\n",
            f.server_cpu_s, f.seconds, f.seconds > 0 ? f.server_cpu_s / f.seconds : 0,
            gib > 0 ? f.server_cpu_s / gib : 0, f.ops ? f.server_cpu_s / double(f.ops) * 1e6 : 0);
    }
    std::printf("  client CPU: %.2f s (%.1f us per I/O)\n", f.client_cpu_s,
                f.ops ? f.client_cpu_s / double(f.ops) * 1e6 : 0);
    if (!f.error.empty()) std::printf("  first error: %s\n", f.error.c_str());
}

std::string json_run_fields(const RunFigures& f) {
    char b[1024];
    double gib = double(f.bytes) / double(1ull << 30);
    std::snprintf(
        b, sizeof b,
        "\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64
        ",\"bytes\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"short_io\":%" PRIu64
        ",\"iops\":%.1f,\"mib_s\":%.2f,\"lat_us\":{\"mean\":%.2f,\"p50\":%.2f,\"p99\":%.2f,"
        "\"p999\":%.2f,\"max\":%.2f},\"server_cpu_s\":%.3f,\"server_cpu_s_per_gib\":%.4f,"
        "\"server_cpu_us_per_io\":%.3f,\"client_cpu_s\":%.3f,\"client_cpu_us_per_io\":%.3f",
        f.seconds, f.ops, f.reads, f.writes, f.bytes, f.errors, f.short_io, iops_of(f), mibs_of(f),
        f.lat.mean_ns() / 1e3, f.lat.percentile_ns(0.5) / 1e3, f.lat.percentile_ns(0.99) / 1e3,
        f.lat.percentile_ns(0.999) / 1e3, double(f.lat.max_ns()) / 1e3, f.server_cpu_s,
        f.server_cpu_s >= 0 && gib > 0 ? f.server_cpu_s / gib : -1.0,
        f.server_cpu_s >= 0 && f.ops ? f.server_cpu_s / double(f.ops) * 1e6 : -1.0, f.client_cpu_s,
        f.ops ? f.client_cpu_s / double(f.ops) * 1e6 : 0.0);
    return b;
}

std::string json_common(const Options& o, const std::string& dialect) {
    char b[1024];
    std::snprintf(b, sizeof b,
                  "\"tool\":\"daxsmbd-load\",\"label\":\"%s\",\"host\":\"%s\",\"port\":%u,"
                  "\"share\":\"%s\",\"file\":\"%s\",\"dialect\":\"%s\",\"sign\":%s,",
                  json_escape(o.label).c_str(), json_escape(o.host).c_str(), unsigned(o.port),
                  json_escape(o.share).c_str(), json_escape(o.file).c_str(), dialect.c_str(),
                  o.sign ? "true" : "false");
    return b;
}

int io_mode(const Options& o, const ServerProcs& server) {
    if (o.prepare != "never" && !prepare_file(o)) return 1;
    if (o.prepare == "only") return 0;
    RunFigures f = run_io(o, server);
    std::string title =
        "daxsmbd-load " + op_name(o) + " bs " + std::to_string(o.bs) + ", " +
        std::to_string(o.conns) + " conn x QD" + std::to_string(o.qd) +
        (o.threads > 0 && o.threads < o.conns ? " on " + std::to_string(o.threads) + " threads"
                                              : std::string()) +
        (o.write_through ? ", write-through" : "") + ", SMB " + f.dialect +
        (o.sign ? " signed" : "") + ", //" + o.host + ":" + std::to_string(o.port) + "/" + o.share +
        "/" + o.file;
    print_human(o, f, title.c_str());
    std::printf(
        "{%s\"op\":\"%s\",\"bs\":%" PRIu64 ",\"size\":%" PRIu64
        ",\"conns\":%d,\"threads\":%d,\"qd\":%d,\"write_through\":%s,%s,\"error\":\"%s\"}\n",
        json_common(o, f.dialect).c_str(), op_name(o).c_str(), o.bs, o.size, o.conns,
        o.threads > 0 ? std::min(o.threads, o.conns) : o.conns, o.qd,
        o.write_through ? "true" : "false", json_run_fields(f).c_str(),
        json_escape(f.error).c_str());
    std::fflush(stdout);
    return f.errors == 0 && f.connected && f.ops > 0 ? 0 : 1;
}

// ---- scale mode --------------------------------------------------------------------------------

std::string json_sample(const ServerSample& s) {
    char b[256];
    std::snprintf(b, sizeof b,
                  "{\"rss_kib\":%" PRIu64 ",\"pss_kib\":%" PRIu64 ",\"fds\":%" PRIu64
                  ",\"threads\":%" PRIu64 ",\"processes\":%" PRIu64 "}",
                  s.rss_kib, s.pss_kib, s.fds, s.threads, s.processes);
    return b;
}

int scale_mode(Options o, const ServerProcs& server) {
    if (o.prepare != "never" && !prepare_file(o)) return 1;
    // The probe: one connection, 4 KiB QD1 random reads.
    Options probe = o;
    probe.conns = 1;
    probe.qd = 1;
    probe.bs = 4096;
    probe.pattern = Pattern::Random;
    probe.read_percent = 100;
    RunFigures idle = run_io(probe, server);
    if (!idle.connected || idle.errors) {
        std::fprintf(stderr, "daxsmbd-load: probe on the idle server failed: %s\n",
                     idle.error.c_str());
        return 1;
    }
    // After the first probe, so that what one served connection leaves behind (buffer pools,
    // caches) is in both samples and the difference is the idle connections'.
    ServerSample before = server.empty() ? ServerSample{} : server.sample();

    // The idle connections: each negotiated, authenticated, tree connected, with an open file.
    std::vector<Conn> held(size_t(o.scale));
    std::atomic<int> next{0}, failed{0};
    std::string first_error;
    std::mutex mu;
    auto t0 = Clock::now();
    {
        std::vector<std::thread> ts;
        for (int t = 0; t < std::min(o.setup_threads, std::max(o.scale, 1)); ++t)
            ts.emplace_back([&] {
                for (int i = next++; i < o.scale; i = next++) {
                    std::string why, source;
                    if (o.conns_per_source > 0)
                        source = "127.0.1." + std::to_string(1 + i / o.conns_per_source);
                    auto c =
                        open_connection(o, kReadOnly, create_disposition::kOpen, 8, &why, source);
                    if (!c) {
                        ++failed;
                        std::lock_guard lk(mu);
                        if (first_error.empty())
                            first_error = "connection " + std::to_string(i) + ": " + why;
                        continue;
                    }
                    held[size_t(i)] = std::move(*c);
                }
            });
        for (auto& t : ts)
            t.join();
    }
    double setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
    int open = o.scale - failed.load();
    // Let the server settle (allocations after the last open), then look at it.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double idle_cpu0 = server.empty() ? 0 : server.cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    double idle_cpu_s = server.empty() ? -1 : server.cpu_seconds() - idle_cpu0;
    ServerSample after = server.empty() ? ServerSample{} : server.sample();
    RunFigures loaded = run_io(probe, server);
    // Are the idle connections still there? (A server may drop connections it cannot serve.)
    int alive = 0;
    for (auto& c : held)
        if (c.c && c.c->connected() &&
            c.c->wait_closed(std::chrono::milliseconds(0)) == Smb2Client::PeerState::Timeout)
            ++alive;

    double rss_per = open > 0 ? (double(after.rss_kib) - double(before.rss_kib)) / open : 0;
    double pss_per = open > 0 ? (double(after.pss_kib) - double(before.pss_kib)) / open : 0;
    double lat_ratio = idle.lat.mean_ns() > 0 ? loaded.lat.mean_ns() / idle.lat.mean_ns() : 0;
    double p99_ratio = idle.lat.percentile_ns(0.99) > 0
                           ? loaded.lat.percentile_ns(0.99) / idle.lat.percentile_ns(0.99)
                           : 0;
    if (!o.quiet) {
        std::printf(
            "daxsmbd-load scale: %d idle connections requested, %d opened (%.1f s, %.0f/s)"
            ", %d still connected after the probe\n",
            o.scale, open, setup_s, setup_s > 0 ? open / setup_s : 0, alive);
        if (!first_error.empty()) std::printf("  first setup error: %s\n", first_error.c_str());
        if (!server.empty()) {
            std::printf("  server before: RSS %" PRIu64 " KiB, PSS %" PRIu64 " KiB, %" PRIu64
                        " fds, %" PRIu64 " threads, %" PRIu64 " processes\n",
                        before.rss_kib, before.pss_kib, before.fds, before.threads,
                        before.processes);
            std::printf("  server after:  RSS %" PRIu64 " KiB, PSS %" PRIu64 " KiB, %" PRIu64
                        " fds, %" PRIu64 " threads, %" PRIu64 " processes\n",
                        after.rss_kib, after.pss_kib, after.fds, after.threads, after.processes);
            std::printf(
                "  per idle connection: RSS %.1f KiB, PSS %.1f KiB; server CPU while "
                "idle: %.3f s in 2 s\n",
                rss_per, pss_per, idle_cpu_s);
        }
        print_human(o, idle, "  probe 4k randread QD1, idle server:");
        print_human(o, loaded, "  probe 4k randread QD1, with the idle connections:");
        std::printf("  probe latency ratio (with/without): mean %.2f, p99 %.2f\n", lat_ratio,
                    p99_ratio);
    }
    std::printf(
        "{%s\"mode\":\"scale\",\"requested\":%d,\"opened\":%d,\"alive\":%d,"
        "\"setup_s\":%.2f,\"before\":%s,\"after\":%s,\"rss_kib_per_conn\":%.2f,"
        "\"pss_kib_per_conn\":%.2f,\"idle_cpu_s_per_2s\":%.3f,\"probe_idle\":{%s},"
        "\"probe_loaded\":{%s},\"probe_mean_ratio\":%.3f,\"probe_p99_ratio\":%.3f,"
        "\"error\":\"%s\"}\n",
        json_common(o, idle.dialect).c_str(), o.scale, open, alive, setup_s,
        json_sample(before).c_str(), json_sample(after).c_str(), rss_per, pss_per, idle_cpu_s,
        json_run_fields(idle).c_str(), json_run_fields(loaded).c_str(), lat_ratio, p99_ratio,
        json_escape(first_error + (first_error.empty() || loaded.error.empty() ? "" : "; ") +
                    loaded.error)
            .c_str());
    std::fflush(stdout);
    // Closing thousands of handles one by one is not measured: the sockets just close.
    return failed == 0 && loaded.errors == 0 && loaded.ops > 0 ? 0 : 1;
}

}  // namespace
}  // namespace daxsmbd::bench

int main(int argc, char** argv) {
    using namespace daxsmbd::bench;
    Options o = parse_args(argc, argv);
    // Thousands of connections in scale mode: as many descriptors as allowed.
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
    ServerProcs server(o.server_pids, o.server_tree);
    if (o.conns_per_source > 0 && (o.scale + o.conns_per_source - 1) / o.conns_per_source > 254) {
        std::fprintf(stderr, "daxsmbd-load: --scale / --conns-per-source needs > 254 addresses\n");
        return 2;
    }
    if (o.scale > 0) return scale_mode(o, server);
    return io_mode(o, server);
}
