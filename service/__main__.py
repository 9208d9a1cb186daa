"""`python -m service [--host H] [--port P]`: the same as `reasoner serve`."""

from __future__ import annotations

import argparse

from service.cli import DEFAULT_HOST, DEFAULT_PORT, import_server


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m service", description=__doc__)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args()
    import_server().serve(args.host, args.port)


if __name__ == "__main__":
    main()
