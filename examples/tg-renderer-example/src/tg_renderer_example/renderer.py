"""The SIGNED renderer: tg's C renderer, each kernel signed with a comment. Imported when a device is opened with it."""
from tinygrad.dtype import DType, dtypes
from tinygrad.renderer.cstyle import ClangRenderer

SIGNATURE = "/* rendered by tg-renderer-example */"

class SignedCRenderer(ClangRenderer):
  def render(self, name:str, uops:list) -> str: return f"{SIGNATURE}\n" + super().render(name, uops)
  def supported_dtypes(self) -> frozenset[DType]: return super().supported_dtypes() - {dtypes.fp8e4m3, dtypes.fp8e5m2}
