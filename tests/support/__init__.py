"""Test support: the mock engine that runs the Pulumi program, bare runs for driving one
layer, and the other helpers the test tiers share."""
