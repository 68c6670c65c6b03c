// Compounded SMB2 messages (MS-SMB2 3.2.4.1.4, 3.3.5.2.7, 3.3.4.1.3): splitting a received
// frame into its elements, and writing a response chain.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// A generous bound on the elements of one compound; a client may not make the server queue
// an unbounded number of requests from one frame.
constexpr size_t kDefaultMaxCompoundElements = 64;

// Splits a received (decrypted, decompressed) SMB2 frame into its messages. Each element
// starts with FE 'S' 'M' 'B' and is at least 64 bytes; a non-zero NextCommand must be a
// multiple of 8 (MS-SMB2 2.2.1), at least 64, and leave at least a 64-byte header inside the
// frame; the last element has NextCommand 0 and runs to the end of the frame. An element's
// span includes its trailing padding (what its signature covers, MS-SMB2 3.1.4.1). Violations
// are STATUS_INVALID_PARAMETER; more than `max_elements` elements is
// STATUS_INSUFFICIENT_RESOURCES.
Result<std::vector<Bytes>> split_compound(Bytes frame,
                                          size_t max_elements = kDefaultMaxCompoundElements);

// Builds a response chain in `out`:
//   CompoundWriter cw(out);
//   for each response: DAX_CHECK(cw.begin_element()); header.serialize(cw.writer()); body...;
//   cw.finish();
// begin_element() pads the previous element to 8 bytes and sets its NextCommand to the
// distance to the new header (MS-SMB2 3.3.4.1.3), then sets the writer's base to the new
// header so that bodies compute header-relative offsets. finish() forces the last NextCommand
// to 0 and, by default, pads the last element too (the spec's SHOULD). Sign elements only
// after finish(): NextCommand and padding are part of what each signature covers.
class CompoundWriter {
  public:
    struct Element {
        size_t offset;  // absolute position in `out` of the element's header
        size_t length;  // including its padding once the next element began or finish() ran
    };

    explicit CompoundWriter(ByteVector& out, size_t max_elements = kDefaultMaxCompoundElements);

    // STATUS_INSUFFICIENT_RESOURCES once max_elements have been begun.
    Status begin_element();
    // Optional: marks the current element complete (its unpadded length). begin_element() and
    // finish() do this implicitly.
    void end_element();
    void finish(bool pad_last = true);

    ByteWriter& writer() { return w_; }
    size_t element_count() const { return elements_.size(); }
    const std::vector<Element>& elements() const { return elements_; }
    // The bytes of element i, padding included.
    Bytes element(size_t i) const;
    MutableBytes mutable_element(size_t i);

  private:
    void close_current();

    ByteVector& out_;
    ByteWriter w_;
    size_t max_elements_;
    bool open_ = false;
    std::vector<Element> elements_;
};

}  // namespace daxsmbd::protocol
