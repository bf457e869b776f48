"""Benchmarks: ratios measured in one run on this machine, never asserted by a test."""
