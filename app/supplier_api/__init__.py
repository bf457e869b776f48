"""The synthetic supplier API: HTTPS only, one key, a bounded request log of every request."""
