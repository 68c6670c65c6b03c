#include "protocol/ndr.h"

#include <algorithm>

namespace daxsmbd::protocol::rpc {

namespace {
constexpr size_t kWcharSize = 2;
}

// ---- NdrWriter ----

NdrWriter::NdrWriter(ByteVector& out) : out_(out), base_(out.size()) {}

void NdrWriter::align(size_t n) {
    size_t pad = (n - size() % n) % n;
    out_.resize(out_.size() + pad, std::byte{0});
}

void NdrWriter::u16(uint16_t v) {
    align(2);
    size_t at = out_.size();
    out_.resize(at + 2);
    store_le16(out_.data() + at, v);
}

void NdrWriter::u32(uint32_t v) {
    align(4);
    size_t at = out_.size();
    out_.resize(at + 4);
    store_le32(out_.data() + at, v);
}

void NdrWriter::u64(uint64_t v) {
    align(8);
    size_t at = out_.size();
    out_.resize(at + 8);
    store_le64(out_.data() + at, v);
}

void NdrWriter::construct(const std::function<void()>& body) {
    deferred_.emplace_back();
    body();
    // Take the list out before running it: the pointees open constructs of their own, which
    // push onto deferred_ and may reallocate it.
    auto list = std::move(deferred_.back());
    deferred_.pop_back();
    for (auto& f : list)
        construct(f);
}

void NdrWriter::pointee(std::function<void()> body) {
    if (deferred_.empty()) {
        construct(body);  // top-level pointer: referent follows at once (C706 14.3.12.1)
    } else {
        deferred_.back().push_back(std::move(body));  // embedded: after the construct
    }
}

void NdrWriter::unique_ptr(bool present, std::function<void()> body) {
    if (!present) {
        u32(0);
        return;
    }
    u32(next_referent());
    pointee(std::move(body));
}

void NdrWriter::full_ptr(const void* identity, std::function<void()> body) {
    if (identity == nullptr) {
        u32(0);
        return;
    }
    auto it = full_ids_.find(identity);
    if (it != full_ids_.end()) {
        u32(it->second);  // already marshalled: the id alone refers to it
        return;
    }
    uint32_t id = next_referent();
    full_ids_.emplace(identity, id);
    u32(id);
    pointee(std::move(body));
}

void NdrWriter::wstring(std::string_view utf8) {
    ByteVector units = utf8_to_utf16le(utf8);
    uint32_t count = uint32_t(units.size() / kWcharSize + 1);  // + terminating NUL
    conformant_count(count);
    varying_header(0, count);
    bytes(units);
    u8(0);
    u8(0);
}

void NdrWriter::unique_wstring(std::optional<std::string_view> utf8) {
    if (!utf8) {
        u32(0);
        return;
    }
    std::string copy(*utf8);  // the pointee may be written after the caller's view is gone
    unique_ptr(true, [this, s = std::move(copy)] { wstring(s); });
}

// ---- NdrReader ----

Status NdrReader::align(size_t n) {
    size_t pad = (n - pos_ % n) % n;
    if (remaining() < pad) return Error(NtStatus::InvalidParameter);
    pos_ += pad;
    return {};
}

Result<uint8_t> NdrReader::u8() {
    if (remaining() < 1) return Error(NtStatus::InvalidParameter);
    return uint8_t(data_[pos_++]);
}

Result<uint16_t> NdrReader::u16() {
    DAX_CHECK(align(2));
    if (remaining() < 2) return Error(NtStatus::InvalidParameter);
    auto v = load_le16(data_.data() + pos_);
    pos_ += 2;
    return v;
}

Result<uint32_t> NdrReader::u32() {
    DAX_CHECK(align(4));
    if (remaining() < 4) return Error(NtStatus::InvalidParameter);
    auto v = load_le32(data_.data() + pos_);
    pos_ += 4;
    return v;
}

Result<uint64_t> NdrReader::u64() {
    DAX_CHECK(align(8));
    if (remaining() < 8) return Error(NtStatus::InvalidParameter);
    auto v = load_le64(data_.data() + pos_);
    pos_ += 8;
    return v;
}

Result<Bytes> NdrReader::bytes(size_t n) {
    if (remaining() < n) return Error(NtStatus::InvalidParameter);
    auto v = data_.subspan(pos_, n);
    pos_ += n;
    return v;
}

Status NdrReader::construct(const std::function<Status()>& body) {
    deferred_.emplace_back();
    Status st = body();
    auto list = std::move(deferred_.back());
    deferred_.pop_back();
    if (!st) return st;
    for (auto& f : list)
        DAX_CHECK(construct(f));
    return {};
}

Status NdrReader::pointee(std::function<Status()> body) {
    if (deferred_.empty()) return construct(body);
    deferred_.back().push_back(std::move(body));
    return {};
}

Status NdrReader::unique_ptr(std::function<Status()> body, bool* present) {
    DAX_TRY(uint32_t id, u32());
    if (present) *present = id != 0;
    if (id == 0) return {};
    return pointee(std::move(body));
}

Status NdrReader::full_ptr(std::function<Status()> body, uint32_t* referent_id) {
    DAX_TRY(uint32_t id, u32());
    if (referent_id) *referent_id = id;
    if (id == 0) return {};
    if (std::find(full_ids_seen_.begin(), full_ids_seen_.end(), id) != full_ids_seen_.end())
        return {};
    full_ids_seen_.push_back(id);
    return pointee(std::move(body));
}

Result<uint32_t> NdrReader::conformant_count(size_t min_element_size) {
    DAX_TRY(uint32_t count, u32());
    if (min_element_size != 0 && uint64_t(count) * min_element_size > remaining())
        return Error(NtStatus::InvalidParameter);
    return count;
}

Result<std::string> NdrReader::wstring() {
    DAX_TRY(uint32_t max_count, u32());
    DAX_TRY(uint32_t offset, u32());
    DAX_TRY(uint32_t actual, u32());
    if (offset != 0 || actual == 0 || actual > max_count) return Error(NtStatus::InvalidParameter);
    if (uint64_t(actual) * kWcharSize > remaining()) return Error(NtStatus::InvalidParameter);
    DAX_TRY(Bytes units, bytes(size_t(actual) * kWcharSize));
    // [string] means NUL-terminated and the terminator is counted (MS-RPCE 2.2.4.1.1).
    if (units[units.size() - 1] != std::byte{0} || units[units.size() - 2] != std::byte{0})
        return Error(NtStatus::InvalidParameter);
    auto text = utf16le_to_utf8(units.first(units.size() - kWcharSize));
    if (!text) return Error(NtStatus::InvalidParameter);
    return std::move(text).value();
}

Status NdrReader::unique_wstring(std::optional<std::string>& out) {
    out.reset();
    return unique_ptr([this, &out]() -> Status {
        DAX_TRY(auto s, wstring());
        out = std::move(s);
        return {};
    });
}

}  // namespace daxsmbd::protocol::rpc
