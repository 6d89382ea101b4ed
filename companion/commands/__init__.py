"""One module per `companion` mode: `add_arguments(parser)` and `run(args, config)`."""
