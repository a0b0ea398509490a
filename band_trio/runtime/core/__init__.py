"""The runtime's sans-io cores: the decisions of a room and of the agent's pace,
with no I/O and no clock of their own (the caller passes the time), tested exactly.

The Trio shells that carry them out are :mod:`band_trio.runtime.room` (one
room) and the agent-wide modules of :mod:`band_trio.runtime`.
"""
