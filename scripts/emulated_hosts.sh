#!/usr/bin/env bash
# Emulated hosts on this machine (needs root): N network namespaces on a private bridge, each with its own
# hostname (h0, h1, ... resolving through its own /etc/hosts to its bridge address 10.213.0.<i+1>), its own
# /dev/shm and optionally a shaped link. A thin wrapper around `python -m atb_ops.emulated_hosts` (it runs the
# module's file directly, so it does not import torch); see that module's docstring for the details.
#
#   scripts/emulated_hosts.sh up --hosts 2 [--link-rate 10gbit] [--delay-ms 1]   # keeps them until Ctrl-C / down
#   scripts/emulated_hosts.sh exec h0 -- bash                                     # a shell inside h0
#   scripts/emulated_hosts.sh list
#   scripts/emulated_hosts.sh down                                                # stop `up`s, clean leftovers
#
# A 2-host x 2-ranks-per-host torchrun job by hand (four terminals, from the repository root):
#
#   # terminal 1: the hosts
#   scripts/emulated_hosts.sh up --hosts 2 --link-rate 10gbit
#
#   # terminal 2: host h0 (also serves the c10d rendezvous on h0:29500)
#   scripts/emulated_hosts.sh exec h0 -- .venv/bin/torchrun --nnodes 2 --nproc-per-node 2 \
#       --rdzv-backend c10d --rdzv-endpoint h0:29500 --rdzv-id job1 train.py
#
#   # terminal 3: host h1 (the same line)
#   scripts/emulated_hosts.sh exec h1 -- .venv/bin/torchrun --nnodes 2 --nproc-per-node 2 \
#       --rdzv-backend c10d --rdzv-endpoint h0:29500 --rdzv-id job1 train.py
#
#   # terminal 4 (or Ctrl-C in terminal 1) when done: kills everything still running inside the hosts
#   scripts/emulated_hosts.sh down
#
# `up` also prints each host's plain `nsenter -t <pid> --net --uts --mount --ipc` line, for tools that want
# a command prefix (e.g. an rsh agent for mpirun). Inside a host, gloo binds the address the host's name
# resolves to (its bridge address), so GLOO_SOCKET_IFNAME is not needed (GLOO_SOCKET_IFNAME=eth0 names the
# same interface). Ports are per host: 29500 never clashes with the machine's own or another instance's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$here/.venv/bin/python" ]]; then python="$here/.venv/bin/python"; else python="$(command -v python3)"; fi
fi
exec "$python" "$here/python/atb_ops/emulated_hosts.py" "$@"
