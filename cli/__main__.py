from eqsearch.main import main

raise SystemExit(main())
