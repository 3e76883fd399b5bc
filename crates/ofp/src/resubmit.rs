//! Open vSwitch's `resubmit` (Nicira `NXAST_RESUBMIT`, subtype 1, and
//! `NXAST_RESUBMIT_TABLE`, subtype 14): look the packet up again, in
//! another table or the current one, as if it had come in on another port
//! or its own, run the matching flow's instructions, and go on with the
//! actions after the resubmit.
//!
//! Wire form (16 bytes): experimenter header, subtype, a 16-bit port (the
//! OpenFlow 1.0 numbering Open vSwitch keeps internally: 0xff00 and above
//! are the reserved ports 0xffffff00 and above), a table (255: the
//! current one) and 3 bytes of padding. `ovs-ofctl -O OpenFlow13` 3.1
//! writes every resubmit as `NXAST_RESUBMIT_TABLE`; both subtypes are
//! read, as Open vSwitch reads them (subtype 1 always means the current
//! table), and one that came as `NXAST_RESUBMIT` goes out so again, as
//! Open vSwitch writes it back (the bytes after its port as zeros).
//! Padding not zero is `OFPBAC_BAD_ARGUMENT`, as Open vSwitch answers.

use bytes::BufMut;

use crate::error::{BadActionCode, ErrorCode, OfpError};
use crate::port::port_no;
use crate::wire::Reader;

type Result<T> = std::result::Result<T, OfpError>;

/// Nicira action subtype `NXAST_RESUBMIT`.
pub const NXAST_RESUBMIT: u16 = 1;
/// Nicira action subtype `NXAST_RESUBMIT_TABLE`.
pub const NXAST_RESUBMIT_TABLE: u16 = 14;

/// How a [`Resubmit`] goes on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ResubmitForm {
    /// `NXAST_RESUBMIT_TABLE`: what ovs-ofctl 3.1 writes.
    #[default]
    ResubmitTable,
    /// `NXAST_RESUBMIT` (no table: the current one): kept when it came so.
    Resubmit,
}

/// A resubmit: where the packet is looked up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resubmit {
    /// The port the lookup (and the resubmitted flow's actions) take the
    /// packet as coming in on; `OFPP_IN_PORT`: its own.
    pub in_port: u32,
    /// The table; [`Resubmit::CURRENT_TABLE`]: the one whose flow runs
    /// the resubmit.
    pub table: u8,
    /// [`ResubmitForm::Resubmit`] only with the current table.
    pub form: ResubmitForm,
}

impl Resubmit {
    /// `table` meaning the table of the flow that resubmits.
    pub const CURRENT_TABLE: u8 = 255;

    /// Whether `port` has a 16-bit form (a port below 0xff00 or a reserved
    /// port): what a resubmit can name.
    pub fn port_fits(port: u32) -> bool {
        !(0xff00..port_no::MAX).contains(&port)
    }

    /// Open vSwitch's 16-bit port as an OpenFlow 1.3 port (0xff00 and up
    /// are the reserved ports 0xffffff00 and up).
    pub fn port_from_u16(p: u16) -> u32 {
        if p >= 0xff00 {
            0xffff_0000 | p as u32
        } else {
            p as u32
        }
    }

    /// A resubmit as ovs-ofctl writes it (`NXAST_RESUBMIT_TABLE`).
    pub fn new(in_port: u32, table: u8) -> Resubmit {
        Resubmit {
            in_port,
            table,
            form: ResubmitForm::ResubmitTable,
        }
    }

    /// The body after the action header: experimenter id onwards.
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u32(crate::action::NX_VENDOR_ID);
        if self.form == ResubmitForm::Resubmit && self.table == Resubmit::CURRENT_TABLE {
            out.put_u16(NXAST_RESUBMIT);
            out.put_u16(port_to_u16(self.in_port));
            out.put_bytes(0, 4);
            return;
        }
        out.put_u16(NXAST_RESUBMIT_TABLE);
        out.put_u16(port_to_u16(self.in_port));
        out.put_u8(self.table);
        out.put_bytes(0, 3);
    }

    /// Reads the body after the experimenter id (`len`: the whole action's).
    pub(crate) fn decode_body(len: usize, mut b: Reader<'_>) -> Result<Resubmit> {
        if len != 16 {
            return Err(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "resubmit is 16 bytes long",
            ));
        }
        let subtype = b.u16()?;
        let in_port = Resubmit::port_from_u16(b.u16()?);
        if subtype == NXAST_RESUBMIT {
            // The rest is not looked at, as Open vSwitch does not.
            return Ok(Resubmit {
                in_port,
                table: Resubmit::CURRENT_TABLE,
                form: ResubmitForm::Resubmit,
            });
        }
        let table = b.u8()?;
        if b.slice(3)?.iter().any(|&x| x != 0) {
            return Err(OfpError::new(
                ErrorCode::BadAction(BadActionCode::BadArgument),
                "resubmit padding not zero",
            ));
        }
        Ok(Resubmit::new(in_port, table))
    }
}

/// An OpenFlow 1.3 port as Open vSwitch's 16-bit port.
pub fn port_to_u16(p: u32) -> u16 {
    if p >= port_no::MAX {
        (p & 0xffff) as u16
    } else {
        p as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_map_between_the_two_numberings() {
        for p in [
            0,
            1,
            0xfeff,
            port_no::MAX,
            port_no::IN_PORT,
            port_no::LOCAL,
            port_no::ANY,
        ] {
            assert!(Resubmit::port_fits(p));
            assert_eq!(Resubmit::port_from_u16(port_to_u16(p)), p, "{p:#x}");
        }
        assert!(!Resubmit::port_fits(0xff00));
        assert!(!Resubmit::port_fits(0xffff_feff));
    }
}
