class NVDevice:
  def __init__(self, device:str):
    raise RuntimeError(f"{device}: the NV runtime is not implemented in this version of tg-hcq-nv (only discovery and the "
                       "availability probe are); use DEV=CPU for now")
