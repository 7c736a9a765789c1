# SPDX-License-Identifier: MIT
"""Multicast market data on loopback (issue 20): 1M messages/s offered, no gap unrecovered.

Run: ``python -m tests.benchmarks.bench_multicast [--rate 1000000] [--seconds 5]``.

A child process publishes 36-byte messages (the size of an ITCH Add Order) as MoldUDP64
packets on an A and a B group at ``--rate`` messages/s, paced per millisecond, and drops
``--drop`` of its packets on *both* feeds (a gap the receiver can only fill by asking the
retransmission server); the kernel may drop more when the receiver's buffer overflows. The
receiver (this process, on uvloop) arbitrates A/B, re-requests every gap and counts what it
delivers. Judged: messages lost (target 0, every run), and the rate delivered against the rate
offered.

CME MDP 3.0 (``--mdp3-messages``, 0 to leave it out): the simulator's MDP 3.0 feed
(:class:`~engine.sim.mdp3_feed.SimMdp3Feed`, three instruments, made beforehand) published
on loopback at ``--mdp3-rate`` messages/s on an incremental A and B group, a snapshot loop
every 200 packets, and one packet in ``--mdp3-drop-every`` lost on *both* feeds; the receiver
(:class:`~engine.feeds.sbe.live.Mdp3Receiver` and its books, same process) recovers each loss
from the snapshot loop. Judged: instruments whose books differ from the simulator's at the
end (target 0); reported: the messages/s the books kept up with, the losses and recoveries.
"""

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.feeds.arbiter import Arbiter, MoldUdp64
from engine.feeds.multicast import FeedReceiver, Group, MoldPublisher
from tests.benchmarks import judge

ROOT = Path(__file__).resolve().parents[2]
SESSION = b"BENCHMOLD1"
MDP3_SCHEMA = ROOT.parent / "shared/data/cme_mdp3_sbe/schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"
MESSAGE = bytes(36)


def _serve(a: Group, b: Group, rate: int, seconds: float, drop: float) -> None:
    """The publisher (child process): print the re-request port, wait, publish, end."""

    async def go() -> None:
        pub = MoldPublisher(SESSION, a, b, history=rate * int(seconds + 2))
        every = max(1, round(1 / drop)) if drop else 0
        # Drop both copies of one packet in ``every`` (by its first sequence number).
        pub.drop = (lambda feed, seq: (seq // 40) % every == 0) if every else None
        port = await pub.serve_requests()
        print(port, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "go"
        per_ms = rate // 1000
        batch = [MESSAGE] * per_ms
        t0 = time.perf_counter()
        sent = 0
        while sent < rate * seconds:
            pub.publish(batch)
            sent += per_ms
            ahead = t0 + sent / rate - time.perf_counter()
            await asyncio.sleep(max(0.0, ahead))
        took = time.perf_counter() - t0
        pub.heartbeat()
        print(f"{sent} {took}", flush=True)
        # Answer re-requests until told to stop.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        pub.close()

    from engine.fix.transport import install_uvloop

    install_uvloop()
    asyncio.run(go())


async def _receive(proc: subprocess.Popen[str], a: Group, b: Group, port: int) -> dict[str, float]:
    delivered = 0
    total: int | None = None
    done = asyncio.Event()

    def on_packets(packets: list[bytes], now_ns: int) -> None:
        nonlocal delivered
        for p in packets:
            delivered += int.from_bytes(p[18:20], "big")
        if total is not None and delivered + rx.arbiter.stats.lost_messages >= total:
            done.set()

    arb = Arbiter(MoldUdp64(), next_seq=1, gap_timeout_ns=1_000_000, retry_ns=20_000_000)
    rx = FeedReceiver(a, b, on_packets, session=SESSION, recovery=("127.0.0.1", port), arbiter=arb)
    await rx.start()
    assert proc.stdin is not None
    assert proc.stdout is not None
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
    sent, took = line.split()
    total = int(sent)
    if delivered + arb.stats.lost_messages >= total:
        done.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 30)
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    rx.close()
    st = arb.stats
    return {
        "offered_per_s": total / float(took),
        "delivered_per_s": delivered / elapsed,
        "delivered": delivered,
        "sent": total,
        "lost": st.lost_messages + (total - delivered - st.lost_messages),
        "gaps": st.gaps,
        "recovered": st.recovered_messages,
        "duplicates": st.duplicates[0] + st.duplicates[1],
        "requests": rx.requests_sent,
        "cpu_ns_per_msg": cpu * 1e9 / max(1, delivered),
    }


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_once(rate: int, seconds: float, drop: float) -> dict[str, float]:
    """Publish in a child process, receive here; return what was offered and delivered."""
    a, b = Group("239.255.30.1", _free_port()), Group("239.255.30.2", _free_port())
    cmd = [sys.executable, "-m", "tests.benchmarks.bench_multicast", "--serve",
           f"{a.address}:{a.port}", f"{b.address}:{b.port}", "--rate", str(rate),
           "--seconds", str(seconds), "--drop", str(drop)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        port = int(proc.stdout.readline())
        from engine.fix.transport import install_uvloop

        install_uvloop()
        try:
            res = asyncio.run(_receive(proc, a, b, port))
        finally:
            asyncio.set_event_loop_policy(None)
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    return res


def _mdp3_stream(n_messages: int) -> tuple[Any, Any, list[bytes], dict[int, list[bytes]], int]:
    """Return the simulator, its feed, its packets and snapshot loops (after packet i)."""
    from engine.feeds.sbe.encoder import pack_mdp3
    from engine.feeds.sbe.schema_xml import load_schema
    from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
    from engine.sim.mdp3_feed import SimMdp3Feed
    from tests.factories import make_instrument

    schema = load_schema(MDP3_SCHEMA)
    flow = FlowConfig(events_per_second=20_000, volatility_ticks=3.0)
    ex = SimExchange(
        [
            SimInstrument(instrument=make_instrument(s), start_px_ticks=px, flow=flow)
            for s, px in (("ESZ6", 20_000), ("NQZ6", 80_000), ("CLF7", 30_000))
        ],
        seed=8,
    )
    feed = SimMdp3Feed(ex, schema, 1)
    ex.order_feed = feed
    ex.seed_books(2)
    packets: list[bytes] = []
    loops: dict[int, list[bytes]] = {}
    t = 10
    made = 0
    while made < n_messages:
        t += 1_000_000
        ex.step(t)
        msgs = feed.take()
        made += len(msgs)
        before = len(packets)
        packets += pack_mdp3(msgs, 1_472, before + 1, t)
        if len(packets) // 200 != before // 200:  # a pass of the loop as of this packet
            loops[len(packets) - 1] = pack_mdp3(feed.snapshot(t, len(packets)), 1_472, 1, t)
    return ex, feed, packets, loops, made


async def _mdp3_session(rate: int, drop_every: int, stream: Any) -> dict[str, float]:
    from engine.feeds.sbe.live import Mdp3Books, Mdp3Publisher, Mdp3Receiver
    from engine.types import BUY, SELL

    ex, feed, packets, loops, made = stream
    a, b = Group("239.255.31.1", _free_port()), Group("239.255.31.2", _free_port())
    snap = Group("239.255.31.3", _free_port())
    pub = Mdp3Publisher(a, b, snap)
    pub.drop = lambda feed_, seq: seq % drop_every == 0 and seq < len(packets) - 5
    books = Mdp3Books(feed.encoder.schema, from_start=True)
    for sym in ex.symbols:
        books.add_instrument(ex.books[sym].listing.instrument)
    rx = Mdp3Receiver(books, a, b, snap, gap_timeout_ns=1_000_000)
    await rx.start()
    per_packet = made / len(packets)
    cpu0, t0 = time.process_time(), time.perf_counter()
    loop = asyncio.get_running_loop()
    sock = pub._sock  # the packets are made already: send them as they are
    try:
        for i, p in enumerate(packets):
            seq = i + 1
            for feed_no, g in enumerate(pub.groups):
                if not pub.drop(feed_no, seq):
                    sock.sendto(p, (g.address, g.port))
            pub.next_seq = seq + 1
            if i in loops:
                for q in loops[i]:
                    sock.sendto(q, (snap.address, snap.port))
            ahead = t0 + (i + 1) * per_packet / rate - time.perf_counter()
            if ahead > 0 or i % 16 == 0:
                await asyncio.sleep(max(0.0, ahead))
        offered = made / (time.perf_counter() - t0)
        last = loops[max(loops)] if loops else []
        deadline = loop.time() + 20
        while not (books.synced and books.last_seq == len(packets)):
            if loop.time() > deadline:
                break
            for q in last:  # the final state's loop, until the books have caught up
                sock.sendto(q, (snap.address, snap.port))
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    finally:
        rx.close()
        pub.close()
    wrong = 0
    for i, sym in enumerate(ex.symbols):
        sid = feed.security_ids[i]
        bids, asks = ex.depth(sym, 10)
        got = (
            [(p, q) for p, q, _n in books.levels(sid, BUY)],
            [(p, q) for p, q, _n in books.levels(sid, SELL)],
        )
        wrong += got != (bids, asks) or books.orders(sid) != feed.orders(i)
    return {
        "messages": made,
        "offered_per_s": offered,
        "applied_per_s": books.stats.messages / elapsed,
        "elapsed_s": elapsed,
        "cpu_us_per_msg": cpu * 1e6 / max(1, books.stats.messages),
        "lost_packets": rx.arbiter.stats.lost_messages,
        "recoveries": books.stats.recoveries,
        "wrong_books": wrong,
        "synced": books.synced,
    }


def run_mdp3(n_messages: int, rate: int, drop_every: int) -> dict[str, float]:
    """Make the simulator's MDP 3.0 stream, publish it on loopback, recover; return figures."""
    stream = _mdp3_stream(n_messages)
    return asyncio.run(_mdp3_session(rate, drop_every, stream))


def mdp3_figures(r: dict[str, float], rate: int, drop_every: int) -> list[judge.Figure]:
    """Return the MDP 3.0 figures of :func:`run_mdp3`."""
    return [
        judge.Figure(
            "MDP 3.0 books wrong at the end",
            "instruments",
            [r["wrong_books"]],
            target=0,
            note=(
                f"{r['messages']:,.0f} messages of the simulator's MDP 3.0 feed offered at "
                f"{r['offered_per_s']:,.0f}/s (paced at {rate:,}), 1 packet in {drop_every} lost "
                f"on A and B: {r['lost_packets']:,.0f} lost, {r['recoveries']:,.0f} recoveries "
                "from the snapshot loop"
            ),
        ),
        judge.Figure(
            "MDP 3.0 CPU per message",
            "µs",
            [r["cpu_us_per_msg"]],
            note=(
                "publisher and receiver in one process: sending, receiving, arbitrating, "
                "decoding, the books (MBP + MBO), recovering; all in sync "
                f"{r['elapsed_s']:.1f} s after the first packet"
            ),
        ),
    ]


def figures(runs: list[dict[str, float]], rate: int) -> list[judge.Figure]:
    """Return the judged figures of the runs."""
    last = runs[-1]
    return [
        judge.Figure(
            "messages offered on loopback multicast",
            "msg/s",
            [r["offered_per_s"] for r in runs],
            lower_is_better=False,
            note=f"paced at {rate:,}/s, 36-byte messages in MoldUDP64 packets, A and B feeds",
        ),
        judge.Figure(
            "messages lost (no gap unrecovered)",
            "msg",
            [r["lost"] for r in runs],
            target=0,
            note=(
                f"last run: {last['gaps']:,.0f} gaps ({last['recovered']:,.0f} messages "
                f"recovered by {last['requests']:,.0f} re-requests), "
                f"{last['duplicates']:,.0f} B/A duplicates dropped"
            ),
        ),
        judge.Figure(
            "receiver CPU per message",
            "ns",
            [r["cpu_ns_per_msg"] for r in runs],
            note="arbitration, re-requests and delivery on the event loop, process time",
        ),
    ]


@pytest.mark.bench
def test_bench_multicast() -> None:
    """A short run at the target rate: nothing lost."""
    load0 = os.getloadavg()[0]
    figs = figures([run_once(1_000_000, 2.0, 0.001)], 1_000_000)
    assert judge.conclude(figs, (load0, os.getloadavg()[0])) == 0, judge.misses(figs)


def main(argv: list[str] | None = None) -> int:
    """Run, print and judge (``--doc``: into docs/performance.md)."""
    ap = argparse.ArgumentParser(prog="bench_multicast")
    ap.add_argument("--rate", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--drop", type=float, default=0.001, help="share of packets lost on A and B")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", action="store_true")
    ap.add_argument("--mdp3-messages", type=int, default=60_000, help="0: no MDP 3.0 part")
    ap.add_argument("--mdp3-rate", type=int, default=50_000)
    ap.add_argument("--mdp3-drop-every", type=int, default=400)
    ap.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:

        def group(text: str) -> Group:
            host, port = text.rsplit(":", 1)
            return Group(host, int(port))

        _serve(group(args.serve[0]), group(args.serve[1]), args.rate, args.seconds, args.drop)
        return 0
    load0 = os.getloadavg()[0]
    runs = []
    for _ in range(args.runs):
        r = run_once(args.rate, args.seconds, args.drop)
        print({k: round(v, 1) for k, v in r.items()}, flush=True)
        runs.append(r)
    figs = figures(runs, args.rate)
    if args.mdp3_messages and MDP3_SCHEMA.is_file():
        r = run_mdp3(args.mdp3_messages, args.mdp3_rate, args.mdp3_drop_every)
        print({k: round(float(v), 1) for k, v in r.items()}, flush=True)
        figs += mdp3_figures(r, args.mdp3_rate, args.mdp3_drop_every)
    load = (load0, os.getloadavg()[0])
    if args.doc:
        judge.write_section(
            "multicast",
            "Multicast market data on loopback: A/B feeds, gaps re-requested",
            f"python -m tests.benchmarks.bench_multicast --rate {args.rate} --seconds "
            f"{args.seconds:g} --runs {args.runs} --doc",
            figs,
            load=load,
            runs=f"{args.runs} runs of {args.seconds:g} s",
        )
    return judge.conclude(figs, load)


if __name__ == "__main__":
    sys.exit(main())
