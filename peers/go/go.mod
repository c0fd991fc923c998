module parcrypt.dev/peers/go

go 1.22
