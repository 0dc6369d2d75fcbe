"""``rewardrouter serve``: read a router as every command does, serve it over HTTP (compiled in
the server's scoring process).

    rewardrouter serve --config my_router.yaml --port 8000
    rewardrouter serve router=mixed default_route=gsm8k --port 8000

Endpoints and replies: :mod:`rewardrouter.serve.app`.
"""

from __future__ import annotations

from rewardrouter.cli.command import command_parser
from rewardrouter.cli.compose import add_config_arguments, named, router_config, source_name
from rewardrouter.serve import add_serve_arguments, run_server, token_from


def main(argv: list[str]) -> int:
    """The ``serve`` subcommand; returns the exit status.

    Raises :class:`~rewardrouter.ConfigError` for a config that does not load or compile (the
    command line prints it without a traceback).
    """
    parser = command_parser(
        "serve",
        "Serve a reward router over HTTP: POST /reward (slime's remote_rm body), "
        "POST /batch (a list of samples), GET /health.",
    )
    add_config_arguments(parser)
    add_serve_arguments(parser)
    args = parser.parse_intermixed_args(argv)
    token_from(args.auth_env)  # a missing token stops the command before the router compiles
    config = router_config(args.config, args.overrides)
    with named(source_name(args.config)):  # what compiling finds names the file, as elsewhere
        return run_server(config, args)
