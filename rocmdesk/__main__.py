from rocmdesk.cli import main

raise SystemExit(main())
