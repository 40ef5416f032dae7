"""Cold start of source trees in alternating new processes (PYTHONPATH at each tree's packages/*/src, compile cache off, bytecode written
once before timing): wall and the child's CPU time (user+sys), which waiting for a core does not count (a busy machine).
Usage: python bench/cold_start_ab.py TREE [TREE...]   (ROUNDS=8)"""
import os, subprocess, sys, time, glob, resource
STMT = "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())"
def pp(tree): return ":".join(sorted(glob.glob(f"{tree}/packages/*/src")))
def run(tree):
  env = {**os.environ, "CACHELEVEL":"0","CCACHE":"0","DISABLE_COMPILER_CACHE":"1","PYTHONPATH":pp(tree)}
  env.pop("PYTHONDONTWRITEBYTECODE", None)
  r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
  st=time.perf_counter(); o=subprocess.run([sys.executable,"-c",STMT],capture_output=True,text=True,env=env,cwd="/"); et=time.perf_counter()-st
  r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
  assert o.stdout.strip()=="12", o.stderr[-2000:]
  return et, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
trees = sys.argv[1:]
res = {t:[] for t in trees}
for t in trees: run(t)  # warm pyc
for i in range(int(os.environ.get("ROUNDS", 8))):
  for t in trees: res[t].append(run(t))
for t in trees:
  w = sorted(x[0] for x in res[t]); c = sorted(x[1] for x in res[t])
  print(t, f"wall best {w[0]:.3f} median {w[len(w)//2]:.3f} | cpu best {c[0]:.3f} median {c[len(c)//2]:.3f}")
