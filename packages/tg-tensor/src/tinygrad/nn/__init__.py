# tinygrad.nn spans distributions (tg-onnx ships tinygrad/nn/onnx.py): gather every tinygrad/nn folder
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
