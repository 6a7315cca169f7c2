"""The `pgolf` command line: thin click commands over the audits and trainer libraries."""
