from tinygrad.plugins.doctor import main

raise SystemExit(main())
