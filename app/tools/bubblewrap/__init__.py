"""The bubblewrap layer: a bwrap argument vector per role plus seccomp filters compiled here."""
