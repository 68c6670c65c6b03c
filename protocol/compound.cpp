#include "protocol/compound.h"

#include "protocol/header.h"

namespace daxsmbd::protocol {

Result<std::vector<Bytes>> split_compound(Bytes frame, size_t max_elements) {
    std::vector<Bytes> elements;
    size_t pos = 0;
    while (true) {
        Bytes rest = frame.subspan(pos);
        if (rest.size() < kHeaderSize || load_le32(rest.data()) != kSmb2ProtocolId)
            return Error(NtStatus::InvalidParameter);
        if (elements.size() == max_elements) return Error(NtStatus::InsufficientResources);
        uint32_t next = load_le32(rest.data() + kNextCommandOffset);
        if (next == 0) {
            elements.push_back(rest);
            return elements;
        }
        // MS-SMB2 2.2.1: NextCommand points at the next 8-byte aligned header.
        if (next % 8 != 0 || next < kHeaderSize || next >= rest.size())
            return Error(NtStatus::InvalidParameter);
        elements.push_back(rest.first(next));
        pos += next;
    }
}

CompoundWriter::CompoundWriter(ByteVector& out, size_t max_elements)
    : out_(out), w_(out, out.size()), max_elements_(max_elements) {}

void CompoundWriter::close_current() {
    if (!open_) return;
    elements_.back().length = out_.size() - elements_.back().offset;
    open_ = false;
}

void CompoundWriter::end_element() {
    close_current();
}

Status CompoundWriter::begin_element() {
    if (elements_.size() >= max_elements_) return Error(NtStatus::InsufficientResources);
    close_current();
    if (!elements_.empty()) {
        Element& prev = elements_.back();
        // Pad the previous element to 8 (relative to its own header) and link it.
        w_.set_base(prev.offset);
        w_.align(8);
        prev.length = out_.size() - prev.offset;
        if (prev.length >= kHeaderSize)
            store_le32(out_.data() + prev.offset + kNextCommandOffset, uint32_t(prev.length));
    }
    elements_.push_back(Element{out_.size(), 0});
    w_.set_base(out_.size());
    open_ = true;
    return {};
}

void CompoundWriter::finish(bool pad_last) {
    close_current();
    if (elements_.empty()) return;
    Element& last = elements_.back();
    if (pad_last) {
        w_.set_base(last.offset);
        w_.align(8);
        last.length = out_.size() - last.offset;
    }
    if (last.length >= kHeaderSize) store_le32(out_.data() + last.offset + kNextCommandOffset, 0);
}

Bytes CompoundWriter::element(size_t i) const {
    return Bytes(out_).subspan(elements_[i].offset, elements_[i].length);
}

MutableBytes CompoundWriter::mutable_element(size_t i) {
    return MutableBytes(out_).subspan(elements_[i].offset, elements_[i].length);
}

}  // namespace daxsmbd::protocol
