#include "server/payload.h"

#include "dax/media_guard.h"

namespace daxsmbd::server {

PayloadKind Payload::kind() const {
    switch (v_.index()) {
        case 2:
            return PayloadKind::Pipe;
        case 3:
            return PayloadKind::Mapped;
        default:
            return PayloadKind::Memory;
    }
}

size_t Payload::size() const {
    if (auto* b = std::get_if<PoolBuffer>(&v_)) return b->size();
    if (auto* p = std::get_if<io::SplicePipe>(&v_)) return p->size();
    if (auto* m = std::get_if<Mapped>(&v_)) return m->len;
    return 0;
}

std::span<const std::byte> Payload::bytes() const {
    if (auto* b = std::get_if<PoolBuffer>(&v_)) return b->span();
    if (auto* m = std::get_if<Mapped>(&v_)) return m->range.bytes().first(m->len);
    return {};
}

std::span<std::byte> Payload::writable_bytes() {
    if (auto* b = std::get_if<PoolBuffer>(&v_)) return b->span();
    return {};
}

Status Payload::make_memory(BufferPool& pool) {
    if (auto* p = std::get_if<io::SplicePipe>(&v_)) {
        PoolBuffer out = pool.acquire(p->size());
        bool ok = p->copy_out(out);
        v_ = std::monostate{};
        if (!ok) return Error(NtStatus::UnexpectedIoError);
        v_ = std::move(out);
    } else if (auto* m = std::get_if<Mapped>(&v_)) {
        const size_t len = m->len;
        PoolBuffer out = pool.acquire(len);
        auto src = m->range.bytes();
        bool ok = dax::guarded_copy(out.data(), src.data(), len, src.data(), src.size());
        v_ = std::monostate{};  // unpins the range
        if (!ok) return Error(NtStatus::UnexpectedIoError);
        out.set_size(len);
        v_ = std::move(out);
    }
    return {};
}

}  // namespace daxsmbd::server
