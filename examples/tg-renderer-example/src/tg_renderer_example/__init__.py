"""An example third-party tg renderer for the CPU device: DEV=CPU:SIGNED."""
