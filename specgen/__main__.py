"""Allow `python -m specgen`."""

from .cli import main

main()
