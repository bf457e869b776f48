"""The trusted controller: it alone holds the supplier key and the AWS identity."""
