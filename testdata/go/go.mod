module tdatago

go 1.19
