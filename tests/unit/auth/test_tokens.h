// The tokens the auth unit tests check descriptors against.
#pragma once

#include "auth/access_check.h"

namespace daxsmbd::auth::test {

// An authenticated user with Unix uid and gid 1001 (S-1-22-1-1001, S-1-22-2-1001), Everyone and
// Authenticated Users, as the server's token_of() builds it.
inline AccessToken alice_token() {
    AccessToken t;
    t.user = well_known_sid::unix_user(1001);
    t.primary_group = well_known_sid::unix_group(1001);
    t.groups = {well_known_sid::everyone(), well_known_sid::authenticated_users()};
    return t;
}

}  // namespace daxsmbd::auth::test
