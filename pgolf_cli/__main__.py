from pgolf_cli.main import main

main()
