// The security descriptor a new file or directory gets from its parent directory and from the
// descriptor its creator supplied (MS-DTYP 2.5.3.4, "Algorithm for Creating a Security
// Descriptor": CreateSecurityDescriptor, ComputeACL, ContainsInheritableACEs,
// ComputeInheritedACLfromParent, PreProcessACLfromCreator, PostProcessACL), as NTFS applies it to
// files. Pure: the caller reads the parent's descriptor and stores the result.
//
// Owner and group (MS-DTYP 2.5.3.4.1): the creator's, else the token's user and primary group.
//
// DACL (MS-DTYP 2.5.3.4.2), first rule that applies:
//   1. The creator supplies a DACL (SE_DACL_PRESENT; a NULL DACL included): it is used. Its
//      effective ACEs get CREATOR OWNER / CREATOR GROUP replaced and generic rights mapped
//      (PostProcessACL). When its control has SE_DACL_AUTO_INHERIT_REQ, it is not
//      SE_DACL_PROTECTED, it is not NULL and the parent has ACEs this child inherits, the
//      creator's ACEs marked INHERITED_ACE are dropped and the parent's inherited ACEs appended
//      after the explicit ones (SE_DACL_AUTO_INHERITED set). Without the merge the creator's
//      ACEs are kept, INHERITED_ACE ones included (MS-DTYP 2.5.3.4.6 PreProcessACLfromCreator
//      drops those in every case, which would leave a copied file whose ACEs were all inherited
//      with an empty DACL).
//   2. Else, when the parent's DACL has ACEs this kind of child inherits, the DACL is those ACEs.
//   3. Else there is no DACL: MS-DTYP takes the token's DefaultDACL, which AccessToken does not
//      carry. The result then has SE_DACL_PRESENT clear and `dacl_from_parent_or_creator` false:
//      the caller applies its own default (e.g. one derived from the Unix mode).
//
// Inheritance of one parent ACE (Windows behaviour, MS-DTYP 2.5.3.4.4 and the Win32 "ACE
// inheritance rules"; the spec's pseudocode, which skips INHERIT_ONLY parent ACEs and lists
// all effective ACEs before all inheritable ones, is not what Windows does):
//   - Non-container child: inherited when OBJECT_INHERIT is set, as an effective ACE with every
//     inheritance flag cleared.
//   - Container child: CONTAINER_INHERIT: an effective ACE that stays inheritable (OI/CI kept)
//     unless NO_PROPAGATE_INHERIT is set (then all inheritance flags are cleared).
//     OBJECT_INHERIT only: an INHERIT_ONLY | OBJECT_INHERIT ACE that passes it on to files
//     below, unless NO_PROPAGATE_INHERIT is set (then nothing).
//   - INHERIT_ONLY on the parent ACE only means "not effective on the parent": it does not
//     decide inheritance and is cleared on the child's effective ACE.
//   - Every inherited ACE has INHERITED_ACE when the inheritance is automatic (the parent's DACL
//     is SE_DACL_AUTO_INHERITED, or the creator asked with SE_DACL_AUTO_INHERIT_REQ), else none. On
//     an effective ACE, CREATOR OWNER / CREATOR GROUP become the new owner / group (CREATOR OWNER
//     SERVER / CREATOR GROUP SERVER are left as they are) and GENERIC_* bits are mapped with the
//     file mapping. When the ACE also stays inheritable and needed either change, it is split: the
//     effective ACE (SID replaced, mask mapped, no inheritance flags) followed by an INHERIT_ONLY
//     copy that keeps the original SID, mask and OI/CI flags for the next generation.
//   - Only ACE types with a plain SID are inherited (allowed, denied, their callback forms, and
//     the other plain types). Object ACEs inherit only to objects of a listed type (MS-DTYP
//     2.5.3.4.4: ObjectTypes), which files are not, and the opaque types are not inherited.
//
// Control: SE_SELF_RELATIVE always, SE_DACL_PRESENT with a DACL, SE_DACL_AUTO_INHERITED when the
// DACL came from the parent and the parent's DACL is SE_DACL_AUTO_INHERITED (NTFS passes
// DACL_AUTO_INHERIT for such parents) or when rule 1 merged; with a creator DACL that was not
// merged, the creator's SE_DACL_PROTECTED and SE_DACL_AUTO_INHERITED bits are kept.
// SE_DACL_AUTO_INHERIT_REQ is a request and never stored. The SACL is not computed (setting one
// needs SeSecurityPrivilege, which is not modelled): the result has none.
#pragma once

#include "auth/access_check.h"
#include "protocol/security_descriptor.h"
#include "protocol/sid.h"

namespace daxsmbd::auth {

struct NewObjectSecurity {
    protocol::SecurityDescriptor sd;
    // False when neither the creator nor the parent gave a DACL: `sd` has no DACL (SE_DACL_PRESENT
    // clear) and the caller applies its default DACL (MS-DTYP 2.5.3.4.2: Token.DefaultDACL).
    // Always equal to sd.dacl_present().
    bool dacl_from_parent_or_creator = false;
};

// What a new object gets (MS-DTYP 2.5.3.4.1 CreateSecurityDescriptor): `parent` is the parent
// directory's effective descriptor (nullptr: none, e.g. the share root), `creator` the
// descriptor of the client's SecD create context (nullptr: none sent), `token` the creator's.
NewObjectSecurity inherit_security_descriptor(const protocol::SecurityDescriptor* parent,
                                              const protocol::SecurityDescriptor* creator,
                                              const AccessToken& token, bool is_container);

// True when `parent`'s DACL has an ACE that a child of this kind inherits (MS-DTYP 2.5.3.4.3
// ContainsInheritableACEs, narrowed to this kind of child as NTFS does: a CONTAINER_INHERIT-only
// ACE does not count for a file, an OBJECT_INHERIT | NO_PROPAGATE-only ACE not for a directory).
// No DACL or a NULL DACL: false.
bool has_inheritable_aces(const protocol::SecurityDescriptor& parent, bool is_container);

// The ACEs a child of this kind inherits from `parent_dacl` (MS-DTYP 2.5.3.4.4 then 2.5.3.4.7
// PostProcessACL), in the parent's order, CREATOR OWNER / CREATOR GROUP resolved to `owner` /
// `group` on effective ACEs, marked INHERITED_ACE under automatic inheritance (`auto_inherit`).
// Empty when nothing is inheritable.
protocol::Acl inherited_acl(const protocol::Acl& parent_dacl, bool is_container,
                            const protocol::Sid& owner, const protocol::Sid& group,
                            bool auto_inherit = true);

}  // namespace daxsmbd::auth
