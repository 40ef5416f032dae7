"""TfIdfVectorizer over integer tokens: counts how often each n-gram of the pool occurs in each row of X, for every n-gram length from
min to max and every skip (gap between the n-gram's items) from 0 to max_skip_count, then weights the counts (TF, IDF, TFIDF).
Each (length, skip) pair compares all windows of the row with all pool n-grams of that length at once."""
from __future__ import annotations
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op

_MODES = ("TF", "IDF", "TFIDF")

def _pool_by_length(pool:list[int], starts:list[int]) -> dict[int, list[list[int]]]:
  """ngram_counts (the pool offset where each length's n-grams begin) -> {n: [n-gram, ...]} in pool order"""
  out = {}
  for i, begin in enumerate(starts):
    n, end = i + 1, starts[i + 1] if i + 1 < len(starts) else len(pool)
    if end < begin or (end - begin) % n: raise ValueError(f"TfIdfVectorizer ngram_counts {starts}: the {n}-grams span pool[{begin}:{end}], "
                                                          f"not a whole number of {n}-grams")
    if end > begin: out[n] = [pool[j:j + n] for j in range(begin, end, n)]
  return out

def _counts(rows:Tensor, grams:list[list[int]], n:int, max_skip:int) -> Tensor:
  """(B, L) tokens -> (B, len(grams)) occurrences of each n-gram, summed over skips 0..max_skip (a 1-gram counts once)"""
  b, length = rows.shape
  pool = Tensor(grams, dtype=dtypes.int64, device=rows.device).reshape(1, 1, len(grams), n)
  total = Tensor.zeros(b, len(grams), dtype=dtypes.int32, device=rows.device)
  for skip in range(max_skip + 1 if n > 1 else 1):
    step = skip + 1
    windows = length - (n - 1) * step
    if windows <= 0: break
    items = Tensor.stack(*[rows[:, j * step:j * step + windows] for j in range(n)], dim=-1)  # (B, windows, n)
    hit = (items.unsqueeze(2) == pool).all(-1)  # (B, windows, grams)
    total = total + hit.cast(dtypes.int32).sum(1)
  return total

@op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(x, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes, pool_int64s=None,
                     pool_strings=None, weights=None):
  if pool_strings is not None: raise TypeError("TfIdfVectorizer with pool_strings needs string tensors, which tinygrad does not have")
  if pool_int64s is None: raise ValueError("TfIdfVectorizer needs pool_int64s")
  if mode not in _MODES: raise ValueError(f"TfIdfVectorizer mode must be one of {_MODES}, not {mode!r}")
  if not 1 <= min_gram_length <= max_gram_length or max_skip_count < 0:
    raise ValueError(f"TfIdfVectorizer needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0, got {min_gram_length}, "
                     f"{max_gram_length}, {max_skip_count}")
  if x.ndim not in (1, 2) or not dtypes.is_int(x.dtype): raise TypeError(f"TfIdfVectorizer needs 1-D or 2-D integer X, got {x.shape} {x.dtype}")
  by_length = _pool_by_length(list(pool_int64s), list(ngram_counts))
  n_grams = sum(len(g) for g in by_length.values())
  if n_grams == 0: raise ValueError("TfIdfVectorizer pool holds no n-grams")
  if len(ngram_indexes) != n_grams or (weights is not None and len(weights) != n_grams) or min(ngram_indexes, default=0) < 0:
    raise ValueError(f"TfIdfVectorizer pool holds {n_grams} n-grams: ngram_indexes ({len(ngram_indexes)}) and weights "
                     f"({'none' if weights is None else len(weights)}) must list one non-negative entry each")
  rows = (x if x.ndim == 2 else x.reshape(1, -1)).cast(dtypes.int64)
  parts = [_counts(rows, g, n, max_skip_count) if min_gram_length <= n <= max_gram_length else
           Tensor.zeros(rows.shape[0], len(g), dtype=dtypes.int32, device=x.device) for n, g in by_length.items()]
  counts = Tensor.cat(*parts, dim=1).cast(dtypes.float32)
  if mode == "IDF": counts = counts.minimum(1)
  if mode != "TF" and weights is not None: counts = counts * Tensor(list(weights), dtype=dtypes.float32, device=x.device)
  width = max(ngram_indexes) + 1
  # pool n-gram i lands in column ngram_indexes[i]: a (pool, width) one-hot matrix
  column = Tensor(list(ngram_indexes), dtype=dtypes.int32, device=x.device).reshape(-1, 1) == Tensor.arange(width, device=x.device).reshape(1, -1)
  y = counts @ column.cast(dtypes.float32)
  return y if x.ndim == 2 else y.reshape(width)
