//! Ports: reserved port numbers, `ofp_port`, config/state/feature bits, and
//! the other reserved identifiers (groups, tables, meters, buffers, queues).

use bytes::BufMut;

use crate::error::Result;
use crate::wire::{zeros, FixedStr, Reader};

/// Reserved port numbers (`ofp_port_no`).
pub mod port_no {
    /// Highest number of a physical port.
    pub const MAX: u32 = 0xffff_ff00;
    pub const IN_PORT: u32 = 0xffff_fff8;
    pub const TABLE: u32 = 0xffff_fff9;
    pub const NORMAL: u32 = 0xffff_fffa;
    pub const FLOOD: u32 = 0xffff_fffb;
    pub const ALL: u32 = 0xffff_fffc;
    pub const CONTROLLER: u32 = 0xffff_fffd;
    pub const LOCAL: u32 = 0xffff_fffe;
    pub const ANY: u32 = 0xffff_ffff;

    /// The ovs-ofctl name of a reserved port.
    pub fn name(p: u32) -> Option<&'static str> {
        Some(match p {
            IN_PORT => "in_port",
            TABLE => "table",
            NORMAL => "normal",
            FLOOD => "flood",
            ALL => "all",
            CONTROLLER => "controller",
            LOCAL => "local",
            ANY => "any",
            _ => return None,
        })
    }

    /// The reserved port named `s` (ASCII case-insensitive).
    pub fn from_name(s: &str) -> Option<u32> {
        [IN_PORT, TABLE, NORMAL, FLOOD, ALL, CONTROLLER, LOCAL, ANY]
            .into_iter()
            .find(|&p| name(p).is_some_and(|n| n.eq_ignore_ascii_case(s)))
            .or_else(|| s.eq_ignore_ascii_case("none").then_some(ANY))
    }
}

/// Reserved group numbers (`ofp_group`).
pub mod group_no {
    pub const MAX: u32 = 0xffff_ff00;
    pub const ALL: u32 = 0xffff_fffc;
    pub const ANY: u32 = 0xffff_ffff;
}

/// Reserved meter numbers (`ofp_meter`).
pub mod meter_no {
    pub const MAX: u32 = 0xffff_0000;
    pub const SLOWPATH: u32 = 0xffff_fffd;
    pub const CONTROLLER: u32 = 0xffff_fffe;
    pub const ALL: u32 = 0xffff_ffff;
}

/// `OFPTT_ALL`: every table (in deletes and stats requests).
pub const TABLE_ALL: u8 = 0xff;
/// `OFPTT_MAX`: the last usable table number.
pub const TABLE_MAX: u8 = 0xfe;
/// `OFP_NO_BUFFER`.
pub const NO_BUFFER: u32 = 0xffff_ffff;
/// `OFPQ_ALL`.
pub const QUEUE_ALL: u32 = 0xffff_ffff;

/// `ofp_port_config` bits.
pub mod port_config {
    pub const PORT_DOWN: u32 = 1 << 0;
    pub const NO_RECV: u32 = 1 << 2;
    pub const NO_FWD: u32 = 1 << 5;
    pub const NO_PACKET_IN: u32 = 1 << 6;
}

/// `ofp_port_state` bits.
pub mod port_state {
    pub const LINK_DOWN: u32 = 1 << 0;
    pub const BLOCKED: u32 = 1 << 1;
    pub const LIVE: u32 = 1 << 2;
}

/// `ofp_port_features` bits (speeds, medium, autoneg, pause).
pub mod port_features {
    pub const F_10MB_HD: u32 = 1 << 0;
    pub const F_10MB_FD: u32 = 1 << 1;
    pub const F_100MB_HD: u32 = 1 << 2;
    pub const F_100MB_FD: u32 = 1 << 3;
    pub const F_1GB_HD: u32 = 1 << 4;
    pub const F_1GB_FD: u32 = 1 << 5;
    pub const F_10GB_FD: u32 = 1 << 6;
    pub const F_40GB_FD: u32 = 1 << 7;
    pub const F_100GB_FD: u32 = 1 << 8;
    pub const F_1TB_FD: u32 = 1 << 9;
    pub const OTHER: u32 = 1 << 10;
    pub const COPPER: u32 = 1 << 11;
    pub const FIBER: u32 = 1 << 12;
    pub const AUTONEG: u32 = 1 << 13;
    pub const PAUSE: u32 = 1 << 14;
    pub const PAUSE_ASYM: u32 = 1 << 15;
}

/// `ofp_port`: a port's description (64 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortDesc {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub name: FixedStr<16>,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl PortDesc {
    pub const LEN: usize = 64;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        zeros(out, 4);
        out.extend_from_slice(&self.hw_addr);
        zeros(out, 2);
        out.extend_from_slice(&self.name.0);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
        ] {
            out.put_u32(v);
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<PortDesc> {
        let port_no = r.u32()?;
        r.skip(4)?;
        let hw_addr = r.array()?;
        r.skip(2)?;
        let name = FixedStr(r.array()?);
        Ok(PortDesc {
            port_no,
            hw_addr,
            name,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
            curr_speed: r.u32()?,
            max_speed: r.u32()?,
        })
    }
}
