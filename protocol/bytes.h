// Bounds-checked little-endian cursors over wire bytes. Every read checks the remaining length
// and fails with STATUS_INVALID_PARAMETER instead of reading past the end (architecture.md,
// "Rules of the codec").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::protocol {

using Bytes = std::span<const std::byte>;
using MutableBytes = std::span<std::byte>;
using ByteVector = std::vector<std::byte>;

inline Bytes as_bytes(const void* p, size_t n) {
    return {static_cast<const std::byte*>(p), n};
}
inline Bytes as_bytes(std::string_view s) {
    return as_bytes(s.data(), s.size());
}

inline uint16_t load_le16(const std::byte* p) {
    return uint16_t(uint16_t(p[0]) | uint16_t(p[1]) << 8);
}
inline uint32_t load_le32(const std::byte* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t load_le64(const std::byte* p) {
    return uint64_t(load_le32(p)) | uint64_t(load_le32(p + 4)) << 32;
}
inline void store_le16(std::byte* p, uint16_t v) {
    p[0] = std::byte(v);
    p[1] = std::byte(v >> 8);
}
inline void store_le32(std::byte* p, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        p[i] = std::byte(v >> (8 * i));
}
inline void store_le64(std::byte* p, uint64_t v) {
    for (int i = 0; i < 8; ++i)
        p[i] = std::byte(v >> (8 * i));
}

// Reads from a span; position only moves forward on success. All failures are
// NtStatus::InvalidParameter, which is what a malformed SMB2 request gets.
class ByteReader {
  public:
    explicit ByteReader(Bytes data) : data_(data) {}

    size_t position() const { return pos_; }
    size_t size() const { return data_.size(); }
    size_t remaining() const { return data_.size() - pos_; }
    Bytes data() const { return data_; }
    Bytes rest() const { return data_.subspan(pos_); }

    Result<uint8_t> u8() {
        if (remaining() < 1) return Error(NtStatus::InvalidParameter);
        return uint8_t(data_[pos_++]);
    }
    Result<uint16_t> u16() {
        if (remaining() < 2) return Error(NtStatus::InvalidParameter);
        auto v = load_le16(data_.data() + pos_);
        pos_ += 2;
        return v;
    }
    Result<uint32_t> u32() {
        if (remaining() < 4) return Error(NtStatus::InvalidParameter);
        auto v = load_le32(data_.data() + pos_);
        pos_ += 4;
        return v;
    }
    Result<uint64_t> u64() {
        if (remaining() < 8) return Error(NtStatus::InvalidParameter);
        auto v = load_le64(data_.data() + pos_);
        pos_ += 8;
        return v;
    }
    Result<Bytes> bytes(size_t n) {
        if (remaining() < n) return Error(NtStatus::InvalidParameter);
        auto v = data_.subspan(pos_, n);
        pos_ += n;
        return v;
    }
    template <size_t N>
    Result<std::array<std::byte, N>> array() {
        if (remaining() < N) return Error(NtStatus::InvalidParameter);
        std::array<std::byte, N> a;
        std::memcpy(a.data(), data_.data() + pos_, N);
        pos_ += N;
        return a;
    }
    Status skip(size_t n) {
        if (remaining() < n) return Error(NtStatus::InvalidParameter);
        pos_ += n;
        return {};
    }
    Status seek(size_t absolute) {
        if (absolute > data_.size()) return Error(NtStatus::InvalidParameter);
        pos_ = absolute;
        return {};
    }
    // A sub-range [offset, offset+length) of the whole span, checked for overflow and bounds.
    Result<Bytes> slice(uint64_t offset, uint64_t length) const {
        if (offset > data_.size() || length > data_.size() - offset)
            return Error(NtStatus::InvalidParameter);
        return data_.subspan(size_t(offset), size_t(length));
    }

  private:
    Bytes data_;
    size_t pos_ = 0;
};

// An Offset/Length pair of a variable field of a request or response: empty when Length is 0
// whatever the offset, else it must lie inside the message and not overlap the header or the
// fixed part of the body (which ends at `buffer_start`): STATUS_INVALID_PARAMETER otherwise.
inline Result<Bytes> variable_field(const ByteReader& r, uint64_t offset, uint64_t length,
                                    size_t buffer_start) {
    if (length == 0) return Bytes{};
    if (offset < buffer_start) return Error(NtStatus::InvalidParameter);
    return r.slice(offset, length);
}

// Appends to a byte vector. `base` marks where the current SMB2 message starts inside the
// vector, so that codecs can compute header-relative offsets (MS-SMB2 offsets are from the
// start of the SMB2 header) with offset_from_base().
class ByteWriter {
  public:
    explicit ByteWriter(ByteVector& out, size_t base = 0) : out_(out), base_(base) {}

    size_t size() const { return out_.size(); }
    size_t base() const { return base_; }
    void set_base(size_t b) { base_ = b; }
    size_t offset_from_base() const { return out_.size() - base_; }
    ByteVector& vector() { return out_; }

    void u8(uint8_t v) { out_.push_back(std::byte(v)); }
    void u16(uint16_t v) {
        auto n = grow(2);
        store_le16(out_.data() + n, v);
    }
    void u32(uint32_t v) {
        auto n = grow(4);
        store_le32(out_.data() + n, v);
    }
    void u64(uint64_t v) {
        auto n = grow(8);
        store_le64(out_.data() + n, v);
    }
    void bytes(Bytes b) { out_.insert(out_.end(), b.begin(), b.end()); }
    void zeros(size_t n) { out_.resize(out_.size() + n, std::byte{0}); }
    // Pad with zeros until offset_from_base() is a multiple of `alignment`.
    void align(size_t alignment) {
        size_t off = offset_from_base();
        size_t pad = (alignment - off % alignment) % alignment;
        zeros(pad);
    }
    // Patch a previously written field at absolute position `pos` (as returned by size()).
    void patch_u16(size_t pos, uint16_t v) { store_le16(out_.data() + pos, v); }
    void patch_u32(size_t pos, uint32_t v) { store_le32(out_.data() + pos, v); }
    void patch_u64(size_t pos, uint64_t v) { store_le64(out_.data() + pos, v); }

  private:
    size_t grow(size_t n) {
        size_t at = out_.size();
        out_.resize(at + n);
        return at;
    }
    ByteVector& out_;
    size_t base_;
};

// UTF-16LE <-> UTF-8. Invalid sequences (unpaired surrogates, odd byte counts) fail with
// STATUS_OBJECT_NAME_INVALID, which is what a bad file name gets.
Result<std::string> utf16le_to_utf8(Bytes utf16le);
void utf8_to_utf16le(std::string_view utf8, ByteWriter& w);
ByteVector utf8_to_utf16le(std::string_view utf8);

}  // namespace daxsmbd::protocol
