// Fuzz target: every file and file system information class decoder, the list classes' chain
// walking, and re-encoding of what decodes (protocol/file_info.h, protocol/fs_info.h). The input
// is a raw information buffer.
#include <cstddef>
#include <cstdint>

#include "protocol/file_info.h"
#include "protocol/fs_info.h"

using namespace daxsmbd::protocol;

namespace {

template <class T>
ByteVector encode(const T& x) {
    ByteVector out;
    ByteWriter w(out);
    x.encode(w);
    return out;
}

// Decode, re-encode, decode again: the value must survive.
template <class T>
void round_trip(Bytes d) {
    auto v = T::decode(d);
    if (!v.ok()) return;
    auto back = T::decode(encode(*v));
    if (!back.ok() || !(*back == *v)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes d = as_bytes(data, size);
    round_trip<FileBasicInfo>(d);
    round_trip<FileStandardInfo>(d);
    round_trip<FileInternalInfo>(d);
    round_trip<FileEaInfo>(d);
    round_trip<FileAccessInfo>(d);
    round_trip<FilePositionInfo>(d);
    round_trip<FileModeInfo>(d);
    round_trip<FileAlignmentInfo>(d);
    round_trip<FileCompressionInfo>(d);
    round_trip<FileNetworkOpenInfo>(d);
    round_trip<FileAttributeTagInfo>(d);
    round_trip<FileIdInfo>(d);
    round_trip<FileDispositionInfo>(d);
    round_trip<FileDispositionInfoEx>(d);
    round_trip<FileAllocationInfo>(d);
    round_trip<FileEndOfFileInfo>(d);
    round_trip<FileValidDataLengthInfo>(d);
    round_trip<FileNameInfo>(d);
    round_trip<FileAllInfo>(d);
    round_trip<FileRenameInfo>(d);
    // The volume label is cut to 32 characters on encode (MS-FSCC 2.5.9), so compare within that.
    if (auto v = FileFsVolumeInfo::decode(d); v.ok()) {
        auto back = FileFsVolumeInfo::decode(encode(*v));
        if (!back.ok() || back->volume_serial_number != v->volume_serial_number) __builtin_trap();
        if (v->volume_label.size() <= 32 && back->volume_label != v->volume_label) __builtin_trap();
    }
    round_trip<FileFsSizeInfo>(d);
    round_trip<FileFsDeviceInfo>(d);
    round_trip<FileFsAttributeInfo>(d);
    round_trip<FileFsFullSizeInfo>(d);
    round_trip<FileFsObjectIdInfo>(d);
    round_trip<FileFsSectorSizeInfo>(d);

    if (auto s = FileStreamInfo::decode(d); s.ok()) {
        ByteVector out;
        ByteWriter w(out);
        if (s->encode(w) != s->streams.size()) __builtin_trap();
        auto back = FileStreamInfo::decode(out);
        if (!back.ok() || back->streams != s->streams) __builtin_trap();
    }
    if (auto ea = FileFullEaInfo::decode(d); ea.ok()) {
        ByteVector out;
        ByteWriter w(out);
        if (ea->encode(w) != ea->entries.size()) __builtin_trap();
        auto back = FileFullEaInfo::decode(out);
        if (!back.ok() || back->entries != ea->entries) __builtin_trap();
    }
    if (auto names = FileGetEaInfo::decode(d); names.ok()) {
        auto back = FileGetEaInfo::decode(encode(*names));
        if (!back.ok() || back->names != names->names) __builtin_trap();
    }
    return 0;
}
