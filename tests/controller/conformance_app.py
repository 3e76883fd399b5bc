"""An os-ken app that exercises sluice over the wire the way a controller
cluster and a reactive app would, and logs each check it makes:

1. Roles: MASTER (generation 10) is granted; a stale MASTER request
   (generation 5) gets OFPET_ROLE_REQUEST_FAILED/OFPRRFC_STALE; as SLAVE
   (generation 11) a FLOW_MOD gets OFPET_BAD_REQUEST/OFPBRC_IS_SLAVE;
   MASTER again (generation 12).
2. FLOW_REMOVED: a flow with hard_timeout=1 and SEND_FLOW_REM comes back
   with reason HARD_TIMEOUT and its cookie; another one deleted strictly
   comes back with reason DELETE.
3. PACKET_OUT: an ARP request for $PEER_IP sent out of port $PEER_PORT
   reaches that host, whose ARP reply comes back as a PACKET_IN (the
   table-miss sends it to the controller).

Each check logs "CHECK <name> ok" or "CHECK <name> FAILED: ...", and
"ALL CHECKS PASSED" once every one passed.
"""
import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import arp, ethernet, packet
from os_ken.ofproto import ofproto_v1_3

PEER_IP = os.environ.get("PEER_IP") or "10.213.77.2"
PEER_PORT = int(os.environ.get("PEER_PORT") or "2")
OUR_IP = os.environ.get("OUR_IP") or "10.213.77.9"
OUR_MAC = "02:00:00:00:00:09"
CHECKS = ["role-master", "role-stale", "role-slave-refused", "role-master-again",
          "flow-removed-hard-timeout", "flow-removed-delete", "packet-out-answered"]


class Conformance(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = set()
        self.step = None

    def check(self, name, ok, why=""):
        if ok:
            if name not in self.passed:
                self.passed.add(name)
                self.logger.info("CHECK %s ok", name)
                if self.passed == set(CHECKS):
                    self.logger.info("ALL CHECKS PASSED")
        else:
            self.logger.info("CHECK %s FAILED: %s", name, why)

    def role(self, dp, role, gen):
        dp.send_msg(dp.ofproto_parser.OFPRoleRequest(dp, role, gen))

    def flow(self, dp, cookie, match, hard_timeout=0, command=None, priority=10):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        actions = [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(
            datapath=dp, cookie=cookie, priority=priority, match=match, instructions=inst,
            hard_timeout=hard_timeout, flags=ofp.OFPFF_SEND_FLOW_REM,
            command=ofp.OFPFC_ADD if command is None else command,
            out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev):
        dp = ev.msg.datapath
        self.logger.info("switch %016x connected", dp.id)
        self.step = "master"
        self.role(dp, dp.ofproto.OFPCR_ROLE_MASTER, 10)

    @set_ev_cls(ofp_event.EventOFPRoleReply, MAIN_DISPATCHER)
    def on_role(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp = dp.ofproto
        if self.step == "master":
            self.check("role-master", msg.role == ofp.OFPCR_ROLE_MASTER and msg.generation_id == 10,
                       "reply %s gen %s" % (msg.role, msg.generation_id))
            self.step = "stale"
            self.role(dp, ofp.OFPCR_ROLE_MASTER, 5)
        elif self.step == "stale":
            self.check("role-stale", False, "a stale generation id was granted")
        elif self.step == "slave":
            self.step = "slave-flow"
            parser = dp.ofproto_parser
            self.flow(dp, 0x99, parser.OFPMatch(eth_type=0x0800, ipv4_dst="10.250.0.9"))
        elif self.step == "master-again":
            self.check("role-master-again",
                       msg.role == ofp.OFPCR_ROLE_MASTER and msg.generation_id == 12,
                       "reply %s gen %s" % (msg.role, msg.generation_id))
            self.step = "work"
            self.work(dp)

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def on_error(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp = dp.ofproto
        if self.step == "stale":
            self.check("role-stale", msg.type == ofp.OFPET_ROLE_REQUEST_FAILED
                       and msg.code == ofp.OFPRRFC_STALE, "error %s/%s" % (msg.type, msg.code))
            self.step = "slave"
            self.role(dp, ofp.OFPCR_ROLE_SLAVE, 11)
        elif self.step == "slave-flow":
            self.check("role-slave-refused", msg.type == ofp.OFPET_BAD_REQUEST
                       and msg.code == ofp.OFPBRC_IS_SLAVE, "error %s/%s" % (msg.type, msg.code))
            self.step = "master-again"
            self.role(dp, ofp.OFPCR_ROLE_MASTER, 12)
        else:
            self.logger.info("unexpected error %s/%s at step %s", msg.type, msg.code, self.step)

    def work(self, dp):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        # Table-miss to the controller (for the ARP reply).
        self.flow(dp, 0, parser.OFPMatch(), priority=0)
        # Flows that no traffic hits: one expires, one is deleted.
        self.flow(dp, 0x51, parser.OFPMatch(eth_type=0x0800, ipv4_dst="10.250.0.1"), hard_timeout=1)
        self.flow(dp, 0x52, parser.OFPMatch(eth_type=0x0800, ipv4_dst="10.250.0.2"))
        self.flow(dp, 0x52, parser.OFPMatch(eth_type=0x0800, ipv4_dst="10.250.0.2"),
                  command=ofp.OFPFC_DELETE_STRICT)
        # An ARP request out of the peer's port.
        pkt = packet.Packet()
        pkt.add_protocol(ethernet.ethernet(dst="ff:ff:ff:ff:ff:ff", src=OUR_MAC, ethertype=0x0806))
        pkt.add_protocol(arp.arp(opcode=arp.ARP_REQUEST, src_mac=OUR_MAC, src_ip=OUR_IP,
                                 dst_mac="00:00:00:00:00:00", dst_ip=PEER_IP))
        pkt.serialize()
        dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER,
                                        in_port=ofp.OFPP_CONTROLLER,
                                        actions=[parser.OFPActionOutput(PEER_PORT)],
                                        data=pkt.data))

    @set_ev_cls(ofp_event.EventOFPFlowRemoved, MAIN_DISPATCHER)
    def on_flow_removed(self, ev):
        msg = ev.msg
        ofp = msg.datapath.ofproto
        self.logger.info("flow removed: cookie %#x reason %s", msg.cookie, msg.reason)
        if msg.cookie == 0x51:
            self.check("flow-removed-hard-timeout", msg.reason == ofp.OFPRR_HARD_TIMEOUT,
                       "reason %s" % msg.reason)
        elif msg.cookie == 0x52:
            self.check("flow-removed-delete", msg.reason == ofp.OFPRR_DELETE,
                       "reason %s" % msg.reason)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        pkt = packet.Packet(msg.data)
        a = pkt.get_protocol(arp.arp)
        if a is not None and a.opcode == arp.ARP_REPLY and a.src_ip == PEER_IP \
                and a.dst_ip == OUR_IP and a.dst_mac == OUR_MAC:
            self.check("packet-out-answered", msg.match["in_port"] == PEER_PORT,
                       "reply came in on port %s" % msg.match["in_port"])
