"""The folder that ``python -m atb_ops run`` puts first on PYTHONPATH: the emulated ``torch_npu`` and
``torch_atb`` packages. It is a package only so that setuptools ships its contents; nothing imports it.
"""
