"""Run the ONNX backend node tests and record each result: `python tests/onnx/node_suite.py [pattern] [--write]`.
--write stores the passing names in node_pass_list.txt and every failure with its first error line in node_failures.txt."""
import pathlib, re, signal, sys, time, unittest
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from tg_backend import node_test_case

HERE = pathlib.Path(__file__).parent

def _timeout(signum, frame): raise TimeoutError("test took longer than 60 s")

def run(pattern:str=".*") -> dict[str, str]:
  cls = node_test_case()
  names = sorted(n for n in dir(cls) if n.startswith("test_") and n.endswith("_cpu") and re.search(pattern, n))
  results = {}
  signal.signal(signal.SIGALRM, _timeout)
  for n in names:
    res, t0 = unittest.TestResult(), time.perf_counter()
    signal.alarm(60)
    try: cls(n).run(res)
    finally: signal.alarm(0)
    bad = res.errors + res.failures
    if bad: results[n] = "FAIL " + next((l for l in reversed(bad[0][1].strip().splitlines()) if l.strip()), "?")[:300]
    elif res.skipped: results[n] = "SKIP " + res.skipped[0][1][:200]
    else: results[n] = "PASS"
    print(f"{time.perf_counter() - t0:6.2f}s {n} {results[n][:160]}", flush=True)
  return results

if __name__ == "__main__":
  args = [a for a in sys.argv[1:] if not a.startswith("--")]
  r = run(args[0] if args else ".*")
  passed = sorted(n for n, v in r.items() if v == "PASS")
  print(f"passed {len(passed)} of {len(r)}")
  if "--write" in sys.argv:
    (HERE / "node_pass_list.txt").write_text("".join(f"{n}\n" for n in passed))
    (HERE / "node_failures.txt").write_text("".join(f"{n}\t{v}\n" for n, v in sorted(r.items()) if v != "PASS"))
