"""The claims ledger: at-least-once delivery in, exactly-once effect out.

:class:`~band_trio.runtime.claims.ledger.ClaimsLedger` writes every change of
the claims state (:mod:`band_trio.runtime.core._claims`, sans-io) to its SQLite
journal (:mod:`~band_trio.runtime.claims._journal`) before the call returns.
"""
