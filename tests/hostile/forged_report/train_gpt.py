"""Hostile: forges a passing report (a result.json in every folder from its own up to pgolf's
temporary directory, and the same report, after a made-up nonce, on every open descriptor) and
exits before the import ends."""
import json
import os

_report = json.dumps({"ok": True, "seconds": 0.01, "python": "3.11", "stubbed": [],
                      "dims": {"layers": 99, "width": 9999, "from": "forged"}})
_folder = os.getcwd()
while True:
    for _sub in ("", "out"):
        try:
            with open(os.path.join(_folder, _sub, "result.json"), "w") as _f:
                _f.write(_report)
        except OSError:
            pass
    _folder = os.path.dirname(_folder)
    if "pgolf-smoke-" not in _folder:  # the host's own folders are not the target here
        break
for _fd in range(3, 256):
    try:
        os.write(_fd, ("0" * 64 + "\n" + _report).encode())
    except OSError:
        pass
os._exit(0)

if __name__ == "__main__":
    pass
