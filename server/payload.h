// The data a message carries beside its header and body: READ data on its way to the client,
// and later the WRITE data an RDMA transport fetched. One move-only type for every form the data
// can take, each carrying its own release:
//   - Memory: a pool buffer (server/buffer_pool.h), the form every transport can send and the
//     only one that can be signed, sealed in place or copied into a compound response;
//   - Pipe:   file pages referenced by a pipe (server/io/splice_pipe.h), for a transport that
//     moves a pipe into its connection without reading it (TCP with splice(2));
//   - Mapped: a pinned range of a file's DAX mapping (dax/mapping.h: the mapping cannot go away
//     while the range is held), for a transport that sends from it directly (RDMA).
// The dispatcher tells a handler which kinds its response may carry (RequestContext::
// reply_data_kinds: what the transport carries and nothing needs in user space); the handler's
// data path lends one of them (io::DataPath::lend); the edge (Connection::flush) turns whatever
// the transport cannot carry, or what must be signed or sealed, into Memory, once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "dax/mapping.h"
#include "protocol/result.h"
#include "server/buffer_pool.h"
#include "server/io/splice_pipe.h"

namespace daxsmbd::server {

enum class PayloadKind : uint8_t { Memory = 1, Pipe = 2, Mapped = 4 };

// A set of payload kinds.
class PayloadKinds {
  public:
    constexpr PayloadKinds() = default;
    constexpr PayloadKinds(PayloadKind k) : bits_(uint8_t(k)) {}  // NOLINT: a set of one
    constexpr PayloadKinds operator|(PayloadKinds o) const { return from_bits(bits_ | o.bits_); }
    constexpr PayloadKinds operator&(PayloadKinds o) const { return from_bits(bits_ & o.bits_); }
    constexpr bool has(PayloadKind k) const { return bits_ & uint8_t(k); }
    constexpr bool operator==(const PayloadKinds&) const = default;

  private:
    static constexpr PayloadKinds from_bits(uint8_t b) {
        PayloadKinds k;
        k.bits_ = b;
        return k;
    }
    uint8_t bits_ = 0;
};

constexpr PayloadKinds operator|(PayloadKind a, PayloadKind b) {
    return PayloadKinds(a) | PayloadKinds(b);
}

class Payload {
  public:
    Payload() = default;
    explicit Payload(PoolBuffer buffer) : v_(std::move(buffer)) {}
    explicit Payload(io::SplicePipe pipe) : v_(std::move(pipe)) {}
    // `len` bytes from the start of `range` (a READ that stops at the end of file).
    Payload(dax::MappedRange range, size_t len) : v_(Mapped{std::move(range), len}) {}

    Payload(Payload&&) noexcept = default;
    Payload& operator=(Payload&&) noexcept = default;
    Payload(const Payload&) = delete;
    Payload& operator=(const Payload&) = delete;

    explicit operator bool() const { return v_.index() != 0; }
    // Meaningless for an empty payload.
    PayloadKind kind() const;
    size_t size() const;

    // The bytes of a Memory or Mapped payload (empty for a pipe).
    std::span<const std::byte> bytes() const;
    // The bytes of a Memory payload, writable (sealed in place); empty for the other kinds.
    std::span<std::byte> writable_bytes();
    // The pipe of a Pipe payload, else null.
    io::SplicePipe* pipe() { return std::get_if<io::SplicePipe>(&v_); }
    // The pinned range of a Mapped payload (bytes() is its first size() bytes), else null.
    const dax::MappedRange* mapped() const {
        auto* m = std::get_if<Mapped>(&v_);
        return m ? &m->range : nullptr;
    }

    // Makes this a Memory payload: a pipe's bytes are read, a mapped range's copied (guarded
    // against media errors, dax/media_guard.h) into a buffer of `pool`. Fails when the bytes
    // cannot be had (a broken pipe, a media error); the payload is then empty.
    Status make_memory(BufferPool& pool);

  private:
    struct Mapped {
        dax::MappedRange range;
        size_t len = 0;
    };
    std::variant<std::monostate, PoolBuffer, io::SplicePipe, Mapped> v_;
};

}  // namespace daxsmbd::server
