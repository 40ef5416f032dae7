"""`python -m tinygrad`: what is installed, which plugins loaded, which devices work, and why not."""
import re
from importlib.metadata import distributions
from tinygrad.plugins.spec import PLUGIN_API_VERSION, DeviceError
from tinygrad.plugins.discovery import registry

def report() -> str:
  reg, out = registry(), []
  from tinygrad.device import Device
  out.append(f"tinygrad doctor (plugin API {PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]})\n\ndistributions:")
  dists = {(d.metadata["Name"], d.version) for d in distributions()
           if re.match(r"tg[-_]", d.metadata["Name"] or "", re.I) or any(ep.group == "tinygrad" for ep in d.entry_points)}
  out += [f"  {n} {v}" for n, v in sorted(dists)] or ["  none"]
  out.append("\nplugins:")
  for p in reg.plugins.values():
    provides = [d.name for d in p.devices] + [f"{r.device}:{r.name}" for r in p.renderers]
    origin = f"{p.distribution or '(registered)'} {p.version or ''}"
    out.append(f"  {p.name:10s} {origin:20s}  API {p.api[0]}.{p.api[1]}  provides {', '.join(provides) or 'nothing'}")
  if not reg.plugins: out.append("  none")
  try: default, why = Device.DEFAULT, ""
  except DeviceError as e: default, why = None, str(e)
  out.append(f"\ndevices (default: {default or 'none'}):")
  for s in Device.installed():
    ok, reason = reg.probe(s.name)
    rens = ", ".join(r.name + ("*" if r.default else "") for r in reg.renderers.get(s.name, []))
    mark = "*" if s.name == (default or "").split(":")[0] else " "
    line = f"  {mark} {s.name:7s} {'available' if ok else 'unavailable':11s}  priority {s.priority:4d}  {s.distribution or ''}"
    out.append(line + (f"  renderers {rens}" if rens else "") + ("" if ok else f"\n      {reason}"))
  if why: out.append(f"  no default device: {why}")
  out.append("\nrefused or failed plugins:")
  out += [f"  {f}" for f in reg.failures] or ["  none"]
  return "\n".join(out)

def main() -> int:
  print(report())
  return 0
