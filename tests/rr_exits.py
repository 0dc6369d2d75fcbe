"""A reward module that ends the process when imported (a script turned into a module)."""

import sys

sys.exit(7)


def grade(args: object, sample: object) -> float:
    return 1.0
