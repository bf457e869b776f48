"""The confined procurement analyst: a trusted controller and the tool processes it confines."""
