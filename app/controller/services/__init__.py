"""The services a run talks to: moto and the supplier API on loopback, or the pod's own."""
