"""Hostile: writes a forged report on every open descriptor, then lets the import finish, so
that the real report arrives after the forgery: the channel holds more than one report."""
import json
import os

_report = json.dumps({"ok": True, "dims": {"layers": 99, "width": 9999, "from": "forged"}})
for _fd in range(3, 256):
    try:
        os.write(_fd, ("0" * 64 + "\n" + _report).encode())
    except OSError:
        pass

if __name__ == "__main__":
    pass
