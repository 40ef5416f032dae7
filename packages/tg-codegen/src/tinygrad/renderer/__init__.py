# renderers live in several distributions (tg-renderers, third parties): gather every tinygrad/renderer folder
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

class Renderer:
  """Turns a linearized list of UOps into source code for one target."""
  device: str = ""
  suffix: str = ""
  has_local: bool = False
  global_max: tuple[int, ...]|None = None
  def render(self, uops:list) -> str: raise NotImplementedError(f"{type(self).__name__} does not implement render")
