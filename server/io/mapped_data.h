// READ data sent straight from a DAX mapping (the DAX data path's counterpart of the block path's
// splice, under the same "use sendfile" rule): the file's bytes are not copied into a pool
// buffer; the response's gather list points into the mapping and the kernel copies them into
// the socket. The pins of the mapping's chunks (dax::MappedRange) travel with the response until
// the transport has sent its last byte, so the mapping cannot be unmapped under the send.
//
// What a copy in user space would have caught, a kernel copy reports as EFAULT: a poisoned line
// (media error) or a page the file lost to a truncation during the send. The send then fails
// and the connection closes (its framing is broken), where the copying path would have failed
// only that request; the server itself is not at risk (no SIGBUS reaches it from a kernel copy).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "protocol/bytes.h"
#include "server/buffer_pool.h"

namespace daxsmbd::server::io {

class MappedData {
  public:
    MappedData() = default;
    // `spans` stay valid while `keep` (the pins) lives.
    MappedData(std::vector<protocol::Bytes> spans, std::shared_ptr<void> keep)
        : spans_(std::move(spans)), keep_(std::move(keep)) {}

    explicit operator bool() const { return keep_ != nullptr; }
    const std::vector<protocol::Bytes>& spans() const { return spans_; }
    size_t size() const;
    // Copies the bytes into `out` (a pool buffer of size()) under the media guard: for a
    // response that needs them after all (signed, encrypted, in a compound). False when a
    // SIGBUS (media error, truncation) interrupted the copy.
    bool copy_out(PoolBuffer& out) const;
    void reset() {
        spans_.clear();
        keep_.reset();
    }

  private:
    std::vector<protocol::Bytes> spans_;
    std::shared_ptr<void> keep_;
};

}  // namespace daxsmbd::server::io
