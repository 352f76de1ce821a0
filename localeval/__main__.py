from localeval.cli import main

main()
