module tumbler.dev/tumbler

go 1.22
