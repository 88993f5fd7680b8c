"""The shm backend's fast paths and which route each call took."""
