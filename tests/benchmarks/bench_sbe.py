# SPDX-License-Identifier: MIT
"""SBE (CME MDP 3.0) decoding benchmark: MB/s into structured arrays, beside sbedecoder.

Run ``python -m tests.benchmarks.bench_sbe`` (``--quick`` for a short run) or
``pytest -m bench tests/benchmarks/bench_sbe.py``.

The bytes: the UDP payloads of the shared 10,000-packet v8 capture
(``cme_mdp3_sbe/pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap``, 853 kB, 10,598
messages), read once from the file, then repeated in memory (``REPEATS`` copies, one buffer
of packets and their offsets) so one decode lasts long enough to time.

* ``sbe_decode_mb_s``: :meth:`SbeDecoder.decode` of the whole buffer, every field of every
  message and group entry into its template's structured array (plus the packet and message
  tables), per run; judged in every run (issue 20: >= 500 MB/s).
* ``sbe_vs_sbedecoder``: that rate over sbedecoder's on the same payloads in the same run;
  judged in every run (issue 20: >= 20x). sbedecoder's rate is its parse of every packet with
  every field of every message and group entry read (``raw_value``), which is what getting
  the values out of it takes; ``sbedecoder_parse_mb_s`` (its lazy parse alone, fields not
  read) is reported too, with our ratio to it.
* ``decode_capture_s``: :func:`decode_capture` of the capture file, dpkt's pcap reading
  included (reported: the file reader, not the decoder, is most of it).

Pcap reading is left out of the judged figures: the decoder's input is the payloads' bytes.

Reported, not judged (no target in the issue), in CPU time:

* ``sbe_encode_msg_s``: :class:`~engine.feeds.sbe.encoder.SbeEncoder` encoding every message
  of the capture again from its decoded values (the values made once, outside the timing;
  checked byte for byte first), beside the test-side encoder in the same run.
* ``mdp3_live_msg_s``: :class:`~engine.feeds.sbe.live.Mdp3Books` (market by price and by
  order, Python) applying the simulator's MDP 3.0 packets, decoding included; and
  ``mdp3_recovery_ms``: a late joiner's recovery (a snapshot loop of three instruments and
  its buffered packets).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.feeds.pcap import udp_payloads
from engine.feeds.sbe.decoder import MDP3_FRAMING, SbeDecoder, pack_packets
from engine.feeds.sbe.encoder import SbeEncoder, pack_mdp3
from engine.feeds.sbe.live import Mdp3Books
from engine.feeds.sbe.mdp3 import decode_capture
from engine.feeds.sbe.schema_xml import load_schema
from tests.benchmarks import judge

SHARED = Path(__file__).resolve().parents[3] / "shared"
DATA = SHARED / "data/cme_mdp3_sbe"
CAPTURE = DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
SCHEMA = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
SCHEMA_V9 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"

#: Targets from issue 20.
TARGET_MB_S = 500.0
TARGET_RATIO = 20.0
#: Copies of the capture's payloads decoded at once (about 43 MB; 17 MB with --quick).
REPEATS = 50
QUICK_REPEATS = 20
#: Decodes a run, the fastest taken (the machine is shared: a run is judged on its best).
DECODES = 5


def _read_every_field(fields: list[Any]) -> int:
    n = 0
    for f in fields:
        parts = getattr(f, "parts", None)
        if parts is not None:
            for p in parts:
                p.raw_value  # noqa: B018 (the read is the work measured)
                n += 1
        else:
            f.raw_value  # noqa: B018
            n += 1
    return n


def sbedecoder_rate(payloads: list[bytes], passes: int) -> tuple[float, float]:
    """Return sbedecoder's MB/s over ``payloads``: every field read, and parsing alone."""
    from sbedecoder import MDPMessageFactory, MDPSchema, SBEParser

    schema = MDPSchema()
    schema.parse(str(SCHEMA))
    parser = SBEParser(MDPMessageFactory(schema))
    size = sum(len(p) for p in payloads)
    full: list[float] = []
    parse: list[float] = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for payload in payloads:
            for m in parser.parse(payload, 12):
                _read_every_field(m.fields)
                for group in m.groups:
                    for entry in group.repeating_groups:
                        _read_every_field(entry.fields)
        full.append(size / (time.perf_counter() - t0) / 1e6)
        t0 = time.perf_counter()
        for payload in payloads:
            for m in parser.parse(payload, 12):
                for group in m.groups:
                    for _entry in group.repeating_groups:
                        pass
        parse.append(size / (time.perf_counter() - t0) / 1e6)
    return statistics.median(full), statistics.median(parse)


def run(quick: bool) -> dict[str, Any]:
    """Measure every figure; return them with their per-run values."""
    payloads = udp_payloads(CAPTURE)
    decoder = SbeDecoder(load_schema(SCHEMA), MDP3_FRAMING)
    repeats = QUICK_REPEATS if quick else REPEATS
    buf, starts, lengths = pack_packets(payloads * repeats)
    once = decoder.decode(*pack_packets(payloads))  # compiled (or loaded) and checked
    assert once.n_decoded == 10_598
    assert not once.issues
    runs = 3 if quick else 5
    ours: list[float] = []
    ratios: list[float] = []
    refs: list[float] = []
    parses: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):  # interleaved: ours and the reference see the same load
        decoder.decode(buf, starts, lengths)  # warm: the buffers' pages, the caches
        times = [_timed(decoder, buf, starts, lengths) for _ in range(DECODES)]
        rate = buf.size / min(t[0] for t in times) / 1e6
        cpu.append(buf.size / min(t[1] for t in times) / 1e6)
        ref, parse = sbedecoder_rate(payloads, 1)
        ours.append(rate)
        refs.append(ref)
        parses.append(parse)
        ratios.append(rate / ref)
    t0 = time.perf_counter()
    cap = decode_capture(CAPTURE, SCHEMA)
    capture_s = time.perf_counter() - t0
    assert cap.decoded.n_decoded == 10_598
    enc, enc_ref, enc_bytes = encode_rates(payloads, 1 if quick else 3)
    live, live_msgs, recovery_ms = live_rates(300 if quick else 1_000)
    return {
        "encode": enc,
        "encode_ref": enc_ref,
        "encode_bytes": enc_bytes,
        "live": live,
        "live_msgs": live_msgs,
        "recovery_ms": recovery_ms,
        "mb": buf.size / 1e6,
        "messages": once.n_messages * repeats,
        "ours": ours,
        "ratios": ratios,
        "ref": refs,
        "parse": parses,
        "capture_s": capture_s,
        "cpu": cpu,
    }


def encode_rates(payloads: list[bytes], passes: int) -> tuple[float, float, int]:
    """Return messages/s (CPU) of ``SbeEncoder`` and of the test-side encoder, and bytes."""
    from tests.unit.engine.feeds.sbe.encode import encode_message, values_of

    cap = decode_capture(CAPTURE, SCHEMA)
    dec = cap.decoded
    enc = SbeEncoder(dec.schema)
    todo = []
    for m in dec.messages:
        tid, row = int(m["template_id"]), int(m["row"])
        root, groups = values_of(dec, dec.templates[tid], row)
        start = int(m["offset"]) + 2
        want = dec.buffer[start : int(m["offset"]) + int(m["size"])].tobytes()
        assert enc.encode(tid, root, groups) == want  # the same bytes, or no figure
        todo.append((tid, root, groups))
    c0 = time.process_time()
    n = 0
    for _ in range(passes):
        for tid, root, groups in todo:
            n += len(enc.encode(tid, root, groups))
    ours = len(todo) * passes / (time.process_time() - c0)
    c0 = time.process_time()
    for tid, root, groups in todo:
        encode_message(dec.schema, tid, root, groups)
    ref = len(todo) / (time.process_time() - c0)
    return ours, ref, n // passes


def live_rates(steps: int) -> tuple[float, int, float]:
    """Return Mdp3Books' messages/s (CPU), the messages, and a recovery's CPU ms."""
    from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
    from engine.sim.mdp3_feed import SimMdp3Feed
    from tests.factories import make_instrument

    schema = load_schema(SCHEMA_V9)
    flow = FlowConfig(events_per_second=4_000, volatility_ticks=2.0)
    ins = [make_instrument(s) for s in ("ESZ6", "NQZ6", "CLF7")]
    ex = SimExchange(
        [
            SimInstrument(instrument=x, start_px_ticks=px, flow=flow)
            for x, px in zip(ins, (20_000, 80_000, 30_000), strict=True)
        ],
        seed=2,
    )
    feed = SimMdp3Feed(ex, schema, 1)
    ex.order_feed = feed
    ex.seed_books(2)
    t = 10
    for _ in range(steps):
        t += 1_000_000
        ex.step(t)
    msgs = feed.take()
    packets = pack_mdp3(msgs, 1_472, 1, t)
    books = Mdp3Books(schema, from_start=True)
    late = Mdp3Books(schema)
    for x in ins:
        books.add_instrument(x)
        late.add_instrument(x)
    books.on_packets(packets[:50])  # the kernels warm
    c0 = time.process_time()
    for i in range(50, len(packets), 20):  # as a receiver gets them: a few at a time
        books.on_packets(packets[i : i + 20])
    rate = books.stats.messages / (time.process_time() - c0)
    loop = pack_mdp3(feed.snapshot(t, len(packets)), 1_472, 1, t)
    late.on_packets(packets[-200:])
    c0 = time.process_time()
    late.on_snapshot_packets(loop)
    recovery_ms = (time.process_time() - c0) * 1e3
    assert late.synced
    return rate, len(msgs), recovery_ms


def _timed(decoder: SbeDecoder, buf: Any, starts: Any, lengths: Any) -> tuple[float, float]:
    """Return the wall and CPU seconds of one decode."""
    t0, c0 = time.perf_counter(), time.process_time()
    decoder.decode(buf, starts, lengths)
    return time.perf_counter() - t0, time.process_time() - c0


def figures_of(res: dict[str, Any]) -> list[judge.Figure]:
    """Return the judged and reported figures of :func:`run`'s result."""
    ours = statistics.median(res["ours"])
    parse = statistics.median(res["parse"])
    return [
        judge.Figure(
            "sbe_decode_mb_s",
            "MB/s",
            res["ours"],
            target=TARGET_MB_S,
            lower_is_better=False,
            note=(
                f"{res['mb']:.1f} MB, {res['messages']:,} messages a decode "
                f"({ours * 1e6 / (res['mb'] * 1e6 / res['messages']) / 1e6:.1f} M msg/s); "
                f"best of {DECODES} decodes a run; CPU time: "
                f"{statistics.median(res['cpu']):.0f} MB/s"
            ),
        ),
        judge.Figure(
            "sbe_vs_sbedecoder",
            "x",
            res["ratios"],
            target=TARGET_RATIO,
            lower_is_better=False,
            note=f"sbedecoder {statistics.median(res['ref']):.2f} MB/s, every field read",
        ),
        judge.Figure(
            "sbedecoder_parse_mb_s",
            "MB/s",
            res["parse"],
            lower_is_better=False,
            note=f"sbedecoder's lazy parse alone, fields not read; ours {ours / parse:.0f}x it",
        ),
        judge.Figure(
            "decode_capture_s",
            "s",
            [res["capture_s"]],
            note="decode_capture() of the 1.6 MB pcapng: dpkt's reading included",
        ),
        judge.Figure(
            "sbe_encode_msg_s",
            "msg/s",
            [res["encode"]],
            lower_is_better=False,
            note=(
                f"SbeEncoder, the capture's 10,598 messages ({res['encode_bytes'] / 1e3:.0f} kB) "
                f"from their values, CPU time; {res['encode'] / res['encode_ref']:.1f}x the "
                "test-side encoder"
            ),
        ),
        judge.Figure(
            "mdp3_live_msg_s",
            "msg/s",
            [res["live"]],
            lower_is_better=False,
            note=(
                f"Mdp3Books (MBP + MBO, Python) on {res['live_msgs']:,} messages of the "
                "simulator's feed, 20 packets a call, decoding included; CPU time"
            ),
        ),
        judge.Figure(
            "mdp3_recovery_ms",
            "ms",
            [res["recovery_ms"]],
            note="a late joiner: one snapshot loop (3 instruments) and 200 buffered packets",
        ),
    ]


@pytest.mark.bench
def test_bench_sbe() -> None:
    """The quick run: the same targets."""
    if not CAPTURE.is_file() or not SCHEMA.is_file() or not SCHEMA_V9.is_file():
        pytest.skip(f"{CAPTURE} or {SCHEMA} is not there")
    load0 = os.getloadavg()[0]
    figures = figures_of(run(quick=True))
    assert judge.conclude(figures, (load0, os.getloadavg()[0])) == 0, judge.misses(figures)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print and judge it."""
    ap = argparse.ArgumentParser(prog="bench_sbe")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md")
    args = ap.parse_args(argv)
    if not CAPTURE.is_file() or not SCHEMA.is_file():
        print(f"{CAPTURE} or {SCHEMA} is not there")
        return 1
    load0 = os.getloadavg()[0]
    figures = figures_of(run(args.quick))
    load = (load0, os.getloadavg()[0])
    if args.doc:
        judge.write_section(
            "sbe",
            "CME MDP 3.0 (SBE): decoding a capture into structured arrays",
            f"python -m tests.benchmarks.bench_sbe{' --quick' if args.quick else ''} --doc",
            figures,
            load=load,
            runs="best of 5 decodes a run",
        )
    return judge.conclude(figures, load)


if __name__ == "__main__":
    sys.exit(main())
