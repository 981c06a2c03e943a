#!/usr/bin/env python3
"""Draws the einsum benchmark as a chart: for each instance, weft's time
over the best peer's (numpy, PyTorch, JAX, whichever is fastest there),
along the instance's `opt_flops` path, one bar per thread count. Below 1,
weft is faster. Reads what `einsum_peers.py --json PATH --threads N`
wrote (with `--weft`, so that weft's figures are in it), one file per
thread count (or several per thread count, merged).

    python3 scripts/einsum_chart.py target/peers_t1.json target/peers_t2.json \\
        --out docs/pictures/einsum.svg [--caption TEXT]

Only the standard library: the SVG is written by hand.
"""

import argparse
import json
import math
import sys

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
LOW, HIGH = 0.25, 4.0  # the ratio axis, log scale


def load(paths, strategy):
    """[(threads, {instance: (ratio, best peer)})], the files of one thread
    count merged: where two files time an instance, each peer's smaller
    median counts (the ratio that favours the peers)."""
    merged = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        rows = merged.setdefault(data.get("threads"), {})
        for row in data["rows"]:
            if row["strategy"] != strategy or row["weft_ms"] is None or not row["peers_ms"]:
                continue
            weft, peers = rows.get(row["instance"], (row["weft_ms"], {}))
            for peer, ms in row["peers_ms"].items():
                peers[peer] = min(ms, peers.get(peer, math.inf))
            rows[row["instance"]] = (weft, peers)
    runs = []
    for threads, rows in sorted(merged.items(), key=lambda kv: kv[0] or 0):
        ratios = {}
        for instance, (weft, peers) in rows.items():
            peer, best = min(peers.items(), key=lambda kv: kv[1])
            ratios[instance] = (weft / best, peer)
        runs.append((threads, ratios))
    return runs


def svg(runs, caption):
    instances = sorted({i for _, r in runs for i in r})
    bar, gap, left, width = 14, 10, 330, 520
    group = bar * len(runs) + gap
    top = 50
    height = top + group * len(instances) + 70
    total = left + width + 150

    def x(ratio):
        r = min(max(ratio, LOW), HIGH)
        return left + width * (math.log(r) - math.log(LOW)) / (math.log(HIGH) - math.log(LOW))

    out = [
        f'<svg width="{total}" height="{height}" viewBox="0 0 {total} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="0" y="0" width="{total}" height="{height}" fill="#FFFFFF"/>',
        f'<text x="{total / 2}" y="22" text-anchor="middle" font-family="sans-serif" font-size="15">'
        "einsum benchmark: weft's time / the best peer's, opt_flops path (below 1: weft is faster)</text>",
    ]
    for tick in [0.25, 0.5, 1.0, 2.0, 4.0]:
        tx = x(tick)
        weight = 'stroke-width="1.5" opacity="0.8"' if tick == 1.0 else 'stroke-width="1" opacity="0.15"'
        out.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - 60}" stroke="#000000" {weight}/>')
        out.append(
            f'<text x="{tx:.1f}" y="{height - 46}" text-anchor="middle" font-family="sans-serif" font-size="11">{tick:g}×</text>'
        )
    for k, name in enumerate(instances):
        y0 = top + k * group
        out.append(
            f'<text x="{left - 8}" y="{y0 + bar * len(runs) / 2 + 4:.1f}" text-anchor="end" '
            f'font-family="sans-serif" font-size="11">{name}</text>'
        )
        for j, (threads, ratios) in enumerate(runs):
            if name not in ratios:
                continue
            ratio, peer = ratios[name]
            y = y0 + j * bar
            x0, x1 = sorted([x(1.0), x(ratio)])
            out.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar - 2}" '
                f'fill="{COLOURS[j % len(COLOURS)]}"/>'
            )
            out.append(
                f'<text x="{max(x(ratio), x(1.0)) + 4:.1f}" y="{y + bar - 4}" font-family="sans-serif" '
                f'font-size="10" fill="#333333">{ratio:.2f} ({peer})</text>'
            )
    for j, (threads, _) in enumerate(runs):
        lx = left + j * 130
        out.append(f'<rect x="{lx}" y="{height - 34}" width="12" height="12" fill="{COLOURS[j % len(COLOURS)]}"/>')
        out.append(
            f'<text x="{lx + 16}" y="{height - 24}" font-family="sans-serif" font-size="11">'
            f'{threads} thread{"s" if threads != 1 else ""}</text>'
        )
    if caption:
        out.append(
            f'<text x="12" y="{height - 6}" font-family="sans-serif" font-size="10" fill="#555555">{caption}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="files written by einsum_peers.py --json")
    p.add_argument("--out", required=True)
    p.add_argument("--strategy", default="opt_flops")
    p.add_argument("--caption", default="")
    args = p.parse_args(argv)
    runs = load(args.runs, args.strategy)
    if not any(r for _, r in runs):
        print("no rows with weft's figures: run einsum_peers.py with --weft", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(svg(runs, args.caption))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
