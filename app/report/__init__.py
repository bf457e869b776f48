"""A run's pages (report.html, the layers' comparison and the boundary picture), rendered from
the run's own documents alone (evidence.json, checks.json, comparison.json) and the committed
policy accounting: it imports nothing of the controller or the layers, so it renders any stored
run as well as the one being made."""
