#include "protocol/create_contexts.h"

namespace daxsmbd::protocol {

namespace {

constexpr size_t kContextHeaderSize = 16;

void pad_from(ByteWriter& w, size_t start, size_t alignment) {
    size_t off = w.size() - start;
    w.zeros((alignment - off % alignment) % alignment);
}

Result<ByteReader> exact_reader(Bytes data, size_t size) {
    if (data.size() != size) return Error(NtStatus::InvalidParameter);
    return ByteReader(data);
}

}  // namespace

Result<CreateContextList> CreateContextList::parse(Bytes buffer) {
    CreateContextList list;
    size_t pos = 0;
    while (pos < buffer.size()) {
        size_t remaining = buffer.size() - pos;
        if (remaining < kContextHeaderSize) return Error(NtStatus::InvalidParameter);
        ByteReader r(buffer.subspan(pos));
        DAX_TRY(auto next, r.u32());
        DAX_TRY(auto name_offset, r.u16());
        DAX_TRY(auto name_length, r.u16());
        DAX_CHECK(r.skip(2));  // Reserved
        DAX_TRY(auto data_offset, r.u16());
        DAX_TRY(auto data_length, r.u32());
        // MS-SMB2 2.2.13.2: Next is the offset of the following 8-byte aligned context.
        if (next != 0 && (next % 8 != 0 || next > remaining))
            return Error(NtStatus::InvalidParameter);
        size_t len = next != 0 ? next : remaining;
        Bytes ctx = buffer.subspan(pos, len);
        if (name_offset < kContextHeaderSize || name_offset % 8 != 0 || name_length < 4 ||
            size_t(name_offset) + name_length > len)
            return Error(NtStatus::InvalidParameter);
        CreateContext c;
        auto name = ctx.subspan(name_offset, name_length);
        c.name.assign(name.begin(), name.end());
        // DataOffset is ignored when DataLength is 0 (MS-SMB2 2.2.13.2).
        if (data_length != 0) {
            if (data_offset % 8 != 0 || data_offset < size_t(name_offset) + name_length ||
                data_length > len || data_offset > len - data_length)
                return Error(NtStatus::InvalidParameter);
            auto data = ctx.subspan(data_offset, data_length);
            c.data.assign(data.begin(), data.end());
        }
        list.items.push_back(std::move(c));
        if (next == 0) break;
        pos += next;
        if (pos == buffer.size()) return Error(NtStatus::InvalidParameter);  // Next past the end
    }
    return list;
}

void CreateContextList::serialize(ByteWriter& w) const {
    for (size_t i = 0; i < items.size(); ++i) {
        const auto& c = items[i];
        size_t start = w.size();
        w.u32(0);  // Next, patched below
        w.u16(uint16_t(kContextHeaderSize));
        w.u16(uint16_t(c.name.size()));
        w.u16(0);  // Reserved
        size_t data_offset_pos = w.size();
        w.u16(0);
        w.u32(uint32_t(c.data.size()));
        w.bytes(c.name);
        if (!c.data.empty()) {
            pad_from(w, start, 8);
            w.patch_u16(data_offset_pos, uint16_t(w.size() - start));
            w.bytes(c.data);
        }
        if (i + 1 < items.size()) {
            pad_from(w, start, 8);
            w.patch_u32(start, uint32_t(w.size() - start));
        }
    }
}

const CreateContext* CreateContextList::find(Bytes name) const {
    for (const auto& c : items)
        if (c.name_is(name)) return &c;
    return nullptr;
}

size_t CreateContextList::count(Bytes name) const {
    size_t n = 0;
    for (const auto& c : items)
        n += c.name_is(name) ? 1 : 0;
    return n;
}

void CreateContextList::add(Bytes name, ByteVector data) {
    items.push_back(CreateContext{ByteVector(name.begin(), name.end()), std::move(data)});
}

// ---- typed contexts ------------------------------------------------------------------------

Result<EaBufferContext> EaBufferContext::decode(Bytes data) {
    DAX_TRY(auto list, FileFullEaInfo::decode(data));
    return EaBufferContext{std::move(list.entries)};
}
void EaBufferContext::encode(ByteWriter& w) const {
    FileFullEaInfo{entries}.encode(w);
}

Result<SdBufferContext> SdBufferContext::decode(Bytes data) {
    return SdBufferContext{ByteVector(data.begin(), data.end())};
}
void SdBufferContext::encode(ByteWriter& w) const {
    w.bytes(security_descriptor);
}

Result<DurableHandleRequest> DurableHandleRequest::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    (void)r;
    return DurableHandleRequest{};
}
void DurableHandleRequest::encode(ByteWriter& w) const {
    w.zeros(kSize);
}

Result<DurableHandleResponse> DurableHandleResponse::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    (void)r;
    return DurableHandleResponse{};
}
void DurableHandleResponse::encode(ByteWriter& w) const {
    w.zeros(kSize);
}

Result<DurableHandleReconnect> DurableHandleReconnect::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DurableHandleReconnect v;
    DAX_TRY(v.file_id, read_file_id(r));
    return v;
}
void DurableHandleReconnect::encode(ByteWriter& w) const {
    write_file_id(w, file_id);
}

Result<AllocationSizeContext> AllocationSizeContext::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    AllocationSizeContext v;
    DAX_TRY(v.allocation_size, r.u64());
    return v;
}
void AllocationSizeContext::encode(ByteWriter& w) const {
    w.u64(allocation_size);
}

Result<MaximalAccessRequest> MaximalAccessRequest::decode(Bytes data) {
    MaximalAccessRequest v;
    if (data.empty()) return v;
    DAX_TRY(auto r, exact_reader(data, 8));
    DAX_TRY(auto ts, r.u64());
    v.timestamp = int64_t(ts);
    return v;
}
void MaximalAccessRequest::encode(ByteWriter& w) const {
    if (timestamp) w.u64(uint64_t(*timestamp));
}

Result<MaximalAccessResponse> MaximalAccessResponse::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    MaximalAccessResponse v;
    DAX_TRY(auto st, r.u32());
    v.query_status = NtStatus(st);
    DAX_TRY(v.maximal_access, r.u32());
    return v;
}
void MaximalAccessResponse::encode(ByteWriter& w) const {
    w.u32(to_u32(query_status));
    w.u32(maximal_access);
}

Result<TimewarpToken> TimewarpToken::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DAX_TRY(auto ts, r.u64());
    return TimewarpToken{int64_t(ts)};
}
void TimewarpToken::encode(ByteWriter& w) const {
    w.u64(uint64_t(timestamp));
}

Result<QueryOnDiskIdResponse> QueryOnDiskIdResponse::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    QueryOnDiskIdResponse v;
    DAX_TRY(v.disk_file_id, r.u64());
    DAX_TRY(v.volume_id, r.u64());
    return v;
}
void QueryOnDiskIdResponse::encode(ByteWriter& w) const {
    w.u64(disk_file_id);
    w.u64(volume_id);
    w.zeros(16);  // Reserved
}

Result<LeaseContext> LeaseContext::decode(Bytes data) {
    if (data.size() != kSizeV1 && data.size() != kSizeV2) return Error(NtStatus::InvalidParameter);
    ByteReader r(data);
    LeaseContext v;
    v.version = data.size() == kSizeV2 ? 2 : 1;
    DAX_TRY(v.lease_key, r.array<16>());
    DAX_TRY(v.lease_state, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_TRY(v.lease_duration, r.u64());
    if (v.version == 2) {
        DAX_TRY(v.parent_lease_key, r.array<16>());
        DAX_TRY(v.epoch, r.u16());
    }
    return v;
}
void LeaseContext::encode(ByteWriter& w) const {
    w.bytes(lease_key);
    w.u32(lease_state);
    w.u32(flags);
    w.u64(lease_duration);
    if (version == 2) {
        w.bytes(parent_lease_key);
        w.u16(epoch);
        w.u16(0);  // Reserved
    }
}

Result<DurableHandleRequestV2> DurableHandleRequestV2::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DurableHandleRequestV2 v;
    DAX_TRY(v.timeout, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_CHECK(r.skip(8));  // Reserved
    DAX_TRY(v.create_guid, r.array<16>());
    return v;
}
void DurableHandleRequestV2::encode(ByteWriter& w) const {
    w.u32(timeout);
    w.u32(flags);
    w.zeros(8);
    w.bytes(create_guid);
}

Result<DurableHandleResponseV2> DurableHandleResponseV2::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DurableHandleResponseV2 v;
    DAX_TRY(v.timeout, r.u32());
    DAX_TRY(v.flags, r.u32());
    return v;
}
void DurableHandleResponseV2::encode(ByteWriter& w) const {
    w.u32(timeout);
    w.u32(flags);
}

Result<DurableHandleReconnectV2> DurableHandleReconnectV2::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DurableHandleReconnectV2 v;
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.create_guid, r.array<16>());
    DAX_TRY(v.flags, r.u32());
    return v;
}
void DurableHandleReconnectV2::encode(ByteWriter& w) const {
    write_file_id(w, file_id);
    w.bytes(create_guid);
    w.u32(flags);
}

Result<AppInstanceIdContext> AppInstanceIdContext::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DAX_TRY(auto size, r.u16());
    if (size != kSize) return Error(NtStatus::InvalidParameter);
    DAX_CHECK(r.skip(2));
    AppInstanceIdContext v;
    DAX_TRY(v.app_instance_id, r.array<16>());
    return v;
}
void AppInstanceIdContext::encode(ByteWriter& w) const {
    w.u16(uint16_t(kSize));
    w.u16(0);
    w.bytes(app_instance_id);
}

Result<AppInstanceVersionContext> AppInstanceVersionContext::decode(Bytes data) {
    DAX_TRY(auto r, exact_reader(data, kSize));
    DAX_TRY(auto size, r.u16());
    if (size != kSize) return Error(NtStatus::InvalidParameter);
    DAX_CHECK(r.skip(2 + 4));  // Reserved, Padding
    AppInstanceVersionContext v;
    DAX_TRY(v.version_high, r.u64());
    DAX_TRY(v.version_low, r.u64());
    return v;
}
void AppInstanceVersionContext::encode(ByteWriter& w) const {
    w.u16(uint16_t(kSize));
    w.u16(0);
    w.u32(0);
    w.u64(version_high);
    w.u64(version_low);
}

}  // namespace daxsmbd::protocol
