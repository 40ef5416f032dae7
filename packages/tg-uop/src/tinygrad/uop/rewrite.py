"""graph_rewrite: apply a PatternMatcher over a whole graph to a fixed point, without recursion (deep graphs are fine)."""
from __future__ import annotations
from typing import Any
from tinygrad.helpers import SPEC

def graph_rewrite(sink, pm, ctx:Any=None, bottom_up:bool=False, name:str|None=None, memo:str|None=None, done:dict|None=None):
  """Rewrite every node reachable from sink.
  default: a node's sources are rewritten first, then the node (rebuilt on the new sources); a node the matcher replaces is
           itself rewritten again, so the result is a fixed point.
  bottom_up=True: the matcher is applied to a node before its sources (to a fixed point), then the sources are rewritten.
  memo: for a matcher without ctx, a name under which each node is marked once it is a fixed point; a marked node is not looked at
        again by any later rewrite with the same memo (simplifying a graph that holds already simplified parts costs only the new part)
  done: each node's result, from earlier rewrites with the same matcher and ctx (extended here): their shared parts are not rewritten again"""
  if done is None: done = {}
  if bottom_up: _bottom_up(sink, pm, ctx, memo, done)
  else: _walk(sink, pm, ctx, memo, done)
  ret = done[sink]
  if SPEC >= 1:
    from tinygrad.uop.spec import check_graph
    check_graph(ret, stage=name)
  return ret

def _walk(sink, pm, ctx, memo, done:dict):
  """the default order: the graph's nodes in topological order (the order the rewriting reaches them in), each rebuilt on its sources'
  results and offered to the rules of its op. What a rule returns is walked the same way (its new part only) before the walk it
  interrupted goes on: a stack of walks, not recursion, so chains of rewrites of any length are fine"""
  rules, rewrite = pm.pdict, pm.rewrite
  # below a node that has its result (or is marked a fixed point) there is nothing to do
  if memo is None: gate = lambda u: u not in done
  else: gate = lambda u: u not in done and memo not in u.__dict__
  order = list(sink.toposort(None if memo is None else lambda u: memo not in u.__dict__))
  if memo is None:
    # the nodes before the first one whose op has rules keep their sources (which come before them), so each is its own result: a pass
    # whose ops the graph lacks (transcendentals on a kernel without any) costs one walk
    first = next((i for i, u in enumerate(order) if u.op in rules), len(order))
    done.update(zip(order[:first], order[:first]))
    order = order[first:]
  # (nodes left, the nodes waiting for this walk's result, this walk's root); nothing is done yet when the first walk starts
  walks: list = [(iter(order), None, None)]
  while walks:
    nodes, waiting, root = walks[-1]
    for u in nodes:
      if u in done: continue
      if memo is not None and memo in u.__dict__: done[u] = u; continue
      # u, then what the rules made of it while each result's sources are all done (the usual case: a new node over rewritten
      # sources) is rewritten right here, without a walk of its own; `chain` all get the last one's result
      chain, cur, res = [u], u, None
      while res is None:
        if (src := cur.src) and (new_src := tuple([done[s] for s in src])) != src: u2 = UOp(cur.op, cur.dtype, new_src, cur.arg, cur.tag)
        else: u2 = cur
        if u2.op not in rules or (rw := rewrite(u2, ctx)) is None:
          if memo is not None: u2.__dict__[memo] = True
          res = u2
        elif rw in done: res = done[rw]
        elif memo is not None and memo in rw.__dict__: res = rw
        elif all(s in done for s in rw.src): chain.append(cur := rw)
        else: break
      if res is None:
        walks.append((iter(rw.toposort(gate)), chain, rw))
        break
      for c in chain: done[c] = res
    else:
      walks.pop()
      if waiting is not None:
        for c in waiting: done[c] = done[root]

def _bottom_up(sink, pm, ctx, memo, done:dict):
  """bottom_up: each node rewritten before its sources, an explicit stack"""
  rules, rewrite = pm.pdict, pm.rewrite
  stack: list = [(sink, 0, None)]
  while stack:
    node, stage, extra = stack.pop()
    if node in done: continue
    if memo is not None and stage == 0 and memo in node.__dict__: done[node] = node; continue
    if stage == 0:
      # pre-order: rewrite the node itself until nothing applies
      seen = node
      while seen.op in rules and (rw := rewrite(seen, ctx)) is not None:
        if rw in done: seen = done[rw]; break
        seen = rw
      stack.append((node, 1, seen))
      stack.extend([(s, 0, None) for s in reversed(seen.src) if s not in done])
    elif stage == 1:
      cur = extra
      if cur in done and cur is not node: done[node] = done[cur]; continue
      rebuilt = cur if (new_src := tuple([done.get(s, s) for s in cur.src])) == cur.src else UOp(cur.op, cur.dtype, new_src, cur.arg, cur.tag)
      if rebuilt is cur: done[node] = cur
      else: stack.append((node, 2, rebuilt)); stack.append((rebuilt, 0, None))
    else:
      done[node] = done[extra]

# last: ops imports this module at its end, and either may be imported first (the functions above only need UOp when called)
from tinygrad.uop.ops import UOp  # noqa: E402
