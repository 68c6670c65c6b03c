#include "server/state/handle_journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "server/errno_status.h"
#include "server/vfs/fs_credentials.h"
#include "server/vfs/unique_fd.h"

#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif

namespace daxsmbd::server {

using protocol::ByteReader;
using protocol::Bytes;
using protocol::ByteVector;
using protocol::ByteWriter;

namespace {

constexpr uint32_t kMagic = 0x314A4850;  // "PHJ1"
constexpr size_t kRecordHeader = 16;
constexpr uint8_t kPut = 1;
constexpr uint8_t kRemove = 2;
constexpr size_t kMaxPayload = 64 * 1024;
// 2 added the app instance version and the byte-range locks; version 1 payloads still decode.
constexpr uint8_t kFormatVersion = 2;
constexpr size_t kLockBytes = 8 + 8 + 1;

std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        t[i] = c;
    }
    return t;
}

void put_guid(ByteWriter& w, const protocol::Guid& g) {
    w.bytes(Bytes(g.data(), g.size()));
}
void put_optional_guid(ByteWriter& w, const std::optional<protocol::Guid>& g) {
    w.u8(g ? 1 : 0);
    if (g) put_guid(w, *g);
}
void put_string(ByteWriter& w, const std::string& s) {
    w.u32(uint32_t(s.size()));
    w.bytes(protocol::as_bytes(s));
}

Result<protocol::Guid> get_guid(ByteReader& r) {
    DAX_TRY(auto a, r.array<16>());
    return a;
}
Result<std::optional<protocol::Guid>> get_optional_guid(ByteReader& r) {
    DAX_TRY(uint8_t present, r.u8());
    if (present > 1) return Error(NtStatus::InvalidParameter);
    if (!present) return std::optional<protocol::Guid>();
    DAX_TRY(auto g, get_guid(r));
    return std::optional<protocol::Guid>(g);
}
Result<std::string> get_string(ByteReader& r) {
    DAX_TRY(uint32_t n, r.u32());
    DAX_TRY(Bytes b, r.bytes(n));
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

Status fsync_directory(const std::string& dir) {
    vfs::UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d) return Error(errno_to_status(errno));
    if (::fsync(d.get()) != 0) return Error(errno_to_status(errno));
    return {};
}

Status write_all(int fd, Bytes b) {
    size_t done = 0;
    while (done < b.size()) {
        ssize_t n = ::write(fd, b.data() + done, b.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error(errno_to_status(errno));
        done += size_t(n);
    }
    return {};
}

Result<ByteVector> read_file(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Error(errno_to_status(errno));
    ByteVector out(size_t(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::pread(fd, out.data() + done, out.size() - done, off_t(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error(errno_to_status(errno));
        if (n == 0) break;
        done += size_t(n);
    }
    out.resize(done);
    return out;
}

}  // namespace

uint32_t crc32c(Bytes data, uint32_t crc) {
    static const auto table = make_crc_table();
    crc = ~crc;
    for (std::byte b : data)
        crc = table[(crc ^ uint32_t(b)) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

namespace {

Status decode_version2_fields(ByteReader& r, PersistentHandle& h) {
    DAX_TRY(uint8_t has_version, r.u8());
    if (has_version > 1) return Error(NtStatus::InvalidParameter);
    if (has_version) {
        AppInstanceVersion v;
        DAX_TRY(v.high, r.u64());
        DAX_TRY(v.low, r.u64());
        h.app_instance_version = v;
    }
    DAX_TRY(uint32_t locks, r.u32());
    // Bounded by what the payload holds, so a corrupt count cannot allocate much.
    if (locks > r.remaining() / kLockBytes) return Error(NtStatus::InvalidParameter);
    h.locks.reserve(locks);
    for (uint32_t i = 0; i < locks; ++i) {
        LockRange l;
        DAX_TRY(l.offset, r.u64());
        DAX_TRY(l.length, r.u64());
        DAX_TRY(uint8_t exclusive, r.u8());
        if (exclusive > 1 || !lock_range_valid(l.offset, l.length))
            return Error(NtStatus::InvalidParameter);
        l.exclusive = exclusive == 1;
        h.locks.push_back(l);
    }
    return {};
}

}  // namespace

ByteVector encode_persistent_handle(const PersistentHandle& h) {
    ByteVector out;
    ByteWriter w(out);
    w.u8(kFormatVersion);
    w.u64(h.persistent_id);
    put_string(w, h.path);
    w.u64(h.inode);
    w.u8(h.is_directory ? 1 : 0);
    w.u32(h.granted_access);
    w.u32(h.share_access);
    w.u32(h.create_options);
    put_guid(w, h.create_guid);
    put_guid(w, h.client_guid);
    put_string(w, h.owner);
    w.u32(h.timeout_ms);
    w.u8(h.oplock);
    put_optional_guid(w, h.lease_key);
    w.u32(h.lease_state);
    w.u16(h.lease_epoch);
    w.u8(h.lease_version);
    put_optional_guid(w, h.parent_lease_key);
    put_optional_guid(w, h.app_instance_id);
    w.u8(h.app_instance_version ? 1 : 0);
    if (h.app_instance_version) {
        w.u64(h.app_instance_version->high);
        w.u64(h.app_instance_version->low);
    }
    w.u32(uint32_t(h.locks.size()));
    for (const LockRange& l : h.locks) {
        w.u64(l.offset);
        w.u64(l.length);
        w.u8(l.exclusive ? 1 : 0);
    }
    return out;
}

Result<PersistentHandle> decode_persistent_handle(Bytes payload) {
    ByteReader r(payload);
    PersistentHandle h;
    DAX_TRY(uint8_t version, r.u8());
    if (version != 1 && version != kFormatVersion) return Error(NtStatus::InvalidParameter);
    DAX_TRY(h.persistent_id, r.u64());
    DAX_TRY(h.path, get_string(r));
    DAX_TRY(h.inode, r.u64());
    DAX_TRY(uint8_t dir, r.u8());
    if (dir > 1) return Error(NtStatus::InvalidParameter);
    h.is_directory = dir == 1;
    DAX_TRY(h.granted_access, r.u32());
    DAX_TRY(h.share_access, r.u32());
    DAX_TRY(h.create_options, r.u32());
    DAX_TRY(h.create_guid, get_guid(r));
    DAX_TRY(h.client_guid, get_guid(r));
    DAX_TRY(h.owner, get_string(r));
    DAX_TRY(h.timeout_ms, r.u32());
    DAX_TRY(h.oplock, r.u8());
    DAX_TRY(h.lease_key, get_optional_guid(r));
    DAX_TRY(h.lease_state, r.u32());
    DAX_TRY(h.lease_epoch, r.u16());
    DAX_TRY(h.lease_version, r.u8());
    DAX_TRY(h.parent_lease_key, get_optional_guid(r));
    DAX_TRY(h.app_instance_id, get_optional_guid(r));
    if (version >= 2) DAX_CHECK(decode_version2_fields(r, h));
    if (r.remaining() != 0) return Error(NtStatus::InvalidParameter);
    return h;
}

ByteVector frame_journal_record(uint8_t kind, Bytes payload) {
    ByteVector out;
    ByteWriter w(out);
    w.u32(kMagic);
    w.u8(kind);
    w.u8(0);
    w.u16(0);
    w.u32(uint32_t(payload.size()));
    // The CRC covers kind and length too, so a torn header is caught like a torn payload.
    std::array<std::byte, 5> head{std::byte(kind)};
    protocol::store_le32(head.data() + 1, uint32_t(payload.size()));
    w.u32(crc32c(payload, crc32c(Bytes(head.data(), head.size()))));
    w.bytes(payload);
    return out;
}

JournalScan scan_journal(Bytes image) {
    JournalScan s;
    size_t at = 0;
    while (image.size() - at >= kRecordHeader) {
        const std::byte* p = image.data() + at;
        if (protocol::load_le32(p) != kMagic) break;
        const uint8_t kind = uint8_t(p[4]);
        const uint32_t len = protocol::load_le32(p + 8);
        const uint32_t crc = protocol::load_le32(p + 12);
        if ((kind != kPut && kind != kRemove) || len > kMaxPayload ||
            image.size() - at - kRecordHeader < len)
            break;
        Bytes payload = image.subspan(at + kRecordHeader, len);
        std::array<std::byte, 5> head{std::byte(kind)};
        protocol::store_le32(head.data() + 1, len);
        if (crc32c(payload, crc32c(Bytes(head.data(), head.size()))) != crc) break;
        s.records.push_back({kind, payload});
        at += kRecordHeader + len;
    }
    s.end = at;
    return s;
}

// Where the records go: an ordinary file or a mapped one.
class HandleJournal::Log {
  public:
    virtual ~Log() = default;
    virtual Status append(Bytes record, bool sync) = 0;
};

class HandleJournal::FileLog final : public HandleJournal::Log {
  public:
    explicit FileLog(vfs::UniqueFd fd) : fd_(std::move(fd)) {}
    Status append(Bytes record, bool sync) override {
        DAX_CHECK(write_all(fd_.get(), record));
        if (sync && ::fdatasync(fd_.get()) != 0) return Error(errno_to_status(errno));
        return {};
    }

  private:
    vfs::UniqueFd fd_;  // O_APPEND
};

class HandleJournal::PmemLog final : public HandleJournal::Log {
  public:
    PmemLog(void* base, size_t size, size_t end, dax::FlushKind kind, bool synced, vfs::UniqueFd fd)
        : base_(static_cast<std::byte*>(base)),
          size_(size),
          end_(end),
          flusher_(kind),
          synced_(synced),
          fd_(std::move(fd)) {}
    ~PmemLog() override { ::munmap(base_, size_); }
    Status append(Bytes record, bool sync) override {
        if (size_ - end_ < record.size() + kRecordHeader)
            return Error(NtStatus::DiskFull);  // the caller compacts and grows
        std::byte* at = base_ + end_;
        flusher_.copy_to_pmem(at, record.data(), record.size());
        if (sync || !synced_) {
            flusher_.persist(at, record.size());
            // Without MAP_SYNC (tests on ordinary files) the page cache still sits between.
            if (!synced_ && ::msync(reinterpret_cast<void*>(uintptr_t(at) & ~uintptr_t(4095)),
                                    record.size() + (uintptr_t(at) & 4095), MS_SYNC) != 0)
                return Error(errno_to_status(errno));
        } else {
            flusher_.flush(at, record.size());
        }
        end_ += record.size();
        return {};
    }

  private:
    std::byte* base_;
    size_t size_;
    size_t end_;
    dax::Flusher flusher_;
    bool synced_;
    vfs::UniqueFd fd_;
};

HandleJournal::HandleJournal(std::string dir, Options options)
    : dir_(std::move(dir)), options_(options) {
    log_path_ = dir_ + (options_.pmem ? "/persistent-handles.pmem" : "/persistent-handles.log");
}

HandleJournal::~HandleJournal() = default;

Result<std::unique_ptr<HandleJournal>> HandleJournal::open(const std::string& dir,
                                                           Options options) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Error(errno_to_status(errno));
    std::unique_ptr<HandleJournal> j(new HandleJournal(dir, options));
    vfs::UniqueFd fd(::open(j->log_path_.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!fd) return Error(errno_to_status(errno));
    DAX_TRY(ByteVector image, read_file(fd.get()));
    for (const auto& rec : scan_journal(image).records) {
        if (rec.kind == kRemove) {
            if (rec.payload.size() == 8) j->live_.erase(protocol::load_le64(rec.payload.data()));
            continue;
        }
        auto h = decode_persistent_handle(rec.payload);
        if (!h) continue;  // written by a newer format: not ours to restore
        j->live_[h->persistent_id] = ByteVector(rec.payload.begin(), rec.payload.end());
    }
    std::lock_guard lk(j->mu_);
    DAX_CHECK(j->compact_locked());
    return j;
}

std::vector<PersistentHandle> HandleJournal::handles() const {
    std::lock_guard lk(mu_);
    std::vector<PersistentHandle> out;
    for (const auto& [id, payload] : live_)
        if (auto h = decode_persistent_handle(payload)) out.push_back(std::move(*h));
    return out;
}

Status HandleJournal::compact_locked() {
    // A fresh log with the live records only, made durable, then renamed over the old one: a
    // crash at any point leaves either log whole.
    ByteVector image;
    live_bytes_ = 0;
    for (const auto& [id, payload] : live_) {
        auto rec = frame_journal_record(kPut, payload);
        live_bytes_ += rec.size();
        image.insert(image.end(), rec.begin(), rec.end());
    }
    // The journal's directory is the daemon's: a thread that runs as some user (a CLOSE's
    // hook) writes it with the daemon's rights.
    vfs::AsDaemon as_daemon;
    const std::string tmp = log_path_ + ".new";
    vfs::UniqueFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) return Error(errno_to_status(errno));
    DAX_CHECK(write_all(fd.get(), image));
    size_t map_size = 0;
    if (options_.pmem) {
        map_size = options_.pmem_log_bytes;
        while (map_size < 2 * image.size() + 64 * 1024)
            map_size *= 2;
        // Zeros past the records: scanning stops there.
        if (::ftruncate(fd.get(), off_t(map_size)) != 0) return Error(errno_to_status(errno));
    }
    if (::fsync(fd.get()) != 0) return Error(errno_to_status(errno));
    if (::rename(tmp.c_str(), log_path_.c_str()) != 0) return Error(errno_to_status(errno));
    DAX_CHECK(fsync_directory(dir_));
    log_.reset();  // the old log is gone from the directory
    if (!options_.pmem) {
        vfs::UniqueFd app(::open(log_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
        if (!app) return Error(errno_to_status(errno));
        log_ = std::make_unique<FileLog>(std::move(app));
        log_bytes_ = image.size();
        return {};
    }
    const int flags = options_.require_sync ? MAP_SHARED_VALIDATE | MAP_SYNC : MAP_SHARED;
    void* base = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE, flags, fd.get(), 0);
    if (base == MAP_FAILED) return Error(errno_to_status(errno));
    log_ = std::make_unique<PmemLog>(base, map_size, image.size(), *options_.pmem,
                                     options_.require_sync, std::move(fd));
    log_bytes_ = image.size();
    return {};
}

Status HandleJournal::append_locked(uint8_t kind, Bytes payload, bool sync) {
    auto rec = frame_journal_record(kind, payload);
    auto st = log_ ? log_->append(rec, sync) : Status(Error(NtStatus::Unsuccessful));
    if (st) {
        log_bytes_ += rec.size();
        // Mostly superseded records: start a fresh log.
        if (log_bytes_ > 4 * live_bytes_ + (size_t(1) << 20)) (void)compact_locked();
        return st;
    }
    // The mapped log is full (or a write failed): the live records, this one included, go to
    // a fresh, larger log.
    DAX_CHECK(compact_locked());
    return {};
}

Status HandleJournal::put(const PersistentHandle& h) {
    auto payload = encode_persistent_handle(h);
    std::lock_guard lk(mu_);
    auto old = live_.find(h.persistent_id);
    auto saved = old == live_.end() ? std::nullopt : std::optional<ByteVector>(old->second);
    live_[h.persistent_id] = payload;
    const size_t before = live_bytes_;
    live_bytes_ += kRecordHeader + payload.size();
    if (saved) live_bytes_ -= std::min(live_bytes_, kRecordHeader + saved->size());
    if (auto st = append_locked(kPut, payload, true); !st) {
        if (saved)
            live_[h.persistent_id] = std::move(*saved);
        else
            live_.erase(h.persistent_id);
        live_bytes_ = before;
        return st;
    }
    return {};
}

void HandleJournal::freeze() {
    std::lock_guard lk(mu_);
    frozen_ = true;
}

void HandleJournal::remove(uint64_t persistent_id) {
    std::lock_guard lk(mu_);
    if (frozen_) return;
    auto it = live_.find(persistent_id);
    if (it == live_.end()) return;
    live_bytes_ -= std::min(live_bytes_, kRecordHeader + it->second.size());
    live_.erase(it);
    std::array<std::byte, 8> id{};
    protocol::store_le64(id.data(), persistent_id);
    (void)append_locked(kRemove, Bytes(id.data(), id.size()), false);
}

size_t HandleJournal::size() const {
    std::lock_guard lk(mu_);
    return live_.size();
}

bool HandleJournal::mapped() const {
    return options_.pmem.has_value();
}

}  // namespace daxsmbd::server
