//! `[conntrack]`: checked into [`CtSettings`], applied to a pipeline's
//! configuration at start and to the live tracker at a reload.
//!
//! Contract: a problem is named by its key (`conntrack.limit`,
//! `conntrack.zone_limits.7`, `conntrack.timeouts.udp`); nothing is
//! applied from a file that has one. At a reload only what the file
//! changed is applied, so limits and timeouts set with `sluice-ctl` stay
//! until the file changes them.

use super::schema::ConntrackSection;
use super::{err, ConfigError};

/// The tracker's settings from the file (defaults where it says nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CtSettings {
    pub timeouts: conntrack::Timeouts,
    pub limits: conntrack::Limits,
    /// Zones with a limit of their own (0: none), by zone.
    pub zones: std::collections::BTreeMap<u16, u32>,
}

fn in_range<T: TryFrom<i64>>(v: i64, key: &str, what: &str) -> Result<T, ConfigError> {
    T::try_from(v).map_err(|_| err(key, format!("{v}: {what}")))
}

/// Checks `[conntrack]`.
pub(super) fn check(s: &ConntrackSection) -> Result<CtSettings, ConfigError> {
    let mut out = CtSettings::default();
    if let Some(v) = s.limit {
        out.limits.total = in_range(v, "conntrack.limit", "0 (no limit) or more")?;
    }
    if let Some(v) = s.default_zone_limit {
        out.limits.zone_default = in_range(
            v,
            "conntrack.default_zone_limit",
            "0 (no limit) to 4294967295",
        )?;
    }
    for (k, v) in &s.zone_limits {
        let key = format!("conntrack.zone_limits.{k}");
        let zone = k
            .parse::<u16>()
            .map_err(|_| err(&key, format!("{k:?} is not a zone (0-65535)")))?;
        out.zones
            .insert(zone, in_range(*v, &key, "0 (no limit) to 4294967295")?);
    }
    for (name, v) in &s.timeouts {
        let key = format!("conntrack.timeouts.{name}");
        let secs: u32 = in_range(*v, &key, "seconds, 1 to 4294967295")?;
        out.timeouts.set(name, secs).map_err(|e| err(&key, e))?;
    }
    Ok(out)
}

impl CtSettings {
    /// Sets the timeouts and limits in a pipeline's configuration (its
    /// tracker is made with them); the zones' own limits go to the tracker
    /// once it exists ([`CtSettings::apply_zones`]).
    pub fn apply(&self, c: &mut pipeline::Config) {
        c.ct_timeouts = self.timeouts;
        c.ct_limits = self.limits;
    }

    /// Sets the zones' own limits in `t`.
    pub fn apply_zones(&self, t: &conntrack::Tracker) {
        for (&z, &l) in &self.zones {
            t.set_zone_limit(z, Some(l));
        }
    }

    /// Applies what changed from `old` to `self` to the live tracker `t`:
    /// timeouts and limits when they changed (the file's values replace
    /// what `sluice-ctl` set), zones the old file limited and this one
    /// does not back to the default. Returns what changed, for the log.
    pub fn apply_changes(&self, old: &CtSettings, t: &conntrack::Tracker) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.timeouts != old.timeouts {
            t.set_timeouts(&self.timeouts);
            changed.push("timeouts");
        }
        if self.limits != old.limits {
            t.set_limits(&self.limits);
            changed.push("limits");
        }
        if self.zones != old.zones {
            for z in old.zones.keys().filter(|z| !self.zones.contains_key(z)) {
                t.set_zone_limit(*z, None);
            }
            for (&z, &l) in &self.zones {
                if old.zones.get(&z) != Some(&l) {
                    t.set_zone_limit(z, Some(l));
                }
            }
            changed.push("zone limits");
        }
        changed
    }
}
