"""Support code shared by the test tiers."""
