"""`python -m atb_ops bench`."""
