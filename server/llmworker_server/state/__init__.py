"""Paused batches kept between CallTools and ResumeBatch: the store interface and its engines.

What lives here: ``HeldBatch`` and the resume tokens (``held``), the ``PausedStore`` interface
(``store``), its three engines (``memory``: one process; ``sqlite``: one host, the default;
``postgres``: replicas), the SQL and schema versions both SQL engines share (``sql_store``,
``schema``), and reading ``--state`` (``location``). The batch RPCs in ``calls`` use a store;
nothing here knows gRPC.
"""
