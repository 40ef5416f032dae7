"""`python -m tinygrad.llm`: the GGUF tokenizer (ids, pre-tokenizer splits and chat prompts worked out by hand), the command line and the
HTTP server, whose replies must be model.generate's own greedy tokens on a tiny random GGUF model."""
import itertools, json, os, pathlib, subprocess, sys, threading, urllib.error, urllib.request
import pytest
from tinygrad.llm.cli import FallbackTemplate, SimpleTokenizer, main
from tinygrad.llm.model import Transformer
from tinygrad.llm.serve import LLMServer
from tinygrad.llm.tokenizer import CHAR_TO_BYTE, pre_tokenizer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the tiny GGUF files shared with test_llm_model
from llm_gguf_helpers import CTX, tiny_metadata, tiny_weights, write_tiny_gguf

# a hand-built vocabulary: "Ġ" is the space byte, "Ã" "©" the two bytes of "é" (GPT-2's byte-to-character mapping)
HAND_NORMAL = {"a": 0, "b": 1, "c": 2, "d": 3, "Ġ": 4, "ab": 5, "bc": 6, "Ġa": 7, "abd": 8, "Ã": 9, "©": 10, "Ã©": 11}
HAND_SPECIAL = {"<s>": 13, "<s>a": 14}
HAND_MERGES = ["b c", "a b", "Ġ a", "Ã ©"]  # ranks 0..3: "bc" is merged before "ab" although "ab" has the lower id

def hand_tokenizer(preset="default", merges=HAND_MERGES): return SimpleTokenizer(HAND_NORMAL, HAND_SPECIAL, preset, merges=merges)

@pytest.mark.parametrize("text, ids", [
  ("abc", [0, 6]),         # b+c (rank 0), then nothing merges a with bc
  (" abc", [7, 6]),        # one word; b+c, then Ġ+a
  ("abab", [5, 5]),        # the leftmost a+b first, then the other
  ("é", [11]),             # two bytes, one merge
  ("abd", [5, 3]),         # no merge makes "abd"
  (" abc<s>abab", [7, 6, 14, 1, 5]),  # the longer special token "<s>a" wins over "<s>"; "bab" is b, ab
  ("a<s>b", [0, 13, 1])])
def test_bpe_ids_by_hand(text, ids):
  tok = hand_tokenizer()
  assert tok.encode(text) == ids and tok.decode(ids) == text

def test_bpe_merge_rules():
  # Llama 3 (ignore_merges) takes a word that is a whole token as that token; without merges a pair's rank is its token's id (ab < bc)
  assert hand_tokenizer("llama-bpe").encode("abd") == [8]
  assert hand_tokenizer(merges=None).encode("abc") == [5, 2]

def test_stream_decoder_joins_split_characters():
  tok = hand_tokenizer()
  dec = tok.stream_decoder()
  assert [dec(9), dec(10), dec(0)] == ["", "é", "a"]  # "é" is tokens 9 and 10
  dec = tok.stream_decoder()
  assert [dec(4), dec(9), dec()] == [" ", "", "\ufffd"]  # a character left unfinished at the end
  assert tok.decode([9, 0]) == "\ufffda"

TEXT = "Hello, world! 12345 café\n\n  ünïcode's  end x²³⁴⁵ 日本語 ٣٤ 👍! a\u00a0b\tc  \n"
# worked out from llama.cpp's regexes: "\n\n" and "  \n" are newline runs, a space before a space-led word stands alone, ² ³ ⁴ ⁵ and ٣ ٤
# are numbers, 👍 is neither letter nor number, U+00A0 is a space that (not being \r \n) may lead a word
LLAMA3_WORDS = ["Hello", ",", " world", "!", " ", "123", "45", " café", "\n\n", " ", " ünïcode", "'s", " ", " end", " x", "²³⁴", "⁵", " 日本語",
                " ", "٣٤", " 👍!", " a", "\u00a0b", "\tc", "  \n"]
@pytest.mark.parametrize("preset, words", [
  ("llama3", LLAMA3_WORDS),
  ("qwen2", [w2 for w in LLAMA3_WORDS for w2 in (list(w) if w in ("123", "45", "²³⁴", "⁵", "٣٤") else [w])]),  # one digit a word
  ("default", ["Hello", ",", " world", "!", " 12345", " café", "\n\n ", " ünïcode", "'s", " ", " end", " x", "²³⁴⁵", " 日本語", " ٣٤", " 👍!",
               " a", "\u00a0", "b", "\t", "c", "  \n"])])  # GPT-2: only " " leads a word, digits run on
def test_pre_tokenizer_splits(preset, words):
  assert pre_tokenizer(preset).findall(TEXT) == words

# the tiny chat model's vocabulary: every byte (token i is byte i), two merges, Llama 3's chat tokens
BYTE_CHAR = {b: c for c, b in CHAR_TO_BYTE.items()}
TOKENS = [BYTE_CHAR[b] for b in range(256)] + ["ĊĊ", "hi", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
BOS, EOT = 258, 261

def chat_kv(**kv) -> dict:
  return tiny_metadata("llama", TOKENS) | {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe", "tokenizer.ggml.merges": ["Ċ Ċ", "h i"],
    "tokenizer.ggml.token_type": [1] * 258 + [3] * 4, "tokenizer.ggml.bos_token_id": BOS, "tokenizer.ggml.eos_token_id": EOT} | kv

def test_full_vocabulary_round_trip():
  tok = SimpleTokenizer.from_gguf_kv(chat_kv())
  assert tok.encode("hi\n\nhi<|eot_id|>") == [257, 256, 257, EOT] and tok.is_end(EOT) and not tok.is_end(257)
  text = (TEXT + "<|start_header_id|>x = [1, 2]; # ok?\r\n" + "".join(map(chr, range(1, 600)))) * 10  # 9 KB
  assert tok.decode(tok.encode(text)) == text

def test_chat_templates():
  user = [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}]
  llama = FallbackTemplate(SimpleTokenizer.from_gguf_kv(chat_kv()))
  assert llama.render(user) == ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nbe brief<|eot_id|>"
                                "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
  # Qwen: ChatML, no BOS; <|im_end|> ends a reply although the metadata names no end-of-turn token
  chatml = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
  qwen = SimpleTokenizer.from_gguf_kv(chat_kv(**{"tokenizer.ggml.tokens": TOKENS[:256] + chatml, "tokenizer.ggml.token_type": [1] * 256 + [3] * 3,
    "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.add_bos_token": False, "tokenizer.ggml.bos_token_id": 256, "tokenizer.ggml.eos_token_id": 256}))
  assert FallbackTemplate(qwen).render(user) == "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
  assert qwen.is_end(258) and qwen.is_end(256) and qwen.eot_id == 258
  with pytest.raises(ValueError, match="message 0's content is a int"): llama.render([{"role": "user", "content": 5}])

@pytest.mark.parametrize("change, err, match", [
  ({"tokenizer.ggml.model": "llama"}, NotImplementedError, "tokenizer.ggml.model 'llama' is not supported"),
  ({"tokenizer.ggml.model": None}, ValueError, "no tokenizer.ggml.model"),
  ({"tokenizer.ggml.tokens": None}, ValueError, "tokenizer.ggml.tokens is missing"),
  ({"tokenizer.ggml.merges": None}, ValueError, "tokenizer.ggml.merges is missing"),
  ({"tokenizer.ggml.merges": ["Ċ Ċ", "hi"]}, ValueError, r"tokenizer.ggml.merges\[1\] 'hi' is not two tokens"),
  ({"tokenizer.ggml.pre": "tekken"}, ValueError, "tokenizer.ggml.pre 'tekken' is not supported; supported: llama3"),
  ({"tokenizer.ggml.token_type": [1]}, ValueError, "token_type has 1 entries for 262 tokens"),
  ({"tokenizer.ggml.eos_token_id": 262}, ValueError, "eos_token_id 262 is not a token id"),
  ({"tokenizer.ggml.tokens": ["a b"] + TOKENS[1:]}, ValueError, "token 0 'a b' is not byte-level BPE text: ' ' stands for no byte")])
def test_bad_tokenizer_metadata(change, err, match):
  kv = {k: v for k, v in (chat_kv() | change).items() if v is not None}
  with pytest.raises(err, match=match): SimpleTokenizer.from_gguf_kv(kv)

def test_unknown_bytes_and_ids():
  with pytest.raises(ValueError, match=r"the vocabulary has no token for b'z' \(in b'zz'\)"): hand_tokenizer().encode("zz")
  with pytest.raises(ValueError, match="token id 12 is not in the vocabulary of 14 tokens"): hand_tokenizer().decode([12])

def greedy_reply(model:Transformer, tok:SimpleTokenizer, ids:list[int]) -> list[int]:
  return list(itertools.takewhile(lambda t: not tok.is_end(t), model.generate(list(ids))))

@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
  """the tiny model, with the token its greedy reply to "hi" makes fourth as the end-of-turn token, so that the reply ends"""
  path, W = tmp_path_factory.mktemp("llm") / "chat.gguf", tiny_weights("llama", seed=1, vocab=len(TOKENS))
  write_tiny_gguf(path, "llama", W, kv=chat_kv())
  model, kv = Transformer.from_gguf(path)
  tok = SimpleTokenizer.from_gguf_kv(kv)
  ids = tok.encode(FallbackTemplate(tok).render([{"role": "user", "content": "hi"}]))
  first = greedy_reply(model, tok, ids)
  assert len(first) > 3 and first[3] not in first[:3]
  write_tiny_gguf(path, "llama", W, kv=chat_kv(**{"tokenizer.ggml.eot_token_id": first[3]}))
  tok = SimpleTokenizer.from_gguf_kv(chat_kv(**{"tokenizer.ggml.eot_token_id": first[3]}))
  return path, model, tok, FallbackTemplate(tok)

def test_cli_chat(chat_model):
  """two messages on stdin, then EOF; the second turn's prompt holds the first turn (model.generate reuses the cached part of it), and its
  reply fills the context"""
  path, model, tok, template = chat_model
  msgs = [{"role": "user", "content": "hi"}]
  assert len(reply1 := greedy_reply(model, tok, tok.encode(template.render(msgs)))) == 3
  msgs += [{"role": "assistant", "content": tok.decode(reply1)}, {"role": "user", "content": "how are you"}]
  reply2 = greedy_reply(model, tok, ids2 := tok.encode(template.render(msgs)))
  assert len(ids2) + len(reply2) == CTX
  p = subprocess.run([sys.executable, "-m", "tinygrad.llm", "--model", str(path)], input=b"hi\nhow are you\n", capture_output=True, timeout=120,
                     env={**os.environ, "PYTHONIOENCODING": "utf-8"})
  assert p.returncode == 0, p.stderr.decode()
  head, out = p.stdout.decode().split("\n", 1)
  assert head.startswith('using model "') and out == f">>> {tok.decode(reply1)}\n\n>>> {tok.decode(reply2)}\n\n>>> \n"
  assert f"(the reply stopped at --max_context, {CTX} tokens)" in p.stderr.decode()

def test_cli_bad_model(tmp_path, capsys, monkeypatch):
  p = subprocess.run([sys.executable, "-m", "tinygrad.llm", "--model", str(tmp_path / "nope.gguf")], capture_output=True, timeout=60)
  assert p.returncode == 1 and b"Traceback" not in p.stderr
  assert p.stderr.decode().startswith(f"error: --model '{tmp_path / 'nope.gguf'}' is not a file, nor one of the model names llama3.2:1b")
  (bad := tmp_path / "bad.gguf").write_bytes(b"hello, not a model")
  with pytest.raises(SystemExit, match=f"error: cannot run {bad}: .*magic is b'hell'"): main(["--model", str(bad)])
  write_tiny_gguf(spm := tmp_path / "spm.gguf", "llama", tiny_weights("llama", vocab=len(TOKENS)), kv=chat_kv(**{"tokenizer.ggml.model": "llama"}))
  with pytest.raises(SystemExit, match="tokenizer.ggml.model 'llama' is not supported"): main(["--model", str(spm)])
  def no_network(url, *a, **k): raise RuntimeError(f"fetch {url}: [Errno -3] Temporary failure in name resolution")
  monkeypatch.setattr("tinygrad.llm.cli.fetch", no_network)
  with pytest.raises(SystemExit, match=r"could not download qwen3:0.6b \(fetch https://huggingface.co/.*resolution\); pass the path .*--model PATH"):
    main(["-m", "qwen3:0.6b"])

def test_cli_benchmark(chat_model, capsys):
  main(["--model", str(chat_model[0]), "--warmup", "--benchmark", "3"])
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith("using model") and len(lines) == 4 and all(" tok/s, " in line for line in lines[1:])

def post(url:str, body) -> tuple[int, dict|str]:
  req = urllib.request.Request(url + "/v1/chat/completions", body if isinstance(body, bytes) else json.dumps(body).encode(), method="POST")
  try:
    with urllib.request.urlopen(req, timeout=60) as r: return r.status, r.read().decode()
  except urllib.error.HTTPError as e: return e.code, json.loads(e.read())

@pytest.fixture(scope="module")
def server_url(chat_model):
  _, model, tok, template = chat_model
  server = LLMServer(("127.0.0.1", 0), model, "tiny", tok, template)  # port 0: any free port
  threading.Thread(target=server.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{server.server_address[1]}"
  server.shutdown()
  server.server_close()

def test_server(chat_model, server_url):
  _, model, tok, template = chat_model
  msgs = [{"role": "user", "content": "hi"}]
  reply = greedy_reply(model, tok, ids := tok.encode(template.render(msgs)))
  with urllib.request.urlopen(server_url + "/v1/models") as r: assert json.loads(r.read())["data"][0]["id"] == "tiny"
  status, body = post(server_url, {"model": "tiny", "messages": msgs})
  out = json.loads(body)
  assert status == 200 and out["choices"][0]["message"] == {"role": "assistant", "content": tok.decode(reply)}
  assert out["choices"][0]["finish_reason"] == "stop" and out["usage"] == {"prompt_tokens": len(ids), "completion_tokens": len(reply),
                                                                         "total_tokens": len(ids) + len(reply)}
  status, body = post(server_url, {"messages": msgs, "stream": True, "max_tokens": 2, "stream_options": {"include_usage": True}})
  events = [json.loads(line[6:]) for line in body.split("\n\n") if line.startswith("data: {")]
  assert status == 200 and body.endswith("data: [DONE]\n\n") and events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
  assert "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]) == tok.decode(reply[:2])
  assert events[-2]["choices"][0]["finish_reason"] == "length" and events[-1]["usage"]["completion_tokens"] == 2
  status, body = post(server_url, {"messages": msgs, "temperature": 1.5, "max_tokens": 3})
  assert status == 200 and json.loads(body)["usage"]["completion_tokens"] <= 3

@pytest.mark.parametrize("body, match", [
  (b"{not json", "the request body is not JSON"),
  ([1, 2], "the request body must be a JSON object"),
  ({"model": "tiny"}, "messages must be a non-empty list"),
  ({"messages": []}, "messages must be a non-empty list"),
  ({"messages": ["hi"]}, "messages: message 0 is not an object with a string role"),
  ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens must be a positive integer, not 0"),
  ({"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}, "temperature must be a number >= 0, not \"hot\""),
  ({"messages": [{"role": "user", "content": "hi"}], "stream": 1}, "stream must be bool, not 1"),
  ({"messages": [{"role": "user", "content": "a" * CTX}]}, "the prompt is 85 tokens, the model's context is 64")])
def test_server_bad_requests(server_url, body, match):
  status, err = post(server_url, body)
  assert status == 400 and match in err["error"]["message"] and err["error"]["type"] == "invalid_request_error"

def test_server_unknown_path(server_url):
  with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(urllib.request.Request(server_url + "/v1/embeddings", b"{}", method="POST"))
  assert e.value.code == 404 and "no POST /v1/embeddings" in json.loads(e.value.read())["error"]["message"]

def test_server_refuses_a_huge_body_unread(server_url):
  # a Content-Length of 1 TB is answered at once (nothing allocated, nothing waited for)
  import socket
  host, port = server_url[len("http://"):].split(":")
  with socket.create_connection((host, int(port)), timeout=30) as s:
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{")
    chunks = []
    while chunk := s.recv(65536): chunks.append(chunk)  # headers and body may come in separate segments; the server then closes
    reply = b"".join(chunks).decode()
  assert reply.startswith("HTTP/1.0 400") or reply.startswith("HTTP/1.1 400")
  assert "more than the 16777216 this server reads" in reply
