"""Hostile: builds a 3,000-deep tree of folders in its copy (paths far over PATH_MAX), with
links out of the copy and a loop at every level, and makes every folder unwritable, then
imports cleanly: the clean-up must still remove all of it."""
import os

_fd = os.open(".", os.O_RDONLY)
for _ in range(3000):
    os.mkdir("d", dir_fd=_fd)
    os.symlink("/", "root", dir_fd=_fd)
    os.symlink(".", "loop", dir_fd=_fd)
    _next = os.open("d", os.O_RDONLY, dir_fd=_fd)
    os.fchmod(_fd, 0o500)
    os.close(_fd)
    _fd = _next
os.close(_fd)

if __name__ == "__main__":
    pass
