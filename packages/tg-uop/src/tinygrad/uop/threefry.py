"""threefry2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", the Random123 generator): what Ops.THREEFRY
computes, the counter-based generator under Tensor.rand. Ops.THREEFRY takes two uint64s, the counter (words c1:c0, high:low) and the key
(k1:k0), and gives the two output words as one uint64 (x1:x0). The rounds are written once, for python ints (constant folding) and for
uint32 UOps (codegen decomposes the op into them before rendering)."""
from __future__ import annotations
from typing import Any, Callable

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)  # bits each round rotates the second word by, in turn
KEY_PARITY = 0x1BD11BDA  # the third key word is the first two's XOR with this
ROUNDS, WORD = 20, 0xFFFFFFFF
# the ALU ops of one counter's rounds: 5 a round, 3 per key injection, 4 to start (a cost model's count for the one op)
OPS = ROUNDS * 5 + ROUNDS // 4 * 3 + 4

def threefry2x32(c0:Any, c1:Any, k0:Any, k1:Any, wrap:Callable[[Any], Any]=lambda v: v) -> tuple[Any, Any]:
  """the two output words of counter words (c0, c1) under key words (k0, k1). wrap keeps a python int to 32 bits after each add and
  rotation; uint32 UOps wrap by themselves. A key is injected after every 4th round, each time the key schedule's next pair plus its
  count"""
  ks = (k0, k1, k0 ^ k1 ^ KEY_PARITY)
  x0, x1 = wrap(c0 + ks[0]), wrap(c1 + ks[1])
  for r in range(ROUNDS):
    x0 = wrap(x0 + x1)
    x1 = wrap((x1 << ROTATIONS[r % 8]) | (x1 >> (32 - ROTATIONS[r % 8]))) ^ x0
    if r % 4 == 3:
      s = r // 4 + 1
      x0, x1 = wrap(x0 + ks[s % 3]), wrap(x1 + wrap(ks[(s + 1) % 3] + s))
  return x0, x1

def threefry_int(x:int, key:int) -> int:
  """Ops.THREEFRY on python ints (uint64 values)"""
  x0, x1 = threefry2x32(x & WORD, (x >> 32) & WORD, key & WORD, (key >> 32) & WORD, lambda v: v & WORD)
  return (x1 << 32) | x0
