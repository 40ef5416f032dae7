"""Python lowering time (kernel AST -> rendered source, `get_program`) over the kernels of a few real programs: the main job's training
step (examples/train_digits.py), a matmul 512, a conv2d 3x3 forward+backward, a softmax and a sum. The kernel ASTs are collected by
running the programs once; then each AST is lowered again with every in-process memo cleared first (the per-AST program memo, the
optimizer's simplify cache, and the analyses kept on the nodes themselves), so every run pays what a new program pays. The llvmlite
compile is not part of it.
Prints the total, a per-pass split (the stages of rewrite_to_program, linearize, render) and one JSON line.
Usage: python bench/lowering.py [runs, default 3] [--sha FILE: write one sha256 of each rendered source per line]
  [--profile N: cProfile one run, the N functions with the most own time] [--only NAME: one program] [--no-split]
  [--save FILE / --load FILE: the collected corpus to / from a file, so every tree lowers the same ASTs and a run skips the programs]
  [--limit K: the first K kernels] [--stride N: every Nth kernel]
Instruction counts (callgrind): the difference of `--load F 2` and `--load F 1` is one cold run of the corpus, without start-up.
  valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/lowering.py 1 --load F --stride 8 --no-split"""
import argparse, cProfile, functools, gc, hashlib, json, os, pickle, pstats, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import numpy as np
from tinygrad import Tensor, Device, nn
import tinygrad.codegen as codegen
from tinygrad.codegen import lowering, get_program
from tinygrad.codegen.opt import kernel as opt_kernel
from tinygrad.uop.ops import UOpMetaClass

# *** the programs whose kernels make the corpus ***

def digits_step():
  from train_digits import Model, make_train_step
  Tensor.manual_seed(0)
  rng = np.random.default_rng(0)
  X, Y = Tensor(rng.random((1437, 1, 8, 8), dtype=np.float32)), Tensor(rng.integers(0, 10, 1437, dtype=np.int32))
  model = Model()
  step = make_train_step(model, nn.optim.Adam(model.parameters(), lr=1e-2), X, Y, 128)
  for _ in range(2): step().item()  # the first call runs the step eagerly, the second captures it

def matmul():
  a, b = Tensor.rand(512, 512), Tensor.rand(512, 512)
  (a @ b).realize()

def conv2d():
  x, w = Tensor.rand(4, 8, 16, 16, requires_grad=True), Tensor.rand(16, 8, 3, 3, requires_grad=True)
  x.conv2d(w, padding=1).relu().sum().backward()
  Tensor.realize(x.grad, w.grad)

def softmax(): Tensor.rand(256, 1000).softmax(-1).realize()
def total(): Tensor.rand(4096, 1024).sum().realize()

PROGRAMS = {"digits_step": digits_step, "matmul": matmul, "conv2d": conv2d, "softmax": softmax, "sum": total}

def collect(names:list[str]) -> tuple[bytes, list[str], object]:
  """the pickled (program, AST) pairs the programs lowered, in order, and the renderer they were lowered for"""
  seen: dict = {}
  plain = codegen._get_program_memo
  def recording(ast, renderer, *switches):
    seen.setdefault((ast, renderer), None)
    return plain(ast, renderer, *switches)
  codegen._get_program_memo = recording
  tags = []
  try:
    for name in names:
      before = len(seen)
      PROGRAMS[name]()
      tags += [name] * (len(seen) - before)
  finally: codegen._get_program_memo = plain
  renderers = {r for _, r in seen}
  if len(renderers) != 1: raise RuntimeError(f"expected one renderer, got {renderers}")
  return pickle.dumps([a for a, _ in seen]), tags, renderers.pop()

# *** a cold start for every run ***

_FIELDS = {"op", "dtype", "src", "arg", "tag", "_device_buffer"}
def forget_memos():
  """drop what a previous lowering left behind: the memo caches, and every analysis kept on a live node"""
  codegen._get_program_memo.cache_clear()
  opt_kernel.simplified.cache_clear()
  gc.collect()
  for wr in list(UOpMetaClass.ucache.values()):
    if (u := wr()) is not None and len(u.__dict__) > 5:
      for k in [k for k in u.__dict__ if k not in _FIELDS]: del u.__dict__[k]

# *** per-pass split: the stages rewrite_to_program and get_program call, timed where they are looked up ***

class Split:
  def __init__(self): self.t: dict[str, float] = {}
  def wrap(self, mod, attr:str, label=None):
    fn = getattr(mod, attr)
    @functools.wraps(fn)
    def timed(*a, **kw):
      st = time.perf_counter()
      try: return fn(*a, **kw)
      finally:
        key = label(*a, **kw) if label else attr
        self.t[key] = self.t.get(key, 0.0) + time.perf_counter() - st
    setattr(mod, attr, timed)
    return fn
  def install(self):
    from tinygrad.codegen import transcendental, onehot_gather, valid_index
    self.undo = [(lowering, a, self.wrap(lowering, a)) for a in ("optimize", "expand", "lower_groups", "add_gpudims", "add_threads",
                 "lower_reduces", "accumulate_in_wmma", "lower_weak", "stage_rows", "mark_nonpositive_exp",
                 "whole_vector_tile")]
    self.undo.append((lowering, "graph_rewrite", self.wrap(lowering, "graph_rewrite", lambda *a, name=None, **kw: f"rewrite {name}")))
    self.undo.append((onehot_gather, "collapse_onehot_reduces", self.wrap(onehot_gather, "collapse_onehot_reduces")))
    self.undo.append((transcendental, "lower_transcendental", self.wrap(transcendental, "lower_transcendental")))
    self.undo.append((valid_index, "fold_valid_indices", self.wrap(valid_index, "fold_valid_indices")))
    self.undo += [(codegen, a, self.wrap(codegen, a)) for a in ("linearize", "strip_after", "rewrite_to_program")]
  def uninstall(self):
    for mod, attr, fn in self.undo: setattr(mod, attr, fn)

def timed_render(split:Split, renderer):
  """the renderer's render timed too: on the instance, removed again after"""
  split.wrap(renderer, "render")
  return lambda: delattr(renderer, "render")

def lower_all(blob:bytes, renderer) -> tuple[float, float, list[str]]:
  asts = pickle.loads(blob)
  forget_memos()
  for a in asts: a.toposort()  # unpickling is not lowering: the nodes exist before the clock starts
  st, cpu = time.perf_counter(), time.process_time()
  srcs = [get_program(a, renderer).src for a in asts]
  return time.perf_counter() - st, time.process_time() - cpu, srcs

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("runs", nargs="?", type=int, default=3)
  ap.add_argument("--sha")
  ap.add_argument("--profile", type=int, default=0)
  ap.add_argument("--only")
  ap.add_argument("--save")
  ap.add_argument("--load")
  ap.add_argument("--limit", type=int)
  ap.add_argument("--stride", type=int, default=1)
  ap.add_argument("--no-split", action="store_true")
  args = ap.parse_args()
  names = [args.only] if args.only else list(PROGRAMS)
  if args.load:
    with open(args.load, "rb") as f: blob, tags = pickle.load(f)
    renderer = Device[Device.DEFAULT].renderer
  else: blob, tags, renderer = collect(names)
  if args.save:
    with open(args.save, "wb") as f: pickle.dump((blob, tags), f)
  keep = [i for i, t in enumerate(tags) if args.only in (None, t)][:args.limit:args.stride]
  if len(keep) < len(tags):
    asts = pickle.loads(blob)
    blob, tags = pickle.dumps([asts[i] for i in keep]), [tags[i] for i in keep]
    del asts
  names = list(dict.fromkeys(tags))
  print(f"{len(tags)} kernels on {Device.DEFAULT} ({type(renderer).__name__}): " + ", ".join(f"{n} {tags.count(n)}" for n in names))
  times, cpus, srcs = [], [], []
  for _ in range(args.runs):
    t, c, srcs = lower_all(blob, renderer)
    times.append(t)
    cpus.append(c)
  print("runs (s): " + " ".join(f"{t:.3f}" for t in times) + f"   best {min(times):.3f}  = {min(times)/len(tags)*1e3:.1f} ms per kernel;"
        f"  process cpu time best {min(cpus):.3f}")
  if not args.no_split:
    split = Split()
    split.install()
    undo_render = timed_render(split, renderer)
    try: whole = lower_all(blob, renderer)[0]
    finally:
      split.uninstall()
      undo_render()
    split.t.pop("rewrite_to_program")
    print(f"{'pass':32s} {'s':>7} {'%':>5}   (one run of {whole:.3f} s, timers included)")
    for k, v in sorted(split.t.items(), key=lambda kv: -kv[1]): print(f"{k:32s} {v:7.3f} {v/whole*100:5.1f}")
  if args.profile:
    prof = cProfile.Profile()
    asts = pickle.loads(blob)
    forget_memos()
    prof.enable()
    for a in asts: get_program(a, renderer)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
  shas = [hashlib.sha256(s.encode()).hexdigest() for s in srcs]
  if args.sha:
    with open(args.sha, "w") as f: f.write("".join(f"{t} {h}\n" for t, h in zip(tags, shas)))
  print(json.dumps({"bench": "lowering", "kernels": len(tags), "best_s": round(min(times), 4), "runs_s": [round(t, 4) for t in times],
                    "best_cpu_s": round(min(cpus), 4), "corpus_sha256": hashlib.sha256("".join(shas).encode()).hexdigest()}))

if __name__ == "__main__": main()
