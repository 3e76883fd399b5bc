//! Loads a [`Compiled`] table for test runs (shared by the differential
//! test and the compile benchmark): its maps, with loopback standing in
//! for every egress port (a test run does not send) and no AF_XDP socket
//! (what goes up comes back as XDP_PASS), and one program per port.

use fastpath::compile::{
    Compiled, COUNTER_SIZE, CTL_VALUE_SIZE, MAP_COUNTERS, MAP_CTL, MAP_DEV, MAP_FLOOD, MAP_TABLE0,
    MAP_XSK, TABLE_VALUE_SIZE,
};
use netdev::bpf::{Map, MapKind, Prog};

/// The maps are held so that the programs keep them.
#[allow(dead_code)] // not every user reads every map
pub struct Loaded {
    pub ctl: Map,
    pub counters: Map,
    pub dev: Map,
    pub flood: Map,
    pub xsk: Map,
    pub tables: Vec<Map>,
    pub progs: Vec<Prog>,
}

pub fn load(c: &Compiled) -> std::io::Result<Loaded> {
    let ctl = Map::create(MapKind::Array, 4, CTL_VALUE_SIZE, 1, "sl_ctl")?;
    let mut v = c.generation.to_le_bytes().to_vec();
    v.extend_from_slice(&[0; 8]);
    ctl.update(&0u32.to_le_bytes(), &v)?;
    let counters = Map::create(MapKind::PercpuArray, 4, COUNTER_SIZE, c.counters, "sl_ctr")?;
    let dev = loopback_devmap(c.egress.len(), "sl_dev")?;
    let flood = loopback_devmap(c.flood.len(), "sl_flood")?;
    let xsk = Map::create(MapKind::XskMap, 4, 4, 1, "sl_xsk")?;
    let mut tables = Vec::new();
    for t in &c.tables {
        let m = Map::create(
            MapKind::Hash,
            t.key_size,
            TABLE_VALUE_SIZE,
            t.len().max(1) as u32,
            "sl_tbl",
        )?;
        m.update_many(&t.keys, &t.values)?;
        tables.push(m);
    }
    let mut progs = Vec::new();
    for p in &c.programs {
        let raw = p.code.link(|n| match n {
            MAP_CTL => ctl.fd(),
            MAP_COUNTERS => counters.fd(),
            MAP_DEV => dev.fd(),
            MAP_FLOOD => flood.fd(),
            MAP_XSK => xsk.fd(),
            t => tables[(t - MAP_TABLE0) as usize].fd(),
        });
        progs.push(Prog::load_xdp("sl_test", &raw)?);
    }
    Ok(Loaded {
        ctl,
        counters,
        dev,
        flood,
        xsk,
        tables,
        progs,
    })
}

/// A DEVMAP of `n` slots, each loopback (interface 1).
fn loopback_devmap(n: usize, name: &str) -> std::io::Result<Map> {
    let m = Map::create(MapKind::DevMap, 4, 4, n.max(1) as u32, name)?;
    for slot in 0..n as u32 {
        m.update(&slot.to_le_bytes(), &1u32.to_le_bytes())?;
    }
    Ok(m)
}
