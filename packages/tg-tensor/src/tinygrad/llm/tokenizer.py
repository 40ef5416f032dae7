"""The byte-level BPE tokenizer of a GGUF file (tokenizer.ggml.model "gpt2": Llama 3, Qwen 2/3), exported by tinygrad.llm.cli as
SimpleTokenizer, tinygrad 0.14's name. Text is cut at special tokens first; each piece between them is split into words by the model's
pre-tokenizer regex, and each word's UTF-8 bytes are joined pair by pair, the lowest-ranked merge first. Normal token strings hold bytes
in GPT-2's byte-to-character mapping; special tokens (control, user-defined) are plain text."""
from __future__ import annotations
import codecs, functools, itertools, re, sys, unicodedata
from typing import Callable

def _char_to_byte() -> dict[str, int]:
  # GPT-2's mapping: printable latin-1 bytes stand for themselves, the rest (controls, space, 0x7f-0xa0, 0xad) are chr(256+i) in order
  printable = [*range(ord("!"), ord("~")+1), *range(0xa1, 0xad), *range(0xae, 0x100)]
  rest = [b for b in range(256) if b not in printable]
  return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(rest)}
CHAR_TO_BYTE = _char_to_byte()

@functools.cache
def unicode_classes() -> dict[str, str]:
  """re character-class bodies (ranges, no brackets) for llama.cpp's \\p{L} (letters), \\p{N} (numbers) and \\s (category Z, \\t..\\r and
  U+0085): Python's re has no \\p{..}, so they come from unicodedata once per process. No L, N or Z code point lies past U+323AF"""
  def kind(cp:int) -> str:
    cat = unicodedata.category(chr(cp))[0]
    return "s" if cat == "Z" or 9 <= cp <= 13 or cp == 0x85 else cat
  classes: dict[str, list[str]] = {"L": [], "N": [], "s": []}
  for k, run in itertools.groupby(range(0x323b0), kind):
    if k in classes:
      first = last = next(run)
      for last in run: pass
      classes[k].append(f"\\U{first:08x}" + (f"-\\U{last:08x}" if last != first else ""))
  return {k: "".join(v) for k, v in classes.items()}

# llama.cpp's pre-tokenizer regexes, with {L}, {N}, {s} standing for the classes above ([^{s}] is \S)
_CONTRACTIONS = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]"
_LLAMA3 = _CONTRACTIONS + r"|[^\r\n{L}{N}]?[{L}]+|[{N}]{{1,3}}| ?[^{s}{L}{N}]+[\r\n]*|[{s}]*[\r\n]+|[{s}]+(?![^{s}])|[{s}]+"
_QWEN2 = _CONTRACTIONS + r"|[^\r\n{L}{N}]?[{L}]+|[{N}]| ?[^{s}{L}{N}]+[\r\n]*|[{s}]*[\r\n]+|[{s}]+(?![^{s}])|[{s}]+"  # one digit a word
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{s}{L}{N}]+|[{s}]+(?![^{s}])|[{s}]+"
# tokenizer.ggml.pre -> (regex, ignore_merges: a word that is a whole token is that token, as Llama 3's tokenizer.json says)
PRE_TOKENIZERS = {"llama3": (_LLAMA3, True), "llama-v3": (_LLAMA3, True), "llama-bpe": (_LLAMA3, True), "smaug-bpe": (_LLAMA3, True),
                  "qwen2": (_QWEN2, False), "deepseek-r1-qwen": (_QWEN2, False), "default": (_GPT2, False), "gpt-2": (_GPT2, False)}

@functools.cache
def pre_tokenizer(preset:str) -> re.Pattern:
  if preset not in PRE_TOKENIZERS: raise ValueError(f"tokenizer.ggml.pre {preset!r} is not supported; supported: {', '.join(PRE_TOKENIZERS)}")
  return re.compile(PRE_TOKENIZERS[preset][0].format(**unicode_classes()))

def _token_bytes(tok:str, where:str) -> bytes:
  try: return bytes(map(CHAR_TO_BYTE.__getitem__, tok))
  except KeyError as e: raise ValueError(f"{where} {tok!r} is not byte-level BPE text: {e.args[0]!r} stands for no byte") from None

NO_MERGE = sys.maxsize

class SimpleTokenizer:
  """normal_tokens and special_tokens map token strings to ids; merges are "a b" pairs of normal token strings, highest priority first
  (without them a pair's rank is the id of the token it makes, right for vocabularies numbered in merge order)"""
  def __init__(self, normal_tokens:dict[str, int], special_tokens:dict[str, int], preset:str="llama3", bos_id:int|None=None,
               eos_id:int|None=None, eot_id:int|None=None, merges:list[str]|None=None):
    self.preset, self.bos_id, self.eos_id, self.eot_id = preset, bos_id, eos_id, eot_id
    self._split_words, self._ignore_merges = pre_tokenizer(preset), PRE_TOKENIZERS[preset][1]
    self._normal = {_token_bytes(tok, f"token {tid}"): tid for tok, tid in normal_tokens.items()}
    self.special_tokens = dict(special_tokens)
    self._bytes = {tid: tok for tok, tid in self._normal.items()} | {tid: tok.encode() for tok, tid in self.special_tokens.items()}
    self._merge_rank: dict[tuple[bytes, bytes], int] | None = None
    if merges is not None:
      self._merge_rank = {}
      for i, m in enumerate(merges):
        a, _, b = m.partition(" ")
        if not a or not b or " " in b: raise ValueError(f"tokenizer.ggml.merges[{i}] {m!r} is not two tokens separated by one space")
        self._merge_rank.setdefault((_token_bytes(a, f"tokenizer.ggml.merges[{i}]"), _token_bytes(b, f"tokenizer.ggml.merges[{i}]")), i)
    # the longest special token first: one may begin another
    specials = sorted(self.special_tokens, key=len, reverse=True)
    self._split_special = re.compile("(" + "|".join(map(re.escape, specials)) + ")" if specials else "(?!)")

  @staticmethod
  def from_gguf_kv(kv:dict) -> SimpleTokenizer:
    if (model := kv.get("tokenizer.ggml.model")) != "gpt2":
      if model is None: raise ValueError("the GGUF metadata has no tokenizer.ggml.model: it holds no tokenizer")
      raise NotImplementedError(f"tokenizer.ggml.model {model!r} is not supported: SimpleTokenizer reads byte-level BPE ('gpt2', the "
                                "tokenizer of Llama 3 and Qwen), not SentencePiece ('llama') or others")
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
      if not isinstance(kv.get(key), list) or not all(isinstance(t, str) for t in kv[key]):
        raise ValueError(f"the GGUF metadata's {key} is {'missing' if key not in kv else 'not a list of strings'}")
    tokens = kv["tokenizer.ggml.tokens"]
    types = kv.get("tokenizer.ggml.token_type", [1] * len(tokens))  # 1 normal; 3 control, 4 user-defined, ... are plain text
    if len(types) != len(tokens): raise ValueError(f"tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} tokens")
    normal, special = {}, {}
    for tid, (tok, ttype) in enumerate(zip(tokens, types)): (normal if ttype == 1 else special).setdefault(tok, tid)
    ids = {}
    for name in ("bos", "eos", "eot"):
      if (tid := kv.get(f"tokenizer.ggml.{name}_token_id")) is not None and not 0 <= tid < len(tokens):
        raise ValueError(f"tokenizer.ggml.{name}_token_id {tid} is not a token id (the vocabulary has {len(tokens)})")
      ids[name] = tid
    # older conversions name no end-of-turn token: the chat formats' own one ends a reply too
    eot = ids["eot"] if ids["eot"] is not None else special.get("<|eot_id|>", special.get("<|im_end|>"))
    return SimpleTokenizer(normal, special, kv.get("tokenizer.ggml.pre", "default"),
                           bos_id=ids["bos"] if kv.get("tokenizer.ggml.add_bos_token", True) else None, eos_id=ids["eos"], eot_id=eot,
                           merges=kv["tokenizer.ggml.merges"])

  def _rank(self, a:bytes, b:bytes) -> int:
    if self._merge_rank is None: return self._normal.get(a + b, NO_MERGE)
    return self._merge_rank.get((a, b), NO_MERGE)

  def _encode_word(self, word:bytes) -> list[int]:
    if self._ignore_merges and (tid := self._normal.get(word)) is not None: return [tid]
    parts = [word[i:i+1] for i in range(len(word))]
    ranks = [self._rank(a, b) for a, b in zip(parts, parts[1:])]  # ranks[i]: the pair parts[i], parts[i+1]
    while ranks and (best := min(ranks)) != NO_MERGE:
      i = ranks.index(best)  # the leftmost of the best pairs
      parts[i:i+2] = [parts[i] + parts[i+1]]
      del ranks[i]
      if i > 0: ranks[i-1] = self._rank(parts[i-1], parts[i])
      if i < len(ranks): ranks[i] = self._rank(parts[i], parts[i+1])
    if missing := [p for p in parts if p not in self._normal]: raise ValueError(f"the vocabulary has no token for {missing[0]!r} (in {word!r})")
    return [self._normal[p] for p in parts]

  def encode(self, text:str) -> list[int]:
    ids: list[int] = []
    for i, piece in enumerate(self._split_special.split(text)):  # odd pieces are the special tokens
      if i % 2: ids.append(self.special_tokens[piece])
      else: ids.extend(tid for word in self._split_words.findall(piece) for tid in self._encode_word(word.encode()))
    return ids

  def token_bytes(self, tid:int) -> bytes:
    if (b := self._bytes.get(tid)) is None: raise ValueError(f"token id {tid} is not in the vocabulary of {len(self._bytes)} tokens")
    return b
  def decode(self, ids:list[int]) -> str: return b"".join(map(self.token_bytes, ids)).decode(errors="replace")
  def stream_decoder(self) -> Callable[..., str]:
    """a function of one token id at a time -> the text it completes (a character split across tokens comes out whole with its last
    byte); called with no id, it ends the stream, returning U+FFFD for a character left unfinished"""
    dec = codecs.getincrementaldecoder("utf-8")("replace")
    def decode(tid:int|None=None) -> str: return dec.decode(b"", final=True) if tid is None else dec.decode(self.token_bytes(tid))
    return decode
  def is_end(self, token_id:int) -> bool: return token_id in (self.eos_id, self.eot_id)
