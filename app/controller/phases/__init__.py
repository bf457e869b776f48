"""The shared phases of one run, in the order app/controller/run.py calls them."""
