import sys

from models.errors import keep_standard_streams
from profiles.profiler.run import main

if __name__ == "__main__":
    keep_standard_streams()   # (`2>&-`: no progress bar or error in stdout, no crash on a missing stderr)
    sys.exit(main())
