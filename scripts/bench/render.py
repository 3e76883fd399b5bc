"""The report of a run: Markdown tables of every row group (median, with
min and max over the rounds), the interleaved ratios, and PNG plots
(matplotlib, from the test venv; without it the report says the plots are
missing and why). Every figure comes from the rows passed in.
"""

import os

import aggregate as ag

# Column order of metrics when present (others follow in order of appearance).
METRIC_ORDER = [
    "tcp_mbit", "frames_per_s", "frames_1500_per_s", "rtt_ms", "delay_p50_us", "delay_p99_us",
    "delay_p999_us", "delay_max_us", "cpu_pct", "cpu_pct_per_gbit", "rss_mb", "xdp_kernel_share", "xdp_ready_s",
    "offered_per_s", "ns_per_pkt", "min_ns", "max_ns", "no_cache_ns", "cache_hit_rate", "mpps",
    "seconds", "flow_mods_per_s", "bytes_per_flow",
]
LABELS = {
    "tcp_mbit": "TCP Mbit/s", "frames_per_s": "64 B frames/s", "frames_1500_per_s": "1514 B frames/s",
    "rtt_ms": "RTT ms", "delay_p50_us": "delay p50 us", "delay_p99_us": "p99 us",
    "delay_p999_us": "p99.9 us", "delay_max_us": "max us", "cpu_pct": "CPU %",
    "cpu_pct_per_gbit": "CPU % per Gbit/s", "rss_mb": "RSS MB", "offered_per_s": "offered frames/s",
    "hit_rate": "packets hitting a rule", "cache_hit_rate": "cache hit rate",
    "xdp_kernel_share": "kept in the kernel", "xdp_ready_s": "fast path ready s",
}


def floor_of(be):
    """The nullx row that is a back end's floor: the XDP fast path's I/O
    is AF_XDP's (nullx runs no pipeline to compile)."""
    return "nullx afxdp" if be in ("xdp", "xdp-generic") else f"nullx {be}"
HIDDEN_KEYS = {"scenario", "source"}


def num(v):
    if v is None:
        return "-"
    if isinstance(v, float) and v != v:
        return "-"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def keyval(v):
    """A key field: text as is, a count with thin grouping."""
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}".replace(",", " ")
    return str(v)


# Rounds of the scenario being rendered; a figure from fewer says so.
ROUNDS = [None]


def cell(stat):
    """median (min-max); a worst-case metric's headline is the largest
    value (marked "worst of N"); [n=K] when fewer rounds than the run's
    measured it."""
    if stat is None or stat.headline is None:
        return "-"
    few = f" [n={stat.n}]" if ROUNDS[0] and stat.n < ROUNDS[0] else ""
    if stat.worst:
        lo = f", median {num(stat.median)}" if stat.n > 1 and stat.min != stat.max else ""
        return f"{num(stat.headline)} (worst of {stat.n}{lo}){few}"
    if stat.n > 1 and stat.min != stat.max:
        return f"{num(stat.median)} ({num(stat.min)}-{num(stat.max)}){few}"
    return num(stat.median) + few


def table(groups, lead=()):
    """A Markdown table of groups: the key fields that differ between them
    (LEAD first), then every metric."""
    if not groups:
        return "(no rows)\n"
    keys = []
    for k in lead:
        if any(k in g.key for g in groups):
            keys.append(k)
    for g in groups:
        for k in g.key:
            if k not in keys and k not in HIDDEN_KEYS and len({str(h.key.get(k)) for h in groups}) > 1:
                keys.append(k)
    metrics = []
    for m in METRIC_ORDER:
        if any(m in g.stats for g in groups):
            metrics.append(m)
    for g in groups:
        for m in g.stats:
            if m not in metrics:
                metrics.append(m)
    out = ["| " + " | ".join([k for k in keys] + [LABELS.get(m, m) for m in metrics]) + " |",
           "|" + "---|" * (len(keys) + len(metrics))]
    for g in groups:
        vals = [keyval(g.key.get(k)) for k in keys]
        vals += [cell(g.stats.get(m)) for m in metrics]
        out.append("| " + " | ".join(vals) + " |")
    return "\n".join(out) + "\n"


def ratio_line(label, st):
    if st is None:
        return None
    spread = f" ({st.min:.2f}-{st.max:.2f}, {st.n} rounds)" if st.n > 1 else " (1 round)"
    return f"| {label} | **{st.median:.2f}x**{spread} |"


def ratio_table(lines):
    """The Markdown table of ratio lines, or "" when there are none."""
    if not lines:
        return ""
    return "| ratio (per-round, median) | value (min-max) |\n|---|---|\n" + "\n".join(lines) + "\n"


def forwarding_ratios(rows):
    """sluice against each peer, per rule set and back end, round by round."""
    fw = [r for r in rows if r.get("scenario") == "forwarding"]
    lines = []
    sets = []
    for r in fw:
        if r.get("set") not in ("none", None) and r["set"] not in sets:
            sets.append(r["set"])
    backends = []
    for r in fw:
        if r["switch"].startswith("sluice ") and r["backend"] not in backends:
            backends.append(r["backend"])
    for s in sets:
        for be in backends:
            me = {"set": s, "backend": be, "workers": 1}
            me_sw = [r["switch"] for r in fw if all(r.get(k) == v for k, v in me.items())
                     and r["switch"].startswith("sluice")]
            if not me_sw:
                continue
            num_ = {"switch": me_sw[0]}
            for metric, mlabel in [("tcp_mbit", "TCP"), ("frames_per_s", "64 B frames/s"),
                                   ("frames_1500_per_s", "1514 B frames/s")]:
                for peer, where in [
                    ("Open vSwitch", {"set": s, "backend": "netdev"}),
                    ("Linux bridge", {"switch": "Linux bridge"}),
                    (f"{floor_of(be)} (floor)", {"switch": floor_of(be)}),
                ]:
                    line = ratio_line(f"{me_sw[0]} / {peer}, {mlabel}", ag.ratio(fw, metric, num_, where))
                    if line:
                        lines.append(line)
            w2 = [r["switch"] for r in fw if r.get("set") == s and r.get("backend") == be
                  and r.get("workers", 1) > 1]
            if w2:
                for metric, mlabel in [("tcp_mbit", "TCP"), ("frames_per_s", "64 B frames/s")]:
                    line = ratio_line(f"{w2[0]} / 1 worker, {mlabel}",
                                      ag.ratio(fw, metric, {"switch": w2[0]}, num_))
                    if line:
                        lines.append(line)
    return ratio_table(lines)


def flows_ratios(rows):
    fl = [r for r in rows if r.get("scenario") == "flows"]
    ovs = [r for r in fl if r["switch"].startswith("Open vSwitch")]
    lines = []
    if not ovs:
        return ""
    seen = []
    for r in fl:
        if r["switch"].startswith("sluice") and (r["switch"], r["active_flows"], r["dist"]) not in seen:
            seen.append((r["switch"], r["active_flows"], r["dist"]))
    for sw, k, d in seen:
        st = ag.ratio(fl, "frames_per_s", {"switch": sw, "active_flows": k, "dist": d},
                      {"switch": ovs[0]["switch"], "active_flows": k, "dist": d})
        line = ratio_line(f"{sw} / Open vSwitch, {k} active flows, {d}", st)
        if line:
            lines.append(line)
    return ratio_table(lines)


def conntrack_ratios(rows):
    """The stateful firewall: sluice's against Open vSwitch's and the
    kernel's, and each switch with the firewall against itself without,
    round by round: connections/s for each count of concurrent loops, and
    TCP."""
    ct = [r for r in rows if r.get("scenario") == "conntrack"]
    lines = []
    fw = lambda r: r.get("firewall") == "fw"
    concs = sorted({r["concurrency"] for r in ct if r.get("test") == "connections"})
    tests = [("conns_per_s", f"connections/s, {c} loop{'s' if c > 1 else ''}",
              {"test": "connections", "concurrency": c}) for c in concs]
    tests.append(("tcp_mbit", "TCP", {"test": "tcp"}))
    names = []
    for r in ct:
        if r["switch"] not in names:
            names.append(r["switch"])
    sluices = [n for n in names if any(r["switch"] == n and r.get("kind") == "sluice" and fw(r) for r in ct)]
    for metric, mlabel, where in tests:
        for sw in sluices:
            for peer in ("ovs", "kernel"):
                peers = [r["switch"] for r in ct if r.get("kind") == peer and fw(r)]
                if peers:
                    line = ratio_line(f"{sw} / {peers[0]}, {mlabel}",
                                      ag.ratio(ct, metric, {"switch": sw, **where}, {"switch": peers[0], **where}))
                    if line:
                        lines.append(line)
        for n in names:
            r = next(r for r in ct if r["switch"] == n)
            if not fw(r):
                continue
            plain = [x["switch"] for x in ct if x.get("kind") == r.get("kind")
                     and x.get("backend") == r.get("backend") and x.get("firewall") == "none"]
            if plain:
                line = ratio_line(f"{n} / {plain[0]}, {mlabel}",
                                  ag.ratio(ct, metric, {"switch": n, **where}, {"switch": plain[0], **where}))
                if line:
                    lines.append(line)
    return ratio_table(lines)


def control_ratios(rows):
    """sluice against Open vSwitch driven by the same client, round by
    round: rates for adds and modifies, times for the rest (the same work
    on both)."""
    cp = [r for r in rows if r.get("scenario") == "control"]
    lines = []
    for test, metric, sluice_first, what in [
        ("flow_add", "flow_mods_per_s", True, "sluice's flow-mods/s / {p}'s"),
        ("flow_modify_10pct", "flow_mods_per_s", True, "sluice's flow-mods/s / {p}'s"),
        ("flow_delete_all", "seconds", False, "{p}'s time / sluice's"),
        ("update_latency", "latency_ms_p50", False, "{p}'s median latency / sluice's"),
    ]:
        if not any(r.get("test") == test and r.get("switch") == "sluice" for r in cp):
            continue
        peers = []
        for r in cp:
            if r.get("test") == test and r.get("switch", "").startswith("Open vSwitch") \
                    and r["switch"] not in peers:
                peers.append(r["switch"])
        for p in peers:
            if not any(r.get("test") == test and r.get("switch") == p and r.get("client") in (None, "sluice-ctl")
                       for r in cp):
                # ovs-ofctl's rows time the whole command (its parse of
                # the file included) and plain ovs-ofctl adds fewer flows:
                # not comparable with sluice-ctl's first byte to reply.
                continue
            me, them = {"test": test, "switch": "sluice"}, {"test": test, "switch": p}
            st = ag.ratio(cp, metric, me, them) if sluice_first else ag.ratio(cp, metric, them, me)
            line = ratio_line(f"{test}: {what.format(p=p)} (above 1: sluice better)", st)
            if line:
                lines.append(line)
    return ratio_table(lines)


def summary(rows):
    """Where sluice stands: per rule set and back end, sluice's figure over
    each peer's and the floor's (per-round ratios, medians)."""
    fw = [r for r in rows if r.get("scenario") == "forwarding"]
    cols = [("Open vSwitch", "tcp_mbit", "TCP"), ("Open vSwitch", "frames_per_s", "64 B"),
            ("Linux bridge", "tcp_mbit", "TCP"), ("Linux bridge", "frames_per_s", "64 B"),
            ("nullx", "tcp_mbit", "TCP"), ("nullx", "frames_per_s", "64 B")]
    out = []
    seen = []
    for r in fw:
        if r["switch"].startswith("sluice") and r.get("workers", 1) == 1 \
                and (r["set"], r["backend"]) not in seen:
            seen.append((r["set"], r["backend"]))
    for rset, be in seen:
        me = [r["switch"] for r in fw if r["set"] == rset and r["backend"] == be
              and r.get("workers", 1) == 1 and r["switch"].startswith("sluice")][0]
        cells = []
        for peer, metric, _ in cols:
            where = {"Open vSwitch": {"set": rset, "backend": "netdev"},
                     "Linux bridge": {"switch": "Linux bridge"},
                     "nullx": {"switch": floor_of(be)}}[peer]
            st = ag.ratio(fw, metric, {"switch": me}, where)
            cells.append(f"{st.median:.2f}x" if st else "-")
        out.append(f"| {me} | " + " | ".join(cells) + " |")
    if not out:
        return ""
    head = "| sluice, 1 worker | " + " | ".join(f"/ {p} {lab}" for p, _, lab in cols) + " |"
    return (head + "\n|" + "---|" * (len(cols) + 1) + "\n" + "\n".join(out) + "\n\n"
            "Each cell: sluice's figure over the peer's in the same round, median over the rounds "
            "(above 1: sluice ahead). nullx is sluice's own I/O with no pipeline, on the same back end "
            "(AF_XDP for the XDP fast path).\n")


def write(out_dir, name, rows, meta):
    """Writes OUT_DIR/NAME.md and the plots in OUT_DIR/NAME/; returns the .md path."""
    import plots

    plot_dir = os.path.join(out_dir, name)
    made, why_not = plots.make_all(plot_dir, rows)
    md = []
    w = md.append
    w(f"# sluice benchmark report {meta.get('date', '')}\n")
    if meta:
        w(f"Commit `{meta.get('commit', '?')}`; {meta.get('cpus', '?')} CPUs ({meta.get('cpu', '?')}), "
          f"{meta.get('memory', '?')}, Linux {meta.get('kernel', '?')}, {meta.get('rustc', '')}.")
        peers = meta.get("peers", {})
        if peers:
            w("Peers: " + "; ".join(f"{k}: {v}" for k, v in peers.items()) + ".")
        mode = "quick (`--quick`: small sizes, short tests)" if meta.get("quick") else "full"
        secs = meta.get("seconds")
        took = f", {secs / 60:.1f} minutes" if secs else ""
        w(f"Mode: {mode}; {meta.get('rounds', '?')} rounds{took}. Reproduce: "
          f"`sudo make bench-report{' QUICK=1' if meta.get('quick') else ''}`.\n")
    ROUNDS[0] = meta.get("rounds")
    w("Every figure is the median over the rounds, with the minimum and maximum in brackets "
      "(a worst-case figure, such as a maximum delay, is the largest over the rounds); "
      "rounds run every switch of a scenario once, one after the other, so ratios are taken "
      "round by round (interleaved runs) and their median reported. The raw rows are in "
      f"[{name}.jsonl]({name}.jsonl); the scenarios' progress output in {name}.log.\n")
    for what, d in (("Skipped", meta.get("skipped", {})), ("Failed", meta.get("failed", {}))):
        for k, v in d.items():
            w(f"- **{what}: {k}**: {v}")
    if meta.get("skipped") or meta.get("failed"):
        w("")
    scen = meta.get("scenarios", {})
    sm = summary(rows)
    if sm:
        w("## Summary: forwarding against the peers and the floor\n")
        w(sm)

    def section(title, sname, body):
        w(f"## {title}\n")
        info = scen.get(sname)
        # [n=K] marks figures from fewer rounds than this scenario ran.
        ROUNDS[0] = (info or {}).get("rounds", meta.get("rounds"))
        if info:
            env = " ".join(f"{k}={v}" for k, v in info.get("env", {}).items())
            w(f"{info['what']}. `{(env + ' ') if env else ''}{info['command']}`, "
              f"{info['rounds']} round(s), {info['seconds']:.0f} s.\n")
        body()

    def plot(key, caption):
        if key in made:
            w(f"![{caption}]({name}/{made[key]})\n")
        elif key in why_not:
            w(f"(plot {key}: {why_not[key]})\n")

    def by(scenario, **where):
        return ag.group([r for r in rows if r.get("scenario") == scenario
                         and all(r.get(k) == v for k, v in where.items())])

    def fw_body():
        plot("frames_vs_rules", "frames/s vs rules installed")
        w(table(by("forwarding"), lead=("switch", "set")))
        w("\nThe delay columns are sluice's in-switch delay (receive batch to transmit batch) over the "
          "whole run, TCP and the floods included; the other switches do not report one. "
          "CPU is the switch process's during the TCP test.\n")
        r = forwarding_ratios(rows)
        if r:
            w(r)
        plot("rtt_cdf", "ping RTT CDF per switch")

    def flows_body():
        plot("frames_vs_flows", "frames/s vs active flows")
        w(table(by("flows"), lead=("switch", "active_flows", "dist")))
        r = flows_ratios(rows)
        if r:
            w("\n" + r)

    def control_body():
        tests = []
        for r in rows:
            if r.get("scenario") == "control" and r.get("test") not in tests:
                tests.append(r.get("test"))
        for t in tests:
            w(f"### {t}\n")
            w(table(by("control", test=t), lead=("switch", "client")))
        r = control_ratios(rows)
        if r:
            w("\n" + r)
        plot("roundtrips", "PACKET_IN/PACKET_OUT round trips served vs offered")

    def conntrack_body():
        w(table(by("conntrack", test="connections"), lead=("switch", "concurrency")))
        w("\n" + table(by("conntrack", test="tcp"), lead=("switch",)))
        w("\nconns_per_s: TCP connections completed per second (handshake, 64-byte request, 256-byte "
          "response, close; `sluice-bench conn-client`); ct_conns_added: connections the switch's "
          "tracker holds after the test less before it (closed ones stay in TIME_WAIT); CPU figures "
          "are the switch process's (the kernel's firewall runs in softirq, on no process's account); "
          "reverse_blocked: a connection from host 2 to host 1 was dropped.\n")
        r = conntrack_ratios(rows)
        if r:
            w("\n" + r)

    def delay_body():
        w(table(by("delay"), lead=("switch",)))

    def curve_body():
        plot("flowmods_rss", "flow-mod rate and RSS vs flows installed")
        w(table(by("flowcurve"), lead=("switch", "installed")))

    def pipeline_body():
        st = by("stages")
        if st:
            w("### Latency cost of each stage (ns per packet)\n")
            w(table(st, lead=("stage",)))
        sc = by("scaling")
        if sc:
            w("\n### Scaling: rules and active flows (one core, no I/O)\n")
            plot("pipeline_scaling", "pipeline-bench ns/packet vs rules and active flows")
            w(table(sc, lead=("axis", "rules", "active_flows", "dist")))
        th = by("threads")
        if th:
            w("\n### Two threads against one on one snapshot (packets/s, scaling efficiency)\n")
            w(table(th, lead=("threads", "rules", "active_flows")))
        ch = by("churn")
        if ch:
            w("\n### The exact-match cache while flow-mods keep coming (a publication per pass)\n")
            w(table(ch, lead=("config", "churn", "change_log")))
        lr = by("learn")
        if lr:
            w("\n### A learn storm: distinct packets through a MAC-learning flow, "
              "the control plane per round of 4 096 learned flows\n")
            w(table(lr, lead=("config",)))
        pl = [r for r in rows if r.get("source") == "pipeline" and r.get("scenario") == "pipeline"]
        cf = ag.group([r for r in pl if "ns_per_pkt" in r])
        if cf:
            w("\n### The standard rule sets (few distinct packets: the cache's best case)\n")
            w(table(cf, lead=("config",)))
        ing = ag.group([r for r in pl if "ns_per_pkt" not in r])
        if ing:
            w("\n### Ingest: 1 000 000 FLOW_MODs into the pipeline, and memory\n")
            w(table(ing, lead=("config",)))

    for title, sname, body in [
        ("Forwarding", "forwarding", fw_body),
        ("Scaling with active flows", "flows", flows_body),
        ("A stateful firewall: connection tracking", "conntrack", conntrack_body),
        ("In-switch delay under a moderate load", "delay", delay_body),
        ("Control plane", "control", control_body),
        ("Flow-mod rate and memory as the table fills", "flowcurve", curve_body),
        ("The pipeline alone", "pipeline", pipeline_body),
    ]:
        if any(r.get("source", r.get("scenario")) == sname for r in rows) or sname in scen:
            section(title, sname, body)
            w("")
    path = os.path.join(out_dir, f"{name}.md")
    with open(path, "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    return path
