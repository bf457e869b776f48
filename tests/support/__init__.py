"""Test support: the mock engine that runs the Pulumi program, and the helpers tests use."""
