"""Several hosts, on emulated hosts (network namespaces on a private bridge)."""
