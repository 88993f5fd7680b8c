"""The hccl and nccl backends' logic over recording mocks of their vendor adapters (atb_ops._testing): one
communicator contract both must keep, and each vendor's own calls."""
