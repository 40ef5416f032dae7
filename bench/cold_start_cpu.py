"""Cold start of several source trees in alternating new processes, as CPU time (user+sys of the child): on a busy machine the wall
clock mostly measures the other processes. Each tree runs from its packages/*/src on PYTHONPATH, with this interpreter's packages.
Usage: python bench/cold_start_cpu.py RUNS NAME=TREE [NAME=TREE ...]   (CL=2 for the default compile cache; 0 by default)"""
import os, resource, subprocess, sys, statistics
STMT = "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())"
trees = dict(a.split("=", 1) for a in sys.argv[2:])
res = {k: [] for k in trees}
py = sys.executable
for i in range(int(sys.argv[1])):
  for name, root in trees.items():
    pp = ":".join(sorted(os.path.join(root, "packages", p, "src") for p in os.listdir(os.path.join(root, "packages"))))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": pp, "CACHELEVEL": os.environ.get("CL", "0")}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([py, "-c", STMT], capture_output=True, text=True, env=env, cwd="/")
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out.stdout.strip() == "12", out.stderr
    res[name].append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
for name, ts in res.items(): print(f"{name}: cpu best {min(ts)*1e3:.0f} ms median {statistics.median(ts)*1e3:.0f} ms")
