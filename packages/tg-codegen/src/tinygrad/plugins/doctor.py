"""`python -m tinygrad`: what is installed, which plugins loaded, which devices work, and why not. Exit status 1 when a plugin failed,
another distribution ships into the `tinygrad` package, or the default device is not usable."""
import argparse, json, re
from importlib.metadata import distributions
from tinygrad.plugins.spec import PLUGIN_API_VERSION, FIRST_PARTY
from tinygrad.plugins.discovery import registry
from tinygrad.plugins.namespace import foreign_distributions, fix

def collect() -> dict:
  """everything the doctor knows, as plain data (the --json output)"""
  from tinygrad.device import Device
  reg = registry()
  try: default, default_error = Device.DEFAULT, None
  except Exception as e: default, default_error = None, f"{type(e).__name__}: {e}"
  devices = []
  for s in Device.installed():
    ok, reason = reg.probe(s.name)
    rens = [{"name": r.name, "default": r.default, "available": reg.probe(s.name, r.name)[0], "reason": reg.probe(s.name, r.name)[1]}
            for r in reg.renderers.get(s.name, [])]
    devices.append({"name": s.name, "available": ok, "reason": reason, "priority": s.priority, "distribution": s.distribution, "renderers": rens})
  return {
    "plugin_api": list(PLUGIN_API_VERSION),
    "distributions": [{"name": n, "version": v} for n, v in sorted({(d.metadata["Name"], d.version) for d in distributions()
                      if re.match(r"tg[-_]", d.metadata["Name"] or "", re.I) or any(ep.group == "tinygrad" for ep in d.entry_points)})],
    "plugins": [{"name": p.name, "distribution": p.distribution, "version": p.version, "api": list(p.api),
                 "provides": [d.name for d in p.devices] + [f"{r.device}:{r.name}" for r in p.renderers]} for p in reg.plugins.values()],
    "default": default, "default_error": default_error, "devices": devices,
    "failures": [{"name": f.name, "distribution": f.distribution, "type": type(f.error).__name__, "error": str(f.error), "where": f.where}
                 for f in reg.failures],
    "clashes": list(reg.clashes),
    "namespace_conflicts": [{"name": n, "version": v, "files": len(files), "example": files[0], "fix": fix(n)}
                            for n, v, files in foreign_distributions()],
  }

def healthy(info:dict) -> bool: return not info["failures"] and not info["namespace_conflicts"] and info["default"] is not None

def render(info:dict) -> str:
  out = [f"tinygrad doctor (plugin API {info['plugin_api'][0]}.{info['plugin_api'][1]})", "", "distributions:"]
  out += [f"  {d['name']} {d['version']}" for d in info["distributions"]] or ["  none"]
  out += ["", "plugins:"]
  for p in info["plugins"]:
    origin = f"{p['distribution'] or '(registered)'} {p['version'] or ''}"
    out.append(f"  {p['name']:10s} {origin:20s}  API {p['api'][0]}.{p['api'][1]}  provides {', '.join(p['provides']) or 'nothing'}")
  if not info["plugins"]: out.append("  none")
  out += ["", f"devices (default: {info['default'] or 'none'}):"]
  for d in info["devices"]:
    rens = ", ".join(r["name"] + ("*" if r["default"] else "") + ("" if r["available"] else " (unavailable)") for r in d["renderers"])
    mark = "*" if d["name"] == (info["default"] or "").split(":")[0] else " "
    line = f"  {mark} {d['name']:7s} {'available' if d['available'] else 'unavailable':11s}  priority {d['priority']:4d}  {d['distribution'] or ''}"
    out.append(line + (f"  renderers {rens}" if rens else "") + ("" if d["available"] else f"\n      {d['reason']}"))
    out += [f"      renderer {r['name']}: {r['reason']}" for r in d["renderers"] if not r["available"] and d["available"]]
  if info["default_error"]: out.append(f"  no usable default device: {info['default_error']}")
  out += ["", "refused or failed plugins:"]
  out += [f"  {f['name']}" + (f" ({f['distribution']})" if f["distribution"] else "") + f": {f['type']}: {f['error']} (raised at {f['where']})"
          for f in info["failures"]] + [f"  {c}" for c in info["clashes"]] or ["  none"]
  out += ["", "other distributions in the tinygrad package:"]
  out += [f"  {c['name']} {c['version']}: {c['files']} files (e.g. {c['example']}). {c['fix']}" for c in info["namespace_conflicts"]] or ["  none"]
  return "\n".join(out)

def report() -> str: return render(collect())

def versions() -> str:
  tg = sorted({(d.metadata["Name"], d.version) for d in distributions() if re.sub(r"[-_.]+", "-", d.metadata["Name"] or "").lower() in FIRST_PARTY})
  return "\n".join([f"plugin API {PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]}"] + [f"{n} {v}" for n, v in tg])

def main(argv:list[str]|None=None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinygrad", description="tinygrad doctor: installed distributions, plugins, devices and "
                               "what is wrong with them. Exit status 1 when a plugin failed, another distribution ships into the "
                               "`tinygrad` package, or the default device is not usable.")
  ap.add_argument("--version", action="store_true", help="print the plugin API version and each installed tg distribution's version")
  ap.add_argument("--json", action="store_true", help="print the report as JSON (machine readable)")
  args = ap.parse_args(argv)
  if args.version:
    print(versions())
    return 0
  info = collect()
  print(json.dumps(info, indent=1) if args.json else render(info))
  return 0 if healthy(info) else 1
