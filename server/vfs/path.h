// SMB path names -> validated share-relative paths -> on-disk names.
//
// Step 1, parse_smb_path(): purely lexical. Input is the CREATE-style name of MS-SMB2 2.2.13,
// already converted from UTF-16LE to UTF-8: backslash separators, an optional leading backslash,
// and an optional stream suffix on the final component ("name:stream", "name:stream:$DATA",
// "name::$DATA"). Rules (MS-FSCC 2.1.5):
//   - "" or "\" is the share root.
//   - Empty components ("a\\b", a second leading backslash) -> OBJECT_NAME_INVALID.
//     A single trailing backslash is allowed and recorded (trailing_separator): the name must
//     then be a directory (resolve_path checks that).
//   - "." components are dropped; ".." removes the previous component. A ".." with nothing left
//     to remove would climb above the share root -> OBJECT_PATH_SYNTAX_BAD. This is what Samba
//     answers and what smbtorture (RAW-UNLINK, run against Windows servers too) expects for
//     "..", "\.." and "dir\..\.."; MS-FSCC 2.1.5.1 would let a server treat it as "." instead.
//     Either way nothing can leave the share; we refuse because a client sending it is buggy or
//     probing.
//   - In file names, the characters " * < > ? | / and 0x00-0x1F -> OBJECT_NAME_INVALID
//     (MS-FSCC 2.1.5.2; '\' is the separator and ':' starts the stream part). Wildcards are
//     therefore never part of a path; QUERY_DIRECTORY patterns go to wildcard_match() instead.
//   - A ':' in a component other than the last -> OBJECT_NAME_INVALID. In the last: the stream
//     name must not contain '/' or NUL (MS-FSCC 2.1.5.3); a stream name may be empty only when a
//     type follows; the type, when given, must be "$DATA" (any case), else OBJECT_NAME_INVALID;
//     more than two ':' -> OBJECT_NAME_INVALID. An empty file name before the ':' (a stream of
//     the root directory) is not supported -> OBJECT_NAME_INVALID.
//   - A component or stream name longer than 255 bytes of UTF-8 -> NAME_TOO_LONG. Windows
//     counts 255 UTF-16 units; Linux file systems store 255 bytes, which is the binding limit
//     (a 255-character non-ASCII name can be refused here although Windows would accept it).
//   - Whole path over 32760 UTF-16 units (MS-FSCC 2.1.5) -> NAME_TOO_LONG. Not UTF-8 ->
//     OBJECT_NAME_INVALID.
//
// Step 2, resolve_path(): walks the components on disk, each one by openat2 from the share
// root (RESOLVE_BENEATH, see open.h): always from the root, never from an intermediate
// directory descriptor, so that a symlink inside the share that points elsewhere inside the
// share is judged against the share root. Case-insensitive shares (the default): a component
// that does not exist with the exact case is looked up by scanning its parent directory with
// equal_ignore_case() (case_fold.h) and the on-disk spelling is substituted. Several candidates
// that differ only in case (possible on Linux) -> the byte-wise smallest wins, deterministically.
// No cache: each miss costs one directory scan. A cache would sit in front of
// find_name_ignore_case(), keyed by the directory's (st_dev, st_ino) and invalidated by its
// mtime/ctime, and hold upcased name -> on-disk name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server::vfs {

inline constexpr size_t kMaxComponentBytes = 255;
inline constexpr size_t kMaxPathUtf16 = 32760;

struct SmbPath {
    std::vector<std::string> components;  // normalised; empty = the share root
    std::string stream_name;              // "" = the default data stream
    std::string stream_type;              // "" when no type was given, else "$DATA" as spelled
    bool trailing_separator = false;

    bool is_root() const { return components.empty(); }
    bool has_stream() const { return !stream_name.empty(); }
    // The components joined with '/', as the client spelled them ("" for the root).
    std::string joined() const;
};

Result<SmbPath> parse_smb_path(std::string_view path);

// Validates a single file-name component (MS-FSCC 2.1.5.2 + the 255-byte limit): Success,
// ObjectNameInvalid or NameTooLong. "." and ".." are ObjectNameInvalid here.
NtStatus check_file_name(std::string_view name);

// True when `name`, read from disk, can be shown to a Windows client: valid UTF-8, not "." or
// "..", and no character that check_file_name() refuses (including '\' and ':').
bool is_representable_name(std::string_view name);

// True when `name` (a component in the share's root) is the share's reserved name
// (ShareOptions::reserved_root_name).
bool is_reserved_root_name(const ShareRoot& root, std::string_view name);

struct ResolvedPath {
    std::string rel;      // on-disk path below the root, '/'-separated; "" = the root
    std::string parent;   // on-disk path of the parent directory ("" = the root, also for the root)
    std::string name;     // final component: on-disk spelling if it exists, else as the client
                          // spelled it; "" for the root
    bool exists = false;  // the final component exists (after following symlinks inside the share)
};

// Resolves `path` (the stream part is ignored; the caller keeps it from SmbPath). Errors:
//   ObjectPathNotFound  a directory component is missing or is not a directory
//   ObjectNameInvalid   trailing backslash on a name that is not a directory
//   AccessDenied        a component is a symlink that leaves the share (or a magic link / loop)
//   others via errno_to_status (EACCES on a directory on the way, ...).
// A missing *final* component is not an error: exists = false, rel = parent + client spelling.
Result<ResolvedPath> resolve_path(const ShareRoot& root, const SmbPath& path);

// Looks for an entry of directory `dir_rel` (on-disk, "" = root) whose name equals `name`
// ignoring case; returns its on-disk spelling, or nullopt.
Result<std::optional<std::string>> find_name_ignore_case(const ShareRoot& root,
                                                         std::string_view dir_rel,
                                                         std::string_view name);

}  // namespace daxsmbd::server::vfs
