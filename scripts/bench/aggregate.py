"""Rows of several rounds made into figures: medians with min and max, and
ratios from interleaved rounds.

A row is one JSON object a scenario printed, tagged by the driver with
"scenario" and "round". Rows of the same thing in different rounds share
their *key*: every string field, and the numeric fields that name what
was measured rather than its result (KEY_NUMERIC). Every other number is a
*metric*, and a list of numbers (samples) is pooled over the rounds.

Ratios are taken round by round (the numerator and denominator rows of the
same round were measured minutes apart, not a whole run apart) and the
median of those per-round ratios is reported, with their min and max.
Pure functions; no I/O (tested by test_aggregate.py).
"""

import statistics

# Numeric fields that say what was measured, not what came out.
KEY_NUMERIC = {
    "rules", "ports", "workers", "active_flows", "flows", "frames",
    "offered_fps", "installed", "samples", "packets", "step_flows",
    "change_log", "packets_per_publication", "concurrency",
}
# Fields that are neither key nor metric.
IGNORED = {"round"}


def key_of(row):
    """The identity of a row across rounds, as a sorted tuple of pairs."""
    return tuple(sorted(
        (k, v) for k, v in row.items()
        if k not in IGNORED and (isinstance(v, str) or isinstance(v, bool) or k in KEY_NUMERIC)
    ))


def is_metric(k, v):
    return (k not in IGNORED and k not in KEY_NUMERIC
            and isinstance(v, (int, float)) and not isinstance(v, bool))


def is_worst_case(name):
    """A metric that is itself a maximum (delay_max_us, latency_ms_max,
    max_ns): its headline over the rounds is the largest, not the median,
    or a worst case would be hidden by the rounds that did not see it."""
    return name.endswith("_max") or "_max_" in name or name.startswith("max_") or name.endswith("max_us")


class Stat:
    """Median (the maximum for a worst-case metric), min and max of one
    metric over the rounds it was measured in; `headline` is the figure
    to quote."""

    def __init__(self, values, worst=False):
        self.values = sorted(values)
        self.n = len(self.values)
        self.worst = worst
        self.median = statistics.median(self.values) if self.values else None
        self.headline = self.values[-1] if (worst and self.values) else self.median
        self.min = self.values[0] if self.values else None
        self.max = self.values[-1] if self.values else None

    def __repr__(self):
        return f"Stat(headline={self.headline}, median={self.median}, min={self.min}, max={self.max}, n={self.n})"


class Group:
    """All rounds of one row key."""

    def __init__(self, key, rows):
        self.key = dict(key)
        self.rows = rows
        names = []
        for r in rows:
            for k, v in r.items():
                if k not in names and (is_metric(k, v) or isinstance(v, list)):
                    names.append(k)
        self.stats = {}
        self.samples = {}
        for k in names:
            vals = [r[k] for r in rows if k in r]
            if all(isinstance(v, list) for v in vals):
                self.samples[k] = sorted(x for v in vals for x in v if isinstance(x, (int, float)))
            else:
                nums = [v for v in vals if is_metric(k, v)]
                self.stats[k] = Stat(nums, worst=is_worst_case(k))

    def get(self, field):
        """A key field's value or a metric's median."""
        if field in self.key:
            return self.key[field]
        s = self.stats.get(field)
        return s.headline if s else None


def group(rows):
    """Rows grouped by key, in the order each key first appeared."""
    order, by = [], {}
    for r in rows:
        k = key_of(r)
        if k not in by:
            by[k] = []
            order.append(k)
        by[k].append(r)
    return [Group(k, by[k]) for k in order]


def matches(row, where):
    return all(row.get(k) == v for k, v in where.items())


def ratio(rows, metric, num, den):
    """The per-round ratio of `metric` between the row matching `num` and
    the row matching `den` (dicts of field values), over the rounds in
    which both were measured with a value: a Stat, or None if no round had
    both."""
    by_round = {}
    for r in rows:
        by_round.setdefault(r.get("round"), []).append(r)
    vals = []
    for rs in by_round.values():
        a = [r for r in rs if matches(r, num)]
        b = [r for r in rs if matches(r, den)]
        if len(a) == 1 and len(b) == 1:
            x, y = a[0].get(metric), b[0].get(metric)
            if is_metric(metric, x) and is_metric(metric, y) and y != 0:
                vals.append(x / y)
    return Stat(vals) if vals else None
