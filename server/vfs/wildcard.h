// Windows file-name wildcard matching: MS-FSA 2.1.4.4 (FsRtlIsNameInExpression semantics), for
// the FileName pattern of SMB2 QUERY_DIRECTORY (MS-SMB2 3.3.5.18).
//
//   *   any run of characters, including none
//   ?   exactly one character
//   <   DOS_STAR: any run of characters that does not go past the final '.' of the name; it may
//       swallow that final '.' itself ("<.txt" matches "a.b.txt"; "<" alone does not match
//       "a.b" but does match "ab")
//   >   DOS_QM: one character; at a '.' or at the end of the name it matches nothing, so a run
//       of them matches up to that many characters before the dot ("foo>>>.txt" matches
//       "foo.txt" and "fooab.txt"); it also consumes a final '.' that ends the name
//   "   DOS_DOT: a '.', or nothing at the end of the name ("foo\"" matches "foo" and "foo.")
//
// Part 1 of the algorithm is honoured: an empty pattern only matches an empty name, an empty
// name matches nothing else, and "*" and "*.*" match every name (also names without a dot).
// Characters compare with upcase() (case_fold.h) when case_insensitive is set. Exactness of the
// DOS wildcards follows the behaviour Samba established against Windows (gentest) where the
// specification's prose is ambiguous.
//
// Runs in O(|pattern| * |name|) time and O(|name|) memory whatever the pattern (no
// backtracking blow-up on "*a*a*a*a...").
#pragma once

#include <string_view>

namespace daxsmbd::server::vfs {

bool wildcard_match(std::string_view pattern, std::string_view name, bool case_insensitive);

// MS-FSA 2.1.4.3: " * < > ? are wildcards.
bool has_wildcards(std::string_view pattern);

}  // namespace daxsmbd::server::vfs
