//! Checked views of packet headers, one file per header: [`ethernet`],
//! [`vlan`], [`mpls`] (and PBB's I-TAG), [`arp`], [`ipv4`], [`ipv6`],
//! [`tcp`], [`udp`] (and SCTP's), [`icmp`] (and neighbour discovery),
//! [`vxlan`], [`geneve`] (with its options); [`transport`] is the one
//! follow-up of a transport checksum after bytes it covers changed, and
//! [`build`] the one frame builder.
//!
//! A view is a header's fixed bytes, `&[u8; N]` or `&mut [u8; N]`, taken
//! with one checked slice of the frame at an offset the parser recorded
//! (`at` / `at_mut`: `None` when the frame does not hold all `N` bytes).
//! Its fields are read and written by name at constant offsets, each an
//! array index the compiler checks against `N` (an index past the header
//! does not build), so code that goes through views never indexes a frame
//! out of bounds and never panics on one. Which header sits at an offset is
//! the caller's knowledge (the parser's `Offsets`), not the bytes'.
//!
//! Values are host-order numbers of the header's big-endian bytes
//! (`u8`/`u16`/`u32`/`u64` of 6-byte MAC addresses/`u128` of IPv6
//! addresses). Setters that change bytes a checksum covers say so: the
//! `*_fix` setters fold the change into the header's own checksum
//! (RFC 1624), and return what the bytes were for the caller to fold into a
//! transport checksum ([`transport::fix_checksum`]).

pub mod arp;
pub mod build;
pub mod ethernet;
pub mod geneve;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod mpls;
pub mod tcp;
pub mod transport;
pub mod udp;
pub mod vlan;
pub mod vxlan;

/// Declares a header view: the struct over `&[u8; LEN]` or `&mut [u8;
/// LEN]`, its constructors, and a getter and setter per field at a
/// constant offset.
macro_rules! header {
    (
        $(#[$doc:meta])*
        $name:ident, $len:expr;
        $( $(#[$fdoc:meta])* $get:ident, $set:ident: $ty:tt @ $at:expr; )*
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<T>(T);

        impl<'a> $name<&'a [u8; $len]> {
            /// The header at `at`, if `frame` holds all of it.
            #[inline]
            pub fn at(frame: &'a [u8], at: usize) -> Option<Self> {
                let b = frame.get(at..at.checked_add($len)?)?;
                Some($name(b.try_into().ok()?))
            }
        }

        impl<'a> $name<&'a mut [u8; $len]> {
            /// The header at `at`, writable, if `frame` holds all of it.
            #[inline]
            pub fn at_mut(frame: &'a mut [u8], at: usize) -> Option<Self> {
                let b = frame.get_mut(at..at.checked_add($len)?)?;
                Some($name(b.try_into().ok()?))
            }
        }

        impl<T: core::borrow::Borrow<[u8; $len]>> $name<T> {
            /// Bytes of the fixed header.
            pub const LEN: usize = $len;

            /// The header's bytes.
            #[inline]
            pub fn bytes(&self) -> &[u8; $len] {
                self.0.borrow()
            }

            $(
                $(#[$fdoc])*
                #[inline]
                pub fn $get(&self) -> $crate::wire::field_ty!($ty) {
                    $crate::wire::get!($ty, self.0.borrow(), $at)
                }
            )*
        }

        impl<T: core::borrow::BorrowMut<[u8; $len]>> $name<T> {
            /// The header's bytes, writable.
            #[inline]
            pub fn bytes_mut(&mut self) -> &mut [u8; $len] {
                self.0.borrow_mut()
            }

            $(
                #[inline]
                #[doc = concat!("Writes [`Self::", stringify!($get), "`].")]
                pub fn $set(&mut self, v: $crate::wire::field_ty!($ty)) {
                    $crate::wire::put!($ty, self.0.borrow_mut(), $at, v)
                }
            )*
        }
    };
}
pub(crate) use header;

/// The host type of a field's bytes.
macro_rules! field_ty {
    (u8) => {
        u8
    };
    (u16) => {
        u16
    };
    (u32) => {
        u32
    };
    (mac) => {
        u64
    };
    (addr6) => {
        u128
    };
}
pub(crate) use field_ty;

/// Reads a field's bytes (constant indices into the header array).
macro_rules! get {
    (u8, $b:expr, $at:expr) => {{
        let b: &[u8; _] = $b;
        b[$at]
    }};
    (u16, $b:expr, $at:expr) => {{
        let b: &[u8; _] = $b;
        u16::from_be_bytes([b[$at], b[$at + 1]])
    }};
    (u32, $b:expr, $at:expr) => {{
        let b: &[u8; _] = $b;
        u32::from_be_bytes([b[$at], b[$at + 1], b[$at + 2], b[$at + 3]])
    }};
    (mac, $b:expr, $at:expr) => {{
        let b: &[u8; _] = $b;
        u64::from_be_bytes([
            0,
            0,
            b[$at],
            b[$at + 1],
            b[$at + 2],
            b[$at + 3],
            b[$at + 4],
            b[$at + 5],
        ])
    }};
    (addr6, $b:expr, $at:expr) => {{
        let b: &[u8; _] = $b;
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[$at..$at + 16]);
        u128::from_be_bytes(a)
    }};
}
pub(crate) use get;

/// Writes a field's bytes.
macro_rules! put {
    (u8, $b:expr, $at:expr, $v:expr) => {{
        let b: &mut [u8; _] = $b;
        b[$at] = $v;
    }};
    (u16, $b:expr, $at:expr, $v:expr) => {{
        let b: &mut [u8; _] = $b;
        [b[$at], b[$at + 1]] = ($v as u16).to_be_bytes();
    }};
    (u32, $b:expr, $at:expr, $v:expr) => {{
        let b: &mut [u8; _] = $b;
        [b[$at], b[$at + 1], b[$at + 2], b[$at + 3]] = ($v as u32).to_be_bytes();
    }};
    (mac, $b:expr, $at:expr, $v:expr) => {{
        let b: &mut [u8; _] = $b;
        b[$at..$at + 6].copy_from_slice(&($v as u64).to_be_bytes()[2..]);
    }};
    (addr6, $b:expr, $at:expr, $v:expr) => {{
        let b: &mut [u8; _] = $b;
        b[$at..$at + 16].copy_from_slice(&($v as u128).to_be_bytes());
    }};
}
pub(crate) use put;
