# The crawler binary, for docker-compose.yml (and any container runtime).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /crawler ./cmd/crawler

FROM gcr.io/distroless/static-debian12
COPY --from=build /crawler /crawler
ENTRYPOINT ["/crawler"]
