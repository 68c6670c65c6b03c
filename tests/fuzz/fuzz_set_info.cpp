// Fuzz target: SET_INFO and QUERY_INFO messages and the decoder of whatever class they name
// (protocol/set_info.h, protocol/query_info.h, protocol/file_info.h, protocol/fs_info.h). The
// input is an SMB2 body behind a 64-byte header.
#include <cstddef>
#include <cstdint>

#include "protocol/file_info.h"
#include "protocol/fs_info.h"
#include "protocol/query_info.h"
#include "protocol/set_info.h"

using namespace daxsmbd::protocol;

namespace {

template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}

void decode_set_buffer(uint8_t info, uint8_t cls, Bytes b) {
    namespace k = file_info_class;
    if (info == info_type::kFile) {
        switch (cls) {
            case k::kFileBasicInformation:
                (void)FileBasicInfo::decode(b);
                break;
            case k::kFileRenameInformation:
            case k::kFileLinkInformation:
                (void)FileRenameInfo::decode(b);
                break;
            case k::kFileDispositionInformation:
                (void)FileDispositionInfo::decode(b);
                break;
            case k::kFileDispositionInformationEx:
                (void)FileDispositionInfoEx::decode(b);
                break;
            case k::kFilePositionInformation:
                (void)FilePositionInfo::decode(b);
                break;
            case k::kFileModeInformation:
                (void)FileModeInfo::decode(b);
                break;
            case k::kFileAllocationInformation:
                (void)FileAllocationInfo::decode(b);
                break;
            case k::kFileEndOfFileInformation:
                (void)FileEndOfFileInfo::decode(b);
                break;
            case k::kFileFullEaInformation:
                (void)FileFullEaInfo::decode(b);
                break;
            case k::kFileValidDataLengthInformation:
                (void)FileValidDataLengthInfo::decode(b);
                break;
            case k::kFileShortNameInformation:
                (void)FileShortNameInfo::decode(b);
                break;
            default:
                break;
        }
    } else if (info == info_type::kFileSystem && cls == fs_info_class::kFileFsObjectIdInformation) {
        (void)FileFsObjectIdInfo::decode(b);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), reinterpret_cast<const std::byte*>(data),
               reinterpret_cast<const std::byte*>(data) + size);

    if (auto req = SetInfoRequest::parse(msg); req.ok()) {
        decode_set_buffer(req->info_type, req->file_info_class, req->buffer);
        auto out = reserialize(*req);  // the views of `again` point into it
        auto again = SetInfoRequest::parse(out);
        if (!again.ok() || again->buffer.size() != req->buffer.size() ||
            again->file_info_class != req->file_info_class)
            __builtin_trap();
    }
    if (auto req = QueryInfoRequest::parse(msg); req.ok()) {
        if (req->file_info_class == file_info_class::kFileFullEaInformation)
            (void)FileGetEaInfo::decode(req->input);
        auto out = reserialize(*req);
        auto again = QueryInfoRequest::parse(out);
        if (!again.ok() || again->input.size() != req->input.size() ||
            again->additional_information != req->additional_information)
            __builtin_trap();
    }
    (void)QueryInfoResponse::parse(msg);
    (void)SetInfoResponse::parse(msg);
    return 0;
}
