#include "auth/sd_inherit.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "protocol/access_mask.h"

namespace daxsmbd::auth {

using protocol::Ace;
using protocol::Acl;
using protocol::SecurityDescriptor;
using protocol::Sid;
namespace af = protocol::ace_flags;
namespace am = protocol::access_mask;
namespace sc = protocol::sd_control;

namespace {

constexpr uint8_t kPropagateFlags = af::kObjectInherit | af::kContainerInherit;
constexpr uint8_t kInheritanceFlags =
    af::kObjectInherit | af::kContainerInherit | af::kNoPropagateInherit | af::kInheritOnly;
constexpr uint32_t kGenericBits =
    am::kGenericRead | am::kGenericWrite | am::kGenericExecute | am::kGenericAll;

bool is_creator_sid(const Sid& sid) {
    return sid == well_known_sid::creator_owner() || sid == well_known_sid::creator_group();
}

// MS-DTYP 2.5.3.4.7 (PostProcessACL): an effective ACE that names CREATOR OWNER / CREATOR GROUP
// or carries generic rights must be rewritten; an inheritable one keeps them for its children.
bool needs_resolution(const Ace& a) {
    return (a.sid && is_creator_sid(*a.sid)) || (a.mask & kGenericBits);
}

// The effective form of `a` on the new object (MS-DTYP 2.5.3.4.7): CREATOR OWNER -> owner,
// CREATOR GROUP -> group, GENERIC_* mapped with the file mapping, flags set to `flags`.
Ace resolved(const Ace& a, const Sid& owner, const Sid& group, uint8_t flags) {
    Ace out = a;
    out.flags = flags;
    if (out.sid && *out.sid == well_known_sid::creator_owner())
        out.sid = owner;
    else if (out.sid && *out.sid == well_known_sid::creator_group())
        out.sid = group;
    out.mask = protocol::map_generic_file(out.mask);
    return out;
}

// Whether a child of this kind inherits `a` (MS-DTYP 2.5.3.4.4, with Windows' treatment of
// INHERIT_ONLY: it only concerns the parent itself).
bool inherits(const Ace& a, bool is_container) {
    // Only plain-SID ACEs: object ACEs inherit to objects whose type is listed (ObjectTypes in
    // 2.5.3.4.4), which files and directories have none of; opaque types are not inherited.
    if (!a.sid) return false;
    if (!is_container) return a.flags & af::kObjectInherit;
    if (a.flags & af::kContainerInherit) return true;
    // OBJECT_INHERIT only: passed on through the directory to the files below it, unless this
    // child is the last generation.
    return (a.flags & af::kObjectInherit) && !(a.flags & af::kNoPropagateInherit);
}

// Appends what the new object gets of the parent ACE `a` (MS-DTYP 2.5.3.4.4; Win32 "ACE
// inheritance rules"). Every ACE appended carries `inherited`: INHERITED_ACE under automatic
// inheritance, else nothing (MS-DTYP 2.5.3.4.4: the flag is set with DACL_AUTO_INHERIT only, which
// NTFS asks for when the parent's DACL is SE_DACL_AUTO_INHERITED; smbtorture smb2.acls.INHERITANCE
// expects no flag below a parent set without it).
void append_inherited(const Ace& a, bool is_container, const Sid& owner, const Sid& group,
                      uint8_t inherited, std::vector<Ace>& out) {
    if (!inherits(a, is_container)) return;
    const uint8_t f = a.flags;
    if (!is_container) {
        // A file: effective, with every inheritance flag cleared.
        out.push_back(resolved(a, owner, group, inherited));
        return;
    }
    if (f & af::kContainerInherit) {
        if (f & af::kNoPropagateInherit) {
            // Effective on this directory, inherited no further.
            out.push_back(resolved(a, owner, group, inherited));
            return;
        }
        const uint8_t propagate = f & kPropagateFlags;
        if (needs_resolution(a)) {
            // Split: the effective ACE with the SID and mask resolved, then an INHERIT_ONLY copy
            // that keeps them generic for the next generation.
            out.push_back(resolved(a, owner, group, inherited));
            Ace next = a;
            next.flags = propagate | af::kInheritOnly | inherited;
            out.push_back(std::move(next));
        } else {
            Ace both = a;
            both.flags = propagate | inherited;
            out.push_back(std::move(both));
        }
        return;
    }
    // OBJECT_INHERIT only (NO_PROPAGATE excluded by inherits()): not effective on a directory,
    // propagated for the files created in it; SID and mask stay generic.
    Ace next = a;
    next.flags = af::kObjectInherit | af::kInheritOnly | inherited;
    out.push_back(std::move(next));
}

// Appends the creator's ACE `a` (MS-DTYP 2.5.3.4.7 applied to the creator's ACL): an effective
// ACE naming a creator SID or carrying generic rights is resolved; on a directory where it is
// also inheritable it is split like an inherited one, so its children still see the generic form.
void append_explicit(const Ace& a, bool is_container, const Sid& owner, const Sid& group,
                     std::vector<Ace>& out) {
    if (!a.sid || a.inherit_only() || !needs_resolution(a)) {
        out.push_back(a);
        return;
    }
    if (is_container && (a.flags & kPropagateFlags)) {
        out.push_back(resolved(a, owner, group, uint8_t(a.flags & ~kInheritanceFlags)));
        Ace next = a;
        next.flags |= af::kInheritOnly;
        out.push_back(std::move(next));
        return;
    }
    out.push_back(resolved(a, owner, group, a.flags));
}

}  // namespace

bool has_inheritable_aces(const SecurityDescriptor& parent, bool is_container) {
    // MS-DTYP 2.5.3.4.3 (ContainsInheritableACEs), per kind of child. No DACL / NULL DACL: none.
    if (!parent.dacl_present() || !parent.dacl) return false;
    return std::any_of(parent.dacl->aces.begin(), parent.dacl->aces.end(),
                       [&](const Ace& a) { return inherits(a, is_container); });
}

Acl inherited_acl(const Acl& parent_dacl, bool is_container, const Sid& owner, const Sid& group,
                  bool auto_inherit) {
    Acl out;
    const uint8_t inherited = auto_inherit ? af::kInherited : 0;
    for (const Ace& a : parent_dacl.aces)
        append_inherited(a, is_container, owner, group, inherited, out.aces);
    return out;
}

NewObjectSecurity inherit_security_descriptor(const SecurityDescriptor* parent,
                                              const SecurityDescriptor* creator,
                                              const AccessToken& token, bool is_container) {
    NewObjectSecurity out;
    SecurityDescriptor& sd = out.sd;
    // MS-DTYP 2.5.3.4.1: the creator's owner and group, else the token's (Token.OwnerIndex is the
    // user here: AccessToken has no separate default owner).
    sd.owner = creator && creator->owner ? *creator->owner : token.new_object_owner();
    sd.group = creator && creator->group ? *creator->group : token.primary_group;
    const Sid& owner = *sd.owner;
    const Sid& group = *sd.group;

    const bool parent_inherits = parent && has_inheritable_aces(*parent, is_container);

    if (creator && creator->dacl_present()) {
        const uint16_t cc = creator->control;
        const uint16_t kept_bits = cc & (sc::kDaclProtected | sc::kDaclAutoInherited);
        if (!creator->dacl) {
            // A NULL DACL asked for explicitly stays NULL: merging inherited ACEs into it would
            // turn "everyone, everything" into a restriction nobody asked for.
            sd.set_dacl(std::nullopt);
            sd.control |= kept_bits;
        } else {
            // MS-DTYP 2.5.3.4.2: an explicit DACL is used; it is merged with the parent's
            // inheritable ACEs when auto-inheritance is asked for (DACL_AUTO_INHERIT, which the
            // creator requests with SE_DACL_AUTO_INHERIT_REQ) and the DACL is not protected.
            const bool merge = (cc & sc::kDaclComputedInheritanceRequired) &&
                               !(cc & sc::kDaclProtected) && parent_inherits;
            Acl acl;
            acl.revision = std::max(creator->dacl->revision, Acl::kRevision);
            for (const Ace& a : creator->dacl->aces) {
                // MS-DTYP 2.5.3.4.6 (PreProcessACLfromCreator): ACEs the creator marked as
                // inherited are replaced by what the parent really passes on. Only when merging:
                // otherwise a copied file whose ACEs were all inherited would end up with an
                // empty DACL.
                if (merge && (a.flags & af::kInherited)) continue;
                append_explicit(a, is_container, owner, group, acl.aces);
            }
            if (merge) {
                // Explicit ACEs first, then the inherited ones (MS-DTYP 2.5.3.4.2).
                for (const Ace& a : parent->dacl->aces)
                    append_inherited(a, is_container, owner, group, af::kInherited, acl.aces);
                sd.control |= sc::kDaclAutoInherited;
            } else {
                sd.control |= kept_bits;
            }
            sd.set_dacl(std::move(acl));
        }
    } else if (parent_inherits) {
        // MS-DTYP 2.5.3.4.2: no creator DACL, the parent has inheritable ACEs: those alone.
        // NTFS asks for DACL_AUTO_INHERIT when the parent's DACL is auto-inherited
        // (SeComputeAutoInheritByObjectType): the inherited ACEs are then marked INHERITED_ACE
        // and the child's DACL auto-inherited too.
        const bool auto_inherit = parent->control & sc::kDaclAutoInherited;
        sd.set_dacl(inherited_acl(*parent->dacl, is_container, owner, group, auto_inherit));
        if (auto_inherit) sd.control |= sc::kDaclAutoInherited;
    }
    // Else MS-DTYP 2.5.3.4.2 takes Token.DefaultDACL: left to the caller (no DACL here).
    out.dacl_from_parent_or_creator = sd.dacl_present();
    return out;
}

}  // namespace daxsmbd::auth
