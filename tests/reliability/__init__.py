"""Faults and misuse: killed ranks, hardening, who forms a communicator (membership), accidents of real jobs, a soak,
threads as ranks."""
