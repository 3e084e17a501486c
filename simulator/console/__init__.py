"""What a command says on the terminal: progress on stderr (`progress`), aligned tables (`table`), user-given
text on one line (`printable`) and the error contract every command shares (`contract`: one line, exit 2 for
bad input, exit 130 on Ctrl-C)."""
