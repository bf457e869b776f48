"""What the controller and the confinement layers both need and neither owns: roles, the run
tree, the check log, the case contract, typed results, the error family and the contracts
with the cluster (environment names, the IAM policy)."""
