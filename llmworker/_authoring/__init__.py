"""Writing tools as Python methods: ``@tool_registry`` / ``@tool``, the generated argument
models and ``Tool`` classes, schema styles and the validation that follows a schema.

Above ``_runtime`` (a generated tool reads its call context) and ``_formats`` (strict schema
styles). Public names are re-exported by ``llmworker``.
"""
