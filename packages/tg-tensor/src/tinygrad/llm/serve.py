"""An OpenAI-compatible HTTP API for `python -m tinygrad.llm --serve` on the standard library's http.server: POST /v1/chat/completions
(streamed as server-sent events or one JSON reply; max_tokens, temperature) and GET /v1/models. Requests are served in threads, but the
model has one KV cache: one completion runs at a time. A bad request gets a 400 with an OpenAI-style {"error": {"message", ...}} body."""
from __future__ import annotations
import json, sys, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Iterator
if TYPE_CHECKING:
  from tinygrad.llm.cli import FallbackTemplate
  from tinygrad.llm.model import Transformer
  from tinygrad.llm.tokenizer import SimpleTokenizer

MAX_BODY = 16 << 20  # bytes of a request body read at most: a chat's text is far less, and a bigger Content-Length is not allocated

class BadRequest(ValueError):
  def __init__(self, message:str, param:str|None=None, code:str|None=None):
    super().__init__(message)
    self.param, self.code = param, code

def _option(body:dict, key:str, kind:type|tuple, ok=lambda v: True, need:str="") -> Any:
  """body[key] if it is a kind (bool is not a number here) passing ok, None if absent or null; a BadRequest otherwise"""
  if (v := body.get(key)) is None: return None
  if (isinstance(v, bool) and kind is not bool) or not isinstance(v, kind) or not ok(v):
    raise BadRequest(f"{key} must be {need or getattr(kind, '__name__', kind)}, not {json.dumps(v)}", key)
  return v

class Handler(BaseHTTPRequestHandler):
  server: LLMServer
  def log_message(self, format, *args): pass  # completions log their token counts instead

  def send_json(self, obj:dict, status:int=200):
    body = json.dumps(obj).encode()
    self.send_response(status)
    self.send_header("Content-Type", "application/json")
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    self.wfile.write(body)
  def send_error_json(self, status:int, message:str, param:str|None=None, code:str|None=None):
    self.send_json({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}, status)

  def do_GET(self):
    if self.path == "/v1/models":
      self.send_json({"object": "list", "data": [{"id": self.server.model_name, "object": "model", "owned_by": "tinygrad"}]})
    else: self.send_error_json(404, f"no GET {self.path}: the API has GET /v1/models and POST /v1/chat/completions", code="not_found")

  def do_POST(self):
    if self.path != "/v1/chat/completions":
      return self.send_error_json(404, f"no POST {self.path}: the API has POST /v1/chat/completions", code="not_found")
    try:
      try: length = max(0, int(self.headers.get("Content-Length") or 0))
      except ValueError: raise BadRequest(f"Content-Length {self.headers['Content-Length']!r} is not a number") from None
      if length > MAX_BODY: raise BadRequest(f"the request body is {length} bytes, more than the {MAX_BODY} this server reads", code="too_large")
      try: body = json.loads(self.rfile.read(length))
      except ValueError as e: raise BadRequest(f"the request body is not JSON: {e}") from None  # bad UTF-8 or JSON
      if not isinstance(body, dict): raise BadRequest("the request body must be a JSON object")
      if not isinstance(messages := body.get("messages"), list) or not messages:
        raise BadRequest("messages must be a non-empty list of {\"role\", \"content\"} objects", "messages")
      try: ids = self.server.tok.encode(self.server.template.render(messages, add_generation_prompt=True))
      except ValueError as e: raise BadRequest(f"messages: {e}", "messages") from None
      if len(ids) >= (ctx := self.server.model.max_context):
        raise BadRequest(f"the prompt is {len(ids)} tokens, the model's context is {ctx}", "messages", "context_length_exceeded")
      max_tokens = _option(body, "max_completion_tokens", int, lambda v: v > 0, "a positive integer") or \
                   _option(body, "max_tokens", int, lambda v: v > 0, "a positive integer")
      temperature = _option(body, "temperature", (int, float), lambda v: v >= 0, "a number >= 0") or 0.0
      stream = bool(_option(body, "stream", bool))
      stream_options = _option(body, "stream_options", dict, need="an object") or {}
    except BadRequest as e: return self.send_error_json(400, str(e), e.param, e.code)
    head = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time()), "model": self.server.model_name}
    with self.server.lock:
      reply = Completion(self.server, ids, max_tokens, float(temperature))
      if stream: self.stream(reply, head, include_usage=stream_options.get("include_usage") is True)
      else:
        text = "".join(reply)
        self.send_json({**head, "object": "chat.completion", "usage": reply.usage(),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": reply.finish_reason}]})

  def stream(self, reply:Completion, head:dict, include_usage:bool):
    self.send_response(200)
    self.send_header("Content-Type", "text/event-stream")
    self.send_header("Cache-Control", "no-cache")
    self.end_headers()
    def event(choices:list, **extra):
      self.wfile.write(f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', 'choices': choices, **extra})}\n\n".encode())
      self.wfile.flush()
    def delta(d:dict, finish:str|None=None): event([{"index": 0, "delta": d, "finish_reason": finish}])
    try:
      delta({"role": "assistant", "content": ""})
      for piece in reply: delta({"content": piece})
      delta({}, reply.finish_reason)
      if include_usage: event([], usage=reply.usage())
      self.wfile.write(b"data: [DONE]\n\n")
    except (BrokenPipeError, ConnectionResetError): sys.stderr.write("  (the client left: reply stopped)\n")

class Completion:
  """the reply's text pieces as the model makes them; then finish_reason is "stop" (an end token) or "length" (max_tokens, or the
  context is full) and usage() counts the tokens"""
  def __init__(self, server:LLMServer, ids:list[int], max_tokens:int|None, temperature:float):
    self.server, self.ids, self.max_tokens, self.temperature = server, ids, max_tokens, temperature
    self.prompt_tokens, self.completion_tokens, self.finish_reason = len(ids), 0, "length"
  def __iter__(self) -> Iterator[str]:
    model, tok, st = self.server.model, self.server.tok, time.perf_counter()
    cached, dec = model.get_start_pos(self.ids), tok.stream_decoder()
    for tid in model.generate(self.ids, temperature=self.temperature):
      if tok.is_end(tid):
        self.finish_reason = "stop"
        break
      self.completion_tokens += 1
      if piece := dec(tid): yield piece
      if self.completion_tokens == self.max_tokens: break
    if piece := dec(): yield piece
    sys.stderr.write(f"completion: prompt {self.prompt_tokens} tokens ({cached} cached), reply {self.completion_tokens} tokens "
                     f"({self.finish_reason}) in {time.perf_counter() - st:.2f} s\n")
  def usage(self) -> dict:
    return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens}

class LLMServer(ThreadingHTTPServer):
  daemon_threads = True
  def __init__(self, server_address:tuple, model:Transformer, model_name:str, tok:SimpleTokenizer, template:FallbackTemplate):
    self.model, self.model_name, self.tok, self.template, self.lock = model, model_name, tok, template, threading.Lock()
    super().__init__(server_address, Handler)
