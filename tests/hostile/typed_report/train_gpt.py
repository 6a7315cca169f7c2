"""Hostile: reads the run's nonce and report descriptor from the frames that import it, and sends
a report with the right nonce whose fields have the wrong types (a dict for the Python version,
a string for the error's frames), then exits before the import ends."""
import json
import os
import sys

_frame = sys._getframe()
while _frame is not None and "nonce" not in _frame.f_locals:
    _frame = _frame.f_back
_nonce, _config = _frame.f_locals["nonce"], _frame.f_locals["config"]
_report = {"ok": False, "seconds": "soon", "python": {"major": 3}, "stubbed": "torch",
           "dims": [1, 2], "error": {"type": 7, "mro": "Exception", "message": None,
                                     "frames": "train_gpt.py:1", "syntax": {"line": "one"}}}
os.write(_config["result_fd"], _nonce + b"\n" + json.dumps(_report).encode())
os.close(_config["result_fd"])
os._exit(0)

if __name__ == "__main__":
    pass
