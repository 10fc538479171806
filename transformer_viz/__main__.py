from transformer_viz.cli.main import main

raise SystemExit(main())
