"""python -m tinygrad.onnx model.onnx [--input name=file.npy ...] [--benchmark N] [--dynamic dim=max ...]
Prints the model's inputs, outputs and op counts, runs it once on the given .npy inputs (random ones otherwise) and prints each
output's shape and a few values; --benchmark N times N further runs under TinyJit."""
from __future__ import annotations
import argparse, collections, sys, time
from tinygrad.onnx import OnnxRunner
from tinygrad.onnx.model import ValueType

def _describe(name:str, vt:ValueType|None) -> str:
  if vt is None: return f"  {name}: (no type)"
  if vt.kind != "tensor": return f"  {name}: {vt.kind} of {_describe('', vt.inner).strip(': ')}"
  shape = "?" if vt.shape is None else "(" + ", ".join("?" if s is None else str(s) for s in vt.shape) + ")"
  return f"  {name}: {vt.elem.name if vt.elem else '?'} {shape}"

def _random_input(name:str, vt:ValueType|None, default_dim:int):
  import numpy as np
  if vt is None or vt.kind != "tensor" or vt.shape is None: raise SystemExit(f"input {name!r} has no tensor shape in the model: pass it with --input")
  shape = [s if isinstance(s, int) else default_dim for s in vt.shape]
  dt = vt.elem.dtype
  rng = np.random.default_rng(0)
  if dt.name.startswith("float") or dt.name in ("half", "double", "bfloat16"):
    return rng.standard_normal(shape).astype(np.float32).astype(dt.fmt or "f")
  if dt.name == "bool": return rng.integers(0, 2, shape).astype(bool)
  return rng.integers(0, 10, shape).astype(dt.fmt)

def main(argv:list[str]|None=None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinygrad.onnx", description=__doc__.splitlines()[1])
  ap.add_argument("model")
  ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input from a .npy file (repeatable)")
  ap.add_argument("--dim", type=int, default=1, help="size for named (symbolic) dimensions of random inputs (default 1)")
  ap.add_argument("--dynamic", action="append", default=[], metavar="DIM=MAX", help="make a named dimension a Variable up to MAX")
  ap.add_argument("--benchmark", type=int, default=0, metavar="N", help="time N runs under TinyJit after a warm-up")
  ap.add_argument("--device", default=None)
  args = ap.parse_args(argv)
  runner = OnnxRunner(args.model, device=args.device, dynamic={d.split("=")[0]: int(d.split("=")[1]) for d in args.dynamic})
  g, m = runner.graph, runner.model
  print(f"{args.model}: ir_version {m.ir_version}, producer {m.producer or '?'}, opsets " +
        ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in m.opsets.items()))
  print(f"inputs ({len(g.inputs)}):", *[_describe(n, vt) for n, vt in g.inputs.items()], sep="\n")
  print(f"outputs ({len(g.outputs)}):", *[_describe(n, vt) for n, vt in g.outputs.items()], sep="\n")
  counts = collections.Counter((n.domain + "." if n.domain else "") + n.op for n in g.nodes)
  print(f"{len(g.nodes)} nodes, {len(g.initializers)} initializers:", ", ".join(f"{op} {c}" for op, c in counts.most_common()))
  import numpy as np
  given = {}
  for spec in args.input:
    name, _, path = spec.partition("=")
    given[name] = np.load(path)
  feeds = {n: given[n] if n in given else _random_input(n, vt, args.dim) for n, vt in g.inputs.items()}
  if unknown := set(given) - set(g.inputs): raise SystemExit(f"--input names {sorted(unknown)} are not model inputs {list(g.inputs)}")
  outs = runner(feeds)
  for name, v in outs.items():
    if isinstance(v, list): print(f"  {name}: sequence of {len(v)}"); continue
    a = v.numpy()
    print(f"  {name}: {a.dtype} {a.shape} {np.array2string(a.ravel()[:6], precision=4)}{' ...' if a.size > 6 else ''}")
  if args.benchmark:
    run = runner.jit()
    for _ in range(3): [o.realize() for o in run(feeds).values()]  # run, capture, first replay
    times = []
    for _ in range(args.benchmark):
      t0 = time.perf_counter()
      outs = run(feeds)
      for o in outs.values(): o.numpy()  # waits for the device
      times.append(time.perf_counter() - t0)
    times.sort()
    print(f"benchmark: {args.benchmark} runs under TinyJit, median {times[len(times)//2]*1e3:.2f} ms, min {times[0]*1e3:.2f} ms")
  return 0

if __name__ == "__main__": sys.exit(main())
