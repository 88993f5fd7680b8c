// $ATB_HOME_PATH/lib/libatb_test_framework.so of the emulation: the library ATB's test scripts load with
// torch.classes.load_library. It has no code of its own; it links atb_ops' TorchScript binding
// (libatb_ops_torch.so: torch.classes.OperationTorch.OperationTorch) and the emulation's libatb.so (backend
// "hccl" over HCCL's C API on CPU), so loading it makes both available, once, whatever was loaded before.
