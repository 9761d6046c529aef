use super::*;

/// `setfacl -m u:1001:rwx` on a 0750 directory, as the kernel stores it
/// (read with `getfattr -e hex -n system.posix_acl_access`).
const KERNEL_BYTES: [u8; 44] = [
    0x02, 0x00, 0x00, 0x00, // version 2
    0x01, 0x00, 0x07, 0x00, 0xff, 0xff, 0xff, 0xff, // user::rwx
    0x02, 0x00, 0x07, 0x00, 0xe9, 0x03, 0x00, 0x00, // user:1001:rwx
    0x04, 0x00, 0x05, 0x00, 0xff, 0xff, 0xff, 0xff, // group::r-x
    0x10, 0x00, 0x07, 0x00, 0xff, 0xff, 0xff, 0xff, // mask::rwx
    0x20, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // other::---
];

#[test]
fn decodes_and_encodes_the_kernel_form() {
    let acl = Acl::decode(&KERNEL_BYTES).expect("valid");
    assert_eq!(
        acl.to_string(),
        "user::rwx,user:1001:rwx,group::r-x,mask::rwx,other::---"
    );
    assert_eq!(acl.encode(), KERNEL_BYTES.to_vec());
}

#[test]
fn refuses_what_is_not_an_acl() {
    assert!(Acl::decode(&[]).is_err());
    assert!(Acl::decode(&KERNEL_BYTES[..10]).is_err());
    let mut v1 = KERNEL_BYTES;
    v1[0] = 1;
    assert!(Acl::decode(&v1).is_err(), "version 1");
    let mut bad_tag = KERNEL_BYTES;
    bad_tag[4] = 0x40;
    assert!(Acl::decode(&bad_tag).is_err(), "unknown tag");
}

#[test]
fn entries_are_sorted_by_tag_then_id() {
    let acl = Acl::from_mode(0o750).with_users(&[(2002, R | X), (1001, R | W | X)]);
    assert_eq!(
        acl.to_string(),
        "user::rwx,user:1001:rwx,user:2002:r-x,group::r-x,mask::rwx,other::---"
    );
    let bytes = acl.encode();
    // user:1001 comes before user:2002 on the wire too.
    assert_eq!(&bytes[12..14], &[0x02, 0x00]);
    assert_eq!(
        u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]),
        1001
    );
    assert_eq!(Acl::decode(&bytes).expect("round trip"), acl);
}

#[test]
fn keeps_others_entries_and_replaces_only_its_own() {
    let theirs = Acl::from_mode(0o770).with_users(&[(500, R), (1001, R)]);
    let ours = theirs.with_users(&[(1001, R | W | X)]);
    assert_eq!(ours.user(500), Some(R), "another's entry kept");
    assert_eq!(ours.user(1001), Some(R | W | X), "one entry, declared perm");
    assert_eq!(
        ours.entries()
            .iter()
            .filter(|e| e.tag == Tag::User && e.id == 1001)
            .count(),
        1
    );
    assert!(ours.grants(&[(1001, R | W | X)]));
}

#[test]
fn a_narrowed_mask_is_widened_never_narrowed() {
    // chmod 700 on a directory with an ACL leaves mask::---.
    let set = Acl::from_mode(0o770).with_users(&[(1001, R | W | X)]);
    let narrowed = Acl::from_entries(
        set.entries()
            .iter()
            .map(|e| match e.tag {
                Tag::Mask => Entry { perm: 0, ..*e },
                _ => *e,
            })
            .collect(),
    );
    assert!(
        !narrowed.grants(&[(1001, R | W | X)]),
        "narrowed by the mask"
    );
    let restored = narrowed.with_users(&[(1001, R | W | X)]);
    assert_eq!(restored.mask(), Some(R | W | X));
    assert!(restored.grants(&[(1001, R | W | X)]));
    // A wider mask stays as wide.
    let wide = Acl::from_mode(0o770).with_users(&[(1001, R)]);
    assert_eq!(wide.mask(), Some(R | W | X), "the group's rwx counts");
}

#[test]
fn removing_its_entries_leaves_the_rest() {
    let acl = Acl::from_mode(0o750).with_users(&[(500, R), (1001, R | W | X)]);
    let left = acl.without_users(&[1001]);
    assert_eq!(left.user(1001), None);
    assert_eq!(left.user(500), Some(R));
    assert!(left.mask().is_some(), "500 still needs the mask");
    let none = left.without_users(&[500]);
    assert!(none.is_minimal());
    assert_eq!(none.mask(), None);
    assert_eq!(none.to_string(), "user::rwx,group::r-x,other::---");
}
