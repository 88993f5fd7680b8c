"""ATB's C++ API (libatb.so): programs built with ATB's build line, and scripts/run_atb_cpp_demos.py on ATB-shaped
demos."""
