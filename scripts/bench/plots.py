"""The report's plots (PNG, matplotlib with the Agg back end), each drawn
from the rows of a run: medians with min-max error bars where a point was
measured in several rounds.

make_all returns ({plot key: file name}, {plot key: why it was not drawn}).
"""

import os

import aggregate as ag


def _stats(rows, metric):
    """(median, lower error, upper error) of a metric over rows."""
    vals = [r[metric] for r in rows if ag.is_metric(metric, r.get(metric))]
    if not vals:
        return None
    st = ag.Stat(vals, worst=ag.is_worst_case(metric))
    return st.headline, st.headline - st.min, st.max - st.headline


def _series(rows, x, y, where):
    """Points (x, median y, err-, err+) of rows matching WHERE, by x."""
    xs = sorted({r[x] for r in rows if ag.matches(r, where) and x in r})
    pts = []
    for xv in xs:
        s = _stats([r for r in rows if ag.matches(r, where) and r.get(x) == xv], y)
        if s:
            pts.append((xv, *s))
    return pts


def _errorbar(ax, pts, label, **kw):
    if not pts:
        return
    ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                yerr=[[p[2] for p in pts], [p[3] for p in pts]], label=label, capsize=3, marker="o", **kw)


def _finish(ax, xlabel, ylabel, title, logx=False, from_zero=False, legend_size=8):
    """Labels, scale, legend and grid of one axes: every plot's last step."""
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if from_zero:
        ax.set_ylim(bottom=0)
    ax.legend(fontsize=legend_size)
    ax.grid(True, alpha=0.3)


def _switches(rows, prefix=None, pred=None):
    out = []
    for r in rows:
        sw = r.get("switch")
        if sw and sw not in out and (prefix is None or sw.startswith(prefix)) and (pred is None or pred(r)):
            out.append(sw)
    return out


def frames_vs_rules(plt, rows):
    fw = [r for r in rows if r.get("scenario") == "forwarding" and r.get("workers", 1) == 1]
    if not any(r.get("rules") for r in fw):
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    kinds = []
    for r in fw:
        if r.get("rules"):
            k = (r["backend"], r["switch"].split(" ")[0])
            if k not in kinds:
                kinds.append(k)
    for be, who in kinds:
        pts = _series(fw, "rules", "frames_per_s", {"backend": be})
        _errorbar(ax, pts, f"{'Open vSwitch netdev' if be == 'netdev' else who + ' ' + be}")
    # The rule-less rows as horizontal lines, each its own colour and dash.
    styles = [("grey", "--"), ("tab:purple", ":"), ("tab:brown", "-."), ("tab:olive", ":")]
    for i, sw in enumerate(_switches(fw, pred=lambda r: not r.get("rules"))):
        s = _stats([r for r in fw if r["switch"] == sw], "frames_per_s")
        if s:
            color, dash = styles[i % len(styles)]
            ax.axhline(s[0], linestyle=dash, linewidth=1.2, label=f"{sw} (no rules)", color=color)
    _finish(ax, "rules installed", "64-byte frames/s delivered",
            "Forwarding rate vs rules (two namespace hosts, iperf3 UDP)", logx=True, from_zero=True)
    return fig


def frames_vs_flows(plt, rows):
    fl = [r for r in rows if r.get("scenario") == "flows"]
    if not fl:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for sw in _switches(fl):
        pts = _series(fl, "active_flows", "frames_per_s", {"switch": sw, "dist": "uniform"})
        _errorbar(ax, pts, f"{sw}, uniform")
        z = _series(fl, "active_flows", "frames_per_s", {"switch": sw, "dist": "zipf"})
        if z:
            ax.errorbar([p[0] for p in z], [p[1] for p in z], yerr=[[p[2] for p in z], [p[3] for p in z]],
                        marker="*", markersize=12, linestyle="none", capsize=3, label=f"{sw}, Zipf")
    off = _stats(fl, "offered_per_s")
    if off:
        ax.axhline(off[0], linestyle=":", color="grey", label="offered (tcpreplay, median)")
    rules = max((r.get("rules", 0) for r in fl), default=0)
    _finish(ax, "distinct active flows in the traffic", "frames/s delivered",
            f"Forwarding rate vs active flows ({rules:,} rules installed)", logx=True, from_zero=True)
    return fig


def rtt_cdf(plt, rows):
    fw = [r for r in rows if r.get("scenario") == "forwarding" and r.get("rtt_samples_ms")]
    if not fw:
        return None
    # One rule set (the first with rules) plus the rule-less rows.
    sets = [r["set"] for r in fw if r.get("set") not in (None, "none")]
    first = sets[0] if sets else None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5))
    for sw in _switches(fw, pred=lambda r: r.get("set") in ("none", first) and r.get("workers", 1) == 1):
        s = sorted(x for r in fw if r["switch"] == sw for x in r["rtt_samples_ms"])
        if s:
            ax.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=sw)
    _finish(ax, "ping RTT (ms), host to host through the switch", "fraction of pings",
            f"RTT CDF ({first or 'no'} rule set; all rounds)", logx=True)
    # sluice's in-switch delay percentiles (its own histogram).
    probs = [("delay_p50_us", 0.5), ("delay_p99_us", 0.99), ("delay_p999_us", 0.999), ("delay_max_us", 1.0)]
    drawn = False
    for sw in _switches(fw, pred=lambda r: r.get("delay_p50_us") is not None and r.get("workers", 1) == 1):
        sel = [r for r in fw if r["switch"] == sw]
        pts = [(_stats(sel, k), p) for k, p in probs]
        pts = [(s[0], p) for s, p in pts if s]
        if pts:
            bx.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=sw)
            drawn = True
    if drawn:
        _finish(bx, "in-switch delay (us): p50, p99, p99.9 (medians over rounds), max (worst round)",
                "fraction of frames", "sluice in-switch delay, under the lab's load", logx=True,
                legend_size=7)
    return fig


def flowmods_rss(plt, rows):
    fc = [r for r in rows if r.get("scenario") == "flowcurve"]
    if not fc:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5))
    for sw in _switches(fc):
        _errorbar(ax, _series(fc, "installed", "flow_mods_per_s", {"switch": sw}), sw)
        _errorbar(bx, _series(fc, "installed", "rss_mb", {"switch": sw}), sw)
    _finish(ax, "flows installed", "flow-mods/s in the step (first byte to barrier reply)",
            "Flow-mod rate as the table fills (sluice-ctl add-flows)", from_zero=True)
    _finish(bx, "flows installed", "switch RSS (MB)", "Memory vs flows installed", from_zero=True)
    return fig


def roundtrips(plt, rows):
    pio = [r for r in rows if r.get("scenario") == "control" and r.get("test") == "packet_in_out"]
    if not pio:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for sw in _switches(pio):
        paced = [r for r in pio if r["switch"] == sw and r.get("offered_fps")]
        pts = _series(paced, "offered_fps", "round_trips_per_s", {})
        _errorbar(ax, pts, f"{sw}, paced")
        un = _stats([r for r in pio if r["switch"] == sw and not r.get("offered_fps")], "round_trips_per_s")
        if un:
            ax.axhline(un[0], linestyle="--", label=f"{sw}, unpaced (as fast as the port reads)")
    top = max((r["offered_fps"] for r in pio if r.get("offered_fps")), default=0)
    if top:
        ax.plot([0, top], [0, top], linestyle=":", color="grey", label="served = offered")
    _finish(ax, "ARP requests offered per second (pcap port, paced)", "round trips served per second",
            "PACKET_IN -> controller -> PACKET_OUT round trips")
    return fig


def pipeline_scaling(plt, rows):
    sc = [r for r in rows if r.get("scenario") == "scaling"]
    if not sc:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5))
    _errorbar(ax, _series(sc, "rules", "ns_per_pkt", {"axis": "rules"}), "with the cache")
    _errorbar(ax, _series(sc, "rules", "no_cache_ns", {"axis": "rules"}), "classifier on every packet")
    for d in ("uniform", "zipf"):
        _errorbar(bx, _series(sc, "active_flows", "ns_per_pkt", {"axis": "active_flows", "dist": d}), d)
    _finish(ax, "rules installed (traffic over min(rules, 65 536) of them)", "ns per packet (one core)",
            "pipeline-bench: rules grow", logx=True, from_zero=True)
    _finish(bx, "distinct active flows", "ns per packet (one core)",
            "pipeline-bench: active flows grow", logx=True, from_zero=True)
    return fig


PLOTS = {
    "frames_vs_rules": frames_vs_rules,
    "frames_vs_flows": frames_vs_flows,
    "rtt_cdf": rtt_cdf,
    "flowmods_rss": flowmods_rss,
    "roundtrips": roundtrips,
    "pipeline_scaling": pipeline_scaling,
}


def make_all(out_dir, rows):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return {}, {k: f"matplotlib is not installed ({e}); scripts/setup.sh installs it" for k in PLOTS}
    os.makedirs(out_dir, exist_ok=True)
    made, why = {}, {}
    for key, fn in PLOTS.items():
        fig = fn(plt, rows)
        if fig is None:
            why[key] = "no rows for it in this run"
            continue
        fig.tight_layout()
        fname = f"{key}.png"
        fig.savefig(os.path.join(out_dir, fname), dpi=90)
        plt.close(fig)
        made[key] = fname
    return made, why
