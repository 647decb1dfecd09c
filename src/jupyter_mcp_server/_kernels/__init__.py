"""The kernel layer: local kernels, execution and bounded outputs."""
