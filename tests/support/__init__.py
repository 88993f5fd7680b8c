"""What the test folders share: how ranks are started (launch: processes, the one launcher; rankpool: the session's
pool; rank_threads: ranks as threads), the environment they run in (environment), independent references (golden,
rendezvous), the CPU backends (backends), the emulation (emulation), HCCL's C API through ctypes (hccl_ctypes) and
where the checkout is (paths). Nothing here is a test."""
