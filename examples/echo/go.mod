module github.com/appkind/examples/echo

go 1.26
