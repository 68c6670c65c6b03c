// An mmap(2) wrapper for the DAX tests: the test binary defines mmap itself, so every call that
// libpmem2 and dax/ make through the dynamic symbol comes here first (glibc's own internal
// mappings, such as thread stacks, do not). It records the MAP_FIXED file mappings that failed and
// can make the next one fail the way Linux fails in a file system's mmap hook: after the range
// was already unmapped, leaving a hole that another thread may fill.
//
// Not built under AddressSanitizer (its runtime intercepts mmap itself): active() is then false.
#pragma once

#include <cstddef>

namespace daxsmbd::dax::testing {

// True when the wrapper is linked in and has seen a call.
bool mmap_interposer_active();

// MAP_FIXED mappings of a file descriptor that failed, since the last reset.
unsigned failed_fixed_file_mmaps();
void reset_failed_fixed_file_mmaps();
// Anonymous MAP_FIXED_NOREPLACE mappings that failed (the range was not free), since the last
// reset.
unsigned failed_noreplace_mmaps();
void reset_failed_noreplace_mmaps();

// The next MAP_FIXED mapping of a file descriptor unmaps its target range, maps an anonymous
// read-write page range of the same size there (another thread's allocation landing in the hole;
// when `fill_hole`), writes `canary` into its first byte, and fails with ENOMEM. The address of
// that foreign range is returned by injected_hole() (null until it happened).
void inject_fixed_file_mmap_failure(bool fill_hole, unsigned char canary);
void* injected_hole();
size_t injected_hole_length();

}  // namespace daxsmbd::dax::testing
