# renderers live in several distributions (tg-renderers, third parties): gather every tinygrad/renderer folder
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

class Renderer:
  """Turns a linearized list of UOps into source code for one target."""
  device: str = ""
  suffix: str = ""
  has_local: bool = False
  global_max: tuple[int, ...]|None = None
  # the ALU ops this target renders directly (Ops -> how); lowering decomposes the others before render
  code_for_op: dict = {}
  def render(self, name:str, uops:list) -> str: raise NotImplementedError(f"{type(self).__name__} does not implement render")
