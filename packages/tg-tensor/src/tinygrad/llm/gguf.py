"""tinygrad 0.14's import path for the GGUF reader; the reader itself is tinygrad.nn.gguf (also exported by tinygrad.nn.state)."""
from tinygrad.nn.gguf import gguf_load

__all__ = ["gguf_load"]
