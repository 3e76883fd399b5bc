#!/usr/bin/env python3
"""Checks sluice's metrics endpoint for the end-to-end test (run with the
test venv's Python, which has prometheus_client).

  metrics_check.py HOST:PORT VERSION

The scrape is read with prometheus_client's text-format parser, then
checked against what the e2e testbed set up (bridge br0: p1 ofport 1 with
traffic, p2 ofport 2 with queue 1, a controller nobody answers at
127.0.0.1:16699, one OpenFlow connection that sent nothing). The HTTP side:
HEAD has the headers and no body, 404 and 405, and neither an idle client
nor one trickling its request delays a scrape, even four at once.
Prints what failed; exit 0 if nothing did.
"""
import socket
import sys
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def request(addr, raw, timeout=5.0):
    """Sends raw bytes; returns (status, headers dict, body bytes) read
    until the server closes."""
    s = socket.create_connection(addr, timeout=timeout)
    s.sendall(raw)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def get(addr, path="/metrics"):
    return request(addr, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    addr = (host, int(port))
    version = sys.argv[2]

    # Clients that hold a connection without finishing a request.
    idle = socket.create_connection(addr)
    slow = socket.create_connection(addr)
    slow.sendall(b"GET /metr")

    t = time.monotonic()
    status, headers, body = get(addr)
    took = time.monotonic() - t
    check(status == 200, f"GET /metrics: status {status}")
    check(took < 1.0, f"a scrape with an idle client connected took {took:.2f} s")
    check(headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
          f"content type {headers.get('content-type')}")
    check(int(headers.get("content-length", -1)) == len(body), "content length")
    text = body.decode()

    # Several scrapes at once, the two idle clients still there.
    results = []

    def scrape():
        t = time.monotonic()
        st, _, b = get(addr)
        results.append((st, len(b), time.monotonic() - t))

    threads = [threading.Thread(target=scrape) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(len(results) == 4 and all(r[0] == 200 and r[1] > 0 and r[2] < 1.0 for r in results),
          f"four scrapes at once: {results}")
    slow.sendall(b"ics")  # still not a whole request
    idle.close()
    slow.close()

    status, headers, hbody = request(addr, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    check(status == 200 and hbody == b"" and int(headers.get("content-length", 0)) > 1000,
          f"HEAD: status {status}, body {len(hbody)} bytes, headers {headers}")
    status, _, _ = get(addr, "/nothing")
    check(status == 404, f"GET /nothing: status {status}")
    status, headers, _ = request(addr, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    check(status == 405 and headers.get("allow") == "GET, HEAD", f"POST: status {status}, {headers}")

    # The format, read by the official parser.
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {}
    for f in families.values():
        for s in f.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            check(key not in samples, f"series twice: {key}")
            samples[key] = s.value

    def value(name, **labels):
        return samples.get((name, tuple(sorted(labels.items()))))

    types = {
        "sluice_build_info": "gauge",
        "sluice_port_rx_packets": "counter",
        "sluice_port_tx_packets": "counter",
        "sluice_port_up": "gauge",
        "sluice_queue_tx_packets": "counter",
        "sluice_queue_tx_bytes": "counter",
        "sluice_queue_tx_errors": "counter",
        "sluice_flows": "gauge",
        "sluice_mac_table_entries": "gauge",
        "sluice_packet_in_queue_full": "counter",
        "sluice_packet_out_queue_full": "counter",
        "sluice_packet_in_limited": "counter",
        "sluice_controller_connected": "gauge",
        "sluice_connection_info": "gauge",
        "sluice_worker_up": "gauge",
        "sluice_delay_seconds": "histogram",
        "sluice_conntrack_connections": "gauge",
        "sluice_conntrack_zone_connections": "gauge",
        "sluice_conntrack_connections_by_state": "gauge",
        "sluice_conntrack_committed": "counter",
        "sluice_conntrack_refused": "counter",
        "sluice_conntrack_invalid": "counter",
        "sluice_conntrack_expired": "counter",
        "sluice_conntrack_packets": "counter",
        "sluice_conntrack_limit": "gauge",
        "sluice_conntrack_heap_bytes": "gauge",
    }
    for name, typ in types.items():
        f = families.get(name)
        check(f is not None and f.type == typ, f"{name}: {f and f.type}, not {typ}")
    for gone in ["sluice_rules", "sluice_delay_max_seconds"]:
        check(gone not in families, f"{gone} still there")
    check("quantile=" not in text, "quantiles still there")

    check(value("sluice_build_info", version=version) == 1, "build info")
    p1 = dict(bridge="br0", ofport="1", interface="p1")
    p2 = dict(bridge="br0", ofport="2", interface="p2")
    check((value("sluice_port_rx_packets_total", **p1) or 0) > 0, "p1 received nothing")
    check((value("sluice_port_tx_packets_total", **p2) or 0) > 0, "p2 sent nothing")
    check(value("sluice_port_up", **p1) == 1, f"p1 up: {value('sluice_port_up', **p1)}")
    check(value("sluice_port_up", **p2) == 1, "p2 up")
    for n in ["packets", "bytes", "errors"]:
        check(value(f"sluice_queue_tx_{n}_total", queue="1", **p2) is not None, f"queue 1 tx_{n}")
    tables = [s for s in families["sluice_flows"].samples] if "sluice_flows" in families else []
    check(len(tables) == 254, f"{len(tables)} tables")
    check(value("sluice_flows", bridge="br0", table="0") == 1, "flows in table 0 (the NORMAL flow)")
    check(value("sluice_flows", bridge="br0", table="253") == 0, "table 253 not at 0")
    check((value("sluice_mac_table_entries", bridge="br0") or 0) >= 2, "MAC table")
    for name in ["sluice_packet_in_queue_full_total", "sluice_packet_out_queue_full_total",
                 "sluice_packet_in_limited_total"]:
        check(value(name, bridge="br0") == 0, f"{name}: {value(name, bridge='br0')}")
    # The tracker: no ct flow here, so empty and idle, its limit the default.
    check(value("sluice_conntrack_connections", bridge="br0") == 0, "conntrack connections")
    for name in ["committed", "refused", "invalid", "expired", "packets"]:
        check(value(f"sluice_conntrack_{name}_total", bridge="br0") == 0, f"conntrack {name}")
    check(value("sluice_conntrack_limit", bridge="br0") == 1048576, "conntrack limit")
    check((value("sluice_conntrack_heap_bytes", bridge="br0") or 0) > 0, "conntrack heap bytes")
    check(value("sluice_controller_connected", bridge="br0", target="tcp:127.0.0.1:16699") == 0,
          "controller that nobody answers")
    conns = [s.labels for s in families["sluice_connection_info"].samples] \
        if "sluice_connection_info" in families else []
    check(any(c["kind"] == "controller" and c["state"] == "hello" and c["role"] == "equal"
              and c["peer"].startswith("tcp:127.0.0.1:") for c in conns),
          f"the waiting OpenFlow connection: {conns}")

    # The delay: cumulative buckets ending at +Inf == _count.
    hist = families.get("sluice_delay_seconds")
    buckets = [(float(s.labels["le"]), s.value) for s in hist.samples
               if s.name.endswith("_bucket")] if hist else []
    check(len(buckets) >= 10, f"{len(buckets)} buckets")
    check(all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
          f"buckets not cumulative: {buckets}")
    count = value("sluice_delay_seconds_count", bridge="br0")
    total = value("sluice_delay_seconds_sum", bridge="br0")
    check(buckets and buckets[-1][0] == float("inf") and buckets[-1][1] == count,
          f"+Inf bucket {buckets[-1:]} vs count {count}")
    check((count or 0) > 0 and (total or 0) > 0, f"delay count {count}, sum {total}")

    for f in failures:
        print(f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
