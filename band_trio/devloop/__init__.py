"""The developer loop: ``band-trio dev`` (edit an adapter, talk to it a second
later) and ``band-trio chat`` (a human's terminal chat on a local platform).

* :mod:`~band_trio.devloop.targets` — what a ``TARGET`` names and how an agent
  is built from it;
* :mod:`~band_trio.devloop.child` — the agent's own process;
* :mod:`~band_trio.devloop.supervisor` — runs, reloads and stops that process;
* :mod:`~band_trio.devloop.watch` — noticing source changes;
* :mod:`~band_trio.devloop.chat`, :mod:`~band_trio.devloop.render` and
  :mod:`~band_trio.devloop.console` — the terminal chat;
* :mod:`~band_trio.devloop.commands` — the commands printed for the user to type;
* :mod:`~band_trio.devloop.session` — the two commands put together.

It needs the ``local`` extra (the embedded platform and its human client).
"""

from band_trio.devloop.session import UI, DevOptions, run_chat, run_dev
from band_trio.devloop.targets import Target, TargetError, TargetKind, parse_target

__all__ = [
    "UI",
    "DevOptions",
    "Target",
    "TargetError",
    "TargetKind",
    "parse_target",
    "run_chat",
    "run_dev",
]
