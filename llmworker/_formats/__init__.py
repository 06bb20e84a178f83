"""Provider formats: definitions as OpenAI, Anthropic and Gemini want them, strict-mode
rules, and model output read as tool calls and results written back.

Above ``_model`` only. Public names are re-exported by ``llmworker``.
"""
