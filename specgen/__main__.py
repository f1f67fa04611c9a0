"""Allow `python -m specgen`."""

from specgen.cli import main

main()
