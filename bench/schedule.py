"""Scheduling time per 1,000 tensor-graph nodes at 1k, 10k and 100k nodes: the tensor graph -> kernel ASTs passes (unbind, realize
points, index rules) must scale linearly. Three graph shapes, each built with Tensor ops and scheduled (not compiled, not run):
  chain:    one elementwise chain (x*a + b, repeated): one kernel holding every node
  movement: permute/reshape pairs between elementwise ops: index math that keeps growing
  mlp:      relu(h @ W + b) layers of width 16: one kernel per layer, each reading the last one's buffer
  train:    a pre-norm residual network's loss and every weight's gradient, at 2, 4, 8 and 16 layers (h + gelu(layernorm(h) @ W1) @ W2
            per layer, 128 tokens x 256 wide): the backward's gradient flows through the residual stream as one chain of adds, and the
            scheduler's rounds realize a few more nodes each (layernorms' statistics, the stream's gradient)
Nodes are counted with toposort of the scheduled graph. Prints one JSON line per figure, then a table.
Usage: python bench/schedule.py [largest size, default 100000]"""
import json, sys, time, gc
import numpy as np
from tinygrad import Tensor
from tinygrad.uop.ops import UOp
from tinygrad.schedule.rangeify import create_schedule

def chain(k:int) -> Tensor:
  y = Tensor(np.ones(16, np.float32))
  for i in range(k): y = y * 1.0001 + float(i % 7)
  return y

def movement(k:int) -> Tensor:
  y = Tensor(np.ones((4, 6), np.float32))
  for i in range(k): y = (y.permute(1, 0).reshape(4, 6) + 1.0)
  return y

def mlp(k:int) -> Tensor:
  rng = np.random.default_rng(0)
  w, b = Tensor(rng.standard_normal((16, 16)).astype(np.float32)), Tensor(rng.standard_normal(16).astype(np.float32))
  h = Tensor(rng.standard_normal((4, 16)).astype(np.float32))
  for _ in range(k): h = (h @ w + b).relu()
  return h

def train(layers:int) -> list[Tensor]:
  rng = np.random.default_rng(0)
  def w(*shape): return Tensor(rng.standard_normal(shape).astype(np.float32) * 0.05, requires_grad=True)
  ws = [(w(256, 1024), w(1024, 256)) for _ in range(layers)]
  h = Tensor(rng.standard_normal((128, 256)).astype(np.float32))
  for w1, w2 in ws: h = h + (h.layernorm() @ w1).gelu() @ w2
  loss = h.layernorm().square().mean()
  return [loss, *loss.gradient(*[x for pair in ws for x in pair])]

def nodes(t:Tensor) -> int: return len(t.uop.toposort())

def sized(make, target:int) -> Tensor:
  """the graph of `make` with about `target` nodes (node count is linear in k: measure at k=100 and scale)"""
  k = max(1, round(target * 100 / nodes(make(100))))
  return make(k)

def schedule_ms(*ts:Tensor) -> float:
  gc.collect()
  st = time.perf_counter()
  items, _ = create_schedule([t.uop for t in ts])
  return (time.perf_counter() - st) * 1e3

if __name__ == "__main__":
  top = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
  sizes = [s for s in (1_000, 10_000, 100_000) if s <= top]
  rows = []
  for name, make in (("chain", chain), ("movement", movement), ("mlp", mlp)):
    for size in sizes:
      t = sized(make, size)
      n = nodes(t)
      ms = min(schedule_ms(sized(make, size)) for _ in range(3 if size < 100_000 else 1))  # a fresh graph each round: no caches
      rows.append((name, n, ms))
      print(json.dumps({"bench": "schedule", "graph": name, "nodes": n, "schedule_ms": round(ms, 1), "ms_per_1k_nodes": round(ms / n * 1e3, 2)}),
            flush=True)
  for layers in (2, 4, 8, 16):
    n = len(UOp.sink(*[t.uop for t in train(layers)]).toposort())
    ms = min(schedule_ms(*train(layers)) for _ in range(2))
    rows.append(("train", n, ms))
    print(json.dumps({"bench": "schedule", "graph": "train", "layers": layers, "nodes": n, "schedule_ms": round(ms, 1),
                      "ms_per_1k_nodes": round(ms / n * 1e3, 2)}), flush=True)
  print(f"\n{'graph':>9} | {'nodes':>8} | {'ms':>9} | {'ms per 1k nodes':>15}\n{'-'*9}-|-{'-'*8}-|-{'-'*9}-|-{'-'*15}")
  for name, n, ms in rows: print(f"{name:>9} | {n:>8,} | {ms:9.1f} | {ms / n * 1e3:15.2f}")
  for name in ("chain", "movement", "mlp", "train"):
    per = [ms / n for g, n, ms in rows if g == name]
    print(f"{name}: per-node time at the largest / smallest size: {per[-1] / per[0]:.2f}x")
