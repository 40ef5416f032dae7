"""tinygrad.llm: where tinygrad 0.14 programs import LLM file helpers from (`from tinygrad.llm.gguf import gguf_load`)."""
