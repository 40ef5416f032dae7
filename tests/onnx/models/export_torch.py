"""Regenerate the torch-exported test models (needs torch): python tests/onnx/models/export_torch.py
A small MLP, a small CNN (conv, batchnorm, pooling, residual) and a transformer encoder block (multi-head attention, layernorm, GELU),
exported with fixed seeds and a dynamic batch dimension."""
import pathlib
import torch, torch.nn as nn

HERE = pathlib.Path(__file__).parent

class CNN(nn.Module):
  def __init__(self):
    super().__init__()
    self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
    self.block = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
    self.head = nn.Linear(8, 10)
  def forward(self, x):
    x = nn.functional.max_pool2d(self.stem(x), 2)
    x = nn.functional.relu(x + self.block(x))
    return self.head(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

class Attention(nn.Module):
  def __init__(self):
    super().__init__()
    self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", batch_first=True)
  def forward(self, x): return self.layer(x)

def export(model, x, name):
  torch.manual_seed(0)
  model.eval()
  for p in model.parameters(): p.data = torch.randn_like(p) * 0.3
  for b in model.buffers():
    if b.dtype.is_floating_point: b.data = torch.rand_like(b) + 0.5
  torch.onnx.export(model, (x,), HERE / f"{name}.onnx", input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                    opset_version=17, dynamo=False)

if __name__ == "__main__":
  torch.manual_seed(0)
  export(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)), torch.randn(2, 16), "mlp")
  export(CNN(), torch.randn(2, 3, 16, 16), "cnn")
  export(Attention(), torch.randn(2, 10, 32), "attention")
