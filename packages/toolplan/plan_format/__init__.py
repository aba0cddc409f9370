"""The plan document: its model, metadata keys, templates, JSON Schema helpers, IDs and input limits."""
