# pytest runs with --import-mode=importlib, which puts no test folder on sys.path: make this folder's helpers (pbenc) importable
import pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
