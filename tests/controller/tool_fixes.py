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
"""
import struct

from os_ken.lib.packet import sctp


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return ~crc & 0xFFFFFFFF


def _sctp_checksum(self, data):
    return struct.unpack(">I", struct.pack("<I", _crc32c(bytes(data))))[0]


def apply():
    sctp.sctp._checksum = _sctp_checksum
