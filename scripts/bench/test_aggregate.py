"""Tests of the report's arithmetic and rendering on rows made up here:
medians and spreads over rounds, ratios paired by round, grouping keys,
and a whole report (tables and plots) written from rows.

    .venv/bin/python -m unittest discover -s scripts/bench -p 'test_*.py'
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aggregate as ag  # noqa: E402
import render  # noqa: E402
import report  # noqa: E402


def fw(rnd, switch, fps, **kw):
    row = {"scenario": "forwarding", "switch": switch, "backend": kw.pop("backend", "afxdp"),
           "set": kw.pop("set", "4p20r"), "rules": kw.pop("rules", 20), "workers": 1,
           "frames_per_s": fps, "tcp_mbit": kw.pop("tcp", 1000), "rtt_samples_ms": [0.1, 0.2],
           "round": rnd}
    row.update(kw)
    return row


class Aggregate(unittest.TestCase):
    def test_median_min_max_over_rounds(self):
        g = ag.group([fw(1, "s", 100), fw(2, "s", 300), fw(3, "s", 200)])
        self.assertEqual(len(g), 1)
        st = g[0].stats["frames_per_s"]
        self.assertEqual((st.median, st.min, st.max, st.n), (200, 100, 300, 3))
        self.assertEqual(g[0].samples["rtt_samples_ms"], [0.1, 0.1, 0.1, 0.2, 0.2, 0.2])

    def test_key_fields_split_groups_and_results_do_not(self):
        rows = [fw(1, "s", 100, rules=20), fw(1, "s", 100, rules=200), fw(2, "s", 150, rules=20)]
        g = ag.group(rows)
        self.assertEqual([len(x.rows) for x in g], [2, 1], "rules names the row; frames_per_s is a result")

    def test_ratios_pair_rows_of_the_same_round(self):
        rows = [fw(1, "a", 200), fw(1, "b", 100), fw(2, "a", 300), fw(2, "b", 100),
                fw(3, "a", 100), fw(3, "b", 100), fw(4, "a", 50)]
        st = ag.ratio(rows, "frames_per_s", {"switch": "a"}, {"switch": "b"})
        # Rounds 1-3 (round 4 has no "b"): 2, 3, 1.
        self.assertEqual((st.median, st.min, st.max, st.n), (2, 1, 3, 3))
        self.assertIsNone(ag.ratio(rows, "frames_per_s", {"switch": "a"}, {"switch": "c"}))

    def test_a_missing_or_zero_figure_is_no_ratio(self):
        rows = [fw(1, "a", None), fw(1, "b", 100), fw(2, "a", 100), fw(2, "b", 0)]
        self.assertIsNone(ag.ratio(rows, "frames_per_s", {"switch": "a"}, {"switch": "b"}))


class Driver(unittest.TestCase):
    def run_cmd(self, script, timeout=900):
        sc = report.Scenario("t", "t", ["bash", "-c", script], {}, {}, [], timeout=timeout)
        import io
        import time
        return report.run_round(sc, 2, 3, False, time.time(), io.StringIO())

    def test_rows_are_tagged_with_their_round(self):
        rows, err = self.run_cmd("""echo '{"switch": "a", "x": 1}'""")
        self.assertIsNone(err)
        self.assertEqual(rows, [{"switch": "a", "x": 1, "scenario": "t", "round": 2, "source": "t"}])

    def test_a_failing_or_hanging_or_garbled_scenario_is_an_error(self):
        self.assertIn("exit status 3", self.run_cmd("""echo '{"x": 1}'; exit 3""")[1])
        self.assertIn("after the timeout", self.run_cmd("""echo '{"x": 1}'; sleep 30""", timeout=1)[1])
        self.assertIn("not JSON", self.run_cmd("echo 'x = 1'")[1])
        self.assertEqual(self.run_cmd("true")[1], "no rows")

    def test_worst_case_metrics_report_the_worst_round(self):
        g = ag.group([{"switch": "a", "delay_max_us": v, "delay_p50_us": v, "round": i}
                      for i, v in enumerate([70, 3842, 80])])
        self.assertEqual(g[0].stats["delay_max_us"].headline, 3842)
        self.assertEqual(g[0].stats["delay_p50_us"].headline, 80)


class Render(unittest.TestCase):
    def test_a_report_from_rows(self):
        rows = []
        for r in (1, 2, 3):
            rows += [fw(r, "nullx afxdp", 90, set="none", rules=0),
                     fw(r, "Linux bridge", 120, set="none", rules=0, backend="kernel"),
                     fw(r, "sluice afxdp 20 rules", 100 + r, tcp=2000),
                     fw(r, "Open vSwitch netdev 20 rules", 50, backend="netdev", tcp=800)]
            rows.append({"scenario": "flowcurve", "switch": "sluice", "installed": 10,
                         "flow_mods_per_s": 1e5 * r, "rss_mb": 10, "round": r})
        meta = {"meta": True, "date": "2026-11-23", "rounds": 3,
                "skipped": {"flows": "tcpreplay is not installed"}, "failed": {}, "scenarios": {}}
        with tempfile.TemporaryDirectory() as d:
            path = render.write(d, "REPORT-test", rows, meta)
            text = open(path).read()
            self.assertIn("| sluice afxdp 20 rules | 4p20r |", text)
            self.assertIn("102 (101-103)", text, "median with min and max")
            self.assertNotIn("[n=", text, "every figure has its 3 rounds")
            self.assertIn("sluice afxdp 20 rules / Open vSwitch, 64 B frames/s | **2.04x** (2.02-2.06, 3 rounds)",
                          text)
            self.assertIn("sluice afxdp 20 rules / Open vSwitch, TCP | **2.50x**", text)
            self.assertIn("| sluice afxdp 20 rules | 2.50x | 2.04x | 2.00x | 0.85x | 2.00x | 1.13x |", text,
                          "the summary: over Open vSwitch, the bridge and the floor")
            self.assertIn("**Skipped: flows**: tcpreplay is not installed", text)
            for png in ("frames_vs_rules.png", "rtt_cdf.png", "flowmods_rss.png"):
                self.assertIn(f"REPORT-test/{png}", text)
                self.assertGreater(os.path.getsize(os.path.join(d, "REPORT-test", png)), 1000)
            json.dumps(rows)


if __name__ == "__main__":
    unittest.main()
