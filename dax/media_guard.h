// Recovery from SIGBUS during a copy to or from a mapping.
//
// A load from a poisoned persistent-memory line (media error) or an access to a page of a mapped
// file that someone truncated raises SIGBUS on the accessing thread. Without a handler that kills
// the whole server. guarded_copy() arms a per-thread recovery point (sigsetjmp) around one copy;
// the process-wide SIGBUS handler jumps back to it when the faulting address lies inside the
// range the thread declared, and the copy reports failure instead.
//
// Why sigsetjmp/siglongjmp and not libpmem2's bad-block API: pmem2_badblock_* lists only the
// blocks the driver already knows to be bad (it needs ndctl's view of the namespace, usually
// root), so a newly failing line or a truncation by another process still raises SIGBUS; a
// recovery point covers every cause at the cost of one sigsetjmp per copy (no system call: the
// signal mask is not saved, and the handler runs with SA_NODEFER so SIGBUS is not left blocked).
// The copy inside the region is memcpy or the non-temporal copy: no destructors are skipped by
// the jump.
#pragma once

#include <cstddef>

namespace daxsmbd::dax {

// Installs the SIGBUS handler once (idempotent, thread-safe). A SIGBUS outside a guarded region
// is passed to the handler that was installed before (or the default action: the process dies,
// as it would have without us).
void install_media_guard();

using CopyFn = void (*)(void* ctx, void* dst, const void* src, size_t len);

// Copies `len` bytes from `src` to `dst` with `copy` (memcpy when null). `mapped`/`mapped_len`
// is the mapping range touched; a SIGBUS at an address inside it makes this return false (the
// destination may then be partly written). install_media_guard() must have run.
bool guarded_copy(void* dst, const void* src, size_t len, const void* mapped, size_t mapped_len,
                  CopyFn copy = nullptr, void* copy_ctx = nullptr);

// Number of SIGBUS recovered on any thread (for tests and the stats).
unsigned long recovered_sigbus_count();

}  // namespace daxsmbd::dax
