//! `wire_enum!`: enums for numbers that come off the wire.
//!
//! Every such enum keeps an `Unknown(n)` variant so that decoding never fails
//! or loses information just because a value is new to us; whether an unknown
//! value is an error is decided by the code that interprets it, which knows
//! which OpenFlow error to answer with.

/// Declares a wire enum: `name = value => "TEXT"` per variant, plus `Unknown(repr)`.
///
/// Generates `From<repr>` (never fails), `From<Self> for repr`, `name()` (the
/// spec's constant name, `None` for unknown values) and `KNOWN` (every named
/// variant, for tests and tables).
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $repr:ty {
            $( $(#[$vmeta:meta])* $var:ident = $val:literal => $txt:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $var, )*
            /// A value this implementation has no name for; kept as is.
            Unknown($repr),
        }

        impl From<$repr> for $name {
            #[inline]
            fn from(v: $repr) -> Self {
                match v {
                    $( $val => Self::$var, )*
                    other => Self::Unknown(other),
                }
            }
        }

        impl From<$name> for $repr {
            #[inline]
            fn from(v: $name) -> $repr {
                match v {
                    $( $name::$var => $val, )*
                    $name::Unknown(x) => x,
                }
            }
        }

        impl $name {
            /// Every named variant, in declaration order.
            pub const KNOWN: &'static [$name] = &[ $( $name::$var, )* ];

            /// The wire value.
            #[inline]
            pub fn value(self) -> $repr {
                <$repr>::from(self)
            }

            /// The name the spec (or ovs-ofctl) uses, `None` for unknown values.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $( $name::$var => Some($txt), )*
                    $name::Unknown(_) => None,
                }
            }

            /// Looks a variant up by its name (ASCII case-insensitive).
            pub fn from_name(s: &str) -> Option<Self> {
                Self::KNOWN.iter().copied().find(|v| v.name().is_some_and(|n| n.eq_ignore_ascii_case(s)))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}", self.value()),
                }
            }
        }
    };
}

pub(crate) use wire_enum;
