#include "protocol/ioctl.h"

#include "protocol/file_info.h"  // split_entry_chain

namespace daxsmbd::protocol {

namespace {
// FSCTL payloads shorter than their structure are STATUS_INVALID_PARAMETER (MS-FSCC 2.3).
Result<ByteReader> min_reader(Bytes data, size_t size) {
    if (data.size() < size) return Error(NtStatus::InvalidParameter);
    return ByteReader(data);
}
}  // namespace

Result<IoctlRequest> IoctlRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2));  // Reserved
    IoctlRequest v;
    DAX_TRY(v.ctl_code, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(auto in_offset, r.u32());
    DAX_TRY(auto in_count, r.u32());
    DAX_TRY(v.max_input_response, r.u32());
    DAX_TRY(auto out_offset, r.u32());
    DAX_TRY(auto out_count, r.u32());
    DAX_TRY(v.max_output_response, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_CHECK(r.skip(4));  // Reserved2
    DAX_TRY(v.input, variable_field(r, in_offset, in_count, kBufferOffset));
    DAX_TRY(auto out, variable_field(r, out_offset, out_count, kBufferOffset));
    (void)out;
    return v;
}

void IoctlRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
    w.u32(ctl_code);
    write_file_id(w, file_id);
    size_t in_pos = w.size();
    w.u32(0);
    w.u32(uint32_t(input.size()));
    w.u32(max_input_response);
    w.u32(0);  // OutputOffset
    w.u32(0);  // OutputCount
    w.u32(max_output_response);
    w.u32(flags);
    w.u32(0);
    w.patch_u32(in_pos, uint32_t(w.offset_from_base()));
    w.bytes(input);
}

Result<IoctlResponse> IoctlResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2));
    IoctlResponse v;
    DAX_TRY(v.ctl_code, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(auto in_offset, r.u32());
    DAX_TRY(auto in_count, r.u32());
    DAX_TRY(auto out_offset, r.u32());
    DAX_TRY(auto out_count, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_CHECK(r.skip(4));
    DAX_TRY(v.input, variable_field(r, in_offset, in_count, kBufferOffset));
    DAX_TRY(v.output, variable_field(r, out_offset, out_count, kBufferOffset));
    return v;
}

void IoctlResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
    w.u32(ctl_code);
    write_file_id(w, file_id);
    size_t in_pos = w.size();
    w.u32(0);
    w.u32(uint32_t(input.size()));
    size_t out_pos = w.size();
    w.u32(0);
    w.u32(uint32_t(output.size()));
    w.u32(flags);
    w.u32(0);
    w.patch_u32(in_pos, uint32_t(w.offset_from_base()));
    w.bytes(input);
    w.align(8);
    w.patch_u32(out_pos, uint32_t(w.offset_from_base()));
    w.bytes(output);
}

// ---- payloads ------------------------------------------------------------------------------

Result<ValidateNegotiateInfoRequest> ValidateNegotiateInfoRequest::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kFixedSize));
    ValidateNegotiateInfoRequest v;
    DAX_TRY(v.capabilities, r.u32());
    DAX_TRY(v.guid, r.array<16>());
    DAX_TRY(v.security_mode, r.u16());
    DAX_TRY(auto count, r.u16());
    if (r.remaining() < size_t(count) * 2) return Error(NtStatus::InvalidParameter);
    v.dialects.reserve(count);
    for (uint16_t i = 0; i < count; ++i) {
        DAX_TRY(auto d, r.u16());
        v.dialects.push_back(d);
    }
    return v;
}
void ValidateNegotiateInfoRequest::encode(ByteWriter& w) const {
    w.u32(capabilities);
    w.bytes(guid);
    w.u16(security_mode);
    w.u16(uint16_t(dialects.size()));
    for (auto d : dialects)
        w.u16(d);
}

Result<ValidateNegotiateInfoResponse> ValidateNegotiateInfoResponse::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    ValidateNegotiateInfoResponse v;
    DAX_TRY(v.capabilities, r.u32());
    DAX_TRY(v.guid, r.array<16>());
    DAX_TRY(v.security_mode, r.u16());
    DAX_TRY(v.dialect, r.u16());
    return v;
}
void ValidateNegotiateInfoResponse::encode(ByteWriter& w) const {
    w.u32(capabilities);
    w.bytes(guid);
    w.u16(security_mode);
    w.u16(dialect);
}

void NetworkInterfaceInfo::encode_list(ByteWriter& w, std::span<const NetworkInterfaceInfo> list) {
    for (size_t i = 0; i < list.size(); ++i) {
        const auto& e = list[i];
        size_t start = w.size();
        w.u32(i + 1 < list.size() ? uint32_t(kSize) : 0);  // 152 is a multiple of 8
        w.u32(e.if_index);
        w.u32(e.capability);
        w.u32(e.reserved);
        w.u64(e.link_speed);
        // SOCKADDR_STORAGE (2.2.32.5.1): Family little-endian, then SOCKADDR_IN / SOCKADDR_IN6
        // with Port 0 and the address in network byte order, the rest of the 128 bytes zero.
        w.u16(e.family);
        w.u16(0);  // Port
        if (e.family == sockaddr_family::kInterNetworkV6) {
            w.u32(0);  // FlowInfo
            w.bytes(as_bytes(e.address.data(), 16));
            w.u32(0);  // ScopeId
        } else {
            w.bytes(as_bytes(e.address.data(), 4));
        }
        w.zeros(kSize - (w.size() - start));
    }
}

Result<std::vector<NetworkInterfaceInfo>> NetworkInterfaceInfo::decode_list(Bytes data) {
    std::vector<NetworkInterfaceInfo> out;
    if (data.empty()) return out;
    DAX_TRY(auto entries, split_entry_chain(data, kSize, 8));
    for (Bytes e : entries) {
        ByteReader r(e);
        DAX_CHECK(r.skip(4));
        NetworkInterfaceInfo v;
        DAX_TRY(v.if_index, r.u32());
        DAX_TRY(v.capability, r.u32());
        DAX_TRY(v.reserved, r.u32());
        DAX_TRY(v.link_speed, r.u64());
        DAX_TRY(v.family, r.u16());
        DAX_CHECK(r.skip(2));  // Port
        if (v.family == sockaddr_family::kInterNetworkV6) {
            DAX_CHECK(r.skip(4));
            DAX_TRY(auto a, r.bytes(16));
            for (size_t i = 0; i < 16; ++i)
                v.address[i] = uint8_t(a[i]);
        } else if (v.family == sockaddr_family::kInterNetwork) {
            DAX_TRY(auto a, r.bytes(4));
            for (size_t i = 0; i < 4; ++i)
                v.address[i] = uint8_t(a[i]);
        }
        out.push_back(v);
    }
    return out;
}

Result<SrvCopychunkCopy> SrvCopychunkCopy::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kFixedSize));
    SrvCopychunkCopy v;
    DAX_TRY(v.source_key, r.array<24>());
    DAX_TRY(auto count, r.u32());
    DAX_CHECK(r.skip(4));  // Reserved
    if (r.remaining() / SrvCopychunk::kSize < count) return Error(NtStatus::InvalidParameter);
    v.chunks.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        SrvCopychunk c;
        DAX_TRY(c.source_offset, r.u64());
        DAX_TRY(c.target_offset, r.u64());
        DAX_TRY(c.length, r.u32());
        DAX_CHECK(r.skip(4));
        v.chunks.push_back(c);
    }
    return v;
}
void SrvCopychunkCopy::encode(ByteWriter& w) const {
    w.bytes(source_key);
    w.u32(uint32_t(chunks.size()));
    w.u32(0);
    for (const auto& c : chunks) {
        w.u64(c.source_offset);
        w.u64(c.target_offset);
        w.u32(c.length);
        w.u32(0);
    }
}

Result<SrvCopychunkResponse> SrvCopychunkResponse::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    SrvCopychunkResponse v;
    DAX_TRY(v.chunks_written, r.u32());
    DAX_TRY(v.chunk_bytes_written, r.u32());
    DAX_TRY(v.total_bytes_written, r.u32());
    return v;
}
void SrvCopychunkResponse::encode(ByteWriter& w) const {
    w.u32(chunks_written);
    w.u32(chunk_bytes_written);
    w.u32(total_bytes_written);
}

Result<SrvRequestResumeKeyResponse> SrvRequestResumeKeyResponse::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, 28));  // Context itself is optional
    SrvRequestResumeKeyResponse v;
    DAX_TRY(v.resume_key, r.array<24>());
    return v;
}
void SrvRequestResumeKeyResponse::encode(ByteWriter& w) const {
    w.bytes(resume_key);
    w.u32(0);  // ContextLength
    w.u32(0);  // Context
}

void SrvSnapshotArray::encode(ByteWriter& w, uint32_t max_output) const {
    ByteVector array;
    ByteWriter aw(array);
    for (const auto& s : snapshots) {
        utf8_to_utf16le(s, aw);
        aw.u16(0);  // each token NUL-terminated
    }
    aw.u16(0);  // and the array terminated by one more NUL
    bool fits = kFixedSize + array.size() <= max_output;
    w.u32(number_of_snapshots);
    w.u32(fits ? uint32_t(snapshots.size()) : 0);
    w.u32(uint32_t(array.size()));
    if (fits) w.bytes(array);
}

Result<NetworkResiliencyRequest> NetworkResiliencyRequest::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    DAX_TRY(auto t, r.u32());
    return NetworkResiliencyRequest{t};
}
void NetworkResiliencyRequest::encode(ByteWriter& w) const {
    w.u32(timeout);
    w.u32(0);
}

Result<DuplicateExtentsData> DuplicateExtentsData::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    DuplicateExtentsData v;
    DAX_TRY(v.source_file_id, read_file_id(r));
    DAX_TRY(auto src, r.u64());
    DAX_TRY(auto dst, r.u64());
    DAX_TRY(auto count, r.u64());
    v.source_file_offset = int64_t(src);
    v.target_file_offset = int64_t(dst);
    v.byte_count = int64_t(count);
    return v;
}
void DuplicateExtentsData::encode(ByteWriter& w) const {
    write_file_id(w, source_file_id);
    w.u64(uint64_t(source_file_offset));
    w.u64(uint64_t(target_file_offset));
    w.u64(uint64_t(byte_count));
}

Result<FileAllocatedRangeBuffer> FileAllocatedRangeBuffer::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    DAX_TRY(auto off, r.u64());
    DAX_TRY(auto len, r.u64());
    return FileAllocatedRangeBuffer{int64_t(off), int64_t(len)};
}
void FileAllocatedRangeBuffer::encode(ByteWriter& w) const {
    w.u64(uint64_t(file_offset));
    w.u64(uint64_t(length));
}

Result<FileZeroDataInformation> FileZeroDataInformation::decode(Bytes data) {
    DAX_TRY(auto r, min_reader(data, kSize));
    DAX_TRY(auto off, r.u64());
    DAX_TRY(auto end, r.u64());
    return FileZeroDataInformation{int64_t(off), int64_t(end)};
}
void FileZeroDataInformation::encode(ByteWriter& w) const {
    w.u64(uint64_t(file_offset));
    w.u64(uint64_t(beyond_final_zero));
}

}  // namespace daxsmbd::protocol
