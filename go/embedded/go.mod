module tumbler.dev/tumbler/embedded

go 1.22

require tumbler.dev/tumbler v0.0.0

replace tumbler.dev/tumbler => ../
