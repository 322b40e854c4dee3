import sys

from harness.worker.loop import serve

if __name__ == "__main__":
    sys.exit(serve())
