"""ComponentResources of the procurement analyst stack, one concern each."""
