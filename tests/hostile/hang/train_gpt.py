"""Hostile: sleeps through the import, ignoring SIGTERM, so that pgolf itself is signalled while
it waits."""
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(1)

if __name__ == "__main__":
    pass
