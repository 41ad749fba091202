"""`python -m nanscope [options] -- app.py args`: runs app.py under nanscope with this Python."""
import sys

from nanscope._launcher import main

if __name__ == "__main__":
    sys.exit(main(as_module=True))
