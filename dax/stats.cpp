#include "dax/stats.h"

namespace daxsmbd::dax {

std::string StatsSnapshot::to_string() const {
    return "dax: reads=" + std::to_string(reads) + " read_bytes=" + std::to_string(read_bytes) +
           " writes=" + std::to_string(writes) + " write_bytes=" + std::to_string(write_bytes) +
           " persists=" + std::to_string(persists) + " fallbacks=" + std::to_string(fallbacks) +
           " media_errors=" + std::to_string(media_errors) + " maps=" + std::to_string(maps) +
           " unmaps=" + std::to_string(unmaps) + " extends=" + std::to_string(extends) +
           " prefaults=" + std::to_string(prefaults) +
           " map_cache_hits=" + std::to_string(map_cache_hits) +
           " held_reservations=" + std::to_string(held_reservations);
}

StatsSnapshot Stats::snapshot() const {
    StatsSnapshot s;
    s.reads = reads.sum();
    s.read_bytes = read_bytes.sum();
    s.writes = writes.sum();
    s.write_bytes = write_bytes.sum();
    s.persists = persists.sum();
    s.fallbacks = fallbacks.sum();
    s.media_errors = media_errors.sum();
    s.maps = maps.sum();
    s.unmaps = unmaps.sum();
    s.extends = extends.sum();
    s.prefaults = prefaults.sum();
    s.map_cache_hits = map_cache_hits.sum();
    s.held_reservations = held_reservations.sum();
    return s;
}

}  // namespace daxsmbd::dax
