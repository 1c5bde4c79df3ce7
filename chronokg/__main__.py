"""`python -m chronokg`: the same as the `chronokg` command (and `python -m chronokg.cli`)."""

from chronokg.cli import main

main()
