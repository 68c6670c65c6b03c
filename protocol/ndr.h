// NDR 2.0 transfer syntax (C706 chapter 14), little-endian data representation only, for the
// stub data of DCE/RPC calls (protocol/dcerpc.h). Big-endian senders are refused at the PDU
// layer, so nothing here looks at the drep.
//
// Alignment: every primitive is aligned to its own size relative to the start of the stub
// (C706 14.2.2: "alignment is relative to the beginning of the octet stream"), which is why the
// writer and reader track their own base instead of using the PDU offset.
//
// Pointers (C706 14.3.10-14.3.12): a top-level pointer's referent follows its referent id
// immediately; a pointer embedded in a constructed type (struct, array, union) has its referent
// deferred until the end of the outermost constructed type being marshalled, in order, each
// referent being itself marshalled depth-first. Callers express that with construct(): the
// pointees of embedded pointers registered inside the body are written (or read) after the
// body, each as a construct of its own. Outside any construct a pointer is top-level.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol::rpc {

// Referent ids are opaque nonzero values (C706 14.3.11.1); MIDL-generated stubs number them
// 0x00020000, 0x00020004, ... and so do we, which makes captures easy to compare.
constexpr uint32_t kFirstReferentId = 0x00020000;
constexpr uint32_t kReferentIdStep = 4;

class NdrWriter {
  public:
    // Appends to `out`; the stub starts at out.size() at construction.
    explicit NdrWriter(ByteVector& out);
    NdrWriter(const NdrWriter&) = delete;
    NdrWriter& operator=(const NdrWriter&) = delete;

    size_t size() const { return out_.size() - base_; }  // bytes of stub written so far
    void align(size_t n);

    // Primitives, each aligned to its size (C706 14.2.2).
    void u8(uint8_t v) { out_.push_back(std::byte(v)); }
    void u16(uint16_t v);
    void u32(uint32_t v);
    void u64(uint64_t v);
    void bytes(Bytes b) { out_.insert(out_.end(), b.begin(), b.end()); }

    // One constructed type; pointees of the embedded pointers it registers follow it.
    void construct(const std::function<void()>& body);

    // [unique] pointer (C706 14.3.11.2 / 14.3.12): referent id (0 when !present), then the
    // pointee via `body`, now (top-level) or deferred to the end of the enclosing construct.
    void unique_ptr(bool present, std::function<void()> body);
    // [ptr] full pointer: one referent id per identity, the pointee is marshalled only the first
    // time that identity is seen (C706 14.3.11.3). nullptr identity = null pointer.
    void full_ptr(const void* identity, std::function<void()> body);

    // Conformant array header: max_count (C706 14.3.3.2).
    void conformant_count(uint32_t max_count) { u32(max_count); }
    // Varying array header: offset, actual_count (C706 14.3.3.3).
    void varying_header(uint32_t offset, uint32_t actual_count) {
        u32(offset);
        u32(actual_count);
    }

    // [string] wchar_t array as a pointee or a top-level [ref] parameter: conformant varying
    // string of UTF-16LE code units with the terminating NUL counted (C706 14.3.4,
    // MS-RPCE 2.2.4.1.1): max_count = actual_count = units + 1, offset 0.
    void wstring(std::string_view utf8);
    // [unique, string] wchar_t*: referent id, then (deferred) wstring; nullopt is a null pointer.
    void unique_wstring(std::optional<std::string_view> utf8);

  private:
    uint32_t next_referent() {
        uint32_t id = next_referent_;
        next_referent_ += kReferentIdStep;
        return id;
    }
    void pointee(std::function<void()> body);

    ByteVector& out_;
    size_t base_;
    uint32_t next_referent_ = kFirstReferentId;
    std::vector<std::vector<std::function<void()>>> deferred_;
    std::unordered_map<const void*, uint32_t> full_ids_;
};

// Reads NDR 2.0 little-endian. Every failure is NtStatus::InvalidParameter, which the RPC layer
// turns into a fault with RPC_X_BAD_STUB_DATA (MS-RPCE 3.1.1.5.2, C706 14).
class NdrReader {
  public:
    explicit NdrReader(Bytes stub) : data_(stub) {}
    NdrReader(const NdrReader&) = delete;
    NdrReader& operator=(const NdrReader&) = delete;

    size_t position() const { return pos_; }
    size_t remaining() const { return data_.size() - pos_; }

    // Skips the padding to an n-byte boundary; the padding must be present.
    Status align(size_t n);
    Result<uint8_t> u8();
    Result<uint16_t> u16();
    Result<uint32_t> u32();
    Result<uint64_t> u64();
    Result<Bytes> bytes(size_t n);

    // Counterparts of NdrWriter::construct / unique_ptr / full_ptr. `body` reads the pointee;
    // for a deferred pointee it runs when the enclosing construct ends, so whatever it writes
    // into must outlive that construct. `present` (optional) receives whether the referent id
    // was nonzero.
    Status construct(const std::function<Status()>& body);
    Status unique_ptr(std::function<Status()> body, bool* present = nullptr);
    // Full pointer: `body` runs only for the first occurrence of a referent id.
    Status full_ptr(std::function<Status()> body, uint32_t* referent_id = nullptr);

    // Conformant array header. The count is checked against the bytes left, assuming each
    // element takes at least `min_element_size` bytes, so that no caller can be made to
    // allocate more than the stub could describe.
    Result<uint32_t> conformant_count(size_t min_element_size);

    // Conformant varying string (see NdrWriter::wstring): offset must be 0, actual_count
    // <= max_count, at least the terminating NUL, which must be the last unit.
    Result<std::string> wstring();
    // [unique, string] wchar_t*: nullopt when the pointer is null.
    Status unique_wstring(std::optional<std::string>& out);

  private:
    Status pointee(std::function<Status()> body);

    Bytes data_;
    size_t pos_ = 0;
    std::vector<std::vector<std::function<Status()>>> deferred_;
    std::vector<uint32_t> full_ids_seen_;
};

}  // namespace daxsmbd::protocol::rpc
