"""The values every layer passes: tool metadata, tools and their outputs, calls and results,
batch outcomes, decisions, frozen JSON, safe text and the error tree.

The bottom layer: it imports nothing else of llmworker, and nothing here imports grpc.
Its public names are re-exported by ``llmworker``; import them from there.
"""
