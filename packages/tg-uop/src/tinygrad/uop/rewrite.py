"""graph_rewrite: apply a PatternMatcher over a whole graph to a fixed point, without recursion (deep graphs are fine)."""
from __future__ import annotations
from typing import Any
from tinygrad.helpers import SPEC

def graph_rewrite(sink, pm, ctx:Any=None, bottom_up:bool=False, name:str|None=None, memo:str|None=None):
  """Rewrite every node reachable from sink.
  default: a node's sources are rewritten first, then the node (rebuilt on the new sources); a node the matcher replaces is
           itself rewritten again, so the result is a fixed point.
  bottom_up=True: the matcher is applied to a node before its sources (to a fixed point), then the sources are rewritten.
  memo: for a matcher without ctx, a name under which each node is marked once it is a fixed point; a marked node is not looked at
        again by any later rewrite with the same memo (simplifying a graph that holds already simplified parts costs only the new part)"""
  done: dict = {}
  stack: list = [(sink, 0, None)]
  while stack:
    node, stage, extra = stack.pop()
    if node in done: continue
    if memo is not None and stage == 0 and memo in node.__dict__: done[node] = node; continue
    if stage == 0:
      if bottom_up:
        # pre-order: rewrite the node itself until nothing applies
        seen = node
        while (rw := pm.rewrite(seen, ctx)) is not None:
          if rw in done: seen = done[rw]; break
          seen = rw
        stack.append((node, 1, seen))
        stack.extend((s, 0, None) for s in reversed(seen.src) if s not in done)
      else:
        stack.append((node, 1, node))
        stack.extend((s, 0, None) for s in reversed(node.src) if s not in done)
    elif stage == 1:
      cur = extra
      if cur in done and cur is not node: done[node] = done[cur]; continue
      new_src = tuple(done.get(s, s) for s in cur.src)
      rebuilt = cur if new_src == cur.src else cur.replace(src=new_src)
      if bottom_up:
        if rebuilt is cur: done[node] = cur
        else: stack.append((node, 2, rebuilt)); stack.append((rebuilt, 0, None))
        continue
      rw = pm.rewrite(rebuilt, ctx)
      if rw is None:
        done[node] = rebuilt
        if memo is not None: rebuilt.__dict__[memo] = True
      else: stack.append((node, 2, rw)); stack.append((rw, 0, None))
    else:
      done[node] = done[extra]
  ret = done[sink]
  if SPEC >= 1:
    from tinygrad.uop.spec import check_graph
    check_graph(ret, stage=name)
  return ret
