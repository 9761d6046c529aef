//! POSIX ACLs in the kernel's extended-attribute form, and keeping the
//! entries of a shared folder on a tree (CONTRACT "Identities and shared
//! folders").
//!
//! The kernel stores an ACL in `system.posix_acl_access` (and, on a
//! directory, `system.posix_acl_default`) as a 4-byte little-endian header
//! (version 2) followed by entries of `{tag: u16, perm: u16, id: u32}`, all
//! little-endian, sorted by tag and then id (`include/uapi/linux/posix_acl_xattr.h`).
//! This module encodes and decodes that form and computes what an ACL must
//! become so that each declared identity has exactly one entry of its
//! permission, leaving every other entry as it was. [`walk`] applies that to
//! a folder and everything beneath it through descriptors it opens itself;
//! [`watch`] keeps it so between applies.

pub mod folders;
mod notes;
pub mod tree;
pub mod walk;
pub mod watch;
mod watched;

use std::fmt;

/// Name of the access ACL attribute.
pub const XATTR_ACCESS: &str = "system.posix_acl_access";
/// Name of the default ACL attribute (directories only).
pub const XATTR_DEFAULT: &str = "system.posix_acl_default";

/// The only header version the kernel reads.
const VERSION: u32 = 2;
/// The id of entries that name no one (owner, owning group, mask, other).
const UNDEFINED_ID: u32 = u32::MAX;

/// The kind of an entry, in the kernel's numbering (which is its sort order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tag {
    /// The owner (`user::`).
    UserObj,
    /// A named user (`user:NAME:`).
    User,
    /// The owning group (`group::`).
    GroupObj,
    /// A named group (`group:NAME:`).
    Group,
    /// The mask: the most any named entry or the owning group is granted.
    Mask,
    /// Everyone else (`other::`).
    Other,
}

impl Tag {
    fn to_raw(self) -> u16 {
        match self {
            Tag::UserObj => 0x01,
            Tag::User => 0x02,
            Tag::GroupObj => 0x04,
            Tag::Group => 0x08,
            Tag::Mask => 0x10,
            Tag::Other => 0x20,
        }
    }

    fn from_raw(raw: u16) -> Option<Tag> {
        Some(match raw {
            0x01 => Tag::UserObj,
            0x02 => Tag::User,
            0x04 => Tag::GroupObj,
            0x08 => Tag::Group,
            0x10 => Tag::Mask,
            0x20 => Tag::Other,
            _ => return None,
        })
    }

    fn named(self) -> bool {
        matches!(self, Tag::User | Tag::Group)
    }
}

/// Read permission.
pub const R: u16 = 4;
/// Write permission.
pub const W: u16 = 2;
/// Execute (search, on a directory) permission.
pub const X: u16 = 1;

/// One entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    /// What it applies to.
    pub tag: Tag,
    /// The uid or gid of a named entry; `u32::MAX` otherwise.
    pub id: u32,
    /// `rwx` bits ([`R`], [`W`], [`X`]).
    pub perm: u16,
}

/// An ACL: its entries, kept sorted by tag then id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Acl {
    entries: Vec<Entry>,
}

/// Why bytes are not an ACL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a POSIX ACL: {0}")]
pub struct BadAcl(String);

impl Acl {
    /// The ACL equivalent to permission bits `mode` (owner, group, other).
    pub fn from_mode(mode: u32) -> Acl {
        let bits = |shift: u32| ((mode >> shift) & 7) as u16;
        Acl::from_entries(vec![
            Entry {
                tag: Tag::UserObj,
                id: UNDEFINED_ID,
                perm: bits(6),
            },
            Entry {
                tag: Tag::GroupObj,
                id: UNDEFINED_ID,
                perm: bits(3),
            },
            Entry {
                tag: Tag::Other,
                id: UNDEFINED_ID,
                perm: bits(0),
            },
        ])
    }

    /// An ACL of these entries (sorted here).
    pub fn from_entries(mut entries: Vec<Entry>) -> Acl {
        entries.sort_by_key(|e| (e.tag, e.id));
        Acl { entries }
    }

    /// The entries, sorted by tag then id.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Decode the kernel's form.
    pub fn decode(bytes: &[u8]) -> Result<Acl, BadAcl> {
        if bytes.len() < 4 || !(bytes.len() - 4).is_multiple_of(8) {
            return Err(BadAcl(format!("{} bytes", bytes.len())));
        }
        let version = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if version != VERSION {
            return Err(BadAcl(format!("version {version}")));
        }
        let mut entries = Vec::with_capacity((bytes.len() - 4) / 8);
        for chunk in bytes[4..].chunks_exact(8) {
            let raw_tag = u16::from_le_bytes([chunk[0], chunk[1]]);
            let tag = Tag::from_raw(raw_tag).ok_or_else(|| BadAcl(format!("tag {raw_tag:#x}")))?;
            let perm = u16::from_le_bytes([chunk[2], chunk[3]]);
            let id = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
            entries.push(Entry {
                tag,
                id: if tag.named() { id } else { UNDEFINED_ID },
                perm,
            });
        }
        Ok(Acl::from_entries(entries))
    }

    /// Encode in the kernel's form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 8 * self.entries.len());
        out.extend_from_slice(&VERSION.to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.tag.to_raw().to_le_bytes());
            out.extend_from_slice(&e.perm.to_le_bytes());
            out.extend_from_slice(&e.id.to_le_bytes());
        }
        out
    }

    fn get(&self, tag: Tag) -> Option<u16> {
        self.entries.iter().find(|e| e.tag == tag).map(|e| e.perm)
    }

    /// The permission of named user `uid`, if it has an entry.
    pub fn user(&self, uid: u32) -> Option<u16> {
        self.entries
            .iter()
            .find(|e| e.tag == Tag::User && e.id == uid)
            .map(|e| e.perm)
    }

    /// The mask, if there is one.
    pub fn mask(&self) -> Option<u16> {
        self.get(Tag::Mask)
    }

    /// Whether the ACL has no named entry (so no mask is needed).
    pub fn is_minimal(&self) -> bool {
        !self.entries.iter().any(|e| e.tag.named())
    }

    /// This ACL with exactly one `user:UID:PERM` entry per `(uid, perm)` of
    /// `wanted` (a duplicate or different entry of that uid is replaced),
    /// every other entry kept, and a mask that grants at least every
    /// wanted permission: the old mask widened, never narrowed further.
    pub fn with_users(&self, wanted: &[(u32, u16)]) -> Acl {
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| {
                e.tag != Tag::Mask
                    && !(e.tag == Tag::User && wanted.iter().any(|(u, _)| *u == e.id))
            })
            .copied()
            .collect();
        for &(uid, perm) in wanted {
            if !entries.iter().any(|e| e.tag == Tag::User && e.id == uid) {
                entries.push(Entry {
                    tag: Tag::User,
                    id: uid,
                    perm,
                });
            }
        }
        let needed = wanted.iter().fold(0, |acc, (_, p)| acc | p);
        let mask = match self.mask() {
            Some(old) => old | needed,
            // A new mask: what the owning group and every named entry have,
            // as `setfacl` computes it, so no one is narrowed by it.
            None => entries
                .iter()
                .filter(|e| e.tag.named() || e.tag == Tag::GroupObj)
                .fold(0, |acc, e| acc | e.perm),
        };
        if entries.iter().any(|e| e.tag.named()) {
            entries.push(Entry {
                tag: Tag::Mask,
                id: UNDEFINED_ID,
                perm: mask,
            });
        }
        Acl::from_entries(entries)
    }

    /// This ACL without the named user entries of `uids`; the mask goes when
    /// no named entry is left (the kernel then keeps only the mode bits:
    /// the owning group gets what the mask allowed it).
    pub fn without_users(&self, uids: &[u32]) -> Acl {
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| !(e.tag == Tag::User && uids.contains(&e.id)))
            .copied()
            .collect();
        if !entries.iter().any(|e| e.tag.named()) {
            let mask = self.mask();
            entries.retain(|e| e.tag != Tag::Mask);
            if let Some(mask) = mask {
                for e in entries.iter_mut().filter(|e| e.tag == Tag::GroupObj) {
                    e.perm &= mask;
                }
            }
        }
        Acl::from_entries(entries)
    }

    /// Whether every `(uid, perm)` of `wanted` has exactly that entry and
    /// the mask does not narrow it.
    pub fn grants(&self, wanted: &[(u32, u16)]) -> bool {
        wanted.iter().all(|&(uid, perm)| {
            self.entries
                .iter()
                .filter(|e| e.tag == Tag::User && e.id == uid)
                .map(|e| e.perm)
                .eq(std::iter::once(perm))
                && self.mask().is_some_and(|m| m & perm == perm)
        })
    }
}

fn perm_text(perm: u16) -> String {
    [(R, 'r'), (W, 'w'), (X, 'x')]
        .iter()
        .map(|&(bit, c)| if perm & bit != 0 { c } else { '-' })
        .collect()
}

impl fmt::Display for Acl {
    /// `getfacl`'s short form: `user::rwx,user:1001:rwx,group::r-x,mask::rwx,other::---`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let (kind, named) = match e.tag {
                Tag::UserObj => ("user", false),
                Tag::User => ("user", true),
                Tag::GroupObj => ("group", false),
                Tag::Group => ("group", true),
                Tag::Mask => ("mask", false),
                Tag::Other => ("other", false),
            };
            if named {
                write!(f, "{kind}:{}:{}", e.id, perm_text(e.perm))?;
            } else {
                write!(f, "{kind}::{}", perm_text(e.perm))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
