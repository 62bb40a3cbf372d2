"""The hand-encoded requests of spec.json (see README.md): prints their
entries, to paste into spec.json. Protobuf is written field by field here
because Prometheus' own types cannot carry unknown metric type numbers or
an empty symbols table."""
import json, struct

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def key(field, wt): return varint(field << 3 | wt)
def ln(field, payload): return key(field, 2) + varint(len(payload)) + payload
def vi(field, n): return key(field, 0) + varint(n)
def dbl(field, bits): return key(field, 1) + struct.pack('<Q', bits)
def packed(field, nums): return ln(field, b''.join(varint(x) for x in nums))

F = lambda x: struct.unpack('<Q', struct.pack('<d', x))[0]

class Sym:
    def __init__(self): self.s = [""]
    def __call__(self, x):
        if x not in self.s: self.s.append(x)
        return self.s.index(x)

def v2_series(sym, labels, samples, exs, meta=None, refs=None):
    lr = refs if refs is not None else [i for n, v in labels for i in (sym(n), sym(v))]
    b = packed(1, lr) if lr else b''
    for vb, t, st in samples:
        b += ln(2, dbl(1, vb) + vi(2, t) + vi(3, st))
    for e in exs:
        if e[0] == 'refs':
            _, er, vb, t = e
        else:
            ls, vb, t = e
            er = [i for n, v in ls for i in (sym(n), sym(v))]
        b += ln(4, (packed(1, er) if er else b'') + dbl(2, vb) + vi(3, t))
    if meta is not None:
        typ, help_ref, unit_ref = meta
        b += ln(5, vi(1, typ) + vi(3, help_ref) + vi(4, unit_ref))
    return b

def request(build):
    sym = Sym()
    for x in ["__name__", "ex_order", "help text", "seconds"]:
        sym(x)
    ts = build(sym)
    return b''.join(ln(4, s.encode()) for s in sym.s) + b''.join(ln(5, t) for t in ts)

def metadata_series(sym):
    return [
        v2_series(sym, [("__name__", "meta_empty")], [(F(1), 5, 0)], [], meta=(0, 0, 0)),
        v2_series(sym, [("__name__", "meta_unknown_enum")], [(F(1), 5, 0)], [], meta=(99, 0, 0)),
        v2_series(sym, [("__name__", "meta_unknown_with_help")], [(F(1), 5, 0)], [], meta=(0, sym("help text"), 0)),
        v2_series(sym, [("__name__", "meta_unit_only")], [(F(1), 5, 0)], [], meta=(0, 0, sym("seconds"))),
        v2_series(sym, [("__name__", "meta_both_bad")], [(F(1), 5, 0)], [], meta=(2, 600, 500)),
        v2_series(sym, [("__name__", "meta_help_bad")], [(F(1), 5, 0)], [], meta=(2, 600, sym("seconds"))),
        v2_series(sym, [("__name__", "meta_bad_no_samples")], [], [], meta=(2, 0, 700)),
        v2_series(sym, [("job", "no_name")], [(F(1), 5, 0)], [], meta=(2, 0, 700)),
        v2_series(sym, None, [(F(1), 5, 0)], [], meta=(2, 0, 700), refs=[1, 800]),
        v2_series(sym, [("__name__", "st_t0")], [(F(1), 0, -5), (F(2), 0, 123), (F(3), 10, 0), (F(4), 20, 7)], [], meta=(1, sym("help text"), 0)),
    ]

v2m = request(metadata_series)

# A v2 request without symbols: metadata refs 0 are out of range.
nosym = ln(5, packed(1, []) + ln(2, dbl(1, F(1)) + vi(2, 5)))

specs = [
    {"name": "v2_metadata_and_st", "version": 2, "content_type": "application/x-protobuf;proto=io.prometheus.write.v2.Request", "proto_hex": v2m.hex()},
    {"name": "v2_no_symbols", "version": 2, "content_type": "application/x-protobuf;proto=io.prometheus.write.v2.Request", "proto_hex": nosym.hex()},
]
for x in specs:
    print(' ' + json.dumps(x) + ',')
