"""The NV device's kernel-driver path on a real NVIDIA GPU, without kernels (gpu_check.sh runs those after): open the GPU
through RM and UVM exactly as NVDevice does, make a copy channel, move 4 MiB host -> video memory -> host on the copy engine with a
semaphore release after it, and check the bytes and the semaphore. Under MOCKGPU=1 the same code runs on the mock kernel driver
(tests/hcq/test_nv_rm_abi.py runs it so). Usage: python bench/nv_driver_check.py [GPU index]"""
import array, os, sys, time
from tinygrad.runtime.support import nv_methods as nv
from tinygrad.runtime.support.nv_rm import NVRMInterface
from tinygrad.runtime.ops_nv import host_os

def check(index:int=0, size:int=4 << 20) -> float:
  iface = NVRMInterface(index, host_os())
  ch = iface.create_channel("COPY")
  iface.schedule()
  src, dst, vram = iface.alloc(size, host_visible=True), iface.alloc(size, host_visible=True), iface.alloc(size)
  sem, cmd = iface.alloc(0x1000, host_visible=True), iface.alloc(0x1000, host_visible=True)
  data = os.urandom(size)
  src.cpu_view()[:] = data
  words = array.array("I", nv.method(nv.SUBC_COPY, 0, iface.channel_classes["COPY"]) + nv.copy(vram.va, src.va, size) +
                      nv.copy(dst.va, vram.va, size) + nv.sem_release(sem.va, 7))
  cmd.cpu_view()[:4 * len(words)] = words.tobytes()
  ch.gpfifo.cpu_view().cast("I")[0:2] = array.array("I", nv.gpfifo_entry(cmd.va, len(words)))
  ch.control.cpu_view().cast("I")[0x8c // 4] = 1
  st = time.perf_counter()
  ch.ring_doorbell(1)
  while sem.cpu_view().cast("Q")[0] != 7:
    iface.progress()
    if time.perf_counter() - st > 10: raise TimeoutError(f"NV:{index}: the copy channel did not release its semaphore in 10 s (GPGet {ch.gp_get})")
  et = time.perf_counter() - st
  if bytes(dst.cpu_view()) != data: raise AssertionError(f"NV:{index}: the bytes that came back differ from the bytes sent")
  return et

if __name__ == "__main__":
  et = check(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
  print(f"NV driver path: 4 MiB host -> VRAM -> host on the copy engine, checked, in {et*1e3:.2f} ms")
