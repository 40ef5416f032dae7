"""`python -m tinygrad.llm`: chat with a GGUF model in the terminal, serve it over an OpenAI-compatible HTTP API (--serve), or time its
decoding (--benchmark). The model is tinygrad.llm.model's Transformer, the tokenizer the file's own (tinygrad.llm.tokenizer)."""
from __future__ import annotations
import argparse, pathlib, sys, time
from tinygrad import nn
from tinygrad.helpers import GlobalCounters, fetch
from tinygrad.llm.model import Transformer
from tinygrad.llm.tokenizer import SimpleTokenizer

__all__ = ["SimpleTokenizer", "FallbackTemplate", "models", "main"]

# names for --model, downloaded once into tinygrad's cache: the dense llama/qwen3 models tinygrad.llm.model runs
models = {
  "llama3.2:1b": "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q6_K.gguf",
  "llama3.2:1b-q4": "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf",
  "llama3.2:3b": "https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q6_K.gguf",
  "llama3.2:3b-f16": "https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-f16.gguf",
  "llama3.1:8b": "https://huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/resolve/main/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
  "qwen3:0.6b": "https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf",
  "qwen3:1.7b": "https://huggingface.co/unsloth/Qwen3-1.7B-GGUF/resolve/main/Qwen3-1.7B-Q4_K_M.gguf",
  "qwen3:8b": "https://huggingface.co/Qwen/Qwen3-8B-GGUF/resolve/main/Qwen3-8B-Q4_K_M.gguf",
}

class FallbackTemplate:
  """a chat written out in the model's turn format (tinygrad 0.14 uses this when jinja2 cannot render the GGUF's chat template; here it
  always does): ChatML (<|im_start|>role ... <|im_end|>, Qwen) or Llama 3's header tokens, whichever the vocabulary has"""
  def __init__(self, tok:SimpleTokenizer):
    self.tok = tok
    if "<|im_start|>" in tok.special_tokens: self.format = "chatml"
    elif "<|start_header_id|>" in tok.special_tokens: self.format = "llama3"
    else: raise ValueError("the vocabulary has no chat turn tokens (<|im_start|> of ChatML or <|start_header_id|> of Llama 3): "
                           "is this a base model rather than a chat model?")
  def role(self, role:str) -> str:
    return f"<|im_start|>{role}\n" if self.format == "chatml" else f"<|start_header_id|>{role}<|end_header_id|>\n\n"
  def end_turn(self) -> str: return "<|im_end|>\n" if self.format == "chatml" else "<|eot_id|>"
  def render(self, messages:list[dict], add_generation_prompt:bool=True, **_) -> str:
    """the prompt text of messages ({"role", "content"}: a string, or a list of {"type": "text", "text"} parts); ends with the opened
    assistant turn if add_generation_prompt. Other keywords (a jinja2 template's tools, ...) are ignored"""
    out = "" if self.tok.bos_id is None else self.tok.decode([self.tok.bos_id])
    for i, msg in enumerate(messages):
      if not isinstance(msg, dict) or not isinstance(msg.get("role"), str): raise ValueError(f"message {i} is not an object with a string role")
      content = msg.get("content")
      if isinstance(content, list):
        if not all(isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str) for c in content):
          raise ValueError(f"message {i}'s content parts must all be {{\"type\": \"text\", \"text\": string}}")
        content = "".join(c["text"] for c in content)
      elif not isinstance(content, (str, type(None))): raise ValueError(f"message {i}'s content is a {type(content).__name__}, not a string")
      out += self.role(msg["role"]) + (content or "") + self.end_turn()
    return out + self.role("assistant") if add_generation_prompt else out

def model_path(name:str) -> pathlib.Path:
  """a known model name's file (downloaded the first time) or a local GGUF path; anything else exits with a message"""
  if name in models:
    try: return fetch(models[name])
    except (RuntimeError, OSError) as e:
      sys.exit(f"error: could not download {name} ({e}); pass the path of a GGUF file you have instead: --model PATH")
  if not (path := pathlib.Path(name).expanduser()).is_file():
    sys.exit(f"error: --model {name!r} is not a file, nor one of the model names {', '.join(models)}")
  return path

def chat(model:Transformer, tok:SimpleTokenizer, template:FallbackTemplate):
  """read a message a line from stdin, stream the reply to stdout; the whole chat is the prompt of each turn, and generate() reruns only
  the tokens past what the KV cache already holds"""
  messages: list[dict] = []
  while True:
    try: messages.append({"role": "user", "content": input(">>> ")})
    except EOFError:
      print()
      return
    if len(ids := tok.encode(template.render(messages))) >= model.max_context:
      print(f"(the chat is {len(ids)} tokens, --max_context is {model.max_context}: starting a new chat)", file=sys.stderr)
      del messages[:-1]
      if len(ids := tok.encode(template.render(messages))) >= model.max_context:
        print(f"(this message alone is {len(ids)} tokens: it does not fit)", file=sys.stderr)
        messages.clear()
        continue
    reply, dec = "", tok.stream_decoder()
    for tid in model.generate(ids):
      if tok.is_end(tid): break
      reply += (piece := dec(tid))
      sys.stdout.write(piece)
      sys.stdout.flush()
    else: print(f"\n(the reply stopped at --max_context, {model.max_context} tokens)", file=sys.stderr)
    reply += (piece := dec())
    sys.stdout.write(piece + "\n\n")
    messages.append({"role": "assistant", "content": reply})

def benchmark(model:Transformer, tok:SimpleTokenizer, count:int):
  """decode count tokens after the BOS token, printing each one's time"""
  gen = model.generate(toks := [tok.bos_id if tok.bos_id is not None else 0])
  for _ in range(count):
    GlobalCounters.reset()
    st = time.perf_counter()
    if next(gen, None) is None: break  # the context is full
    dt = time.perf_counter() - st
    print(f"{dt*1e3:8.2f} ms, {1/dt:8.2f} tok/s, {GlobalCounters.global_mem/dt*1e-9:7.2f} GB/s  -- {tok.decode(toks)!r}")

def main(argv:list[str]|None=None):
  parser = argparse.ArgumentParser(prog="python -m tinygrad.llm", description="chat with a GGUF language model, or serve it")
  parser.add_argument("--model", "-m", default=next(iter(models)), help=f"a local GGUF file, or one of {', '.join(models)} (downloaded)")
  parser.add_argument("--max_context", type=int, default=4096, help="the most tokens a chat may hold (the KV cache size)")
  parser.add_argument("--serve", nargs="?", type=int, const=8000, metavar="PORT", help="serve an OpenAI-compatible API (port 8000)")
  parser.add_argument("--warmup", action="store_true", help="capture the JITs before the first message")
  parser.add_argument("--benchmark", nargs="?", type=int, const=20, metavar="COUNT", help="print the speed of COUNT decoded tokens (20)")
  args = parser.parse_args(argv)
  if args.max_context < 2: parser.error(f"--max_context {args.max_context}: a chat needs at least 2 tokens")
  path = model_path(args.model)
  try:
    model, kv = Transformer.from_gguf(path, args.max_context)
    tok = SimpleTokenizer.from_gguf_kv(kv)
    template = FallbackTemplate(tok)
  except (ValueError, NotImplementedError, OSError) as e: sys.exit(f"error: cannot run {path}: {e}")
  model_name = kv.get("general.name") or kv.get("general.basename") or args.model
  params = nn.state.get_parameters(model)
  print(f"using model \"{model_name}\" ({path.stat().st_size:,} bytes, {sum(p.numel() for p in params):,} params), "
        f"max context {model.max_context} on {params[0].device}")
  if args.warmup or args.serve is not None: model.warmup()
  try:
    if args.serve is not None:
      from tinygrad.llm.serve import LLMServer
      try: server = LLMServer(("", args.serve), model, model_name, tok, template)
      except OSError as e: sys.exit(f"error: cannot serve on port {args.serve}: {e}")
      with server:
        print(f"serving http://localhost:{server.server_address[1]}/v1 (POST /v1/chat/completions, GET /v1/models)", file=sys.stderr)
        server.serve_forever()
    elif args.benchmark is not None: benchmark(model, tok, args.benchmark)
    else: chat(model, tok, template)
  except KeyboardInterrupt: print()

if __name__ == "__main__": main()
