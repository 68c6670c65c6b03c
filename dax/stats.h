// What the DAX path did, per map registry (the server's: Server::dax_maps): the proof that DAX
// served I/O. Sharded per CPU (no shared
// hot counter); read by the server's stats dump (SIGUSR1 and shutdown, server/daxsmbd_main.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "dax/sharded_counter.h"

namespace daxsmbd::dax {

struct StatsSnapshot {
    int64_t reads = 0;  // READs served from a mapping
    int64_t read_bytes = 0;
    int64_t writes = 0;  // WRITEs copied into a mapping
    int64_t write_bytes = 0;
    int64_t persists = 0;        // flush+fence runs (write-through WRITE, FLUSH, CLOSE)
    int64_t fallbacks = 0;       // requests the mapping could not serve (went to the block path)
    int64_t media_errors = 0;    // SIGBUS inside the file: STATUS_UNEXPECTED_IO_ERROR
    int64_t maps = 0;            // chunk mappings made
    int64_t unmaps = 0;          // chunk mappings dropped (truncate, growth, close, errors)
    int64_t extends = 0;         // chunk mappings grown in place (appends; no remap)
    int64_t prefaults = 0;       // chunk ranges whose page tables were populated ahead (prefault)
    int64_t map_cache_hits = 0;  // opens that found their file's map cached, still valid
    // Address ranges kept reserved for good after a failed mapping left part of them to another
    // mapping (releasing them would unmap that one; mapping.cpp, map_piece).
    int64_t held_reservations = 0;

    // "dax: reads=... read_bytes=... ..." (one line, key=value).
    std::string to_string() const;
};

class Stats {
  public:
    ShardedCounter reads, read_bytes, writes, write_bytes, persists, fallbacks, media_errors, maps,
        unmaps, extends, prefaults, map_cache_hits, held_reservations;

    StatsSnapshot snapshot() const;
};

}  // namespace daxsmbd::dax
