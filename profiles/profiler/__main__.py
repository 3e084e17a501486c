import sys

from profiles.profiler.run import main

if __name__ == "__main__":
    sys.exit(main())
