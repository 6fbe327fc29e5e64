"""PaddleClas' training entry for a checkout laid out from the `paddleclas` package
(dlperf.upstream_data.paddleclas copies this file to `<checkout>/tools/train.py`).

It does what PaddleClas' own tools/train.py does: put the checkout on sys.path, read the config
with `-c` and its `-o key=value` overrides (ppcls.utils.config), and train with ppcls' Engine.
Only the Python standard library and ppcls are imported: it runs in the package's environment.
"""

import os
import sys

CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> None:
    sys.path.append(CHECKOUT)
    from ppcls.engine.engine import Engine
    from ppcls.utils import config as ppcls_config

    args = ppcls_config.parse_args()
    config = ppcls_config.get_config(args.config, overrides=args.override, show=False)
    config.profiler_options = args.profiler_options
    Engine(config, mode="train").train()


if __name__ == "__main__":
    main()
