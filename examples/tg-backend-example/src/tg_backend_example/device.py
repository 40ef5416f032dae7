"""The EXAMPLE device: tg's CPU device under another name. Imported on first use of EXAMPLE, never at discovery."""
from tinygrad.runtime.ops_cpu import CPUDevice

class ExampleDevice(CPUDevice):
  """Constructed by the Device registry as ExampleDevice("EXAMPLE") (or "EXAMPLE:1")."""
