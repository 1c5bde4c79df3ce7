"""`python -m chronokg.cli`: the same as the `chronokg` command."""

from chronokg.cli import main

main()
