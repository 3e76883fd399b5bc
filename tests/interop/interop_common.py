"""Helpers shared by the os-ken cross-checks (osken_interop.py, osken_of10.py,
osken_of1x.py): running the example binary, reporting a case, turning an
os-ken object into plain data and comparing our summary with it field by
field. Each script imports this from its own directory (on sys.path when
it is run as `python tests/interop/X.py`)."""
import ipaddress
import json
import subprocess

STRING_KEYS = {"name", "mfr_desc", "hw_desc", "sw_desc", "serial_num", "dp_desc"}


def value_hex(v):
    """os-ken writes MACs and addresses as text; compare them as numbers."""
    if isinstance(v, str):
        if v.count(":") == 5 and len(v) == 17:
            return hex(int(v.replace(":", ""), 16))
        return hex(int(ipaddress.ip_address(v)))
    return hex(v)


def norm(o, key=None):
    """An os-ken object (1.2 and later) as plain data: a match as
    [name, value, mask] triples in hex, strings cut at NUL, bytes in hex."""
    if hasattr(o, "_fields2"):
        out = []
        for name, v in o._fields2:
            if isinstance(v, tuple):
                out.append([name, value_hex(v[0]), value_hex(v[1])])
            else:
                out.append([name, value_hex(v), None])
        return out
    if isinstance(o, (bytes, bytearray)):
        if key in STRING_KEYS:
            return bytes(o).split(b"\0", 1)[0].decode("latin1")
        return bytes(o).hex()
    if hasattr(o, "_asdict"):
        return {k: norm(v, k) for k, v in o._asdict().items()}
    if isinstance(o, dict):
        return {str(k): norm(v, k) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [norm(x) for x in o]
    if hasattr(o, "__dict__"):
        d = {k: norm(v, k) for k, v in vars(o).items() if not k.startswith("_") and k not in ("datapath", "buf")}
        if type(o).__name__ == "OFPActionSetField":
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


def run(binary, *args, stdin=""):
    """Runs `binary args...` with `stdin`; its output, one JSON value a line."""
    out = subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def report(what, errs):
    """Prints one case's verdict; whether it passed."""
    if errs:
        print(f"FAIL {what}")
        for e in errs:
            print(f"     {e}")
    else:
        print(f"ok   {what}")
    return not errs


def decode_lines(built):
    """The `decode` input for os-ken messages [(name, msg)]: each given
    xid 1000 + its index and serialized, one JSON line {name, hex} each."""
    lines = []
    for i, (name, m) in enumerate(built):
        m.set_xid(1000 + i)
        m.serialize()
        lines.append(json.dumps({"name": name, "hex": bytes(m.buf).hex()}))
    return lines
