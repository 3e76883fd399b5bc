#!/usr/bin/env python3
"""Cross-implementation checks of the `ofp` crate against os-ken.

Two directions, field by field:

1. os-ken encodes every controller-to-switch message (plus the symmetric
   ones); our decoder reads each (via `ofp-interop decode`), must re-encode
   the very same bytes, and its field summary must equal os-ken's view of
   the message it built.
2. Our encoder writes every switch-to-controller message (`ofp-interop
   corpus`); os-ken parses each, and os-ken's view of the parsed message must
   equal our field summary.

Usage: osken_interop.py PATH/TO/ofp-interop
Prints one line per message and ends with "N passed, M failed".
"""
import ipaddress
import json
import logging
import subprocess
import sys

from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as p

logging.disable(logging.CRITICAL)


class Datapath:
    ofproto = ofp
    ofproto_parser = p
    id = 1


DP = Datapath()
STRING_KEYS = {"name", "mfr_desc", "hw_desc", "sw_desc", "serial_num", "dp_desc"}


def value_hex(v):
    """os-ken writes MACs and addresses as text; compare them as numbers."""
    if isinstance(v, str):
        if v.count(":") == 5 and len(v) == 17:
            return hex(int(v.replace(":", ""), 16))
        return hex(int(ipaddress.ip_address(v)))
    return hex(v)


def norm_match(m):
    out = []
    for name, v in m._fields2:
        if isinstance(v, tuple):
            out.append([name, value_hex(v[0]), value_hex(v[1])])
        else:
            out.append([name, value_hex(v), None])
    return out


def norm(o, key=None):
    if isinstance(o, p.OFPMatch):
        return norm_match(o)
    if isinstance(o, (bytes, bytearray)):
        if key in STRING_KEYS:
            return bytes(o).split(b"\0", 1)[0].decode("latin1")
        return bytes(o).hex()
    if hasattr(o, "_asdict"):
        return {k: norm(v, k) for k, v in o._asdict().items()}
    if isinstance(o, (list, tuple)):
        return [norm(x) for x in o]
    if hasattr(o, "__dict__"):
        d = {k: norm(v, k) for k, v in vars(o).items() if not k.startswith("_") and k not in ("datapath", "buf")}
        if isinstance(o, p.OFPActionSetField):
            d["value"] = value_hex(o.value)
        return d
    return o


def compare(ours, theirs, path, count):
    """Every field in our summary must exist in os-ken's view with the same value."""
    if theirs is None and ours in ("", [], {}):
        return []  # os-ken leaves absent payloads and lists as None
    if isinstance(ours, dict) and isinstance(theirs, list) and len(theirs) == 1:
        theirs = theirs[0]  # os-ken wraps single-object multipart bodies in a list
    if isinstance(ours, dict):
        if not isinstance(theirs, dict):
            return [f"{path}: os-ken has {theirs!r}, we have an object"]
        errs = []
        for k, v in ours.items():
            if k not in theirs:
                errs.append(f"{path}.{k}: missing in os-ken's view")
            else:
                errs += compare(v, theirs[k], f"{path}.{k}", count)
        return errs
    if isinstance(ours, list):
        if not isinstance(theirs, list) or len(ours) != len(theirs):
            return [f"{path}: we have {ours!r}, os-ken has {theirs!r}"]
        errs = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            errs += compare(a, b, f"{path}[{i}]", count)
        return errs
    count[0] += 1
    if ours != theirs:
        return [f"{path}: we have {ours!r}, os-ken has {theirs!r}"]
    return []


def osken_corpus():
    """Every controller-to-switch message, built by os-ken."""
    full_match = p.OFPMatch(
        in_port=1, in_phy_port=1, metadata=(0x1234, 0xFFFF), eth_dst="02:00:00:00:00:02",
        eth_src=("02:00:00:00:00:01", "ff:ff:ff:00:00:00"), eth_type=0x0800, vlan_vid=0x100A, vlan_pcp=3,
        ip_dscp=46, ip_ecn=1, ip_proto=6, ipv4_src=("10.0.0.0", "255.0.0.0"), ipv4_dst="10.1.2.3",
        tcp_src=1234, tcp_dst=80, tunnel_id=(0x99, 0xFF))
    matches = [
        full_match,
        p.OFPMatch(eth_type=0x0800, ip_proto=17, udp_src=53, udp_dst=5353),
        p.OFPMatch(eth_type=0x0800, ip_proto=132, sctp_src=1, sctp_dst=2),
        p.OFPMatch(eth_type=0x0800, ip_proto=1, icmpv4_type=8, icmpv4_code=0),
        p.OFPMatch(eth_type=0x0806, arp_op=1, arp_spa="10.0.0.1", arp_tpa=("10.0.0.0", "255.255.255.0"),
                   arp_sha="02:00:00:00:00:01", arp_tha="00:00:00:00:00:00"),
        p.OFPMatch(eth_type=0x86DD, ip_proto=58, ipv6_src=("2001:db8::", "ffff:ffff::"), ipv6_dst="2001:db8::1",
                   ipv6_flabel=0x12345, icmpv6_type=135, icmpv6_code=0, ipv6_nd_target="2001:db8::2",
                   ipv6_nd_sll="02:00:00:00:00:09", ipv6_exthdr=(1, 0x1FF)),
        p.OFPMatch(eth_type=0x86DD, ip_proto=58, icmpv6_type=136, ipv6_nd_tll="02:00:00:00:00:0a"),
        p.OFPMatch(eth_type=0x8847, mpls_label=100, mpls_tc=3, mpls_bos=1),
        p.OFPMatch(eth_type=0x88E7, pbb_isid=(0x123456, 0xFFFFFF)),
        p.OFPMatch(),
    ]
    all_actions = [
        p.OFPActionOutput(2, 0), p.OFPActionOutput(ofp.OFPP_CONTROLLER, 128), p.OFPActionCopyTtlOut(),
        p.OFPActionCopyTtlIn(), p.OFPActionSetMplsTtl(5), p.OFPActionDecMplsTtl(), p.OFPActionPushVlan(0x8100),
        p.OFPActionPopVlan(), p.OFPActionPushMpls(0x8847), p.OFPActionPopMpls(0x0800), p.OFPActionSetQueue(3),
        p.OFPActionGroup(4), p.OFPActionSetNwTtl(9), p.OFPActionDecNwTtl(), p.OFPActionPushPbb(0x88E7),
        p.OFPActionPopPbb(),
        p.OFPActionSetField(eth_dst="02:00:00:00:00:03"), p.OFPActionSetField(vlan_vid=0x1005),
        p.OFPActionSetField(ipv4_src="10.9.9.9"), p.OFPActionSetField(ipv6_dst="2001:db8::9"),
        p.OFPActionSetField(tcp_dst=8080), p.OFPActionSetField(mpls_label=7), p.OFPActionSetField(tunnel_id=5),
        # Open vSwitch's resubmit, as os-ken's Nicira classes build it.
        p.NXActionResubmitTable(in_port=7, table_id=2), p.NXActionResubmitTable(in_port=0xfff8, table_id=4),
        p.NXActionResubmitTable(in_port=0xfffe, table_id=255),
    ]
    all_instructions = [
        p.OFPInstructionMeter(1),
        p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, all_actions),
        p.OFPInstructionActions(ofp.OFPIT_CLEAR_ACTIONS, []),
        p.OFPInstructionActions(ofp.OFPIT_WRITE_ACTIONS, [p.OFPActionOutput(1, 0)]),
        p.OFPInstructionWriteMetadata(0x1, 0xFF),
        p.OFPInstructionGotoTable(2),
    ]
    msgs = [
        # os-ken encodes HELLO without elements; our bitmap is checked the other way.
        ("hello", p.OFPHello(DP)),
        ("error", p.OFPErrorMsg(DP, type_=ofp.OFPET_BAD_REQUEST, code=ofp.OFPBRC_BAD_LEN, data=b"\x04\x0e\x00\x08abcd")),
        ("echo_request", p.OFPEchoRequest(DP, data=b"ping")),
        ("echo_reply", p.OFPEchoReply(DP, data=b"pong")),
        ("experimenter", p.OFPExperimenter(DP, experimenter=0x00ABCDEF, exp_type=7, data=b"abcd")),
        ("features_request", p.OFPFeaturesRequest(DP)),
        ("get_config_request", p.OFPGetConfigRequest(DP)),
        ("set_config", p.OFPSetConfig(DP, ofp.OFPC_FRAG_DROP, 256)),
        ("packet_out", p.OFPPacketOut(DP, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER,
                                      actions=[p.OFPActionOutput(1, 0), p.OFPActionOutput(ofp.OFPP_FLOOD, 0)],
                                      data=b"\xff" * 60)),
        ("packet_out_buffer", p.OFPPacketOut(DP, buffer_id=5, in_port=1, actions=[p.OFPActionOutput(ofp.OFPP_TABLE, 0)])),
    ]
    for i, m in enumerate(matches):
        msgs.append((f"flow_mod_{i}", p.OFPFlowMod(
            DP, cookie=0x10 + i, cookie_mask=0xFF, table_id=i, command=i % 5, idle_timeout=10, hard_timeout=20,
            priority=100 + i, buffer_id=ofp.OFP_NO_BUFFER, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
            flags=ofp.OFPFF_SEND_FLOW_REM | ofp.OFPFF_CHECK_OVERLAP, match=m,
            instructions=all_instructions if i == 0 else [p.OFPInstructionGotoTable(i + 1)])))
    msgs += [
        ("group_mod_select", p.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, 1, [
            p.OFPBucket(weight=10, actions=[p.OFPActionOutput(1, 0)]),
            p.OFPBucket(weight=20, actions=[p.OFPActionSetField(eth_dst="02:00:00:00:00:07"), p.OFPActionOutput(2, 0)]),
        ])),
        ("group_mod_ff", p.OFPGroupMod(DP, ofp.OFPGC_MODIFY, ofp.OFPGT_FF, 2, [
            p.OFPBucket(watch_port=1, actions=[p.OFPActionOutput(1, 0)]),
            p.OFPBucket(watch_port=2, watch_group=1, actions=[p.OFPActionGroup(1)]),
        ])),
        ("group_mod_delete", p.OFPGroupMod(DP, ofp.OFPGC_DELETE, ofp.OFPGT_ALL, ofp.OFPG_ALL, [])),
        ("port_mod", p.OFPPortMod(DP, 1, "02:00:00:00:00:01", ofp.OFPPC_PORT_DOWN, ofp.OFPPC_PORT_DOWN, 0)),
        ("table_mod", p.OFPTableMod(DP, 1, 3)),
        ("desc_request", p.OFPDescStatsRequest(DP, 0)),
        ("flow_stats_request", p.OFPFlowStatsRequest(DP, 0, 1, ofp.OFPP_ANY, ofp.OFPG_ANY, 0x10, 0xFF, matches[1])),
        ("aggregate_request", p.OFPAggregateStatsRequest(DP, 0, ofp.OFPTT_ALL, 2, ofp.OFPG_ANY, 0, 0, matches[4])),
        ("table_stats_request", p.OFPTableStatsRequest(DP, 0)),
        ("port_stats_request", p.OFPPortStatsRequest(DP, 0, ofp.OFPP_ANY)),
        ("queue_stats_request", p.OFPQueueStatsRequest(DP, 0, 1, ofp.OFPQ_ALL)),
        ("group_stats_request", p.OFPGroupStatsRequest(DP, 0, ofp.OFPG_ALL)),
        ("group_desc_request", p.OFPGroupDescStatsRequest(DP, 0)),
        ("group_features_request", p.OFPGroupFeaturesStatsRequest(DP, 0)),
        ("meter_stats_request", p.OFPMeterStatsRequest(DP, 0, ofp.OFPM_ALL)),
        ("meter_config_request", p.OFPMeterConfigStatsRequest(DP, 0, 3)),
        ("meter_features_request", p.OFPMeterFeaturesStatsRequest(DP, 0)),
        ("table_features_request", p.OFPTableFeaturesStatsRequest(DP, 0, [])),
        ("table_features_set", p.OFPTableFeaturesStatsRequest(DP, 0, [p.OFPTableFeaturesStats(
            table_id=0, name=b"t0", metadata_match=0xFF, metadata_write=0xFF, config=0, max_entries=1000,
            properties=[
                p.OFPTableFeaturePropInstructions(type_=ofp.OFPTFPT_INSTRUCTIONS,
                                                  instruction_ids=[p.OFPInstructionId(1), p.OFPInstructionId(4)]),
                p.OFPTableFeaturePropNextTables(type_=ofp.OFPTFPT_NEXT_TABLES, table_ids=[1, 2]),
                p.OFPTableFeaturePropActions(type_=ofp.OFPTFPT_APPLY_ACTIONS, action_ids=[p.OFPActionId(0)]),
                p.OFPTableFeaturePropOxm(type_=ofp.OFPTFPT_MATCH, oxm_ids=[p.OFPOxmId("in_port"), p.OFPOxmId("eth_dst", hasmask=True)]),
            ])])),
        ("port_desc_request", p.OFPPortDescStatsRequest(DP, 0)),
        ("experimenter_request", p.OFPExperimenterStatsRequest(DP, 0, 0x00ABCDEF, 3, b"data")),
        ("barrier_request", p.OFPBarrierRequest(DP)),
        ("queue_get_config_request", p.OFPQueueGetConfigRequest(DP, 1)),
        ("role_request", p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 7)),
        ("get_async_request", p.OFPGetAsyncRequest(DP)),
        ("set_async", p.OFPSetAsync(DP, [3, 1], [7, 0], [15, 3])),
        ("meter_mod", p.OFPMeterMod(DP, ofp.OFPMC_ADD, ofp.OFPMF_KBPS | ofp.OFPMF_BURST, 1, [
            p.OFPMeterBandDrop(1000, 100), p.OFPMeterBandDscpRemark(500, 50, 1)])),
        ("meter_mod_delete", p.OFPMeterMod(DP, ofp.OFPMC_DELETE, 0, ofp.OFPM_ALL, [])),
        # Open vSwitch's packet-in formats (nicira_ext.NXPIF_*).
        ("nxt_set_packet_in_format_standard", p.NXTSetPacketInFormatMsg(DP, 0)),
        ("nxt_set_packet_in_format_nxt2", p.NXTSetPacketInFormatMsg(DP, 2)),
    ]
    return msgs


def osken_view(msg):
    """os-ken's view of a parsed message, with two slips of its
    NXTPacketIn2 parser put right from the properties it kept: it reads
    NXPINT_COOKIE's u64 from the property's first bytes, where Open
    vSwitch writes four zero bytes before it (lib/ofp-prop.c,
    ofpprop_put_be64; `ovs-ofctl ofp-print` reads the cookie after them),
    and without NXPINT_FULL_LEN it takes the packet property's length,
    header included, as total_len (the packet's length, says its own
    comment)."""
    view = norm(msg)
    if isinstance(msg, p.NXTPacketIn2):
        from os_ken.ofproto import nicira_ext
        types = {q.type: q for q in msg.properties}
        if nicira_ext.NXPINT_COOKIE in types:
            view["cookie"] = int.from_bytes(bytes(types[nicira_ext.NXPINT_COOKIE].data)[4:12], "big")
        if nicira_ext.NXPINT_FULL_LEN not in types and msg.data is not None:
            view["total_len"] = len(msg.data)
    return view


def run(binary, mode, stdin=""):
    out = subprocess.run([binary, mode], input=stdin, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def main():
    binary = sys.argv[1]
    passed = failed = 0
    fields = [0]

    # 1. os-ken encodes, we decode.
    built = osken_corpus()
    lines = []
    for i, (name, m) in enumerate(built):
        m.set_xid(1000 + i)
        m.serialize()
        lines.append(json.dumps({"name": name, "hex": bytes(m.buf).hex()}))
    results = run(binary, "decode", "\n".join(lines) + "\n")
    for (name, m), line, res in zip(built, lines, results):
        errs = []
        if not res["ok"]:
            errs.append(f"our decoder refused it: {res['error']}")
        else:
            if res["hex"] != json.loads(line)["hex"]:
                errs.append(f"re-encoding differs:\n  os-ken {json.loads(line)['hex']}\n  ours   {res['hex']}")
            errs += compare(res["summary"], norm(m), name, fields)
            errs += compare(res["xid"], m.xid, name + ".xid", fields)
        report(f"os-ken -> sluice  {name}", errs)
        passed, failed = (passed + 1, failed) if not errs else (passed, failed + 1)

    # 2. We encode, os-ken decodes.
    for item in run(binary, "corpus"):
        name = item["name"]
        buf = bytes.fromhex(item["hex"])
        errs = []
        try:
            version, msg_type, msg_len, xid = ofproto_parser.header(buf)
            msg = ofproto_parser.msg(DP, version, msg_type, msg_len, xid, buf)
            if msg is None:
                raise ValueError("os-ken could not parse it")
            errs += compare(item["summary"], osken_view(msg), name, fields)
            errs += compare(item["xid"], msg.xid, name + ".xid", fields)
        except Exception as e:  # noqa: BLE001 - report whatever os-ken raised
            errs.append(f"os-ken failed: {e!r}")
        report(f"sluice -> os-ken  {name}", errs)
        passed, failed = (passed + 1, failed) if not errs else (passed, failed + 1)

    print(f"compared {fields[0]} fields")
    print(f"interop: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def report(what, errs):
    if errs:
        print(f"FAIL {what}")
        for e in errs:
            print(f"     {e}")
    else:
        print(f"ok   {what}")


if __name__ == "__main__":
    main()
