"""A structural check of PTX text, for machines without ptxas: the module header, balanced braces, each .entry's parameter list, every
register used declared (in `.reg .t %r<N>;` ranges or one by one), every branch target a label of the same kernel, and each
ld.param naming one of the kernel's parameters. It checks the shape of the program, not the meaning of instructions."""
from __future__ import annotations
import re

SPECIAL_REGISTERS = re.compile(r"%(tid|ntid|ctaid|nctaid|laneid|warpid|nwarpid|smid|clock|clock64|globaltimer)(\.[xyz])?\b")
_ENTRY = re.compile(r"\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)\s*\{", re.S)

def check_ptx(src:str) -> dict[str, list[tuple[str, str]]]:
  """raises ValueError naming the first problem; returns each entry's parameters as (type, name) in order"""
  for directive in (".version", ".target", ".address_size"):
    if not re.search(rf"^\s*\{directive}\s+\S+", src, re.M): raise ValueError(f"the module has no {directive} directive")
  depth = 0
  for n, line in enumerate(src.splitlines(), 1):
    depth += line.count("{") - line.count("}")
    if depth < 0: raise ValueError(f"line {n}: '}}' closes a block that was never opened")
  if depth: raise ValueError(f"{depth} '{{' left open at the end of the module")
  entries = {}
  if not (matches := list(_ENTRY.finditer(src))): raise ValueError("the module has no .visible .entry kernel")
  for m in matches:
    name, body = m[1], _block(src, m.end())
    params = []
    for p in filter(None, (x.strip() for x in m[2].split(","))):
      if (pm := re.fullmatch(r"\.param\s+\.(u64|u32|s32|s64|b32|b64)\s+([A-Za-z_$][\w$]*)", p)) is None:
        raise ValueError(f"kernel {name}: parameter {p!r} is not `.param .type name`")
      params.append((pm[1], pm[2]))
    _check_body(name, body, {p for _, p in params})
    entries[name] = params
  return entries

def _block(src:str, start:int) -> str:
  """the text of the block whose '{' ends just before start"""
  depth = 1
  for i in range(start, len(src)):
    depth += {"{": 1, "}": -1}.get(src[i], 0)
    if depth == 0: return src[start:i]
  raise ValueError("a kernel's body is not closed")

def _check_body(name:str, body:str, params:set[str]):
  declared: set[str] = set()
  ranges: dict[str, int] = {}
  for m in re.finditer(r"\.reg\s+\.\w+\s+([^;]+);", body):
    for r in (x.strip() for x in m[1].split(",")):
      if (rm := re.fullmatch(r"(%[A-Za-z_]\w*?)<(\d+)>", r)): ranges[rm[1]] = max(ranges.get(rm[1], 0), int(rm[2]))
      else: declared.add(r)
  code = re.sub(r"\.reg\s+[^;]+;", "", body)
  for reg in set(re.findall(r"%[A-Za-z_][\w]*(?:\.[xyz])?", code)):
    if SPECIAL_REGISTERS.fullmatch(reg) or reg in declared: continue
    if (rm := re.fullmatch(r"(%[A-Za-z_]\w*?)(\d+)", reg)) and int(rm[2]) < ranges.get(rm[1], 0): continue
    raise ValueError(f"kernel {name}: register {reg} is used but not declared")
  labels = set(re.findall(r"^\s*([$A-Za-z_][\w$]*):", code, re.M))
  for target in re.findall(r"\bbra(?:\.uni)?\s+([$A-Za-z_][\w$]*)\s*;", code):
    if target not in labels: raise ValueError(f"kernel {name}: branch to {target}, which is no label of the kernel")
  for p in re.findall(r"\bld\.param\.\w+\s+[^,]+,\s*\[([^\]+]+)", code):
    if p.strip() not in params: raise ValueError(f"kernel {name}: ld.param reads {p.strip()}, which is not a parameter")
  if not re.search(r"^\s*ret\s*;", code, re.M): raise ValueError(f"kernel {name} has no ret")
