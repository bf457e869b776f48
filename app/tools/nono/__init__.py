"""The nono layer: per-role profiles, turned into nono-py capability sets and proxies."""
