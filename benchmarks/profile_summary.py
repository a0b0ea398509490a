"""Summarise a py-spy raw (collapsed stacks) profile from ``bench_agents.py --profile py-spy``.

Prints where the sampled time went: by package (the leaf frame's), and the
functions with the most self and inclusive samples.

Usage::

    uv run python benchmarks/profile_summary.py benchmarks/results/<file>.stacks.txt [--top 25]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

# Frames of this checkout are shown relative to its root, wherever it lives.
REPO_ROOT = str(Path(__file__).resolve().parent.parent) + "/"
FRAME_RE = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def package_of(file: str) -> str:
    """The top-level package (or stdlib module) a frame's file belongs to."""
    if not file:
        return "native"
    path = file.split("site-packages/", 1)[-1]
    for marker in ("/lib/python3", "/band_trio/", "/benchmarks/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3":
                path = path.split("/", 1)[1] if "/" in path else path
            else:
                return marker.strip("/")
    head = path.split("/", 1)[0]
    return head.removesuffix(".py") or "other"


def parse(path: str) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            frames = tuple(fr for fr in stack.split(";") if fr)
            # py-spy puts "process ..." and "thread ..." pseudo-frames first
            frames = (
                tuple(fr for fr in frames if not fr.startswith(("process ", "thread ", '"')))
                or frames
            )
            if frames:
                stacks[frames] += int(count)
    return stacks


def describe(frame: str) -> tuple[str, str]:
    match = FRAME_RE.match(frame)
    if not match:
        return frame, ""
    file = match.group("file")
    short = file.split("site-packages/", 1)[-1].replace(REPO_ROOT, "")
    return f"{match.group('func')} ({short})", file


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("stacks", help="py-spy --format raw output")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    stacks = parse(args.stacks)
    total = sum(stacks.values())
    if not total:
        print("no samples")
        return 1
    by_package: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, count in stacks.items():
        leaf_name, leaf_file = describe(frames[-1])
        by_package[package_of(leaf_file)] += count
        self_time[leaf_name] += count
        for name in {describe(fr)[0] for fr in frames}:
            inclusive[name] += count

    def show(title: str, counts: Counter[str], top: int) -> None:
        print(f"\n{title}")
        for name, count in counts.most_common(top):
            print(f"  {100 * count / total:5.1f}%  {name}")

    print(f"{total} samples")
    show("self time by package (leaf frame)", by_package, len(by_package))
    show("self time by function", self_time, args.top)
    show("inclusive time by function", inclusive, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
