#include "protocol/notify_info.h"

#include "protocol/file_info.h"  // split_entry_chain

namespace daxsmbd::protocol {

namespace {
size_t pad4(size_t n) {
    return (n + 3) & ~size_t(3);
}
}  // namespace

size_t notify_information_size(std::span<const FileNotifyInformation> changes) {
    size_t total = 0;
    for (const auto& c : changes)
        total += pad4(FileNotifyInformation::kFixedSize + utf8_to_utf16le(c.file_name).size());
    return total;
}

void encode_notify_information(ByteWriter& w, std::span<const FileNotifyInformation> changes) {
    for (size_t i = 0; i < changes.size(); ++i) {
        size_t start = w.size();
        w.u32(0);  // NextEntryOffset, patched below
        w.u32(changes[i].action);
        size_t len_pos = w.size();
        w.u32(0);
        size_t name_start = w.size();
        utf8_to_utf16le(changes[i].file_name, w);
        w.patch_u32(len_pos, uint32_t(w.size() - name_start));
        w.zeros(pad4(w.size() - start) - (w.size() - start));
        if (i + 1 < changes.size()) w.patch_u32(start, uint32_t(w.size() - start));
    }
}

Result<std::vector<FileNotifyInformation>> decode_notify_information(Bytes data) {
    std::vector<FileNotifyInformation> out;
    if (data.empty()) return out;
    DAX_TRY(auto entries, split_entry_chain(data, FileNotifyInformation::kFixedSize, 4));
    for (Bytes e : entries) {
        ByteReader r(e);
        DAX_CHECK(r.skip(4));
        FileNotifyInformation n;
        DAX_TRY(n.action, r.u32());
        DAX_TRY(auto len, r.u32());
        DAX_TRY(auto name, r.bytes(len));
        DAX_TRY(n.file_name, utf16le_to_utf8(name));
        out.push_back(std::move(n));
    }
    return out;
}

}  // namespace daxsmbd::protocol
