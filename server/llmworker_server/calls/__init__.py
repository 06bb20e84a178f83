"""Serving calls: the ToolService handlers, the admission every call path shares, request
checks, limits, failures and responses, listings, definition watches, batches and paused
batches."""
