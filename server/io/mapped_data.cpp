#include "server/io/mapped_data.h"

#include "dax/media_guard.h"

namespace daxsmbd::server::io {

size_t MappedData::size() const {
    size_t n = 0;
    for (const auto& s : spans_)
        n += s.size();
    return n;
}

bool MappedData::copy_out(PoolBuffer& out) const {
    out = BufferPool::global().acquire(size());
    size_t done = 0;
    for (const auto& s : spans_) {
        if (!dax::guarded_copy(out.data() + done, s.data(), s.size(), s.data(), s.size()))
            return false;
        done += s.size();
    }
    out.set_size(done);
    return true;
}

}  // namespace daxsmbd::server::io
