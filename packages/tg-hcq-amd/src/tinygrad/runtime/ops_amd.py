class AMDDevice:
  def __init__(self, device:str):
    raise RuntimeError(f"{device}: the AMD runtime is not implemented in this version of tg-hcq-amd (only discovery and the "
                       "availability probe are); use DEV=CPU for now")
