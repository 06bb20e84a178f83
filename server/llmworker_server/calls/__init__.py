"""Serving calls: the ToolService handlers, the admission every call path shares, request
checks, limits, listings, definition watches, batches and paused batches."""
