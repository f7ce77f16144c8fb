"""``aimu``: the command line. One command so far, ``aimu cache``, to look after the store
of model answers (:mod:`aimu.models.cache`)::

    aimu cache                                   # where it is, its size, answers and hits
    aimu cache clear --before 2026-01-01         # answers first given before that day
    aimu cache clear --older-than 30 --model openai:gpt-4o-mini
    aimu cache clear --all

The notebook's ``%agent_cache`` takes the same arguments.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Sequence

from aimu.models.cache import CacheStats, ResponseCache


class CommandError(Exception):
    """The command line asked for something that cannot be done (the message says why)."""


def parser(prog: str = "aimu") -> argparse.ArgumentParser:
    """The ``aimu`` argument parser (``prog`` names it in usage lines)."""
    top = argparse.ArgumentParser(prog=prog, description="aimu's command line.")
    commands = top.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="Show or clear the store of model answers.")
    add_cache_arguments(cache)
    return top


def add_cache_arguments(cache: argparse.ArgumentParser) -> None:
    """``[clear] [--path P] [--before DATE | --older-than DAYS] [--model M] [--all]``."""
    cache.add_argument("action", nargs="?", choices=("info", "clear"), default="info")
    cache.add_argument(
        "--path", help="The store's file (default: $AIMU_CACHE, else the per-user cache folder)."
    )
    cache.add_argument("--before", metavar="DATE", help="Clear answers first given before DATE.")
    cache.add_argument(
        "--older-than", metavar="DAYS", type=float, help="Clear answers older than DAYS days."
    )
    cache.add_argument("--model", help="Clear only answers of this model (provider:model).")
    cache.add_argument("--all", action="store_true", help="Clear every answer.")


def cache_command(args: argparse.Namespace) -> str:
    """Run ``aimu cache`` with parsed ``args``; the text to show."""
    store = ResponseCache(args.path) if args.path else ResponseCache()
    try:
        if args.action == "info":
            if any((args.before, args.older_than is not None, args.model, args.all)):
                raise CommandError("--before, --older-than, --model and --all go with 'clear'")
            return describe(store.stats())
        before = _cutoff(args.before, args.older_than)
        if before is None and args.model is None and not args.all:
            raise CommandError(
                "say what to clear: --before DATE, --older-than DAYS, --model M, or --all"
            )
        removed = store.clear(before=before, model=args.model)
        return f"Cleared {_count(removed, 'answer')} from {store.path}."
    finally:
        store.close()


def describe(stats: CacheStats) -> str:
    """The store's state in a few lines."""
    lines = [
        f"Response cache: {stats.path}",
        f"  {_count(stats.entries, 'answer')}, {_size(stats.bytes)}, {_count(stats.hits, 'hit')}",
    ]
    if stats.oldest is not None and stats.newest is not None:
        lines.append(f"  first given {_day(stats.oldest)} to {_day(stats.newest)}")
    lines += [f"  {count:>6,}  {model}" for model, count in stats.models.items()]
    return "\n".join(lines)


def _cutoff(before: str | None, older_than: float | None) -> float | None:
    if before is not None and older_than is not None:
        raise CommandError("give --before or --older-than, not both")
    if older_than is not None:
        if older_than < 0:
            raise CommandError(f"--older-than {older_than:g}: give a number of days >= 0")
        return time.time() - older_than * 86400
    if before is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(before)
    except ValueError:
        raise CommandError(
            f"--before {before}: give a date like 2026-01-31 (or 2026-01-31T12:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


def _count(number: int, thing: str) -> str:
    return f"{number:,} {thing}{'s' * (number != 1)}"


def _day(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M")


def _size(count: int) -> str:
    size = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{count} bytes"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``aimu`` console script."""
    args = parser().parse_args(argv)
    try:
        print(cache_command(args))
    except CommandError as exc:
        print(f"aimu cache: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
