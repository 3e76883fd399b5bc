//! Meters in ovs-ofctl text:
//! `meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100`.
//! Several bands follow one another, each starting with `type=`.

use super::value::parse_num;
use super::{split_at_key, split_top, TextError};
use crate::msg::meter::{meter_flags as mf, MeterBand, MeterMod, MeterModCommand};
use crate::port::meter_no;

const FLAGS: &[(&str, u16)] = &[
    ("kbps", mf::KBPS),
    ("pktps", mf::PKTPS),
    ("burst", mf::BURST),
    ("stats", mf::STATS),
];

fn parse_band(toks: &[&str]) -> Result<MeterBand, TextError> {
    let (mut ty, mut rate, mut burst, mut prec, mut exp) = ("", None, 0u32, None, None);
    for tok in toks {
        match tok.split_once('=') {
            Some(("type", v)) => ty = v,
            Some(("rate", v)) => rate = Some(parse_num(v, "a rate (kbps or pktps)")?),
            Some(("burst_size", v)) => burst = parse_num(v, "a burst size")?,
            Some(("prec_level", v)) => prec = Some(parse_num(v, "a precedence level (0-255)")?),
            Some(("experimenter", v)) => exp = Some(parse_num(v, "an experimenter id")?),
            _ => {
                return Err(TextError::new(
                    tok,
                    "rate=N, burst_size=N, prec_level=N or type=T",
                ))
            }
        }
    }
    let rate = rate.ok_or_else(|| TextError::new(&toks.join(","), "a band with rate=N"))?;
    Ok(match ty {
        "drop" => MeterBand::Drop {
            rate,
            burst_size: burst,
        },
        "dscp_remark" => MeterBand::DscpRemark {
            rate,
            burst_size: burst,
            prec_level: prec.ok_or_else(|| {
                TextError::new(&toks.join(","), "a dscp_remark band with prec_level=N")
            })?,
        },
        "experimenter" => MeterBand::Experimenter {
            rate,
            burst_size: burst,
            experimenter: exp.ok_or_else(|| TextError::new(&toks.join(","), "experimenter=ID"))?,
            data: Default::default(),
        },
        _ => {
            return Err(TextError::new(
                ty,
                "a band type: drop, dscp_remark or experimenter",
            ))
        }
    })
}

/// Parses a meter as `ovs-ofctl add-meter` takes it (the command stays ADD).
pub fn parse_meter_mod(s: &str) -> Result<MeterMod, TextError> {
    let (head, bands) = match split_at_key(s, "bands=") {
        Some((h, b)) => (h, Some(b)),
        None => (s, None),
    };
    let mut m = MeterMod {
        command: MeterModCommand::Add,
        flags: 0,
        meter_id: 0,
        bands: Vec::new(),
    };
    let mut have_id = false;
    for tok in split_top(head) {
        if let Some((_, bit)) = FLAGS.iter().find(|(n, _)| *n == tok) {
            m.flags |= bit;
            continue;
        }
        match tok.split_once('=') {
            Some(("meter", v)) => {
                m.meter_id = if v == "all" {
                    meter_no::ALL
                } else {
                    parse_num(v, "a meter id or all")?
                };
                have_id = true;
            }
            _ => {
                return Err(TextError::new(
                    tok,
                    "meter=N, kbps, pktps, burst, stats or bands=...",
                ))
            }
        }
    }
    if !have_id {
        return Err(TextError::new(s, "a meter=N"));
    }
    if let Some(b) = bands {
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for tok in split_top(b) {
            if tok.starts_with("type=") || groups.is_empty() {
                groups.push(Vec::new());
            }
            if let Some(g) = groups.last_mut() {
                g.push(tok);
            }
        }
        m.bands = groups
            .iter()
            .map(|g| parse_band(g))
            .collect::<Result<_, _>>()?;
    }
    Ok(m)
}

/// Writes a meter in the canonical form [`parse_meter_mod`] reads back.
pub fn format_meter_mod(m: &MeterMod) -> String {
    let id = if m.meter_id == meter_no::ALL {
        "all".to_string()
    } else {
        m.meter_id.to_string()
    };
    let mut parts = vec![format!("meter={id}")];
    for (name, bit) in FLAGS {
        if m.flags & bit != 0 {
            parts.push(name.to_string());
        }
    }
    let mut bands = Vec::new();
    for b in &m.bands {
        let mut p = match b {
            MeterBand::Drop { .. } => vec!["type=drop".to_string()],
            MeterBand::DscpRemark { .. } => vec!["type=dscp_remark".to_string()],
            MeterBand::Experimenter { .. } => vec!["type=experimenter".to_string()],
        };
        p.push(format!("rate={}", b.rate()));
        if b.burst_size() != 0 {
            p.push(format!("burst_size={}", b.burst_size()));
        }
        match b {
            MeterBand::DscpRemark { prec_level, .. } => p.push(format!("prec_level={prec_level}")),
            MeterBand::Experimenter { experimenter, .. } => {
                p.push(format!("experimenter={experimenter:#x}"))
            }
            MeterBand::Drop { .. } => {}
        }
        bands.push(p.join(","));
    }
    if !bands.is_empty() {
        parts.push(format!("bands={}", bands.join(",")));
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_round_trips() {
        let s = "meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100";
        let m = parse_meter_mod(s).unwrap();
        assert_eq!(m.flags, mf::KBPS | mf::BURST);
        assert_eq!(
            m.bands,
            vec![MeterBand::Drop {
                rate: 1000,
                burst_size: 100
            }]
        );
        assert_eq!(format_meter_mod(&m), s);
        let two =
            "meter=2,pktps,stats,bands=type=drop,rate=10,type=dscp_remark,rate=5,prec_level=1";
        let m = parse_meter_mod(two).unwrap();
        assert_eq!(m.bands.len(), 2);
        assert_eq!(format_meter_mod(&m), two);
        assert_eq!(
            parse_meter_mod("meter=1,bands=type=drop")
                .unwrap_err()
                .expected,
            "a band with rate=N"
        );
        assert_eq!(parse_meter_mod("meter=x").unwrap_err().token, "x");
    }
}
