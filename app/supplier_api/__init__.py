"""The synthetic supplier API: HTTPS only, one key, an append-only request log."""
