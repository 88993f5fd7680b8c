"""Helpers shared by the test folders: how ranks are launched (launch, rankpool), the environment they run in
(environment), independent references (golden), the CPU backends (backends), the emulation (emulation), HCCL's C API
through ctypes (hccl_ctypes) and where the checkout is (paths). Nothing here is a test."""
