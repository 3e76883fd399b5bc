"""Fixes for defects of the os-ken OpenFlow 1.3 switch test tool itself,
applied only when asked (scripts/conformance.sh --fixed-tool), each with
the evidence in docs/CONFORMANCE.md. Nothing here knows about sluice: a
fix makes the tool compute what the standard says, for every switch.

* SCTP checksum: os-ken's `sctp._checksum` runs its CRC32c over
  `str(data)`, which on Python 3 is the text "bytearray(b'...')", not the
  bytes; the packets the tool sends and the ones it expects carry a value
  that is no RFC 4960 checksum of anything on the wire. The fix computes
  CRC32c over the bytes (RFC 4960 appendix B; stored least significant
  byte first, as the tool's own final byte swap intends).
* Traffic rate of throughput cases (group select, meters): the tool's
  generator sends `pktps * 10 ms` packets per tick and sleeps 10 ms
  between ticks, so every millisecond a tick runs late is traffic never
  sent: the rate falls short of what the case asks by the sleep's
  overshoot, while the case compares what arrives with the full rate
  (+-10 %). The fix sends, at each tick, what is due for the time that
  really passed since the last one (up to three ticks' worth).
"""
import struct
import time

from os_ken.lib.packet import sctp
from os_ken.tests.switch import tester


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return ~crc & 0xFFFFFFFF


def _sctp_checksum(self, data):
    return struct.unpack(">I", struct.pack("<I", _crc32c(bytes(data))))[0]


_send_packet_thread = tester.OfTester._send_packet_thread


def _paced_send_packet_thread(self, arg):
    now = time.monotonic()
    if "pktps" not in arg:
        arg["pktps"] = arg["packet_counter_inc"] / tester.CONTINUOUS_THREAD_INTVL
        arg["last"] = now - tester.CONTINUOUS_THREAD_INTVL
    # At most three ticks' worth at once: a stall's whole backlog sent in
    # one go would be a burst no real sender makes (and more than a
    # meter's bucket); past that, traffic is lost as the tool loses it.
    late = min(now - arg["last"], 3 * tester.CONTINUOUS_THREAD_INTVL)
    arg["packet_counter_inc"] = arg["pktps"] * late
    arg["last"] = now
    return _send_packet_thread(self, arg)


def apply():
    sctp.sctp._checksum = _sctp_checksum
    tester.OfTester._send_packet_thread = _paced_send_packet_thread
