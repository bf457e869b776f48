"""The confinement layers and the worker program they start."""
