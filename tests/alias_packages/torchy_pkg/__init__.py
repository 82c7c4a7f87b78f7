"""A stand-in package named ``torch`` + something with no dot: ``import torchy_pkg`` is not a torch path."""

NAME = "torchy_pkg"
