"""Running tools in process: the tool map and its handles, executing one call with crash
containment and deadlines, call context, streaming events, hooks, batches and the ``Worker``
typestate.

Above ``_formats`` and ``_model``. Public names are re-exported by ``llmworker``.
"""
