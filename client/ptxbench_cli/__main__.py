from ptxbench_cli.main import main

raise SystemExit(main())
