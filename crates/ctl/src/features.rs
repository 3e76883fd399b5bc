//! `dump-table-features`, laid out as ovs-ofctl 3.x lays it out: no reply
//! header, per table its name, metadata bits, size, the instructions and
//! next tables (once when the table-miss properties equal the others),
//! the actions (once when write and apply agree), the fields set-field
//! may set, and the fields it matches (split into those that may be
//! wildcarded and those that must match exactly); a table whose features
//! equal the previous table's prints "ditto" (on its first line). Unlike
//! ovs-ofctl, fields and actions keep their OpenFlow 1.3 names (ovs-ofctl
//! writes its own, such as `eth_{src,dst}`), so the text is not identical.

use ofp::action::ActionType;
use ofp::instruction::InstructionType;
use ofp::msg::table_features::{prop_type as pt, OxmId, TableFeatureProp, TableFeatures, TypeId};
use ofp::oxm::OxmField;

/// Property `ty` of `t`, if the switch sent it.
fn prop(t: &TableFeatures, ty: u16) -> Option<&TableFeatureProp> {
    t.properties.iter().find(|p| match p {
        TableFeatureProp::Instructions { ty: x, .. }
        | TableFeatureProp::NextTables { ty: x, .. }
        | TableFeatureProp::Actions { ty: x, .. }
        | TableFeatureProp::Oxms { ty: x, .. }
        | TableFeatureProp::Experimenter { ty: x, .. } => *x == ty,
    })
}

fn instructions(ids: &[TypeId]) -> String {
    ids.iter()
        .map(|i| {
            InstructionType::from(i.ty)
                .name()
                .map_or_else(|| format!("type{}", i.ty), str::to_string)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn actions(ids: &[TypeId]) -> String {
    ids.iter()
        .map(|i| {
            ActionType::from(i.ty)
                .name()
                .map_or_else(|| format!("type{}", i.ty), str::to_string)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn oxm_name(id: &OxmId) -> String {
    let class = id.header >> 16;
    let field = ((id.header >> 9) & 0x7f) as u8;
    let f = match class {
        0x8000 => Some(OxmField::from(field)),
        // The Nicira tunnel fields (NXM_1) sluice knows.
        0x0001 => OxmField::from_nxm_1(field),
        _ => None,
    };
    match f.and_then(OxmField::name) {
        Some(n) => n.to_string(),
        None => format!("oxm({:#010x})", id.header),
    }
}

fn oxms(ids: &[OxmId]) -> String {
    ids.iter().map(oxm_name).collect::<Vec<_>>().join(" ")
}

/// Table numbers as ranges: `1-253`, `1 3 5-7`.
fn ranges(tables: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tables.len() {
        let mut j = i;
        while j + 1 < tables.len() && tables[j + 1] == tables[j].wrapping_add(1) {
            j += 1;
        }
        out.push(if i == j {
            tables[i].to_string()
        } else {
            format!("{}-{}", tables[i], tables[j])
        });
        i = j + 1;
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(" ")
    }
}

/// The instruction, next-table, action and set-field properties of one
/// kind (the table-miss ones when `miss`).
/// (`relative`: the last table's number, to compare next tables relative
/// to the table, see [`body`].)
fn kind_text(t: &TableFeatures, miss: bool, relative: Option<u8>) -> String {
    let m = u16::from(miss);
    let mut s = String::new();
    if let Some(TableFeatureProp::NextTables { tables, .. }) = prop(t, pt::NEXT_TABLES + m) {
        let later = match tables.last() {
            None => relative == Some(t.table_id),
            Some(last) => {
                relative == Some(*last)
                    && tables.first() == Some(&t.table_id.wrapping_add(1))
                    && tables.windows(2).all(|w| w[1] == w[0].wrapping_add(1))
            }
        };
        if later {
            s.push_str("      next tables: later\n");
        } else {
            s.push_str(&format!("      next tables: {}\n", ranges(tables)));
        }
    }
    if let Some(TableFeatureProp::Instructions { ids, .. }) = prop(t, pt::INSTRUCTIONS + m) {
        s.push_str(&format!("      instructions: {}\n", instructions(ids)));
    }
    let acts = |ty| match prop(t, ty) {
        Some(TableFeatureProp::Actions { ids, .. }) => Some(actions(ids)),
        _ => None,
    };
    let fields = |ty| match prop(t, ty) {
        Some(TableFeatureProp::Oxms { ids, .. }) => Some(oxms(ids)),
        _ => None,
    };
    let write = (acts(pt::WRITE_ACTIONS + m), fields(pt::WRITE_SETFIELD + m));
    let apply = (acts(pt::APPLY_ACTIONS + m), fields(pt::APPLY_SETFIELD + m));
    let mut one = |title: &str, (a, f): &(Option<String>, Option<String>)| {
        s.push_str(&format!("      {title} features:\n"));
        if let Some(a) = a {
            s.push_str(&format!("        actions: {a}\n"));
        }
        if let Some(f) = f {
            s.push_str(&format!("        supported on Set-Field: {f}\n"));
        }
    };
    if write == apply {
        one("Write-Actions and Apply-Actions", &write);
    } else {
        one("Write-Actions", &write);
        one("Apply-Actions", &apply);
    }
    s
}

/// One table's features, without its first line; with `relative`, next
/// tables that are all the tables after this one print as `next tables:
/// later` (none, for the last table): that is how two tables are found
/// equal, as ovs-ofctl does when it prints "ditto".
fn body(t: &TableFeatures, relative: Option<u8>) -> String {
    let mut s = format!(
        "    metadata: match={:#x} write={:#x}\n",
        t.metadata_match, t.metadata_write
    );
    if t.config != 0 {
        s.push_str(&format!("    config={:#x}\n", t.config));
    }
    s.push_str(&format!("    max_entries={}\n", t.max_entries));
    let others = kind_text(t, false, relative);
    let miss = kind_text(t, true, relative);
    if others == miss {
        s.push_str("    instructions (table miss and others):\n");
        s.push_str(&others);
    } else {
        s.push_str("    instructions (other than table miss):\n");
        s.push_str(&others);
        s.push_str("    instructions (table miss):\n");
        s.push_str(&miss);
    }
    let matching = match prop(t, pt::MATCH) {
        Some(TableFeatureProp::Oxms { ids, .. }) => ids.clone(),
        _ => Vec::new(),
    };
    let wild = match prop(t, pt::WILDCARDS) {
        Some(TableFeatureProp::Oxms { ids, .. }) => ids.clone(),
        _ => Vec::new(),
    };
    // A field's id carries its hasmask bit; compare without it.
    let same = |a: &OxmId, b: &OxmId| (a.header & !0x1ff) == (b.header & !0x1ff);
    let (may, must): (Vec<OxmId>, Vec<OxmId>) = matching
        .iter()
        .partition(|m| wild.iter().any(|w| same(w, m)));
    s.push_str("    matching:\n");
    if !may.is_empty() {
        s.push_str(&format!("      exact match or wildcard: {}\n", oxms(&may)));
    }
    if !must.is_empty() {
        s.push_str(&format!("      must exact match: {}\n", oxms(&must)));
    }
    s
}

/// `dump-table-features`: each table's features, a table whose features
/// equal the previous table's as "ditto" (a run of such tables without
/// names on one line, `tables 3...252: ditto`), a table's name after its
/// number (`table 0 ("Classifier"):`), as ovs-ofctl prints them.
pub fn table_features(v: &[TableFeatures], _xid: u32) -> String {
    let mut s = String::new();
    let mut prev: Option<String> = None;
    let mut dittos: Option<(u8, u8)> = None;
    let last = v.iter().map(|t| t.table_id).max();
    let finish = |s: &mut String, dittos: &mut Option<(u8, u8)>| match dittos.take() {
        Some((a, b)) if a == b => s.push_str(&format!("\n  table {a}: ditto\n")),
        Some((a, b)) => s.push_str(&format!("\n  tables {a}...{b}: ditto\n")),
        None => {}
    };
    for t in v {
        let key = body(t, last);
        let same = prev.as_deref() == Some(key.as_str());
        prev = Some(key);
        let name = t.name.as_str();
        if same && name.is_empty() {
            let first = dittos.map_or(t.table_id, |(a, _)| a);
            dittos = Some((first, t.table_id));
            continue;
        }
        finish(&mut s, &mut dittos);
        s.push_str(&format!("\n  table {}", t.table_id));
        if !name.is_empty() {
            s.push_str(&format!(" (\"{name}\")"));
        }
        s.push(':');
        if same {
            s.push_str(" ditto");
            continue;
        }
        s.push('\n');
        s.push_str(&body(t, None));
    }
    finish(&mut s, &mut dittos);
    let mut out = s.strip_prefix('\n').unwrap_or(&s).to_string();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(id: u8, name: &str, max_entries: u32) -> TableFeatures {
        TableFeatures {
            table_id: id,
            name: ofp::wire::FixedStr::new(name),
            metadata_match: 0,
            metadata_write: 0,
            config: 0,
            max_entries,
            properties: Vec::new(),
        }
    }

    /// Names after the number, runs of unnamed equal tables on one line,
    /// named ones each on theirs, as ovs-ofctl 3.1 prints them.
    #[test]
    fn names_and_dittos_as_ovs_ofctl() {
        let v = [
            table(0, "", 5),
            table(1, "Classifier", 5),
            table(2, "", 5),
            table(3, "", 5),
            table(4, "", 6),
            table(5, "", 6),
        ];
        let out = table_features(&v, 0);
        let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("  table")).collect();
        assert_eq!(
            heads,
            [
                "  table 0:",
                "  table 1 (\"Classifier\"): ditto",
                "  tables 2...3: ditto",
                "  table 4:",
                "  table 5: ditto"
            ],
            "{out}"
        );
        assert!(
            out.starts_with("  table 0:\n    metadata: match=0"),
            "{out}"
        );
        assert!(out.ends_with("  table 5: ditto\n\n"), "{out}");
    }

    #[test]
    fn table_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1-3 5 7-8");
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[254]), "254");
    }
}
