"""Scheduling an unrolled recurrence takes work in proportion to what changes from round to round. create_schedule realizes nodes in
rounds (~2.5 per step of an LSTM's gradient), and each kernel root's loop trips (rangeify.LoopTrips) came from a walk per root, done
again whole for every root that a round's new stops cut: an LSTM's gradient of 32 steps walked 1.5M nodes, 20 s of scheduling. They now
come from the one pass down from all roots that also finds the reduces' readers (ReduceReach), updated below each round's new stops."""
import pathlib, sys
from tinygrad.uop.ops import UOp
import tinygrad.schedule.rangeify as rangeify
from tinygrad.schedule.rangeify import LoopTrips, RegionMemo, create_schedule
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_schedule_scaling is not on sys.path by itself
from test_schedule_scaling import _lstm  # its gradient's values are checked there

def _trip_work(targets, monkeypatch) -> tuple[int, int, int]:
  """over one schedule's rounds: the nodes the loop-trip analysis visits (its walks' nodes and its pass's node updates), the changes it
  reports (each round, the nodes whose trips by root or product differ from the round before), and the graph's size"""
  visits, changes, inside, last = [0], [0], [False], [{}]
  toposort, update, node_update = UOp.toposort, LoopTrips.update, rangeify.ReduceReach._update
  def counted_toposort(self, gate=None):
    ret = toposort(self, gate)
    if inside[0]: visits[0] += len(ret)
    return ret
  def counted_node_update(self, u, stop):
    if inside[0]: visits[0] += 1
    return node_update(self, u, stop)
  def counted_update(self, roots, stop):
    inside[0] = True
    try: ret = update(self, roots, stop)
    finally: inside[0] = False
    body = self.body
    now = {u: (per_root, body.get(u)) for u, per_root in self.evals.items()}
    changes[0] += sum(now.get(u) != last[0].get(u) for u in now.keys() | last[0].keys())
    last[0] = now
    return ret
  with monkeypatch.context() as m:
    m.setattr(UOp, "toposort", counted_toposort)
    m.setattr(rangeify.ReduceReach, "_update", counted_node_update)
    m.setattr(LoopTrips, "update", counted_update)
    create_schedule([t.uop for t in targets])
  return visits[0], changes[0], len(UOp.sink(*[t.uop for t in targets]).toposort())

def test_trips_work_follows_changes(monkeypatch):
  # a walk per root visited every node of each cut root's kernel again, whether its trips changed or not: 5.7 (T=4) and 6.8 (T=8)
  # times the changes, and growing with the depth; the pass visits a node where its state changes
  for T in (4, 8):
    visits, changes, nodes = _trip_work(_lstm(T), monkeypatch)
    assert visits < 2 * (changes + nodes), (T, visits, changes, nodes)

def test_kept_trips_equal_a_fresh_pass(monkeypatch):
  # the rounds of a real schedule (each one's roots and stops), replayed: the state kept and updated below each round's new stops
  # equals a pass from scratch over that round
  rounds, update = [], LoopTrips.update
  def recording(self, roots, stop):
    rounds.append((dict(roots), dict(stop)))
    return update(self, roots, stop)
  with monkeypatch.context() as m:
    m.setattr(LoopTrips, "update", recording)
    create_schedule([t.uop for t in _lstm(3)])
  assert len(rounds) > 5
  kept = LoopTrips(RegionMemo())
  for roots, stop in rounds:
    fresh = LoopTrips(RegionMemo())
    assert kept.update(roots, stop) == fresh.update(roots, stop)
    assert kept.evals == fresh.evals and kept.body == fresh.body
