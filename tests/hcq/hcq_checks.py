"""Checks shared by the HCQ tests: a device's signal and copy queues work; a semaphore release queued on an NV channel (its GPPut moved,
the doorbell not rung yet)."""
import array
from tinygrad.runtime.support import nv_methods as nv, nv_rm_abi as rm

def copy_works(dev):
  """a signal on the copy queue, then 64 bytes copied between two host-visible buffers"""
  sig = dev.new_signal()
  dev.copy_queue().signal(sig, 7).submit()
  sig.wait(7)
  src, dst = dev.iface.alloc(64, host_visible=True), dev.iface.alloc(64, host_visible=True)
  src.cpu_view()[:4] = b"tg!!"
  dev.run_copy(dst.va, src.va, 64)
  dev.synchronize()
  assert bytes(dst.cpu_view()[:4]) == b"tg!!"

def queue_semaphore_release(iface, ch, value:int):
  """one GP entry on channel ch whose methods release a new semaphore with value; GPPut moved past it, the doorbell left to the caller.
  Returns the semaphore's buffer"""
  sem, cmd = iface.alloc(0x1000, host_visible=True), iface.alloc(0x1000, host_visible=True)
  words = array.array("I", nv.sem_release(sem.va, value))
  cmd.cpu_view()[:4 * len(words)] = words.tobytes()
  ch.gpfifo.cpu_view().cast("I")[0:2] = array.array("I", nv.gpfifo_entry(cmd.va, len(words)))
  ch.control.cpu_view().cast("I")[rm.USERD_GP_PUT // 4] = 1
  return sem
