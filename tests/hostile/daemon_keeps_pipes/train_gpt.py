"""Hostile: leaves a daemon (double fork, new session) that keeps stdout and stderr open and
writes to them for ever, so that a parent waiting for end of file would never stop."""
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            os.write(2, b"still here\n")
            time.sleep(0.2)
    os._exit(0)
os.wait()

if __name__ == "__main__":
    pass
