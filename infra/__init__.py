"""The Pulumi program that deploys the procurement analyst to Amazon EKS, and its components."""
