// Directory enumeration for SMB2 QUERY_DIRECTORY (MS-SMB2 3.3.5.18).
//
// A DirectoryCursor lists one directory: "." and ".." first, as Windows and Samba do (also in
// the root of a share, where ".." describes the root itself), then every entry of the directory
// in the file system's order. Each entry comes with its FileInfo (metadata.h).
//
// Symlinks: an entry that is a symlink is described by its target when the target resolves
// inside the share (openat2 with RESOLVE_BENEATH from the share root, as any open would);
// otherwise (target outside the share, dangling, a loop) it is described as the link itself
// with symlink_followed = false, so the caller can hide it or show it; opening it would fail
// with ACCESS_DENIED / OBJECT_NAME_NOT_FOUND anyway.
//
// Entries skipped silently: names a Windows client cannot use (not UTF-8, or containing
// \ : * ? " < > | or control characters; see is_representable_name() in path.h: such names
// could not be opened through parse_smb_path() either; Samba would mangle them, daxsmbd does
// not) and entries that vanish between readdir and statx.
//
// The cursor owns its own descriptor (reading a directory moves a shared offset, so it must not
// share one with anything else) and refers to the ShareRoot it was opened from, which must
// outlive it. `dir_rel` is only used for ".." and for resolving symlinks; if the directory is
// renamed while listed, those fall back to "not followed" / the directory's own info.
#pragma once

#include <dirent.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/result.h"
#include "server/vfs/metadata.h"
#include "server/vfs/share_root.h"
#include "server/vfs/wildcard.h"

namespace daxsmbd::server::vfs {

struct DirEntry {
    std::string name;
    FileInfo info;
    bool is_symlink = false;        // the directory entry itself is a symlink
    bool symlink_followed = false;  // ...and `info` describes its target inside the share
};

class DirectoryCursor {
  public:
    // Opens the on-disk directory dir_rel ("" = the share root) for listing.
    static Result<DirectoryCursor> open(const ShareRoot& root, std::string dir_rel);

    DirectoryCursor(DirectoryCursor&&) noexcept = default;
    DirectoryCursor& operator=(DirectoryCursor&&) noexcept = default;

    // The next entry whose name matches `pattern` (wildcard_match(), case-insensitive unless the
    // share is case-sensitive), or nullopt at the end. Names are matched before the entry is
    // stat'ed, so non-matching entries cost no statx. An entry handed back with put_back() is
    // returned first, without matching it again.
    Result<std::optional<DirEntry>> next(std::string_view pattern = "*");

    // Puts back one entry, typically the one that did not fit into the client's output buffer;
    // the next call of next() returns it. Only one entry can be pending.
    void put_back(DirEntry entry);

    // Starts over from "." (SMB2_RESTART_SCANS / SMB2_REOPEN).
    void rewind();

    // True once next() has returned nullopt and nothing was put back since.
    bool at_end() const { return phase_ == Phase::End && !pending_; }

    const std::string& dir_rel() const { return dir_rel_; }
    // The listed directory's descriptor, for calls that do not move the listing's offset (the
    // xattrs of an entry, vfs::ea_size_at()).
    int fd() const { return ::dirfd(dir_.get()); }

  private:
    enum class Phase { Dot, DotDot, Entries, End };
    struct DirCloser {
        void operator()(DIR* d) const;
    };

    DirectoryCursor() = default;
    Result<FileInfo> info_of_dotdot() const;
    // Describes one readdir entry; nullopt when it vanished in between.
    std::optional<DirEntry> describe(const char* name) const;

    const ShareRoot* root_ = nullptr;
    std::string dir_rel_;
    std::unique_ptr<DIR, DirCloser> dir_;
    Phase phase_ = Phase::Dot;
    std::optional<DirEntry> pending_;
};

}  // namespace daxsmbd::server::vfs
