"""The emulated torch_npu: torch.npu's device API, NPU device names, npu_format_cast, --device cuda.

Each case runs its checks in a child process under the emulation and prints "ok" at the end.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from atb_ops.emulation import formats
from tests.support.emulation import output_of, run_emulated, run_with_emulation_env

NPU_API_CPU = """
import warnings
import pytest, torch, torch_npu
import torch_npu.npu
assert torch.npu is torch_npu.npu is torch_npu.npu
assert torch.npu.is_available() and torch.npu.device_count() == 8
assert torch.npu.current_device() == 0
torch_npu.npu.set_device(3)
assert torch.npu.current_device() == 3
torch.npu.set_device("npu:1")
assert torch.npu.current_device() == 1
torch.npu.set_device(torch.device("npu:2"))
assert torch_npu.npu.current_device() == 2
with torch.npu.device(5):
    assert torch.npu.current_device() == 5
assert torch.npu.current_device() == 2
import threading
seen = {}
def rank_thread(n):  # ATB's commMode 1 scripts: each rank thread sets its own device, as on NPUs (per thread)
    seen[(n, "start")] = torch.npu.current_device()
    torch.npu.set_device(n)
    barrier.wait()
    seen[n] = torch.npu.current_device()
barrier = threading.Barrier(2)
threads = [threading.Thread(target=rank_thread, args=(n,)) for n in (4, 6)]
[t.start() for t in threads]; [t.join() for t in threads]
assert seen == {(4, "start"): 0, (6, "start"): 0, 4: 4, 6: 6}, seen
assert torch.npu.current_device() == 2
with pytest.raises(RuntimeError, match=r"npu:8 does not exist, device_count\\(\\) is 8 .*ATB_OPS_NPU_COUNT"):
    torch.npu.set_device(8)
with pytest.raises(ValueError, match="not an NPU device: 'cuda:0'"):
    torch.npu.set_device("cuda:0")
name = torch.npu.get_device_name()
assert "Ascend910B" in name and "emulation" in name and "cpu" in name and len(name) > 10, name
assert torch.npu.get_device_name(0) == name == torch.npu.get_device_properties("npu:1").name
torch.npu.synchronize()
torch.npu.synchronize(1)
with warnings.catch_warnings():
    warnings.simplefilter("error")  # torch.manual_seed finds torch.npu's seeding hooks: no warning
    torch.manual_seed(0)
a = torch.rand(3)
torch.npu.manual_seed(0)
assert torch.equal(torch.rand(3), a)
s = torch.npu.Stream()
e0, e1 = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
e0.record(); e1.record(s)
assert e0.elapsed_time(e1) >= 0 and s.query() and e1.query()
with torch.npu.stream(s):
    assert torch.npu.current_stream() is s
assert torch.npu.current_stream() is torch.npu.default_stream()
torch.npu.set_compile_mode(jit_compile=False)
torch.npu.empty_cache()
assert torch.npu.memory_allocated() == 0
with pytest.raises(AttributeError, match="not provided by the atb_ops NPU emulation"):
    torch.npu.mem_get_info
print("ok")
"""


def test_npu_device_api_on_cpu():
    proc = run_emulated(NPU_API_CPU)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


def test_visible_devices_set_the_count():
    code = "import torch, torch_npu; print(torch.npu.device_count())"
    proc = run_emulated(code, extra_env={"ASCEND_RT_VISIBLE_DEVICES": "4,5,6"})
    assert proc.returncode == 0 and proc.stdout.strip() == "3", output_of(proc)


def test_npu_count_and_name_settings():
    code = textwrap.dedent(
        """
        import pytest, torch, torch_npu
        assert torch.npu.device_count() == 3
        torch.npu.set_device(2)
        with pytest.raises(RuntimeError, match="npu:3 does not exist, device_count.. is 3"):
            torch.npu.set_device("npu:3")
        with pytest.raises(RuntimeError, match="npu:3 does not exist"):
            torch.zeros(1, device="npu:3")
        assert torch.npu.get_device_name() == "Ascend910B4"
        print("ok")
        """
    )
    settings = {"ATB_OPS_NPU_COUNT": "3", "ATB_OPS_NPU_NAME": "Ascend910B4", "ASCEND_RT_VISIBLE_DEVICES": "0"}
    proc = run_emulated(code, extra_env=settings)  # ATB_OPS_NPU_COUNT wins
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


DEVICE_NAMES_CPU = """
import io, pytest, torch, torch_npu
host = torch.arange(6, dtype=torch.int64).reshape(2, 3)
dev = host.npu()
assert dev.device.type == "cpu" and dev.is_npu and host.is_npu  # NPU tensors are CPU tensors here
assert dev.data_ptr() != host.data_ptr() and torch.equal(dev, host)  # .npu() is a copy, like H2D
dev.add_(1)
assert host[0, 0] == 0
assert "npu" not in repr(dev) and "npu" not in str(dev.device)  # nothing pretends
assert host.npu(1).device.type == "cpu" and host.npu("npu:2").data_ptr() != host.data_ptr()
t = host.to("npu:1")
assert t.device.type == "cpu" and t.data_ptr() != host.data_ptr()
assert host.to("npu", torch.float16).dtype == torch.float16
assert host.to(torch.device("npu:0")).data_ptr() != host.data_ptr()
assert host.to("cpu").data_ptr() == host.data_ptr()  # non-NPU names pass through untouched
assert host.to(torch.float32).dtype == torch.float32
# A bare index is the accelerator's, which torch_npu makes the NPU (ATB: x.to(torch.npu.current_device())).
t = host.to(torch.npu.current_device())
assert t.device.type == "cpu" and t.data_ptr() != host.data_ptr() and torch.equal(t, host)
assert host.to(1, torch.float16).dtype == torch.float16 and torch.zeros(2, device=0).device.type == "cpu"
for make in (
    lambda d: torch.zeros(2, 3, device=d), lambda d: torch.ones(2, device=d), lambda d: torch.empty(4, device=d),
    lambda d: torch.full((2,), 7, device=d), lambda d: torch.arange(5, device=d), lambda d: torch.rand(2, device=d),
    lambda d: torch.randn(2, device=d), lambda d: torch.tensor([1, 2], device=d), lambda d: torch.eye(2, device=d),
    lambda d: torch.zeros_like(host, device=d), lambda d: torch.randint(0, 5, (3,), device=d),
    lambda d: torch.linspace(0, 1, 3, device=d), lambda d: torch.as_tensor([1.0], device=d),
    lambda d: host.new_zeros(2, device=d), lambda d: host.new_tensor([1], device=d),
    lambda d: torch.empty_like(host, device=d),
):
    for d in ("npu", "npu:1", torch.device("npu"), torch.device("npu:7")):
        assert make(d).device.type == "cpu", (make, d)
assert torch.device("npu:3").type == "npu" and str(torch.device("npu:3")) == "npu:3"
m = torch.nn.Linear(2, 2)
w = m.weight
assert m.npu() is m and m.weight is w and m.to("npu:0") is m and m.weight.device.type == "cpu"
assert m.to(0) is m and m.weight.device.type == "cpu"
buf = io.BytesIO()
torch.save({"x": host}, buf)
buf.seek(0)
assert torch.load(buf, map_location="npu:0")["x"].device.type == "cpu"
buf.seek(0)
assert torch.load(buf, map_location={"cpu": "npu:1"})["x"].device.type == "cpu"
with pytest.raises(ValueError):
    torch.tensor([1]).npu("cuda:0")
print("ok")
"""


def test_npu_device_names_are_cpu_tensors():
    proc = run_emulated(DEVICE_NAMES_CPU)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


def test_hccl_process_group_runs_on_atb_ops(tmp_path):
    # backend "hccl" on CPU is atb_ops' own torch.distributed backend (shm on one host, gloo across hosts).
    code = textwrap.dedent(
        f"""
        import torch, torch_npu, torch.distributed as dist
        dist.init_process_group("hccl", init_method="file://{tmp_path}/store", rank=0, world_size=1)
        assert dist.get_backend() == "atb_ops", dist.get_backend()
        x = torch.ones(3).npu()
        dist.all_reduce(x)
        assert torch.equal(x, torch.ones(3))
        g = dist.new_group([0], backend="hccl")
        assert dist.get_backend(g) == "atb_ops"
        assert type(g._get_backend(torch.device("cpu"))).__name__ == "C10dBackend"
        dist.destroy_process_group()
        print("ok")
        """
    )
    proc = run_emulated(code)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


@pytest.mark.parametrize("fmt", [0, 1, 2, 30])
def test_format_cast_plain_layouts_are_identity(fmt):
    x = torch.arange(6.0).reshape(2, 3)
    assert formats.npu_format_cast(x, fmt) is x
    assert formats.get_npu_format(x) == 2


@pytest.mark.parametrize("fmt, name", [(29, "ACL_FORMAT_FRACTAL_NZ"), (3, "ACL_FORMAT_NC1HWC0"), (99, "unknown")])
def test_format_cast_blocked_layouts_raise(fmt, name):
    with pytest.raises(NotImplementedError, match=name):
        formats.npu_format_cast(torch.ones(2), fmt)


def test_format_cast_bad_arguments():
    with pytest.raises(TypeError, match="expected a Tensor"):
        formats.npu_format_cast([1, 2], 2)
    with pytest.raises(TypeError, match="aclFormat integer"):
        formats.npu_format_cast(torch.ones(1), "ND")


def test_torch_npu_exposes_format_cast():
    code = (
        "import torch, torch_npu; from atb_ops.emulation import formats;"
        "assert torch_npu.npu_format_cast is formats.npu_format_cast;"
        "x = torch.ones(2).npu(); assert torch_npu.npu_format_cast(x, 2) is x; print('ok')"
    )
    proc = run_emulated(code)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


CUDA_MOCKED = """
import pytest, torch
calls = []
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 2
torch.cuda.is_initialized = lambda: False
torch.cuda.set_device = lambda i: calls.append(("set_device", i))
torch.cuda.synchronize = lambda i=None: calls.append(("synchronize", i))
torch.cuda.get_device_name = lambda i=None: "FakeGPU"
import torch_npu
from atb_ops.emulation import devices
assert torch.npu.device_count() == 2 and torch.npu.is_available()
torch_npu.npu.set_device(1)
torch.npu.synchronize()
assert calls == [("set_device", 1), ("synchronize", 1)], calls
assert torch.npu.current_device() == 1
with pytest.raises(RuntimeError) as err:
    torch_npu.npu.set_device(2)
msg = str(err.value)
assert "npu:2" in msg and "torch.cuda.device_count() is 2" in msg and "at most 2 rank" in msg, msg
assert devices.translate("npu:1") == "cuda:1" and devices.translate("npu") == "cuda"
assert devices.translate(torch.device("npu:0")) == torch.device("cuda", 0)
assert devices.translate("cpu") == "cpu" and devices.translate("npu_weights.pt") == "npu_weights.pt"
with pytest.raises(RuntimeError, match="npu:5 needs CUDA device 5"):
    devices.translate("npu:5")
assert torch.npu.get_device_name(1) == "Ascend910B (atb_ops emulation on cuda:1, FakeGPU)"
assert torch.npu.Stream is torch.cuda.Stream and torch.npu.Event is torch.cuda.Event
assert torch.ones(1).is_npu is False  # a CPU tensor is not an NPU tensor when NPUs are GPUs
print("ok")
"""


def test_device_cuda_logic_with_mocked_gpus():
    proc = run_with_emulation_env(CUDA_MOCKED, "cuda")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


def test_unknown_emulation_device_is_an_error():
    proc = run_with_emulation_env("import torch_npu", "tpu")
    assert proc.returncode != 0 and "ATB_OPS_NPU_EMULATION='tpu'" in proc.stderr, output_of(proc)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the mocked test covers the logic)")
def test_device_cuda_on_a_real_gpu():
    code = textwrap.dedent(
        """
        import torch, torch_npu
        n = torch.cuda.device_count()
        torch_npu.npu.set_device(n - 1)
        x = torch.arange(4).npu()
        assert x.device == torch.device("cuda", n - 1) and x.is_npu, x.device
        assert torch.zeros(2, device="npu").device == torch.device("cuda", n - 1)
        assert str(x.device).startswith("cuda")
        try:
            torch_npu.npu.set_device(n)
        except RuntimeError as err:
            assert f"torch.cuda.device_count() is {n}" in str(err)
        else:
            raise AssertionError("set_device past the GPUs must fail")
        torch.npu.synchronize()
        print("ok")
        """
    )
    proc = run_emulated(code, device="cuda")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


OPERATION_CLASS = """
import json, os, pytest, torch, torch_npu, atb_ops
cls = torch.classes.OperationTorch.OperationTorch
fast = os.environ.get("ATB_OPS_TORCHSCRIPT_CLASS") != "1"
assert (cls is atb_ops.Operation) == fast, cls
op = cls("AllGatherOperation")
assert fast != isinstance(op, torch.ScriptObject)
assert json.loads(op.set_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm"}))) == {"result": 0}
x = torch.arange(5.0).npu()
assert torch.equal(op.execute([x])[0], x.reshape(1, 5)) and op.name() == "AllGatherOperation"
out = torch.full((1, 5), -7.0)
op.execute_out([x], [out])
assert torch.equal(out, x.reshape(1, 5))
# ATB's fields: one output, ACL_FLOAT (0), ACL_FORMAT_ND (2), its shape.
assert json.loads(op.infer_shape([x])) == {"result": 0, "num": 1, "dtype": [0], "format": [2], "shape": [[1, 5]]}
op.set_tensor_list([x], "bias")  # accepted and ignored by both
# ATB's test framework methods beside execute: setup, execute_sync, execute_split_thread, update_param.
setup = json.loads(op.setup([x], [out]))
# Whole microseconds, as ATB's timers give them.
assert setup["result"] == 0 and setup["workspace_size"] == 0, setup
assert type(setup["setup_time"]) is int and setup["setup_time"] >= 0, setup
synced = torch.full((1, 5), -7.0)
timing = json.loads(op.execute_sync([x], [synced], setup["workspace_size"]))
assert timing["result"] == 0, timing
assert all(type(timing[k]) is int and timing[k] >= 0 for k in ("execute_time", "sync_time")), timing
assert torch.equal(synced, x.reshape(1, 5))
assert torch.equal(op.execute_split_thread([x])[0], x.reshape(1, 5))
assert json.loads(op.update_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm"}))) == {"result": 0}
assert torch.equal(op.execute([x * 2])[0], (x * 2).reshape(1, 5))
bad = cls("AllGatherOperation")
with pytest.raises(RuntimeError, match="rankSize"):
    bad.set_param(json.dumps({"rank": 0, "rankSize": 0, "backend": "shm"}))
with pytest.raises(RuntimeError, match="unknown|not an operation|Operation"):
    cls("NoSuchOperation")
print("ok")
"""


@pytest.mark.parametrize("keep_torchscript", [False, True])
def test_operation_class_under_the_emulation(keep_torchscript):
    # Under `atb_ops run`, torch.classes.OperationTorch.OperationTorch is the pybind class (no TorchScript
    # dispatch per call, ~2.6 us); ATB_OPS_TORCHSCRIPT_CLASS=1 keeps the TorchScript class. Same answers.
    env = {"ATB_OPS_TORCHSCRIPT_CLASS": "1"} if keep_torchscript else None
    proc = run_emulated(OPERATION_CLASS, extra_env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)
