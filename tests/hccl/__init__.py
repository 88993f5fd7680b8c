"""HCCL's C API on CPU (libhccl.so) and the ACL runtime beside it, used as CANN users do: a C program and HCCL's C++
sample on rank processes, an ACL program, HCCL's handle checks."""
