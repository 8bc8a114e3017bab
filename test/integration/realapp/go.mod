module github.com/appkind/test/realapp

go 1.26
